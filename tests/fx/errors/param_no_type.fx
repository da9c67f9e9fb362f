param x
