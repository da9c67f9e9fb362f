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
extern const Pass pass_simplification_fixpoint; /* pass.c: the simplification round until it changes nothing */
extern const Pass pass_dce;              /* pass_dce.c: dead code elimination */
extern const Pass pass_convert_mover;    /* pass_convert_mover.c: converts across data movement */
extern const Pass pass_simplification_2; /* pass.c: convert-mover and algsimp until they change nothing */
extern const Pass pass_reshape_mover_after_conv; /* pass.c: reshape-mover and algsimp after the cuDNN rewrites */
extern const Pass pass_simplify_after_conv;      /* pass.c: convert-mover and algsimp after the cuDNN rewrites */
extern const Pass pass_fusion_cse;       /* pass_cse.c: cse inside fused computations, after fusion */
extern const Pass pass_fusion_dce;       /* pass_dce.c: dce after fusion */
extern const Pass pass_tuple_simplifier; /* pass_tuple_simplifier.c: gte(tuple) and tuple(gte...) */
extern const Pass pass_algsimp;          /* pass_algsimp.c: identities, reshape/transpose/slice chains */
extern const Pass pass_algsimp_current;  /* pass_algsimp.c: the same, with today's layout-aware rewrites */
extern const Pass pass_algsimp_post_layout;     /* pass_algsimp.c: the simplifier again after layout normalization */
extern const Pass pass_constant_folding; /* pass_constant_folding.c: operations on constants */
extern const Pass pass_while_simplifier; /* pass_while_simplifier.c: dead loop state, zero-trip loops */
extern const Pass pass_call_inliner;     /* pass_call_inliner.c: call -> the callee's instructions */
/* today's XLA before fusion (priority pipeline) */
extern const Pass pass_sharding_remover;         /* pass_sharding_remover.c: JAX's Sharding custom calls */
extern const Pass pass_comparison_expander;      /* pass_comparison_expander.c: total-order float compares */
extern const Pass pass_scatter_expander;         /* pass_scatter_expander.c: one-window scatters */
extern const Pass pass_slice_sinker;             /* pass_slice_sinker.c: op(slices) -> slices(op) */
extern const Pass pass_reshape_mover;            /* pass_reshape_mover.c: op(reshape) -> reshape(op) */
extern const Pass pass_cse_current;              /* pass_cse.c: also loops, calls, conditionals */
extern const Pass pass_constant_folding_current; /* pass_constant_folding.c: XLA's operand rule, slices, elided */
extern const Pass pass_while_constant_sinking;   /* pass_while_constant_sinking.c */
extern const Pass pass_while_simplifier_current; /* pass_while_simplifier_current.c: XLA's WhileLoopSimplifier */
extern const Pass pass_conditional_simplifier;   /* pass_conditional_simplifier.c: known or cheap branches */
extern const Pass pass_float_normalization;      /* pass_float_normalization.c: bf16 ops the GPU lacks, in f32 */
extern const Pass pass_simplify_fp_conversions;  /* pass_simplify_fp_conversions.c: convert chains */
extern const Pass pass_tree_reduction;           /* pass_tree_reduction.c: reductions too large for one kernel */
extern const Pass pass_reduce_window_rewriter;   /* pass_reduce_window_rewriter.c: long scans in blocks, rank 1 -> 2 */

/* XLA:GPU's library and layout rewrites before fusion (priority pipeline) */
extern const Pass pass_dot_dimension_sorter;   /* pass_dot_dimension_sorter.c: contracting dims in order */
extern const Pass pass_dot_decomposer;         /* pass_dot_decomposer.c: einsum dots -> matrix multiplications */
extern const Pass pass_dot_dimension_merger;  /* pass_dot_dimension_merger.c: a dot's batch dims -> one */
extern const Pass pass_batched_gather_scatter; /* pass_batched_gather_scatter.c: batching dims -> iota indices */
extern const Pass pass_sort_rewriter;          /* pass_sort_rewriter.c: sorts CUB does faster -> CUB calls */
extern const Pass pass_stable_sort_expander;   /* pass_stable_sort_expander.c: is_stable -> iota tie-breaker */
extern const Pass pass_sort_iota_fusion;       /* ../fusion/pass_sort_iota_fusion.c: sort + its iotas -> kCustom */
extern const Pass pass_topk_specializer;       /* pass_topk_specializer.c: small topk -> __gpu$TopK */
extern const Pass pass_dot_strength_reduction; /* pass_dot_strength_reduction.c: vector dots -> multiply + reduce */
extern const Pass pass_dot_merger;             /* pass_dot_merger.c: dots sharing an operand -> one GEMM */
extern const Pass pass_transpose_folding;      /* pass_transpose_folding.c: transposes into the dots they feed */
extern const Pass pass_conv_rewriter;    /* pass_conv_rewriter.c: convolution -> __cudnn$convForward */
extern const Pass pass_cudnn_fused_conv; /* pass_cudnn_fused_conv.c: scale, bias, side input, ReLU into the cuDNN call */
extern const Pass pass_layout_assignment;    /* pass_layout_assignment.c: default layouts, cuDNN's NHWC/NCHW */
extern const Pass pass_layout_normalization; /* pass_layout_normalization.c: physical order, bitcasts */
extern const Pass pass_move_copy_to_users;  /* pass_move_copy_to_users.c: copies sink below layout-agnostic ops */
extern const Pass pass_gemv_rewriter;         /* pass_gemv_rewriter.c: matrix-vector dots get a size-1 dimension */
extern const Pass pass_splitk_rewriter;       /* pass_splitk_rewriter.c: long contractions split into a batch + reduce */
extern const Pass pass_gemm_fusion;          /* ../fusion/pass_gemm_fusion.c: dots -> Triton GEMM fusions */
extern const Pass pass_hoist_fused_bitcasts; /* ../fusion/pass_hoist_fused_bitcasts.c: their bitcasts out */

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
