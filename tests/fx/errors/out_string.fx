out "y"
