param x: f32[8, 8]
loop 2 as i carry (s = x) {
  t = x[i, ::2]
}
