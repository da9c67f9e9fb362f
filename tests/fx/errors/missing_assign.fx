param x: f32[4]
y x + 1
