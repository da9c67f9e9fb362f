def f(a) {
  return a
  b = a
}
param x: f32[4]
y = f(x)
