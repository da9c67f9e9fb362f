param a: f32[3]
c = cast(a, f32[3])
