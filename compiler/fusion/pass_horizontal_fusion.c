/* pass_horizontal_fusion.c — XLA's horizontal-loop-fusion (GPU, 2021; removed from XLA in 2025):
 * many small independent loop fusions become one launch.
 *
 * The optimizer-update pattern: a consumer (typically the output tuple) reads many small kernels
 * that share nothing. Follows XLA's HorizontalLoopFusionImpl: consumers of the entry computation
 * from uses to defs; for each, the kernels behind its operands (through get-tuple-elements) that
 * are candidates (IsFusibleCandidate: an elementwise op, or a loop fusion whose outputs have one
 * element type) whose only users are the consumer or the root (IsConsumerTheOnlyNonRootUser),
 * small (IsProfitableFusionCandidate: at most 128 x 2048 output elements and 30 fused
 * instructions), row-major, and reading no parameter another candidate reads; sorted by element
 * type, output count and instruction count, and grouped in runs of the same three, at most 32 per
 * group and under 4,000 bytes of kernel parameters (8 bytes per buffer, counted as XLA does). Each
 * group of two or more becomes one kernel with all their outputs (an elementwise op is first
 * wrapped in a loop fusion). Candidates that fall out are reported with their reason; each group
 * is reported once per member with action "horizontal". */
#include <string.h>

#include "fusion_build.h"
#include "fusion_rules.h"
#include "../passes/passes.h"

#define HZ_MAX_INSTRS 30             /* kInstrCountThreshold */
#define HZ_MAX_ELEMENTS (128 * 2048) /* kShapeThreshold */
#define HZ_MAX_BATCH 32              /* kMaxFusionBatchSize */
#define HZ_MAX_PARAM_BYTES 4000      /* kMaxCudaParamSize */

static bool is_loop_fusion(const IrInstr *i) {
  const char *k = i->op == IR_OP_FUSION ? ir_fusion_kind(i) : NULL;
  return k && strcmp(k, "kLoop") == 0;
}

/* GetOutputsOfFusible. */
static int outputs_of(const IrInstr *i, const IrInstr **out, int max) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc || !fc->root) {
    out[0] = i;
    return 1;
  }
  if (fc->root->op != IR_OP_TUPLE) {
    out[0] = fc->root;
    return 1;
  }
  int n = 0;
  for (int k = 0; k < fc->root->noperands && n < max; k++) out[n++] = fc->root->operands[k];
  if (n == 0) out[n++] = fc->root;
  return n;
}

/* GetUniqueOutputTypeOfFusible, GetOutputSizeOfFusible, GetInstrCountOfFusible (XLA's
 * fused_instruction_count: parameters and the root tuple included). */
static IrType output_type(const IrInstr *i) {
  const IrInstr *o[1] = {i};
  outputs_of(i, o, 1);
  return o[0]->shape.type;
}
static int output_count(const IrInstr *i) {
  const IrInstr *o[256];
  return outputs_of(i, o, 256);
}
static int instr_count(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc) return 1;
  int n = 0;
  for (int k = 0; k < fc->ninstrs; k++) n += !fc->instrs[k]->dead;
  return n;
}

/* IsFusibleCandidate: an elementwise op with operands, or a loop fusion whose outputs share one
 * element type (they are concatenated per type). */
static bool fusible_candidate(const IrInstr *i) {
  if (i->op != IR_OP_FUSION && ir_op_is_elementwise(i->op) && i->noperands > 0) return true;
  if (!is_loop_fusion(i)) return false;
  const IrInstr *o[256];
  int n = outputs_of(i, o, 256);
  for (int k = 1; k < n; k++)
    if (o[k]->shape.type != o[0]->shape.type) return false;
  return true;
}

/* IsConsumerTheOnlyNonRootUser: every user (through get-tuple-elements) is the consumer or the
 * computation's root; otherwise fusing could create a cycle. */
static bool only_non_root_user(const IrInstr *i, const IrInstr *consumer) {
  for (int u = 0; u < i->nusers; u++) {
    const IrInstr *x = i->users[u];
    if (x->op == IR_OP_GET_TUPLE_ELEMENT) {
      if (!only_non_root_user(x, consumer)) return false;
    } else if (x != consumer && !x->is_root) {
      return false;
    }
  }
  return true;
}

/* IsProfitableFusionCandidate: small enough that its launch, not its work, costs. */
static bool profitable(const IrInstr *i, FusionVerdict *v) {
  const IrInstr *o[1] = {i};
  outputs_of(i, o, 1);
  int64_t el = ir_shape_elements(&o[0]->shape);
  if (el > HZ_MAX_ELEMENTS) {
    fusion_verdict_metric(v, "elements", (double)el);
    return fusion_refuse(v, FR_SHAPE_MISMATCH,
                         "%s writes %lld elements; horizontal fusion takes only kernels of at most %d, whose launch "
                         "costs more than their work",
                         i->name, (long long)el, HZ_MAX_ELEMENTS);
  }
  int n = instr_count(i);
  if (i->op == IR_OP_FUSION && n > HZ_MAX_INSTRS) {
    fusion_verdict_metric(v, "instructions", n);
    fusion_verdict_metric(v, "limit", HZ_MAX_INSTRS);
    return fusion_refuse(v, FR_IR_SIZE,
                         "%s has %d fused instructions; horizontal fusion takes only small kernels (at most %d)", i->name,
                         n, HZ_MAX_INSTRS);
  }
  return true;
}

/* HasOnlyRowMajorLayout. */
static bool row_major(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc) return !ir_shape_is_array(&i->shape) || ir_shape_default_layout(&i->shape);
  for (int k = 0; k < fc->ninstrs; k++)
    if (ir_shape_is_array(&fc->instrs[k]->shape) && !ir_shape_default_layout(&fc->instrs[k]->shape)) return false;
  return true;
}

/* AnyOpndIsParamSharedAmongFusions: a parameter i reads that another candidate reads too. */
static const IrInstr *shared_param(const IrInstr *i, IrInstr **cands, int n) {
  for (int o = 0; o < i->noperands; o++) {
    const IrInstr *p = i->operands[o];
    if (p->op != IR_OP_PARAMETER) continue;
    for (int u = 0; u < p->nusers; u++)
      for (int k = 0; k < n; k++)
        if (p->users[u] != i && p->users[u] == cands[k]) return cands[k];
  }
  return NULL;
}

/* The kernel behind an operand: through get-tuple-elements (LatestNonGteAncestor). */
static IrInstr *non_gte_ancestor(IrInstr *x) {
  while (x->op == IR_OP_GET_TUPLE_ELEMENT && x->noperands == 1) x = x->operands[0];
  return x;
}

static bool before(const IrInstr *a, const IrInstr *b) {
  if (output_type(a) != output_type(b)) return output_type(a) < output_type(b);
  if (output_count(a) != output_count(b)) return output_count(a) < output_count(b);
  return instr_count(a) < instr_count(b);
}

static bool hz_consumer(IrInstr *consumer, PassContext *cx, int *count) {
  IrInstr *all[256], *cand[256];
  int nall = 0, n = 0;
  for (int o = 0; o < consumer->noperands && nall < 256; o++) {
    IrInstr *f = non_gte_ancestor(consumer->operands[o]);
    if (f->parent != consumer->parent || !fusible_candidate(f)) continue;
    bool seen = false;
    for (int q = 0; q < nall && !seen; q++) seen = all[q] == f;
    if (!seen) all[nall++] = f;
  }
  if (nall < 2) return true;
  /* Filter, recording why each candidate is left out. */
  for (int k = 0; k < nall; k++) {
    FusionVerdict v;
    memset(&v, 0, sizeof v);
    IrInstr *f = all[k];
    const IrInstr *other = NULL;
    bool ok = false;
    if (!only_non_root_user(f, consumer))
      fusion_refuse(&v, FR_CYCLE, "%s has users other than %s and the root; fusing it horizontally could create a cycle",
                    f->name, consumer->name);
    else if (!profitable(f, &v))
      ;
    else if (!row_major(f))
      fusion_refuse(&v, FR_SHAPE_MISMATCH, "%s has a layout that is not row-major; horizontal fusion takes row-major "
                    "kernels only (mixed layouts read uncoalesced)", f->name);
    else if ((other = shared_param(f, all, nall)) != NULL)
      fusion_refuse(&v, FR_NOT_FUSIBLE, "%s and %s read the same parameter; XLA keeps them apart (it could not alias the "
                    "horizontal kernel's buffers)", f->name, other->name);
    else
      ok = true;
    if (ok) cand[n++] = f;
    else fusion_verdict_emit(cx, "horizontal", f->name, consumer->name, NULL, &v);
  }
  /* Stable sort by element type, output count, instruction count. */
  for (int i = 1; i < n; i++) {
    IrInstr *x = cand[i];
    int j = i - 1;
    while (j >= 0 && before(x, cand[j])) {
      cand[j + 1] = cand[j];
      j--;
    }
    cand[j + 1] = x;
  }
  /* GetNextSpanOfFusions: runs of one type, output count and instruction count. */
  for (int left = 0; left < n;) {
    int right = left + 1;
    size_t io = 0;
    FusionVerdict stop;
    memset(&stop, 0, sizeof stop);
    bool stopped = false;
    for (; right < n; right++) {
      const IrInstr *a = cand[left], *b = cand[right];
      if (output_type(a) != output_type(b)) {
        fusion_refuse(&stop, FR_SHAPE_MISMATCH, "%s writes %s and %s writes %s: one horizontal kernel concatenates one "
                      "element type", b->name, ir_type_name(output_type(b)), a->name, ir_type_name(output_type(a)));
        break;
      }
      if (output_count(a) != output_count(b)) {
        fusion_refuse(&stop, FR_SHAPE_MISMATCH, "%s has %d outputs and %s %d: a horizontal kernel's members have as many "
                      "outputs each", b->name, output_count(b), a->name, output_count(a));
        break;
      }
      if (instr_count(a) != instr_count(b)) {
        fusion_refuse(&stop, FR_SHAPE_MISMATCH, "%s has %d fused instructions and %s %d: XLA groups kernels of one size "
                      "(others would diverge)", b->name, instr_count(b), a->name, instr_count(a));
        break;
      }
      if (right - left >= HZ_MAX_BATCH) {
        fusion_refuse(&stop, FR_OPERAND_BUDGET, "%s would be kernel %d of one horizontal group; limit %d", b->name,
                      right - left + 1, HZ_MAX_BATCH);
        break;
      }
      io += (size_t)b->noperands + (size_t)output_count(b);
      if (io * 8 >= HZ_MAX_PARAM_BYTES) {
        fusion_verdict_metric(&stop, "param_bytes", (double)(io * 8));
        fusion_verdict_metric(&stop, "limit", HZ_MAX_PARAM_BYTES);
        fusion_refuse(&stop, FR_OPERAND_BUDGET, "adding %s would pass %zu bytes of kernel parameters; limit %d", b->name,
                      io * 8, HZ_MAX_PARAM_BYTES);
        break;
      }
    }
    stopped = right < n;
    int ng = right - left;
    if (stopped && ng >= 2) fusion_verdict_emit(cx, "horizontal", cand[right]->name, cand[left]->name, NULL, &stop);
    if (ng < 2) {
      left = right;
      continue;
    }
    char names[HZ_MAX_BATCH][128];
    IrInstr *group[HZ_MAX_BATCH];
    for (int q = 0; q < ng; q++) {
      snprintf(names[q], sizeof names[q], "%s", cand[left + q]->name);
      group[q] = cand[left + q]->op == IR_OP_FUSION ? cand[left + q] : fusion_wrap(cand[left + q], "kLoop");
      if (!group[q]) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    }
    IrInstr *f = group[0];
    for (int q = 1; q < ng; q++) {
      f = fusion_merge_siblings(f, group[q], "kLoop");
      if (!f) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    }
    for (int q = 0; q < ng; q++) {
      FusionVerdict v;
      memset(&v, 0, sizeof v);
      fusion_verdict_metric(&v, "kernels", ng);
      fusion_verdict_ok(&v, "%d small independent kernels read by %s launch as one kernel, %s", ng, consumer->name,
                        f->name);
      fusion_verdict_emit(cx, "horizontal", names[q], consumer->name, f->name, &v);
    }
    (*count)++;
    left = right;
  }
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (fusion_pass_disabled(cx, "horizontal-loop-fusion")) return true;
  /* XLA runs it on the entry computation only ("run on the entry computation is actually
   * enough"), consumers from uses to defs over a snapshot (fusing edits the order). */
  IrComputation *c = m->entry;
  if (!c) return true;
  int count = 0, ni = c->ninstrs;
  IrInstr **order = fx_malloc(sizeof(IrInstr *) * (size_t)(ni ? ni : 1));
  if (!order) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  memcpy(order, c->instrs, sizeof(IrInstr *) * (size_t)ni);
  bool ok = true;
  for (int j = ni - 1; j >= 0 && ok; j--) {
    IrInstr *consumer = order[j];
    if (consumer->dead || consumer->parent != c) continue;
    ok = hz_consumer(consumer, cx, &count);
  }
  fx_free(order);
  if (count) ir_computation_sort(c);
  *changed = count > 0;
  return ok;
}

const Pass pass_horizontal_fusion = {
    "horizontal-loop-fusion",
    "launch many small independent loop fusions as one kernel (the optimizer-update pattern)",
    run,
};
