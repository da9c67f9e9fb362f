def f(a) { return f(a) }
param x: f32[4]
y = f(x)
