def f(a) {
  b = a * 2
}
param x: f32[4]
y = f(x)
