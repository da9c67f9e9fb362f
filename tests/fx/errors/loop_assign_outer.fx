param x: f32[4]
y = x * 2
loop 3 carry (s = x) {
  y = s + 1
}
