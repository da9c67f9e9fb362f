def f(a) { return a, a }
param x: f32[4]
p = f(x)
