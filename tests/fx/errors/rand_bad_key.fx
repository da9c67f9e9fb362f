param k: u32[4]
u = rand(f32[4], key=k)
