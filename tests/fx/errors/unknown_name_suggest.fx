param xs: f32[4]
y = xz * 2
