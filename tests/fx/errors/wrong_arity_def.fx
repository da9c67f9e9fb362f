def f(a, b) { return a * b }
param x: f32[4]
y = f(x)
