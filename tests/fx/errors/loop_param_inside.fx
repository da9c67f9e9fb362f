param x: f32[4]
loop 3 carry (s = x) {
  param z: f32[4]
}
