def f(a) { return a }
param x: f32[4]
y = f + x
