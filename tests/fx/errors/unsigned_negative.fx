param k: u32[4]
y = k + -1
