let n = 1000000
param x: f32[n, n]
