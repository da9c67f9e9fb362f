param x: f32[4]
y = !x
