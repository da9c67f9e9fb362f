param x: f32[4]
y = broadcast(x, [100000, 100000, 4])
