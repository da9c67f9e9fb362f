# cartpole_walkthrough.fx — the paper's case study (§IV–V of "Operator Fusion in XLA"), step by step.
#
# Run it with:   fxplain scripts/cartpole_walkthrough.fx
#
# 2048 cart-pole environments, 10,000 steps, on the paper's card (rtx2080ti), through the classic
# pipeline (XLA's fusion passes as the paper saw them). Each variant changes one thing, and
# `variant` records it with the speedup the paper measured for it; `variants` prints what the
# kernel plan says per simulation step, and `variants --run` runs every variant on this machine
# (the full 2048 x 10,000 case: a minute or two on a CPU) and prints the measured table next to
# the paper's ratios.

set device rtx2080ti
pipeline classic

echo
echo == 1. The baseline (scripts/cartpole.fx): what XLA makes of it ==
load scripts/cartpole.fx
step all
kernels
echo
echo The loop body ends in three kinds of boundary (paper §IV-A).
echo Boundary 1: the loop's tuple. A tuple is a place in memory, not a kernel, so nothing fuses into it.
why state.130 tuple.132
echo
echo Boundary 2: the random-number custom call. It is an opaque library kernel.
why iota.15 threefry2x32
echo
echo Boundary 3: the concatenate that builds the new state. It has several readers, and XLA will not
echo emit a concatenate more than once: the two simulation kernels stay apart.
why new_state
variant baseline --paper 1

echo
echo == 2. Precompute the random numbers (paper §V-A) ==
load scripts/cartpole_pre_rng.fx
step all
kernels
variant precomputed-rng --paper 1.87

echo
echo == 3. Let a concatenate be duplicated into up to 3 readers (paper §V-B) ==
set dup_limit 3
step all
compare-decisions
variant dup_limit-3 --paper 2.06
set dup_limit 1

echo
echo == 4. Pass the state as four separate values (paper §V-C) ==
load scripts/cartpole_separate.fx
step all
kernels
variant separate-values --paper 3.41

echo
echo == 5. Unroll the loop 10 times (paper §V-D) ==
set unroll 10
step all
kernels
variant unroll-10 --paper 10.56
set unroll 1

echo
echo == Per simulation step, on rtx2080ti ==
variants
echo The loop's trip count (10,000 steps) is known when XLA compiles it, so XLA:GPU runs it as a for loop:
echo the body's kernels every step, the condition's kernel never (it is still compiled: `kernels` counts it).
echo The paper counts what it saw on its 2021 XLA: 3 kernels per loop iteration for its best program, 3,000
echo launches unrolled 10 times (section VI); the launches above are what XLA runs for a loop of known length.

echo
echo == 6. The same program through today's XLA (priority fusion, since 2024) ==
echo Real XLA:GPU compiled for an H100 no longer stops at the concatenate. Its simplifier, knowing that a
echo transpose only changes the layout, lets the done check read x and theta before they are stacked (a
echo slice of a concatenate is just the piece), so the concatenate keeps one reader, and priority fusion's
echo cost model puts it into that reader's kernel (1.41 us fused against 2.44 us apart, XLA's own numbers):
echo one kernel does all the f32 work of a step. What is left is random-number plumbing around the
echo generator. For this very program, and for CartPole as JAX lowers it, fxplain's priority pipeline ends
echo with exactly XLA's kernels (the tests compare with XLA's own output: tests/xla/cartpole_fx, cartpole).
set device h100
pipeline priority
load scripts/cartpole.fx
step all
kernels
why new_state state.130
set device rtx2080ti
pipeline classic

echo
echo == 7. Run every variant on this machine ==
echo 2048 environments x 10,000 steps, each variant's final stage on the CPU (the GPU when there is one),
echo with the same seeded inputs: actions uniform in [0, 1), start and reset states in [-0.05, 0.05).
echo "paper" is the speedup the paper measured on an RTX 2080 Ti over its baseline (section V): 1.87x with
echo the random numbers precomputed, 10% more with the concatenate fused (2.06x), 3.41x with the state
echo as four values, 10.56x unrolled 10 times.
variants --run --repeat 3 --uniform actions=0:1 --uniform '*=-0.05:0.05'
