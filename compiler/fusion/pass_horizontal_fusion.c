/* pass_horizontal_fusion.c — XLA's horizontal-loop-fusion (GPU, 2021; removed from XLA in 2025):
 * many small independent loop fusions become one launch.
 *
 * The optimizer-update pattern: a consumer (typically the output tuple) reads many small loop
 * fusions that share nothing. For each consumer, its operands that are candidates — loop
 * fusions with one output, at most 30 instructions, fewer than 128 x 2048 output elements, no
 * parameter shared with another candidate — are grouped by element type, at most 32 per group
 * and at most 4,000 bytes of kernel parameters (8 bytes per buffer), and each group becomes one
 * kernel with several outputs (shapes may differ). Candidates that fall out are reported with
 * their reason; each group is reported once per member with action "horizontal". */
#include <string.h>

#include "fusion_build.h"
#include "fusion_rules.h"
#include "../passes/passes.h"
#include "reachability.h"

#define HZ_MAX_INSTRS 30
#define HZ_MAX_ELEMENTS (128 * 2048)
#define HZ_MAX_BATCH 32
#define HZ_MAX_PARAM_BYTES 4000

/* Why a fusion is not a horizontal candidate; NULL when it is. */
static bool candidate(const IrInstr *f, FusionVerdict *v) {
  memset(v, 0, sizeof *v);
  const char *k = ir_fusion_kind(f);
  if (f->op != IR_OP_FUSION || !k || strcmp(k, "kLoop") != 0)
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is not a loop fusion", f->name);
  if (f->shape.type == IR_TUPLE)
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s already has several outputs", f->name);
  int size = fusion_body_size(f);
  if (size > HZ_MAX_INSTRS) {
    fusion_verdict_metric(v, "instructions", size);
    fusion_verdict_metric(v, "limit", HZ_MAX_INSTRS);
    return fusion_refuse(v, FR_IR_SIZE,
                         "%s has %d instructions; horizontal fusion takes only small kernels (at most %d)",
                         f->name, size, HZ_MAX_INSTRS);
  }
  int64_t el = ir_shape_elements(&f->shape);
  if (el >= HZ_MAX_ELEMENTS) {
    fusion_verdict_metric(v, "elements", (double)el);
    return fusion_refuse(v, FR_SHAPE_MISMATCH,
                         "%s writes %lld elements; horizontal fusion takes only kernels under %d elements",
                         f->name, (long long)el, HZ_MAX_ELEMENTS);
  }
  return true;
}

static bool shares_operand(const IrInstr *a, const IrInstr *b) {
  for (int i = 0; i < a->noperands; i++)
    for (int j = 0; j < b->noperands; j++)
      if (a->operands[i] == b->operands[j]) return true;
  return false;
}

static bool hz_consumer(Reach *r, IrInstr *consumer, PassContext *cx, int *count) {
  IrInstr *cand[256];
  int n = 0;
  for (int o = 0; o < consumer->noperands && n < 256; o++) {
    IrInstr *f = consumer->operands[o];
    if (!f || f->op != IR_OP_FUSION || f->parent != consumer->parent) continue;
    bool seen = false;
    for (int q = 0; q < n; q++) seen = seen || cand[q] == f;
    if (!seen) cand[n++] = f;
  }
  if (n < 2) return true;
  /* Filter, recording why each non-candidate is left out. */
  int m = 0;
  for (int k = 0; k < n; k++) {
    FusionVerdict v;
    if (candidate(cand[k], &v)) cand[m++] = cand[k];
    else fusion_verdict_emit(cx, "horizontal", cand[k]->name, consumer->name, NULL, &v);
  }
  n = m;
  bool *used = fx_calloc((size_t)(n ? n : 1), sizeof(bool));
  if (!used) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  for (int k = 0; k < n; k++) {
    if (used[k]) continue;
    IrInstr *group[HZ_MAX_BATCH];
    int ng = 0, params = 0;
    group[ng++] = cand[k];
    params = (cand[k]->noperands + 1) * 8;
    used[k] = true;
    for (int j = k + 1; j < n && ng < HZ_MAX_BATCH; j++) {
      if (used[j]) continue;
      FusionVerdict v;
      memset(&v, 0, sizeof v);
      IrInstr *g = cand[j];
      bool ok = true;
      if (g->shape.type != group[0]->shape.type) {
        fusion_refuse(&v, FR_SHAPE_MISMATCH, "%s writes %s and %s writes %s: one horizontal kernel has one element type",
                      g->name, ir_type_name(g->shape.type), group[0]->name, ir_type_name(group[0]->shape.type));
        ok = false;
      }
      for (int q = 0; q < ng && ok; q++) {
        if (shares_operand(g, group[q])) {
          fusion_refuse(&v, FR_NOT_FUSIBLE, "%s and %s read the same buffer; horizontal fusion takes independent kernels",
                        g->name, group[q]->name);
          ok = false;
        } else if (reach_path(r, g, group[q], false) || reach_path(r, group[q], g, false)) {
          fusion_refuse(&v, FR_CYCLE, "%s and %s depend on each other; fusing them would introduce a cycle", g->name,
                        group[q]->name);
          ok = false;
        }
      }
      int p2 = params + (g->noperands + 1) * 8;
      if (ok && p2 > HZ_MAX_PARAM_BYTES) {
        fusion_verdict_metric(&v, "param_bytes", p2);
        fusion_verdict_metric(&v, "limit", HZ_MAX_PARAM_BYTES);
        fusion_refuse(&v, FR_OPERAND_BUDGET, "adding %s would pass %d bytes of kernel parameters; limit %d", g->name, p2,
                      HZ_MAX_PARAM_BYTES);
        ok = false;
      }
      if (!ok) {
        fusion_verdict_emit(cx, "horizontal", g->name, group[0]->name, NULL, &v);
        continue;
      }
      params = p2;
      group[ng++] = g;
      used[j] = true;
    }
    if (ng < 2) continue;
    char names[HZ_MAX_BATCH][128];
    for (int q = 0; q < ng; q++) snprintf(names[q], sizeof names[q], "%s", group[q]->name);
    IrInstr *f = group[0];
    for (int q = 1; q < ng; q++) {
      f = fusion_merge_siblings(f, group[q], "kLoop");
      if (!f) {
        fx_free(used);
        return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
      }
      reach_update(r, f);
    }
    for (int q = 0; q < ng; q++) {
      FusionVerdict v;
      memset(&v, 0, sizeof v);
      fusion_verdict_metric(&v, "kernels", ng);
      fusion_verdict_ok(&v, "%d small independent loop fusions read by %s launch as one kernel, %s", ng,
                        consumer->name, f->name);
      fusion_verdict_emit(cx, "horizontal", names[q], consumer->name, f->name, &v);
    }
    (*count)++;
  }
  fx_free(used);
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (fusion_pass_disabled(cx, "horizontal-loop-fusion")) return true;
  IrComputation *comps[1024];
  int n = fusion_control_computations(m, comps, 1024);
  int count = 0;
  for (int k = 0; k < n; k++) {
    IrComputation *c = comps[k];
    int before = count;
    /* Consumers from the root back, over a snapshot (merging edits the order). */
    int ni = c->ninstrs;
    IrInstr **order = fx_malloc(sizeof(IrInstr *) * (size_t)(ni ? ni : 1));
    if (!order) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    memcpy(order, c->instrs, sizeof(IrInstr *) * (size_t)ni);
    Reach reach;
    reach_init(&reach, c);
    for (int j = ni - 1; j >= 0; j--) {
      IrInstr *consumer = order[j];
      if (consumer->dead || consumer->parent != c) continue;
      if (!hz_consumer(&reach, consumer, cx, &count)) {
        reach_free(&reach);
        fx_free(order);
        return false;
      }
    }
    reach_free(&reach);
    fx_free(order);
    if (count > before) ir_computation_sort(c);
  }
  *changed = count > 0;
  return true;
}

const Pass pass_horizontal_fusion = {
    "horizontal-loop-fusion",
    "launch many small independent loop fusions as one kernel (the optimizer-update pattern)",
    run,
};
