param x: f32[4]
param x: f32[8]
