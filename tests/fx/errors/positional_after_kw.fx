param x: f32[4, 4]
c = concat(axis=0, [x, x])
