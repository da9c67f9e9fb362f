param x: f32[8]
y = x[::0]
