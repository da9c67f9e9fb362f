i = iota(s32[], axis=0)
