# not a type in any spelling
param x: f33[4]
