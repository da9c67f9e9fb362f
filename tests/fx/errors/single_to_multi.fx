param x: f32[4]
p, q = sin(x)
