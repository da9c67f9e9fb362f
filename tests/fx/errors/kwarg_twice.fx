param x: f32[4, 4]
r = sum(x, axis=0, axis=1)
