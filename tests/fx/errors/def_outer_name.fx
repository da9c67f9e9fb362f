param x: f32[4]
def f(a) { return a + x }
y = f(x)
