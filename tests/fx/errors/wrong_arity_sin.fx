param x: f32[4]
y = sin(x, x)
