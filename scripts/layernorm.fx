# layernorm.fx — layer normalization, pass by pass: mean and variance of each row, then the
# normalized, scaled and shifted output.
#
#   build/fxplain scripts/layernorm.fx      the whole walkthrough
#   build/fxplain -i scripts/layernorm.fx   pause at each step, then stay in the shell

let n = 4096
let d = 768
param x: f32[n, d]
param gamma: f32[d]
param beta: f32[d]
mu = mean(x, axis=1)
xc = x - reshape(mu, [n, 1])
var = mean(xc * xc, axis=1)
inv = rsqrt(var + 0.00001)
y = xc * reshape(inv, [n, 1]) * gamma + beta
out y

echo == layer norm: y = (x - mean) / sqrt(var + eps) * gamma + beta, 4096 rows of 768 ==
show graph
pause
step instruction-fusion
echo The mean and the variance are reductions; the centering xc is used by the variance and by
echo the output. See what instruction-fusion decided about it:
why xc
show graph
render
pause
step all
echo The final picture: reductions and the elementwise tail, with the refused candidates in red.
show graph
render --collapse
passes --changed
