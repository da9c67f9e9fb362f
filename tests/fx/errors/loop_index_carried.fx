param x: f32[4]
loop 3 as s carry (s = x) {
  s = s + 1
}
