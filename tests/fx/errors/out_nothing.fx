out
