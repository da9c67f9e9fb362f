param x: f32[3]
y = broadcast(x, [3, 4])
