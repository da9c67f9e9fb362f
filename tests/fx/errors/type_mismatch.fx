param a: f32[4]
param b: f64[4]
y = a + b
