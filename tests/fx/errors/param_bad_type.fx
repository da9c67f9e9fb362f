param x: float[4]
