param a: f32[3, 4]
param c: pred[4, 3]
y = select(c, a, 0)
