param a: f32[4]
y = ~a
