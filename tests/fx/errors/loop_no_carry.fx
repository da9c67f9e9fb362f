param x: f32[4]
loop 3 {
  x = x + 1
}
