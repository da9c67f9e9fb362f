param a: f32[2, 3]
param b: f32[4, 5]
m = matmul(a, b)
