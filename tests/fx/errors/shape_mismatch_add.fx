param a: f32[2048, 4]
param b: f32[2048]
y = a + b
