/* pass_dot_merger.c — XLA's DotMerger (dot_merger.cc, in XLA:GPU's simplification pipeline with
 * xla_gpu_dot_merger_threshold_mb = 32): two independent dots that read one operand become one
 * GEMM over the other operands concatenated, and slices of its result, so a layer's projections
 * of one activation (query, key and value; an MLP's gate and up) launch one kernel:
 *
 *   dot(x, wq), dot(x, wk)  ->  d = dot(x, concatenate(wq, wk)); slice(d) [0:n_q]; slice(d) [n_q:]
 *
 * When (TryMergeSameOperand): the two share their left or their right operand (the same
 * instruction); the operand and result element types, the dimension numbers and the operand
 * precisions are the same; the operands they do not share have one non-contracting dimension
 * (concatenated along it) and the same layout; neither dot depends on the other; and at least one
 * of the two is "smallish": its result and operands together at most 32 MiB
 * (is_merge_candidate). Pairs are tried within each set of dots reading one instruction, in
 * program order, and a merged dot goes on merging with the next (a chain of concatenates, which
 * the simplifier flattens).
 *
 * Not done: XLA's newer TryMergeLHSWithRHSOperand (a shared operand read as the left of one dot
 * and, transposed, as the right of the other). Fused computations are left alone. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

#define MERGE_MAX_BYTES (INT64_C(32) << 20) /* xla_gpu_dot_merger_threshold_mb */

static bool same_list(const int64_t *a, int na, const int64_t *b, int nb) {
  if (na != nb) return false;
  for (int k = 0; k < na; k++)
    if (a[k] != b[k]) return false;
  return true;
}

static bool same_text(const IrInstr *a, const IrInstr *b, const char *key) {
  const char *x = ir_attr_text(a, key), *y = ir_attr_text(b, key);
  return (!x && !y) || (x && y && strcmp(x, y) == 0);
}

/* is_merge_candidate */
static bool smallish(const IrInstr *d) {
  int64_t bytes = ir_shape_bytes(&d->shape);
  for (int k = 0; k < d->noperands; k++) bytes += ir_shape_bytes(&d->operands[k]->shape);
  return bytes <= MERGE_MAX_BYTES;
}

/* Whether `from` is among what `to` is computed from (within one computation). A search up the
 * operands, each instruction marked once through its aux field with this search's stamp. */
static bool depends(const IrComputation *c, IrInstr *to, const IrInstr *from, uintptr_t *stamp) {
  IrInstr **stack = fx_malloc(sizeof *stack * (size_t)(c->ninstrs + 1));
  if (!stack) return true; /* out of memory: do not merge */
  void *mark = (void *)++*stamp;
  int top = 0;
  bool found = false;
  stack[top++] = to;
  to->aux = mark;
  while (top && !found) {
    IrInstr *x = stack[--top];
    for (int q = 0; q < x->noperands && !found; q++) {
      IrInstr *o = x->operands[q];
      if (o == from) found = true;
      else if (o->parent == c && o->aux != mark && top < c->ninstrs) {
        o->aux = mark;
        stack[top++] = o;
      }
    }
  }
  fx_free(stack);
  return found;
}


static const char OOM[] = "out of memory";

/* TryMergeSameOperand: the merged dot, NULL when a and b do not merge (*why says why; OOM when
 * memory ran out). */
static IrInstr *merge(IrInstr *a, IrInstr *b, bool a_is_merged, IrInstr **stale, const char **why) {
  IrComputation *c = a->parent;
  IrModule *m = c->module;
  *why = NULL;
  if (a->noperands != 2 || b->noperands != 2 || (a->operands[0] != b->operands[0] && a->operands[1] != b->operands[1]))
    return NULL;
  if (a->operands[0]->shape.type != b->operands[0]->shape.type || a->operands[1]->shape.type != b->operands[1]->shape.type ||
      a->shape.type != b->shape.type) {
    *why = "their operand or result types differ";
    return NULL;
  }
  if (!ir_shape_default_layout(&a->shape) || !ir_shape_default_layout(&b->shape)) {
    *why = "their results have different layouts";
    return NULL;
  }
  if (!same_text(a, b, "operand_precision") || !same_text(a, b, "precision_config")) {
    *why = "their operand precisions differ";
    return NULL;
  }
  IrDotDims da, db;
  if (!ir_dot_dims(a, &da) || !ir_dot_dims(b, &db)) return NULL;
  if (!same_list(da.lhs_batch, da.nlhs_batch, db.lhs_batch, db.nlhs_batch) ||
      !same_list(da.rhs_batch, da.nrhs_batch, db.rhs_batch, db.nrhs_batch) ||
      !same_list(da.lhs_contract, da.nlhs_contract, db.lhs_contract, db.nlhs_contract) ||
      !same_list(da.rhs_contract, da.nrhs_contract, db.rhs_contract, db.nrhs_contract)) {
    *why = "their dimension numbers differ";
    return NULL;
  }
  bool lhs_same = a->operands[0] == b->operands[0];
  IrInstr *shared = a->operands[lhs_same ? 0 : 1];
  IrInstr *oa = a->operands[lhs_same ? 1 : 0], *ob = b->operands[lhs_same ? 1 : 0];
  if (!ir_shape_default_layout(&oa->shape) || !ir_shape_default_layout(&ob->shape) || oa->shape.rank != ob->shape.rank) {
    *why = "the operands they do not share have different layouts";
    return NULL;
  }
  /* the one non-contracting dimension of the operands they do not share */
  const int64_t *used_c = lhs_same ? da.rhs_contract : da.lhs_contract, *used_b = lhs_same ? da.rhs_batch : da.lhs_batch;
  int nuc = lhs_same ? da.nrhs_contract : da.nlhs_contract, nub = lhs_same ? da.nrhs_batch : da.nlhs_batch;
  int nused = 0, outer = -1;
  for (int d = 0; d < oa->shape.rank; d++) {
    if (ir_dims_contain(used_c, nuc, d) || ir_dims_contain(used_b, nub, d)) nused++;
    else if (outer < 0) outer = d;
  }
  if (nused + 1 != oa->shape.rank || outer < 0) {
    *why = "the operands they do not share have more than one non-contracting dimension";
    return NULL;
  }
  for (int d = 0; d < oa->shape.rank; d++)
    if (d != outer && oa->shape.dims[d] != ob->shape.dims[d]) {
      *why = "the operands they do not share differ in more than the dimension to concatenate";
      return NULL;
    }
  int shared_nc = shared->shape.rank - da.nlhs_batch - (lhs_same ? da.nlhs_contract : da.nrhs_contract);
  /* after both dots in program order, so every operand exists */
  IrInstr *later = ir_computation_index(c, a) > ir_computation_index(c, b) ? a : b;
  int64_t cd[IR_MAX_RANK];
  memcpy(cd, oa->shape.dims, sizeof(int64_t) * (size_t)oa->shape.rank);
  cd[outer] = oa->shape.dims[outer] + ob->shape.dims[outer];
  IrShape cs = ir_shape_array(&m->arena, oa->shape.type, oa->shape.rank, cd);
  /* a dot this pass made merges on flat: its concatenate gets one more piece (what the
     simplifier's concatenate-of-concatenate rule makes of XLA's nested ones) */
  IrInstr *parts[64];
  int nparts = 0;
  int64_t inner_dim = -1;
  if (a_is_merged && oa->op == IR_OP_CONCATENATE && oa->nusers == 1 && oa->noperands < 63 &&
      ir_attr_dims(oa, "dimensions", &inner_dim, 1) == 1 && inner_dim == outer)
    for (int k = 0; k < oa->noperands; k++) parts[nparts++] = oa->operands[k];
  else
    parts[nparts++] = oa;
  parts[nparts++] = ob;
  IrInstr *cat = simp_add_like(c, later, IR_OP_CONCATENATE, &cs, parts, nparts, "concatenate", a);
  if (!cat) {
    *why = OOM;
    return NULL;
  }
  int64_t o = outer;
  ir_attr_set_dims(cat, "dimensions", &o, 1);
  int rank = a->shape.rank;
  int slice_dim = lhs_same ? rank - 1 : rank - 1 - shared_nc;
  if (slice_dim < 0 || slice_dim >= rank || a->shape.dims[slice_dim] != oa->shape.dims[outer]) {
    ir_instr_remove(cat);
    *why = "the result does not keep the concatenated dimension where expected";
    return NULL;
  }
  int64_t nd[IR_MAX_RANK];
  memcpy(nd, a->shape.dims, sizeof(int64_t) * (size_t)rank);
  nd[slice_dim] = a->shape.dims[slice_dim] + b->shape.dims[slice_dim];
  IrShape ds = ir_shape_array(&m->arena, a->shape.type, rank, nd);
  IrInstr *ops[2] = {lhs_same ? shared : cat, lhs_same ? cat : shared};
  IrInstr *dot = simp_add_like(c, later, IR_OP_DOT, &ds, ops, 2, "dot", a);
  if (!dot) {
    *why = OOM;
    return NULL;
  }
  for (int k = 0; k < a->nattrs; k++) /* dimension numbers, precision, metadata: a's */
    if (a->attrs[k].kind == IR_ATTR_TEXT) ir_attr_set_text(dot, a->attrs[k].key, a->attrs[k].text);
  int64_t st[IR_MAX_RANK] = {0}, lim[IR_MAX_RANK];
  memcpy(lim, nd, sizeof(int64_t) * (size_t)rank);
  lim[slice_dim] = a->shape.dims[slice_dim];
  IrInstr *sa = NULL;
  bool all_slices = a_is_merged && a->nusers > 0;
  for (int u = 0; u < a->nusers; u++) all_slices = all_slices && a->users[u]->op == IR_OP_SLICE;
  if (all_slices) { /* a's slices read the new dot: a's part comes first in it */
    while (a->nusers) ir_set_operand(a->users[0], 0, dot);
    if (oa != parts[0]) *stale = oa; /* the old concatenate goes with a */
  } else {
    sa = simp_add_like(c, later, IR_OP_SLICE, &a->shape, &dot, 1, "slice", a);
    if (!sa) {
      *why = OOM;
      return NULL;
    }
    ir_attr_set_slice(sa, st, lim, NULL, rank);
  }
  st[slice_dim] = lim[slice_dim];
  lim[slice_dim] = nd[slice_dim];
  IrInstr *sb = simp_add_like(c, later, IR_OP_SLICE, &b->shape, &dot, 1, "slice", b);
  if (sb) ir_attr_set_slice(sb, st, lim, NULL, rank);
  if (!sb) {
    *why = OOM;
    return NULL;
  }
  if (sa) ir_replace_all_uses(a, sa);
  ir_replace_all_uses(b, sb);
  return dot;
}

static int by_position(const void *x, const void *y) {
  const IrInstr *a = *(IrInstr *const *)x, *b = *(IrInstr *const *)y;
  int i = ir_computation_index(a->parent, a), j = ir_computation_index(b->parent, b);
  return (i > j) - (i < j);
}

static bool run_comp(IrComputation *c, PassContext *cx, bool *changed) {
  int n = c->ninstrs;
  IrInstr **keys = fx_malloc(sizeof *keys * (size_t)(n + 1));
  IrInstr **made = fx_malloc(sizeof *made * (size_t)(n + 1));
  if (!keys || !made) {
    fx_free(keys);
    fx_free(made);
    return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  }
  int nkeys = 0, nmade = 0;
  uintptr_t stamp = 0;
  bool ok = true, merged_any = false;
  /* the searches' stamps count up from 1: no mark an earlier pass left (a sort's positions) may
   * look like one */
  for (int k = 0; k < n; k++) c->instrs[k]->aux = NULL;
  /* the instructions two or more dots read, in program order */
  for (int k = 0; k < n; k++) {
    IrInstr *x = c->instrs[k];
    int readers = 0;
    for (int u = 0; u < x->nusers; u++) readers += x->users[u]->op == IR_OP_DOT;
    if (readers >= 2) keys[nkeys++] = x;
  }
  for (int q = 0; ok && q < nkeys && !pass_interrupted(cx); q++) {
    IrInstr *key = keys[q];
    if (key->dead) continue;
    /* its dot readers in program order (merged ones are gone: removed as they merge) */
    int nd = 0;
    IrInstr **dots = fx_malloc(sizeof *dots * (size_t)(key->nusers + 1));
    if (!dots) {
      ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
      break;
    }
    for (int u = 0; u < key->nusers; u++)
      if (key->users[u]->op == IR_OP_DOT && !key->users[u]->dead) dots[nd++] = key->users[u];
    qsort(dots, (size_t)nd, sizeof *dots, by_position);
    for (int i = 0; ok && i < nd; i++) {
      if (!dots[i]) continue;
      for (int j = i + 1; ok && j < nd; j++) {
        IrInstr *a = dots[i], *b = dots[j];
        if (!b || (!smallish(a) && !smallish(b))) continue;
        if (!((a->operands[0] == b->operands[0] && a->operands[0] == key) ||
              (a->operands[1] == b->operands[1] && a->operands[1] == key)))
          continue;
        if (depends(c, a, b, &stamp) || depends(c, b, a, &stamp)) continue;
        char an[256], bn[256];
        snprintf(an, sizeof an, "%s", a->name);
        snprintf(bn, sizeof bn, "%s", b->name);
        const char *why = NULL;
        bool a_is_merged = false;
        for (int g = 0; g < nmade; g++) a_is_merged = a_is_merged || made[g] == a;
        IrInstr *stale = NULL;
        IrInstr *merged = merge(a, b, a_is_merged, &stale, &why);
        if (!merged) {
          if (why == OOM) ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
          else if (why) {
            PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "merge", .producer = an, .consumer = bn};
            pass_emit(cx->sink, &d, "%s and %s both read %s but stay two GEMMs: %s", an, bn, key->name, why);
          }
          continue;
        }
        char shape[160];
        ir_shape_format(&merged->shape, false, shape, sizeof shape);
        PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "merge", .producer = an, .consumer = bn,
                          .result = merged->name, .accepted = true};
        pass_metric(&d, "bytes", (double)ir_shape_bytes(&merged->shape));
        pass_emit(cx->sink, &d,
                  "%s and %s both read %s: they become one GEMM, %s (%s), over their other operands concatenated, "
                  "and slices of its result", an, bn, key->name, merged->name, shape);
        /* a and b are read by nothing now; a's old concatenate only by a */
        ir_instr_remove(a);
        ir_instr_remove(b);
        if (stale) ir_instr_remove(stale);
        made[nmade++] = merged;
        dots[i] = merged;
        dots[j] = NULL;
        merged_any = true;
        *changed = true;
      }
    }
    fx_free(dots);
  }
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = NULL; /* the search marks */
  if (merged_any) ir_computation_sort(c);
  fx_free(made);
  fx_free(keys);
  return ok;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true; /* XLA:GPU's pipeline */
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    if (!run_comp(comp, cx, changed)) return false;
  }
  return true;
}

const Pass pass_dot_merger = {
    "dot-merger",
    "two independent dots that read one operand become one GEMM over the other operands concatenated, and slices "
    "of its result (XLA's DotMerger)",
    run,
};
