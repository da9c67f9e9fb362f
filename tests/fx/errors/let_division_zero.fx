let n = 4 / 0
