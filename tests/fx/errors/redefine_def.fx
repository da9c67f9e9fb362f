def f(a) { return a }
def f(b) { return b }
