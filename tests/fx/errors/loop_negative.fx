param x: f32[4]
loop -1 carry (s = x) {
  s = s + 1
}
