# adam.fx — one Adam update over several parameters of different shapes: many small,
# independent elementwise kernels, and what horizontal fusion does with them.
#
#   build/fxplain scripts/adam.fx           the whole walkthrough
#   build/fxplain -i scripts/adam.fx        pause at each step, then stay in the shell

const lr = 0.001
const b1 = 0.9
const b2 = 0.999
const eps = 0.00000001

def adam(p, g, m, v) {
  m1 = b1 * m + (1 - b1) * g
  v1 = b2 * v + (1 - b2) * g * g
  p1 = p - lr * m1 / (sqrt(v1) + eps)
  return p1, m1, v1
}

param w1: f32[256, 256]
param g1: f32[256, 256]
param m1: f32[256, 256]
param v1: f32[256, 256]
param w2: f32[256]
param g2: f32[256]
param m2: f32[256]
param v2: f32[256]
param w3: f32[64, 256]
param g3: f32[64, 256]
param m3: f32[64, 256]
param v3: f32[64, 256]
param w4: f32[64]
param g4: f32[64]
param m4: f32[64]
param v4: f32[64]
p1, n1, r1 = adam(w1, g1, m1, v1)
p2, n2, r2 = adam(w2, g2, m2, v2)
p3, n3, r3 = adam(w3, g3, m3, v3)
p4, n4, r4 = adam(w4, g4, m4, v4)
# Only the new parameters are outputs here, so each parameter's update is one kernel with one
# output, the form horizontal fusion takes. Add n1, r1, ... (the new moments) to `out` and
# multi_output_fusion makes one kernel with three outputs per parameter instead.
out p1, p2, p3, p4

echo == Adam over four parameters (two weight matrices, two bias vectors) ==
echo Before fusion: every multiply, add, divide and sqrt of every parameter is a kernel.
show graph
pause
echo Each parameter's update is elementwise: instruction fusion makes one kernel per parameter.
step multi_output_fusion
show graph
render --collapse
pause
echo Four small kernels, independent of each other, each launched on its own. Horizontal loop
echo fusion puts small independent loop kernels into one launch, even when their shapes differ:
step horizontal-loop-fusion
decisions --stage horizontal-loop-fusion
show graph
render --collapse
passes --changed
