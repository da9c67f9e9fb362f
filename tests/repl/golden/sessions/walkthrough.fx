# walkthrough.fx — an instructor's walkthrough: layer norm, pass by pass, asking at each step why
# the kernels that remain are apart (the instructor session of tests/repl/golden/sessions).
param x: f32[256, 1024]
mean = sum(x, axis=1) / 1024
xc = x - reshape(mean, [256, 1])
var = sum(xc * xc, axis=1) / 1024
y = xc * rsqrt(reshape(var, [256, 1]) + 0.00001)
out y

echo == Before any pass: every operation is its own kernel ==
why mean xc
echo == instruction-fusion: producers go into their consumers ==
step instruction-fusion
why mean xc
why xc var
echo == the whole pipeline ==
step all
show graph
why mean y
why var y
why mean var
