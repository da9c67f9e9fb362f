/* passes.h — every pass fxplain knows, one `extern const Pass` per pass.
 *
 * Each pass lives in its own file compiler/pass_NAME.c and defines one `const Pass pass_NAME`.
 * pass.c lists them in the registry and in the pipelines; a pass named there but not defined
 * makes the build fail, so the tables never name a pass that does not exist. */
#ifndef FXPLAIN_PASSES_H
#define FXPLAIN_PASSES_H

#include "pass.h"

/* simplification (run before fusion, paper §III-A) */
extern const Pass pass_cse;              /* pass_cse.c: common subexpression elimination */
extern const Pass pass_dce;              /* pass_dce.c: dead code elimination */
extern const Pass pass_fusion_cse;       /* pass_cse.c: cse inside fused computations, after fusion */
extern const Pass pass_fusion_dce;       /* pass_dce.c: dce after fusion */
extern const Pass pass_tuple_simplifier; /* pass_tuple_simplifier.c: gte(tuple) and tuple(gte...) */
extern const Pass pass_algsimp;          /* pass_algsimp.c: identities, reshape/transpose/slice chains */
extern const Pass pass_algsimp_current;  /* pass_algsimp.c: the same, with today's layout-aware rewrites */
extern const Pass pass_constant_folding; /* pass_constant_folding.c: operations on constants */
extern const Pass pass_while_simplifier; /* pass_while_simplifier.c: dead loop state, zero-trip loops */
extern const Pass pass_call_inliner;     /* pass_call_inliner.c: call -> the callee's instructions */

/* fusion */
extern const Pass pass_instruction_fusion;     /* pass_instruction_fusion.c: no duplication */
extern const Pass pass_instruction_fusion_dup; /* pass_instruction_fusion.c: with duplication */
extern const Pass pass_fusion_merger;          /* pass_fusion_merger.c */
extern const Pass pass_multi_output_fusion;    /* pass_multi_output_fusion.c */
extern const Pass pass_horizontal_fusion;      /* pass_horizontal_fusion.c: horizontal-loop-fusion */
extern const Pass pass_softmax_rewriter;       /* pass_softmax_rewriter.c: normalization diamonds -> Triton (priority pipeline) */
extern const Pass pass_priority_fusion;        /* pass_priority_fusion.c */
extern const Pass pass_while_loop_unroll;      /* pass_unroll.c: `set unroll N` */
/* The second round of XLA's fixed-point fusion loop (same names, pipelines only). */
extern const Pass pass_instruction_fusion_round2;
extern const Pass pass_instruction_fusion_dup_round2;
extern const Pass pass_fusion_merger_round2;
extern const Pass pass_multi_output_fusion_round2;
extern const Pass pass_multi_output_fusion_current; /* pass_mof_current.c: today's rules, priority pipeline */

#include "simplify.h"

#endif
