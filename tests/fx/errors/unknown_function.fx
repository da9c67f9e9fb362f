param x: f32[4]
y = sinn(x)
