param x: f32[4]
y = maximum(x)
