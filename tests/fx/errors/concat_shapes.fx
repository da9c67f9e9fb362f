param a: f32[2, 3]
param b: f32[2, 4]
c = concat([a, b], axis=0)
