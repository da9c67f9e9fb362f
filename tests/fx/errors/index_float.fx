param x: f32[8]
y = x[1.5]
