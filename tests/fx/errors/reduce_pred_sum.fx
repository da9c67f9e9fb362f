param p: pred[4]
r = sum(p)
