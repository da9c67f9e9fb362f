# cartpole_walkthrough.fx — the paper's case study (§IV–V of "Operator Fusion in XLA"), step by step.
#
# Run it with:   fxplain scripts/cartpole_walkthrough.fx
#
# 2048 cart-pole environments, 10,000 steps, on the paper's card (rtx2080ti), through the classic
# pipeline (XLA's fusion passes as the paper saw them). Each variant changes one thing, and
# `variant` writes down what it cost per simulation step; `variants` prints the table at the end.

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
variant baseline

echo
echo == 2. Precompute the random numbers (paper §V-A) ==
load scripts/cartpole_pre_rng.fx
step all
kernels
variant precomputed-rng

echo
echo == 3. Let a concatenate be duplicated into up to 3 readers (paper §V-B) ==
set dup_limit 3
step all
compare-decisions
variant dup_limit-3
set dup_limit 1

echo
echo == 4. Pass the state as four separate values (paper §V-C) ==
load scripts/cartpole_separate.fx
step all
kernels
variant separate-values

echo
echo == 5. Unroll the loop 10 times (paper §V-D) ==
set unroll 10
step all
kernels
variant unroll-10
set unroll 1

echo
echo == Per simulation step, on rtx2080ti ==
variants
