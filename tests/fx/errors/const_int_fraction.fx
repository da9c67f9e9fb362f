const k: s32 = 2.5
