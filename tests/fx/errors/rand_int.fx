u = rand(s32[4])
