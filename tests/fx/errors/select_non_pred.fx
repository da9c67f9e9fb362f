param a: f32[4]
y = select(a, a, a)
