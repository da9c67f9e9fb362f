/* pass.c — the pass registry, the pipelines, and the helpers every pass uses to report.
 *
 * Flow: the shell picks a Pipeline (classic or priority), then for each stage runs one Pass with
 * pass_run_stage(), which copies the previous stage's module, runs the pass on the copy and
 * checks the result; the pass reports every decision through pass_emit() to the DecisionSink it
 * was handed (explain/ stores them).
 *
 * To add a pass: define `const Pass pass_NAME` in compiler/pass_NAME.c, declare it in passes.h,
 * and add one line to `registry` below and one line to each pipeline that runs it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "../ir/ir.h"

/* ---------- reporting ---------- */

void pass_emit(DecisionSink *sink, PassDecision *d, const char *detail_fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, detail_fmt);
  vsnprintf(buf, sizeof buf, detail_fmt, ap);
  va_end(ap);
  d->detail = buf;
  if (sink && sink->emit) sink->emit(sink->ctx, d);
  d->detail = NULL; /* buf dies here; the sink copied what it keeps */
}

void pass_metric(PassDecision *d, const char *key, double value) {
  for (int k = 0; k < d->nmetrics; k++)
    if (strcmp(d->metrics[k].key, key) == 0) {
      d->metrics[k].value = value;
      return;
    }
  if (d->nmetrics >= PASS_MAX_METRICS) return;
  d->metrics[d->nmetrics].key = key;
  d->metrics[d->nmetrics].value = value;
  d->nmetrics++;
}

/* ---------- settings ---------- */

void pass_settings_default(PassSettings *s) {
  memset(s, 0, sizeof *s);
  s->concat_user_limit = 1; /* XLA's rule as the paper met it; the paper's patch raised it to 3 */
  s->max_duplication = 15;  /* kMaxEmittedCopies... "more than 15 emitted copies" */
  s->operand_budget = 64;   /* kMaxOperandsAndOutputsPerFusion in 2021 (96 since Apr 2024) */
  s->unroll = 1;
  s->dot_is_library = true;
  s->conv_is_library = true;
  s->rng_is_library = true;
}

bool pass_settings_is_disabled(const PassSettings *s, const char *pass) {
  if (!s || !pass || !s->disabled_passes[0]) return false;
  size_t n = strlen(pass);
  const char *p = s->disabled_passes;
  while (*p) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, pass, n) == 0) return true;
    p += len;
    if (*p == ',') p++;
  }
  return false;
}

/* ---------- the registry: every pass, in `help` order ---------- */

static const Pass *const registry[] = {
    /* simplification */
    &pass_call_inliner,
    &pass_algsimp,
    &pass_constant_folding,
    &pass_while_simplifier,
    &pass_cse,
    &pass_dce,
    &pass_simplification_fixpoint,
    &pass_convert_mover,
    &pass_simplification_2,
    &pass_tuple_simplifier,
    &pass_sharding_remover,
    &pass_comparison_expander,
    &pass_scatter_expander,
    &pass_slice_sinker,
    &pass_reshape_mover,
    &pass_while_constant_sinking,
    &pass_conditional_simplifier,
    &pass_tree_reduction,
    &pass_reduce_window_rewriter,
    &pass_float_normalization,
    &pass_simplify_fp_conversions,
    /* XLA:GPU's library and layout rewrites (priority pipeline) */
    &pass_dot_dimension_sorter,
    &pass_dot_decomposer,
    &pass_batched_gather_scatter,
    &pass_topk_specializer,
    &pass_sort_rewriter,
    &pass_stable_sort_expander,
    &pass_dot_strength_reduction,
    &pass_dot_merger,
    &pass_transpose_folding,
    &pass_simplification_2,
    &pass_conv_rewriter,
    &pass_cudnn_fused_conv,
    &pass_reshape_mover_after_conv,
    &pass_simplify_after_conv,
    &pass_layout_assignment,
    &pass_move_copy_to_users,
    &pass_layout_normalization,
    &pass_dot_dimension_merger,
    &pass_gemv_rewriter,
    &pass_splitk_rewriter,
    &pass_gemm_fusion,
    &pass_hoist_fused_bitcasts,
    /* fusion (the duplicating instruction-fusion run shares its name: pipelines only) */
    &pass_instruction_fusion,
    &pass_fusion_merger,
    &pass_multi_output_fusion,
    &pass_horizontal_fusion,
    &pass_softmax_rewriter,
    &pass_sort_iota_fusion,
    &pass_priority_fusion,
    &pass_fusion_cse,
    &pass_fusion_dce,
    &pass_while_loop_unroll,
};

const Pass *pass_lookup(const char *name) {
  if (!name) return NULL;
  for (size_t k = 0; k < sizeof registry / sizeof registry[0]; k++)
    if (strcmp(registry[k]->name, name) == 0) return registry[k];
  return NULL;
}

int pass_count(void) { return (int)(sizeof registry / sizeof registry[0]); }
const Pass *pass_at(int i) { return i >= 0 && i < pass_count() ? registry[i] : NULL; }

/* The passes that drop a rounding step on purpose, as XLA does where excess precision is allowed
 * (xla_allow_excess_precision, on by default): float-normalization-bf16 computes in f32 what the
 * GPU has no bf16 instruction for (a reduction's sum accumulates in f32, not rounded to bf16 at
 * each step), simplify-fp-conversions reads f32 where the program rounded it to bf16 or f16 and
 * back. */
bool pass_excess_precision(const Pass *p) { return p == &pass_simplify_fp_conversions || p == &pass_float_normalization; }

/* ---------- the pipelines ---------- */

/* classic: XLA GPU as the paper saw it (2017 - early 2024). */
static const Pass *const classic_passes[] = {
    /* simplification (call-inliner, algsimp, constant-folding, while-loop-simplifier, cse, dce,
       tuple-simplifier) */
    &pass_call_inliner,
    &pass_algsimp,
    &pass_constant_folding,
    &pass_while_simplifier,
    &pass_cse,
    &pass_dce,
    &pass_tuple_simplifier,
    /* fusion (instruction-fusion twice, fusion-merger, multi_output_fusion,
       horizontal-loop-fusion), after unrolling loops when `set unroll N` asks */
    &pass_while_loop_unroll,
    &pass_instruction_fusion,
    &pass_instruction_fusion_dup,
    &pass_fusion_merger,
    &pass_multi_output_fusion,
    /* XLA repeats the four until nothing changes; a second round catches what the first made
       possible (a fusion left with one user after multi-output fusion merges into it) */
    &pass_instruction_fusion_round2,
    &pass_instruction_fusion_dup_round2,
    &pass_fusion_merger_round2,
    &pass_multi_output_fusion_round2,
    &pass_horizontal_fusion,
};

/* One round of XLA:GPU's simplification passes before fusion, in its order (XLA repeats the round
 * until nothing changes: see simplification-fixpoint). */
#define SIMPLIFICATION_ROUND                                                                       \
  &pass_dot_strength_reduction, &pass_algsimp_current, &pass_tuple_simplifier, &pass_while_constant_sinking,                     \
      &pass_while_simplifier_current, &pass_slice_sinker, &pass_reshape_mover,                     \
      &pass_constant_folding_current, &pass_conditional_simplifier, &pass_cse_current, &pass_dce

/* XLA runs its simplification round in an HloPassFix: again and again until a whole round changes
 * nothing (at most 25 times). The priority pipeline shows the first two rounds pass by pass;
 * simplification-fixpoint then runs the round in place until it changes nothing (a round that
 * changes nothing ends it), each decision recorded under the pass that made it. On the corpus XLA
 * ran eight rounds over Gemma 3 (its dump: reshape-mover changed the module in rounds one to six). */
static const Pass *const simplification_round[] = {SIMPLIFICATION_ROUND};
enum { SIMPLIFICATION_MAX_ROUNDS = 25 };

/* Runs the passes of `round` (n of them) in place until a whole round changes nothing, rounds
 * `first` to SIMPLIFICATION_MAX_ROUNDS, each decision under the pass that made it; a round that
 * changed something is reported under the stage's own pass. */
static bool run_fixpoint(IrModule *m, PassContext *cx, const Pass *const *round, int n, int first, const char *what,
                         bool *changed) {
  const char *own = cx->pass;
  *changed = false;
  for (int r = first; r <= SIMPLIFICATION_MAX_ROUNDS; r++) {
    bool round_changed = false;
    for (int q = 0; q < n; q++) {
      const Pass *p = round[q];
      if (pass_interrupted(cx)) break;
      if (pass_settings_is_disabled(cx->settings, p->name)) continue;
      bool ch = false;
      cx->pass = p->name;
      bool ok = p->run(m, cx, &ch);
      cx->pass = own;
      if (!ok) return false;
      round_changed |= ch;
    }
    if (pass_interrupted(cx)) return true;
    if (!round_changed) break;
    *changed = true;
    PassDecision d = {.pass = own, .stage = cx->stage, .action = "repeat", .accepted = true};
    pass_emit(cx->sink, &d, "%s round %d changed the module: XLA runs the round again until one changes nothing", what, r);
  }
  return true;
}

static bool run_simplification_fixpoint(IrModule *m, PassContext *cx, bool *changed) {
  return run_fixpoint(m, cx, simplification_round, (int)(sizeof simplification_round / sizeof simplification_round[0]), 3,
                      "simplification", changed);
}

const Pass pass_simplification_fixpoint = {
    "simplification-fixpoint",
    "the simplification round again and again until it changes nothing (XLA's HloPassFix), after the first two",
    run_simplification_fixpoint};

/* XLA:GPU's "simplification-2" (after dot-merger and transpose-folding, before layout assignment):
 * ConvertMover and algsimp in an HloPassFix, "as a compromise" with reshape-mover, which the first
 * simplification fixpoint ran to its end. Both run in place until a round changes nothing. */
static const Pass *const simplification_2_round[] = {&pass_convert_mover, &pass_algsimp_current};

static bool run_simplification_2(IrModule *m, PassContext *cx, bool *changed) {
  return run_fixpoint(m, cx, simplification_2_round, 2, 1, "simplification-2", changed);
}

const Pass pass_simplification_2 = {
    "simplification-2",
    "convert-mover and algsimp again and again until they change nothing (XLA's simplification-2 pipeline)",
    run_simplification_2};

/* The end of XLA:GPU's conv_canonicalization pipeline, after the cuDNN rewrites: reshape-mover and
 * algsimp until they change nothing (reshape_mover_after_conv_canonicalization), convert-mover and
 * algsimp until they change nothing (simplify_after_conv_canonicalization), then constant folding:
 * a convert of a constant the movers left (a pad value) becomes a constant. */
static const Pass *const after_conv_reshape_round[] = {&pass_reshape_mover, &pass_algsimp_current};

static bool run_after_conv_reshape(IrModule *m, PassContext *cx, bool *changed) {
  return run_fixpoint(m, cx, after_conv_reshape_round, 2, 1, "reshape_mover_after_conv_canonicalization", changed);
}

const Pass pass_reshape_mover_after_conv = {
    "reshape_mover_after_conv_canonicalization",
    "reshape-mover and algsimp until they change nothing, after the cuDNN rewrites (XLA's conv_canonicalization)",
    run_after_conv_reshape};

static bool run_after_conv_simplify(IrModule *m, PassContext *cx, bool *changed) {
  return run_fixpoint(m, cx, simplification_2_round, 2, 1, "simplify_after_conv_canonicalization", changed);
}

const Pass pass_simplify_after_conv = {
    "simplify_after_conv_canonicalization",
    "convert-mover and algsimp until they change nothing, after the cuDNN rewrites (XLA's conv_canonicalization)",
    run_after_conv_simplify};

/* priority: XLA GPU since 2024. */
static const Pass *const priority_passes[] = {
    /* simplification, in the order of XLA:GPU's passes before fusion (XLA canonicalizes dots
       first); XLA repeats its simplification passes until nothing changes: two rounds shown pass
       by pass, then simplification-fixpoint for the rest */
    &pass_call_inliner,
    &pass_sharding_remover,
    &pass_batched_gather_scatter,
    &pass_dot_dimension_sorter,
    &pass_dot_decomposer,
    &pass_topk_specializer,
    /* XLA's SortRewriter runs before the comparison expander rewrites the comparators it reads,
       StableSortExpander after both */
    &pass_sort_rewriter,
    &pass_comparison_expander,
    &pass_scatter_expander,
    /* long cumulative reduce-windows in blocks, rank 1 to rank 2 (XLA runs it here, until it
       changes nothing) */
    &pass_reduce_window_rewriter,
    &pass_stable_sort_expander,
    SIMPLIFICATION_ROUND,
    SIMPLIFICATION_ROUND,
    &pass_simplification_fixpoint,
    /* XLA:GPU's library and layout rewrites: merged dots, cuDNN convolutions, layouts, bitcasts, Triton GEMMs */
    &pass_dot_merger,
    &pass_transpose_folding,
    &pass_simplification_2,
    &pass_conv_rewriter,
    &pass_cudnn_fused_conv,
    &pass_reshape_mover_after_conv,
    &pass_simplify_after_conv,
    &pass_constant_folding_current,
    &pass_layout_assignment,
    &pass_move_copy_to_users,
    &pass_layout_normalization,
    &pass_algsimp_post_layout,
    &pass_dot_dimension_merger,
    &pass_cse_current,
    &pass_gemv_rewriter,
    &pass_splitk_rewriter,
    &pass_gemm_fusion,
    &pass_hoist_fused_bitcasts,
    /* after layout assignment, XLA makes normalization diamonds Triton fusions (Ampere+), splits
       reductions too large for one race-free kernel, and computes in f32 what the GPU has no bf16
       instruction for; then fusion, after unrolling loops when `set unroll N` asks:
       XLA's fusion pipeline (FusionPipeline in fusion_pipeline.cc) runs priority-fusion, then cse
       and dce, then multi_output_fusion, then cse and dce again */
    &pass_while_loop_unroll,
    &pass_softmax_rewriter,
    &pass_tree_reduction,
    /* XLA runs its simplifier once more between float normalization and simplify-fp-conversions
       (post-layout_assignment: a convert float normalization put after a broadcast of a scalar
       moves onto the scalar, so the bf16 softmaxes of one array on sm80 each convert their own
       scale). fxplain leaves it out for now: with it, `run --check` of Gemma 3 on the default
       profile fails at the last stage (2% in one bf16 element). Without it the same check fails
       at float normalization's own stage, traced there: an RMS norm's f32 sum, 3e-6 apart on the
       CPU backend and in the interpreter (summation order), rounds to bf16 values one ulp apart,
       which the layers after it grow to 3% in a logit; simplify-fp-conversions then removes that
       rounding, and with the simplifier before it not every such rounding goes. */
    &pass_float_normalization,
    &pass_simplify_fp_conversions,
    &pass_cse_current,
    &pass_sort_iota_fusion,
    &pass_priority_fusion,
    &pass_fusion_cse,
    &pass_fusion_dce,
    &pass_multi_output_fusion_current,
    &pass_fusion_cse,
    &pass_fusion_dce,
};

#define PIPELINE(name, desc, list) {name, desc, (int)(sizeof list / sizeof list[0]), list}
static const Pipeline pipelines[] = {
    PIPELINE("classic", "XLA GPU's rule-based fusion as the paper describes it (2017 - early 2024)",
             classic_passes),
    PIPELINE("priority", "XLA GPU's cost-model-driven priority fusion (since 2024)", priority_passes),
};

const Pipeline *pipeline_lookup(const char *name) {
  if (!name) return NULL;
  for (size_t k = 0; k < sizeof pipelines / sizeof pipelines[0]; k++)
    if (strcmp(pipelines[k].name, name) == 0) return &pipelines[k];
  return NULL;
}

int pipeline_count(void) { return (int)(sizeof pipelines / sizeof pipelines[0]); }
const Pipeline *pipeline_at(int i) { return i >= 0 && i < pipeline_count() ? &pipelines[i] : NULL; }

/* ---------- running one pass as a stage ---------- */

bool pass_run_stage(const Pass *p, const IrModule *in, PassContext *cx, IrModule **out, bool *changed) {
  *out = NULL;
  *changed = false;
  /* The pass edits a copy; unchanged names, shapes and literals stay shared with `in`. */
  IrModule *work = ir_module_snapshot(in);
  if (!work) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory copying the module", p->name);
  cx->pass = p->name;
  bool ch = false;
  bool ran = !pass_interrupted(cx) && p->run(work, cx, &ch);
  if (pass_interrupted(cx)) {
    /* Stopped between two steps (or never started): the half-done copy goes. */
    ir_module_free(work);
    fx_error_clear(cx->err);
    return fx_error_set(cx->err, NULL, 0, 0, "interrupted: %s was stopped before it finished", p->name);
  }
  if (!ran) {
    ir_module_free(work);
    if (!cx->err->set) fx_error_set(cx->err, NULL, 0, 0, "%s failed", p->name);
    return false;
  }
  if (!ch) {
    /* Nothing changed: the stage shares the previous snapshot. */
    ir_module_free(work);
    return true;
  }
  FxError verr;
  fx_error_clear(&verr);
  if (!ir_verify(work, &verr)) {
    ir_module_free(work);
    return fx_error_set(cx->err, verr.file[0] ? verr.file : NULL, verr.line, verr.col,
                        "%s left a module that does not verify: %s", p->name, verr.msg);
  }
  *out = work;
  *changed = true;
  return true;
}
