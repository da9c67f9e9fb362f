param x: f32[4]
y = 0 < x < 1
