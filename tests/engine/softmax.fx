# softmax.fx — a row softmax as a plain .fx program (no shell commands), for the engine's own front
# end (front_end.c): two reductions and the elementwise work around them.
let n = 64
param x: f32[n, 128]
m = max(x, axis=1)
e = exp(x - reshape(m, [n, 1]))
s = sum(e, axis=1)
y = e / reshape(s, [n, 1])
out y
