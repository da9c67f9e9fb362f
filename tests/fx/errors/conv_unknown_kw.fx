param x: f32[1, 8, 8, 3]
param w: f32[3, 3, 3, 16]
c = conv2d(x, w, padding="same")
