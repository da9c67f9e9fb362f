param a: f32[3]
param b: f32[4]
s = stack([a, b])
