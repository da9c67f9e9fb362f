param x: f32[4]
y = select(x > 0, x)
