# meanvar.fx — the mean and the variance of one input: two reductions that read the same array,
# and how sibling multi-output fusion makes them one kernel that reads it once.
#
#   build/fxplain scripts/meanvar.fx        the whole walkthrough
#   build/fxplain -i scripts/meanvar.fx     pause at each step, then stay in the shell

let n = 4096
param x: f32[n, 1024]
s = sum(x, axis=1)
q = sum(x * x, axis=1)
mu = s / 1024
var = q / 1024 - mu * mu
out mu, var

echo == mean and variance of every row: sum(x) and sum(x * x), both reading x ==
show graph
pause
step fusion-merger
echo Two reduction kernels, each reading all of x (16 MiB) from memory:
show graph
step multi_output_fusion
echo Sibling fusion: the two consumers of x become one kernel with two outputs, so x is read once.
decisions --stage multi_output_fusion
show graph
render
step all
passes --changed
