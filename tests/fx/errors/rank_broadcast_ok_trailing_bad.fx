param a: f32[2, 3, 4]
param b: f32[3, 5]
y = a * b
