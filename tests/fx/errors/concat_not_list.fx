param a: f32[2, 3]
c = concat(a, axis=0)
