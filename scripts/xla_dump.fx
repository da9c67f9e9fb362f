# xla_dump.fx — a real XLA:GPU dump, stepped through: XLA's own passes as stages, its priority-fusion
# decision log with its cost model's times, fxplain's verdict beside each of XLA's, source lines.
#
#   build/fxplain scripts/xla_dump.fx       the walkthrough (on the committed dump of a small JAX
#                                           program, tests/xla_dumps/data/mlp.py)
#   build/fxplain -i scripts/xla_dump.fx    on a terminal: waits at each `pause`, then stays in the shell
#
# Your own program: run it with
#   XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=.*'
# (add --xla_dump_hlo_pipeline_re=^fusion$ to keep only the fusion pipeline), then `load DIR`.

echo == load DIR lists the modules XLA dumped and loads one: its snapshots are the pipeline `xla` ==
load tests/xla_dumps/data/mlp
passes
pause

echo == Step to priority-fusion: the stage is XLA's own snapshot after that pass ==
goto priority-fusion
kernels
pause

echo == XLA's decision log: each fusion it made, each producer it refused with its reason, and its ==
echo == cost model's times; fxplain ran its own priority-fusion on the same input for comparison ==
decisions --pass priority-fusion
pause

echo == A refused pair: XLA's reason (mapped onto fxplain's code, XLA's words kept) and fxplain's ==
why gemm_fusion_dot_general.1
echo == A fused pair, both verdicts with both cost models' numbers ==
why triton_softmax.3 exp.1.0
pause

echo == Which instructions and kernels came from line 10 of the program, or from a JAX scope ==
find mlp.py:10
find jit(f)/layer
echo == And where each came from, in why ==
why tanh.0 exp.1.0
