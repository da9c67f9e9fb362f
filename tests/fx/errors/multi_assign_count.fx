def f(a) { return a, a }
param x: f32[4]
p, q, r = f(x)
