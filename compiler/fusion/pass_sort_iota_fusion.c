/* pass_sort_iota_fusion.c — sort-iota-fusion: XLA:GPU's SortIotaFusion (sort_iota_fusion.cc), the
 * first pass of its fusion pipeline, before priority-fusion. A sort that reads an iota (an argsort's
 * indices, stable-sort-expander's tie-breaker) becomes a kCustom fusion of the sort with its iotas,
 * so the sort kernel computes the indices itself instead of reading them from memory:
 *
 *   sort(x, iota(s32[1024,512], dim 1), ...)  ->  fusion(x), kind=kCustom { sort(param_0, iota, ...) }
 *
 * Each distinct iota operand is fused (an iota with other users is copied in, as any producer). The
 * fusion is opaque to priority-fusion afterwards, like every kCustom fusion. Fusion bodies are left
 * alone; GPU devices only. */
#include <stdio.h>
#include <string.h>

#include "../passes/passes.h"
#include "../passes/simplify.h"
#include "fusion_build.h"

static bool fuse_iotas(IrInstr *sort, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  IrInstr *iotas[64];
  int n = 0;
  for (int k = 0; k < sort->noperands && n < 64; k++) {
    IrInstr *o = sort->operands[k];
    bool seen = false;
    for (int j = 0; j < n; j++) seen |= iotas[j] == o;
    if (o->op == IR_OP_IOTA && !seen) iotas[n++] = o;
  }
  if (n == 0) return true;
  char sname[256], first[256], names[512];
  snprintf(sname, sizeof sname, "%s", sort->name);
  snprintf(first, sizeof first, "%s", iotas[0]->name);
  size_t len = 0;
  names[0] = 0;
  for (int j = 0; j < n && len < sizeof names - 1; j++)
    len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", j ? ", " : "", iotas[j]->name);
  IrInstr *f = fusion_wrap(sort, "kCustom");
  for (int j = 0; f && j < n; j++) f = fusion_fuse(f, iotas[j]);
  if (!f) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  ir_attr_set_text(f, "kind", "kCustom");
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "fuse", .producer = first,
                    .consumer = sname, .result = f->name, .accepted = true};
  pass_emit(cx->sink, &d,
            "%s and the iota%s it reads (%s) become %s, a kCustom fusion: the sort kernel computes the indices "
            "instead of reading them (XLA:GPU's SortIotaFusion)",
            sname, n == 1 ? "" : "s", names, f->name);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true;
  return simp_rewrite_each(m, cx, IR_OP_SORT, fuse_iotas, NULL, true, changed);
}

const Pass pass_sort_iota_fusion = {
    "sort-iota-fusion",
    "a sort that reads an iota becomes a kCustom fusion computing the iota itself (XLA:GPU's SortIotaFusion)",
    run,
};
