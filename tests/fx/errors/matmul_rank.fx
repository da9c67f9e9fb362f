param a: f32[2, 3, 4, 5]
param b: f32[5, 2]
m = matmul(a, b)
