param x: f32[4]
y = cast(x, float16)
