param x: f32[4]
loop 3 carry (s = x, s = x) {
  s = s + 1
}
