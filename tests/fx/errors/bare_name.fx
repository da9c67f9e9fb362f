param x: f32[4]
x
