param x: f32[4]
x = x + 1
