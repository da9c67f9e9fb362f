let n = 4
y = n[0]
