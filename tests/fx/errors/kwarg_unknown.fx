param x: f32[4, 4]
r = sum(x, dim=1)
