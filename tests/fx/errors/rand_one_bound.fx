u = rand(f32[4], 0.5)
