const g = 9.8
g = 1.0
