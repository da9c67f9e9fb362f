param x: f32[4]
y = frobnicate(x)
