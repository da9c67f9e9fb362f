param x: f32[4, 4]
y = x[0, 1, 2]
