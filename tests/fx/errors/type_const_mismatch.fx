const h: f64 = 2.0
param a: f32[4]
y = a * h
