param k: s32[4]
y = k * 2.5
