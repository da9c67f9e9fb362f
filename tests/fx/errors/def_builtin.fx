def sin(a) { return a }
