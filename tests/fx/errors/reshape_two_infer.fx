param x: f32[8]
y = reshape(x, [-1, -1])
