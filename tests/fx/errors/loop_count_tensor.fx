param x: f32[4]
param n: s32[]
loop n carry (s = x) {
  s = s + 1
}
