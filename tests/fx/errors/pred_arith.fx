param a: f32[4]
y = (a > 0) + 1
