/* pass_dot_merger.c — XLA's DotMerger (dot_merger.cc, in XLA:GPU's simplification pipeline, with
 * max_size_to_merge = xla_gpu_dot_merger_threshold_mb << 20): two independent dots that read one operand become one
 * GEMM over the other operands concatenated, and slices of its result, so a layer's projections
 * of one activation (query, key and value; an MLP's gate and up) launch one kernel:
 *
 *   dot(x, wq), dot(x, wk)  ->  d = dot(x, concatenate(wq, wk)); slice(d) [0:n_q]; slice(d) [n_q:]
 *
 * When (TryMergeSameOperand): the two share their left or their right operand (the same
 * instruction); the operand and result element types, the dimension numbers and the operand
 * precisions are the same; the operands they do not share have one non-contracting dimension
 * (concatenated along it) and the same layout; neither dot depends on the other; and at least one
 * of the two is "smallish": its result and operands together at most 64 MiB (is_merge_candidate;
 * the threshold of the XLA the references come from, jaxlib 0.10.2, measured with its own
 * compiler: two bf16 [2720] x [2720,12288] products (66.9 MB each) merge, [2736] x [2736,12288]
 * (67.2 MB) do not; XLA's source had 16 MiB in 2021 and a 32 MiB default later). Pairs are tried within each set of dots reading one instruction, in
 * program order, and a merged dot goes on merging with the next (a chain of concatenates, which
 * the simplifier flattens).
 *
 * And (TryMergeLHSWithRHSOperand, tried both ways when the two share no operand): two dots in
 * DotDecomposer's normal form without batch dimensions (rank-2 operands, contracting {1} x {0})
 * where a's left operand is b's right one transposed ({1,0}), with the same m:
 *
 *   a = dot(x, wa) [m, na], b = dot(wb, transpose(x)) [nb, m]
 *     ->  d = dot(x, concatenate(wa, transpose(wb))) [m, na + nb];
 *         a = slice(d) [:, 0:na]; b = transpose(slice(d) [:, na:])
 *
 * The dots compared are those reading one instruction, directly or through a transpose of it
 * (DotDecomposer's transposes count as the same operand, as XLA's equivalence classes have it).
 * Fused computations are left alone. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

#define MERGE_MAX_BYTES (INT64_C(64) << 20) /* xla_gpu_dot_merger_threshold_mb, measured (above) */

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

static bool is_transpose_10(const IrInstr *t, const IrInstr *of) {
  int64_t perm[2];
  return t->op == IR_OP_TRANSPOSE && t->noperands == 1 && t->operands[0] == of && t->shape.rank == 2 &&
         ir_attr_dims(t, "dimensions", perm, 2) == 2 && perm[0] == 1 && perm[1] == 0;
}

/* DotDecomposer's normal form without batch dimensions: rank-2 operands, contracting {1} x {0}. */
static bool plain_2d(const IrInstr *d) {
  IrDotDims dd;
  return d->noperands == 2 && d->operands[0]->shape.rank == 2 && d->operands[1]->shape.rank == 2 &&
         ir_dot_dims(d, &dd) && dd.nlhs_batch == 0 && dd.nrhs_batch == 0 && dd.nlhs_contract == 1 &&
         dd.nrhs_contract == 1 && dd.lhs_contract[0] == 1 && dd.rhs_contract[0] == 0;
}

/* TryMergeLHSWithRHSOperand(a, b): the merged dot, or NULL (*why set when the two nearly qualify;
 * OOM when memory ran out). */
static IrInstr *merge_lhs_with_rhs(IrInstr *a, IrInstr *b, const char **why) {
  IrComputation *c = a->parent;
  IrModule *m = c->module;
  *why = NULL;
  if (!plain_2d(a) || !plain_2d(b)) return NULL;
  IrInstr *a_lhs = a->operands[0], *a_rhs = a->operands[1], *b_lhs = b->operands[0], *b_rhs = b->operands[1];
  if (!is_transpose_10(a_lhs, b_rhs) && !is_transpose_10(b_rhs, a_lhs)) return NULL; /* EqualTransposed */
  if (a->shape.type != b->shape.type || a_rhs->shape.type != b_lhs->shape.type) {
    *why = "their operand or result types differ";
    return NULL;
  }
  if (a->shape.dims[0] != b->shape.dims[1]) {
    *why = "their m dimensions differ";
    return NULL;
  }
  int64_t m_ = a->shape.dims[0], na = a->shape.dims[1], nb = b->shape.dims[0], k = a_rhs->shape.dims[0];
  if (b_lhs->shape.dims[1] != k) return NULL;
  IrInstr *later = ir_computation_index(c, a) > ir_computation_index(c, b) ? a : b;
  int64_t perm[2] = {1, 0};
  int64_t td[2] = {k, nb}, cd[2] = {k, na + nb}, dd[2] = {m_, na + nb}, bd[2] = {m_, nb};
  IrShape ts = ir_shape_array(&m->arena, b_lhs->shape.type, 2, td);
  IrShape cs = ir_shape_array(&m->arena, a_rhs->shape.type, 2, cd);
  IrShape ds = ir_shape_array(&m->arena, a->shape.type, 2, dd);
  IrShape bs = ir_shape_array(&m->arena, b->shape.type, 2, bd);
  *why = OOM;
  IrInstr *t = simp_add_like(c, later, IR_OP_TRANSPOSE, &ts, &b_lhs, 1, "transpose", b);
  if (!t) return NULL;
  ir_attr_set_dims(t, "dimensions", perm, 2);
  IrInstr *parts[2] = {a_rhs, t};
  IrInstr *cat = simp_add_like(c, later, IR_OP_CONCATENATE, &cs, parts, 2, "concatenate", a);
  if (!cat) return NULL;
  int64_t one = 1;
  ir_attr_set_dims(cat, "dimensions", &one, 1);
  IrInstr *ops[2] = {a_lhs, cat};
  IrInstr *dot = simp_add_like(c, later, IR_OP_DOT, &ds, ops, 2, "dot", a);
  if (!dot) return NULL;
  for (int q = 0; q < a->nattrs; q++) /* dimension numbers, precision, metadata: a's */
    if (a->attrs[q].kind == IR_ATTR_TEXT) ir_attr_set_text(dot, a->attrs[q].key, a->attrs[q].text);
  int64_t st[2] = {0, 0}, lim[2] = {m_, na};
  IrInstr *sa = simp_add_like(c, later, IR_OP_SLICE, &a->shape, &dot, 1, "slice", a);
  if (!sa) return NULL;
  ir_attr_set_slice(sa, st, lim, NULL, 2);
  st[1] = na;
  lim[1] = na + nb;
  IrInstr *sb = simp_add_like(c, later, IR_OP_SLICE, &bs, &dot, 1, "slice", b);
  if (!sb) return NULL;
  ir_attr_set_slice(sb, st, lim, NULL, 2);
  IrInstr *tb = simp_add_like(c, later, IR_OP_TRANSPOSE, &b->shape, &sb, 1, "transpose", b);
  if (!tb) return NULL;
  ir_attr_set_dims(tb, "dimensions", perm, 2);
  *why = NULL;
  ir_replace_all_uses(a, sa);
  ir_replace_all_uses(b, tb);
  return dot;
}

/* Whether dot d reads x, directly or through a transpose of it (XLA's equivalence classes). */
static bool reads_key(const IrInstr *d, const IrInstr *x) {
  for (int k = 0; k < d->noperands; k++) {
    const IrInstr *o = d->operands[k];
    if (o == x || (o->op == IR_OP_TRANSPOSE && o->noperands == 1 && o->operands[0] == x)) return true;
  }
  return false;
}

/* Appends d to dots[0..*n) when it is a live dot not there yet. */
static void add_dot(IrInstr *d, IrInstr **dots, int *n) {
  bool have = d->op != IR_OP_DOT || d->dead;
  for (int q = 0; q < *n && !have; q++) have = dots[q] == d;
  if (!have) dots[(*n)++] = d;
}

/* Appends x's dots (read directly or through a transpose) not yet in dots[0..*n). */
static void gather_dots(IrInstr *x, IrInstr **dots, int *n) {
  for (int u = 0; u < x->nusers; u++) {
    IrInstr *d = x->users[u];
    if (d->op == IR_OP_TRANSPOSE)
      for (int v = 0; v < d->nusers; v++) add_dot(d->users[v], dots, n);
    else
      add_dot(d, dots, n);
  }
}

static int count_dot_readers(IrInstr *x) {
  int n = 0;
  for (int u = 0; u < x->nusers; u++) {
    IrInstr *d = x->users[u];
    if (d->op == IR_OP_DOT) n++;
    else if (d->op == IR_OP_TRANSPOSE)
      for (int v = 0; v < d->nusers; v++) n += d->users[v]->op == IR_OP_DOT;
  }
  return n;
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
  /* the instructions two or more dots read (directly or through a transpose), in program order */
  for (int k = 0; k < n; k++) {
    IrInstr *x = c->instrs[k];
    if (count_dot_readers(x) >= 2) keys[nkeys++] = x;
  }
  for (int q = 0; ok && q < nkeys && !pass_interrupted(cx); q++) {
    IrInstr *key = keys[q];
    if (key->dead) continue;
    /* its dot readers in program order (merged ones are gone: removed as they merge) */
    int nd = 0;
    IrInstr **dots = fx_malloc(sizeof *dots * (size_t)(count_dot_readers(key) + 1));
    if (!dots) {
      ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
      break;
    }
    gather_dots(key, dots, &nd);
    qsort(dots, (size_t)nd, sizeof *dots, by_position);
    for (int i = 0; ok && i < nd; i++) {
      if (!dots[i]) continue;
      for (int j = i + 1; ok && j < nd; j++) {
        IrInstr *a = dots[i], *b = dots[j];
        if (!b || (!smallish(a) && !smallish(b))) continue;
        if (!reads_key(a, key) || !reads_key(b, key)) continue;
        if (depends(c, a, b, &stamp) || depends(c, b, a, &stamp)) continue;
        char an[256], bn[256];
        snprintf(an, sizeof an, "%s", a->name);
        snprintf(bn, sizeof bn, "%s", b->name);
        const char *why = NULL;
        bool a_is_merged = false;
        for (int g = 0; g < nmade; g++) a_is_merged = a_is_merged || made[g] == a;
        IrInstr *stale = NULL;
        const char *how = "their other operands concatenated";
        IrInstr *merged = NULL;
        bool shares = a->noperands == 2 && b->noperands == 2 &&
                      (a->operands[0] == b->operands[0] || a->operands[1] == b->operands[1]);
        if (shares) {
          merged = merge(a, b, a_is_merged, &stale, &why);
        } else if (ir_shape_default_layout(&a->shape) && ir_shape_default_layout(&b->shape) &&
                   same_text(a, b, "operand_precision") && same_text(a, b, "precision_config")) {
          /* (TryMergeOperand: the same layout and precisions first; then both ways round) */
          how = "one's right operand concatenated with the other's left one transposed";
          merged = merge_lhs_with_rhs(a, b, &why);
          if (!merged && why != OOM) {
            const char *why2 = NULL;
            merged = merge_lhs_with_rhs(b, a, &why2);
            if (merged || why2) why = why2;
          }
        }
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
                  "%s and %s both read %s: they become one GEMM, %s (%s), over %s, and slices of its result", an,
                  bn, key->name, merged->name, shape, how);
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
