let n = 4
