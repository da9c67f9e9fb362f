y = 3
param y: f32[2]
