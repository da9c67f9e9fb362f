let n = 2.5
