let loop = 3
