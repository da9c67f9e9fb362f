param k: s32[4]
y = sin(k)
