param x: f32[4, 4]
c = concat([x, x], axis=-3)
