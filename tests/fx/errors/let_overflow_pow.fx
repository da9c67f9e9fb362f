let m = 10 ** 30
