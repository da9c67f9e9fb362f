param x: f32[4]
loop 3 carry (s = x) {
  s = reshape(s, [2, 2])
}
