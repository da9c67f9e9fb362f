# softmax.fx — a row softmax, pass by pass: two reductions and the elementwise work around them.
#
#   build/fxplain scripts/softmax.fx        the whole walkthrough (pictures go to the current
#                                           directory, or to $FXPLAIN_OUT_DIR)
#   build/fxplain -i scripts/softmax.fx     on a terminal: waits at each `pause`, then stays in the shell

let n = 1024
param x: f32[n, 512]
m = max(x, axis=1)                 # row maximum, for numerical stability
e = exp(x - reshape(m, [n, 1]))
s = sum(e, axis=1)
y = e / reshape(s, [n, 1])
out y

echo == softmax(x) = exp(x - max(x)) / sum(exp(x - max(x))), row by row, 1024 rows of 512 ==
echo Before any pass every operation is its own kernel: each intermediate is written to memory
echo and read back by the next kernel.
show graph
render
pause

echo == The simplification passes clean up; then instruction-fusion pulls producers into consumers ==
step instruction-fusion
show graph
echo The row maximum m is a reduction kernel of its own. Why did the subtraction that reads it
echo not go into m's kernel? (And e has two users, s and y: see what that did.)
why m
why e
render
pause

echo == fusion-merger: e's kernel goes into both of its users ==
step fusion-merger
show graph
echo e is needed twice (by s and by y). exp is cheap, and computing e in both kernels moves half
echo the bytes that writing it out and reading it back would, so fusion-merger merges it into both.
decisions --stage fusion-merger
step multi_output_fusion
echo multi_output_fusion finds no pair to join: each kernel reads what another one writes.
decisions --stage multi_output_fusion
render --collapse
step all
echo In the end: the row max, the exp-and-sum, and the final divide. The reductions are the
echo boundaries; everything elementwise rides along inside them.
passes --changed
