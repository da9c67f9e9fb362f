const g: f32[2] = 1.0
