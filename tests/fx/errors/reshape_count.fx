param x: f32[8]
y = reshape(x, [3, 3])
