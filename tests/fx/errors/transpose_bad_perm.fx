param x: f32[2, 3]
y = transpose(x, [0, 0])
