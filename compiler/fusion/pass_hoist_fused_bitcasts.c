/* pass_hoist_fused_bitcasts.c — XLA:GPU's HoistFusedBitcasts (hoist_fused_bitcasts.cc, the
 * hlo_normalization pass right after triton-gemm-rewriter): the bitcasts and reshapes a
 * `__triton_gemm` fusion took in with its dot move out of it, onto the fusion's operands and after
 * its result, so the fusion computes on the shapes its dot has:
 *
 *   gemm = f32[4,512,512] fusion(p0, r) { bitcast(param_1): [512,512] -> [4,128,512]; dot }
 *     ->  b = f32[4,128,512] bitcast(r);  gemm = fusion(p0, b) { dot(..., param_1) }
 *
 * That is more than tidying: priority fusion leaves a producer's bitcast users aside (the
 * producer may fuse into its other users and stay for the bitcast), so a reduce feeding both a
 * row sum and, through the split-K bitcast, the next GEMM is fused into the sum, as in XLA.
 *
 * Upwards (HoistBitcastUpwardsToCallers), for each bitcast in the fusion, consumers first: when
 * everything it is computed from feeds nothing else in the fusion (VerifyIsClosedProducerSet) and
 * keeps its element type, the new shape is carried up to the parameters: an elementwise op takes
 * it for its operands, a transpose is rewritten so its result is the new shape
 * (CalculateBitcastOfTranspose: the two shapes' common refinement, each of the new dimensions
 * consecutive and in order in the operand), a broadcast of a scalar takes any shape, a bitcast
 * stops it (it is hoisted on its own); a parameter's new shape is a bitcast of the fusion's
 * operand outside. Anything else (a dot, a slice, a concatenate, a non-scalar broadcast or
 * constant) keeps the bitcast inside.
 * Downwards (MaybeInsertRootBitcast): the shape the root has once the bitcasts between the dot and
 * it are gone (ComputeRootShapeAfterHoistingBitcasts: elementwise ops keep it, transposes are
 * recomputed) becomes the fusion's result, and a bitcast after the fusion gives its users the old
 * one; the bitcasts it leaves inside are then hoisted up like the rest.
 *
 * Only shapes in the default layout (layout-normalization made them so), with one exception: a
 * bitcast into or out of a layout that reads a parameter (a transposed weight layout-assignment
 * made a bitcast, f32[K,N]{0,1}) moves out as it is, the parameter taking its shape. Fused
 * computations are left alone; nothing on the host or before Ampere (no Triton GEMMs there). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../passes/passes.h"
#include "../passes/simplify.h"
#include "../plan/plan.h"

#define HB_MAX_FACTORS (2 * IR_MAX_RANK)

/* ---------- transposes and bitcasts (bitcast_utils.cc) ---------- */

/* The common refinement of two row-major shapes of one size (size-1 dimensions dropped): the
 * factors, major first, and for each dimension of a and of b the factors [lo, hi) it is made of.
 * False when there is none ([6,4] and [4,6]). */
typedef struct {
  int n;
  int64_t f[HB_MAX_FACTORS];
  int a_lo[IR_MAX_RANK], a_hi[IR_MAX_RANK], b_lo[IR_MAX_RANK], b_hi[IR_MAX_RANK];
} Refinement;

static bool refine(const int64_t *a, int na, const int64_t *b, int nb, Refinement *r) {
  memset(r, 0, sizeof *r);
  int i = 0, j = 0;
  int64_t ra = 0, rb = 0; /* what is left of a[i] and b[j] */
  for (;;) {
    while (i < na && (ra == 0 ? a[i] == 1 : false)) { /* size-1 dimensions hold no factor */
      r->a_lo[i] = r->a_hi[i] = r->n;
      i++;
    }
    while (j < nb && (rb == 0 ? b[j] == 1 : false)) {
      r->b_lo[j] = r->b_hi[j] = r->n;
      j++;
    }
    if (i == na || j == nb) break;
    if (ra == 0) {
      ra = a[i];
      r->a_lo[i] = r->n;
    }
    if (rb == 0) {
      rb = b[j];
      r->b_lo[j] = r->n;
    }
    int64_t f = ra < rb ? ra : rb;
    if (f <= 0 || ra % f || rb % f || r->n == HB_MAX_FACTORS) return false;
    r->f[r->n++] = f;
    ra /= f;
    rb /= f;
    if (ra == 1) {
      r->a_hi[i++] = r->n;
      ra = 0;
    }
    if (rb == 1) {
      r->b_hi[j++] = r->n;
      rb = 0;
    }
  }
  return i == na && j == nb && ra == 0 && rb == 0;
}

/* CalculateBitcastOfTranspose: transpose(A, perm) = O (O[d] = A[perm[d]]), and B a bitcast of O.
 * Finds A2 (a bitcast of A) and perm2 with transpose(A2, perm2) = B. */
static bool bitcast_of_transpose(const int64_t *A, int na, const int64_t *perm, const int64_t *O, int no,
                                 const int64_t *B, int nb, int64_t *A2, int64_t *perm2) {
  if (na != no) return false;
  for (int d = 0; d < no; d++)
    if (perm[d] < 0 || perm[d] >= na || A[perm[d]] != O[d]) return false;
  Refinement r;
  if (!refine(O, no, B, nb, &r)) return false;
  /* each factor's position in the operand: the operand's dimensions in order, each holding the
     factors of the result dimension it becomes */
  int pos[HB_MAX_FACTORS], next = 0;
  for (int j = 0; j < na; j++) {
    int d = -1;
    for (int q = 0; q < no; q++)
      if (perm[q] == j) d = q;
    if (d < 0) return false;
    for (int u = r.a_lo[d]; u < r.a_hi[d]; u++) pos[u] = next++;
  }
  /* each of B's dimensions: its factors consecutive and in order in the operand */
  int first[IR_MAX_RANK];
  for (int k = 0; k < nb; k++) {
    first[k] = r.b_lo[k] < r.b_hi[k] ? pos[r.b_lo[k]] : -1;
    for (int u = r.b_lo[k] + 1; u < r.b_hi[k]; u++)
      if (pos[u] != pos[u - 1] + 1) return false;
  }
  /* A2: B's size-1 dimensions first, then B's dimensions in the order the operand holds them */
  int order[IR_MAX_RANK], n = 0;
  for (int k = 0; k < nb; k++)
    if (first[k] < 0) order[n++] = k;
  for (int at = 0; at < next; at++)
    for (int k = 0; k < nb; k++)
      if (first[k] == at) order[n++] = k;
  if (n != nb) return false;
  for (int q = 0; q < nb; q++) {
    A2[q] = B[order[q]];
    perm2[order[q]] = q;
  }
  return true;
}

/* CalculateTransposeOfBitcast: transpose(A, perm) = O and A2 a bitcast of A: finds O2 (a bitcast
 * of O) and perm2 with transpose(A2, perm2) = O2 — the transpose read the other way. */
static bool transpose_of_bitcast(const int64_t *A, int na, const int64_t *perm, const int64_t *O, int no,
                                 const int64_t *A2, int na2, int64_t *O2, int64_t *perm2) {
  int64_t inv[IR_MAX_RANK], inv2[IR_MAX_RANK];
  for (int d = 0; d < no; d++) inv[perm[d]] = d; /* transpose(O, inv) = A */
  if (!bitcast_of_transpose(O, no, inv, A, na, A2, na2, O2, inv2)) return false;
  for (int q = 0; q < na2; q++) perm2[inv2[q]] = q; /* transpose(O2, inv2) = A2 */
  return true;
}

/* ---------- planning ---------- */

typedef struct {
  IrInstr *instr;
  int rank;
  int64_t dims[IR_MAX_RANK];
  int64_t perm[IR_MAX_RANK]; /* a transpose's new dimensions */
  bool set;
} Plan;

typedef struct {
  IrComputation *c;
  int n;
  Plan *p; /* one per instruction of c, by index */
} Planner;

static int index_of(const IrComputation *c, const IrInstr *i) { return ir_computation_index(c, i); }

static bool same_dims(const int64_t *a, int na, const IrShape *s) {
  if (na != s->rank) return false;
  for (int d = 0; d < na; d++)
    if (a[d] != s->dims[d]) return false;
  return true;
}

/* Gives instruction i the dimensions dims (its element type kept); false on a conflict. */
static bool plan_set(Planner *pl, IrInstr *i, const int64_t *dims, int rank) {
  int k = index_of(pl->c, i);
  if (k < 0 || !ir_shape_is_array(&i->shape) || !ir_shape_default_layout(&i->shape)) return false;
  Plan *p = &pl->p[k];
  if (p->set) {
    if (p->rank != rank) return false;
    for (int d = 0; d < rank; d++)
      if (p->dims[d] != dims[d]) return false;
    return true;
  }
  p->instr = i;
  p->set = true;
  p->rank = rank;
  if (rank > 0) memcpy(p->dims, dims, sizeof(int64_t) * (size_t)rank);
  return true;
}

/* Whether everything b is computed from in the fusion feeds nothing but b and itself
 * (VerifyIsClosedProducerSet); marks that set in in_set. */
static bool closed_producers(const IrComputation *c, const IrInstr *b, bool *in_set) {
  memset(in_set, 0, sizeof(bool) * (size_t)c->ninstrs);
  int kb = index_of(c, b);
  if (kb < 0) return false;
  /* instructions are in definition order: walking back from b finds every producer */
  bool *want = fx_calloc((size_t)c->ninstrs, sizeof *want);
  if (!want) return false;
  for (int q = 0; q < b->noperands; q++) {
    int k = index_of(c, b->operands[q]);
    if (k >= 0) want[k] = true;
  }
  for (int k = kb - 1; k >= 0; k--) {
    if (!want[k]) continue;
    in_set[k] = true;
    const IrInstr *x = c->instrs[k];
    for (int q = 0; q < x->noperands; q++) {
      int o = index_of(c, x->operands[q]);
      if (o >= 0) want[o] = true;
    }
  }
  fx_free(want);
  for (int k = 0; k < c->ninstrs; k++) {
    if (!in_set[k]) continue;
    const IrInstr *x = c->instrs[k];
    if (x == c->root) return false; /* read by the fusion's caller */
    for (int u = 0; u < x->nusers; u++) {
      int o = index_of(c, x->users[u]);
      if (x->users[u] != b && (o < 0 || !in_set[o])) return false;
    }
  }
  return true;
}

/* PlanHoistBitcastUpwardsToCallers: the new shapes, consumers first; false when the bitcast must
 * stay. */
static bool plan_upwards(Planner *pl, IrInstr *b) {
  IrComputation *c = pl->c;
  memset(pl->p, 0, sizeof(Plan) * (size_t)c->ninstrs);
  bool *in_set = fx_calloc((size_t)c->ninstrs, sizeof *in_set);
  if (!in_set) return false;
  bool ok = b->noperands == 1 && ir_shape_is_array(&b->shape) && ir_shape_default_layout(&b->shape) &&
            b->shape.type == b->operands[0]->shape.type && closed_producers(c, b, in_set) &&
            plan_set(pl, b->operands[0], b->shape.dims, b->shape.rank);
  fx_free(in_set);
  for (int k = index_of(c, b) - 1; ok && k >= 0; k--) {
    Plan *p = &pl->p[k];
    IrInstr *x = c->instrs[k];
    if (!p->set) continue;
    if (same_dims(p->dims, p->rank, &x->shape)) {
      p->set = false; /* no change */
      continue;
    }
    switch (x->op) {
    case IR_OP_PARAMETER: break;
    case IR_OP_BITCAST:
    case IR_OP_RESHAPE: break; /* hoisted on its own */
    case IR_OP_BROADCAST:
      ok = x->noperands == 1 && x->operands[0]->shape.rank == 0; /* a scalar takes any shape */
      break;
    case IR_OP_TRANSPOSE: {
      int64_t perm[IR_MAX_RANK], A2[IR_MAX_RANK];
      const IrShape *in = &x->operands[0]->shape;
      ok = ir_attr_dims(x, "dimensions", perm, IR_MAX_RANK) == x->shape.rank &&
           bitcast_of_transpose(in->dims, in->rank, perm, x->shape.dims, x->shape.rank, p->dims, p->rank, A2, p->perm) &&
           plan_set(pl, x->operands[0], A2, p->rank);
      break;
    }
    default:
      ok = ir_op_is_elementwise(x->op);
      for (int q = 0; ok && q < x->noperands; q++) ok = plan_set(pl, x->operands[q], p->dims, p->rank);
      break;
    }
  }
  return ok;
}

static IrShape with_dims(IrModule *m, const IrShape *old, const int64_t *dims, int rank) {
  return ir_shape_array(&m->arena, old->type, rank, dims);
}

/* HoistBitcastUpwardsToCallers: applies the plan; the bitcast goes. */
static bool hoist_upwards(Planner *pl, IrInstr *fusion, IrInstr *b, FxError *err) {
  IrComputation *c = pl->c;
  IrModule *m = c->module;
  for (int k = 0; k < c->ninstrs; k++) {
    Plan *p = &pl->p[k];
    if (!p->set) continue;
    IrInstr *x = p->instr;
    IrShape s = with_dims(m, &x->shape, p->dims, p->rank);
    if (x->op == IR_OP_PARAMETER) {
      int64_t num = x->param_number;
      if (num < 0 || num >= fusion->noperands) return fx_error_set(err, NULL, 0, 0, "hoist-fused-bitcasts: bad parameter");
      IrInstr *op = fusion->operands[num];
      IrShape os = with_dims(m, &op->shape, p->dims, p->rank);
      IrInstr *nb = ir_instr_new_before(fusion->parent, fusion, IR_OP_BITCAST, &os, &op, 1,
                                        ir_module_series_name(m, "bitcast", false));
      if (!nb) return fx_error_set(err, NULL, 0, 0, "hoist-fused-bitcasts: out of memory");
      nb->loc = b->loc;
      ir_set_operand(fusion, (int)num, nb);
    } else if (x->op == IR_OP_TRANSPOSE) {
      ir_attr_set_dims(x, "dimensions", p->perm, p->rank);
    }
    x->shape = s;
  }
  ir_replace_all_uses(b, b->operands[0]);
  ir_instr_remove(b);
  return true;
}

/* ComputeRootShapeAfterHoistingBitcasts: the root's shape once the bitcasts between the dot and
 * it are gone; false when something on the way cannot carry it. */
static bool root_shape(IrComputation *c, IrInstr *dot, int64_t *dims, int *rank) {
  if (dot == c->root || !ir_shape_default_layout(&dot->shape)) return false;
  int n = c->ninstrs, kd = index_of(c, dot);
  Plan *in = fx_calloc((size_t)n, sizeof *in); /* the operand shape each consumer gets */
  if (!in || kd < 0) {
    fx_free(in);
    return false;
  }
  bool ok = true, found = false;
  for (int u = 0; u < dot->nusers; u++) {
    int k = index_of(c, dot->users[u]);
    if (k < 0) ok = false;
    else {
      in[k].set = true;
      in[k].rank = dot->shape.rank;
      memcpy(in[k].dims, dot->shape.dims, sizeof(int64_t) * (size_t)dot->shape.rank);
    }
  }
  for (int k = kd + 1; ok && k < n && !found; k++) {
    if (!in[k].set) continue;
    IrInstr *x = c->instrs[k];
    int64_t out[IR_MAX_RANK];
    int nout = in[k].rank;
    if (!ir_shape_is_array(&x->shape) || !ir_shape_default_layout(&x->shape)) { /* a layout XLA chose */
      ok = false;
      break;
    }
    if (x->op == IR_OP_BITCAST || x->op == IR_OP_RESHAPE || ir_op_is_elementwise(x->op)) {
      memcpy(out, in[k].dims, sizeof(int64_t) * (size_t)nout);
    } else if (x->op == IR_OP_TRANSPOSE) {
      int64_t perm[IR_MAX_RANK], perm2[IR_MAX_RANK];
      const IrShape *a = &x->operands[0]->shape;
      if (ir_attr_dims(x, "dimensions", perm, IR_MAX_RANK) == x->shape.rank &&
          transpose_of_bitcast(a->dims, a->rank, perm, x->shape.dims, x->shape.rank, in[k].dims, in[k].rank, out, perm2)) {
      } else { /* it keeps its shape */
        nout = x->shape.rank;
        memcpy(out, x->shape.dims, sizeof(int64_t) * (size_t)nout);
      }
    } else {
      ok = false;
      break;
    }
    if (x == c->root) {
      found = true;
      *rank = nout;
      memcpy(dims, out, sizeof(int64_t) * (size_t)nout);
      break;
    }
    for (int u = 0; u < x->nusers; u++) {
      int q = index_of(c, x->users[u]);
      if (q < 0) {
        ok = false;
        break;
      }
      if (in[q].set && (in[q].rank != nout || memcmp(in[q].dims, out, sizeof(int64_t) * (size_t)nout) != 0)) {
        ok = false; /* conflicting shapes */
        break;
      }
      in[q].set = true;
      in[q].rank = nout;
      memcpy(in[q].dims, out, sizeof(int64_t) * (size_t)nout);
    }
  }
  fx_free(in);
  return ok && found;
}

static IrInstr *dot_of(const IrComputation *c) {
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->op == IR_OP_DOT) return c->instrs[k];
  return NULL;
}

static bool rewrite(IrInstr *fusion, PassContext *cx, bool *changed) {
  IrComputation *c = ir_fused_computation(fusion);
  IrInstr *dot = c ? dot_of(c) : NULL;
  if (!dot || !ir_shape_is_array(&fusion->shape)) return true;
  IrModule *m = c->module;
  char fname[256], old_shape[160] = "";
  snprintf(fname, sizeof fname, "%s", fusion->name);
  int hoisted = 0;
  bool sunk = false;
  /* MaybeInsertRootBitcast */
  int64_t rd[IR_MAX_RANK];
  int rr = 0;
  IrInstr *old_root = c->root, *nr = NULL, *after = NULL;
  IrShape outer = fusion->shape;
  if (ir_shape_default_layout(&old_root->shape) && root_shape(c, dot, rd, &rr) && !same_dims(rd, rr, &old_root->shape)) {
    IrShape inner = with_dims(m, &old_root->shape, rd, rr);
    nr = ir_instr_new_before(c, NULL, IR_OP_BITCAST, &inner, &old_root, 1, ir_module_series_name(m, "bitcast", false));
    int at = ir_computation_index(fusion->parent, fusion);
    IrInstr *next = at >= 0 && at + 1 < fusion->parent->ninstrs ? fusion->parent->instrs[at + 1] : NULL;
    after = nr ? ir_instr_new_before(fusion->parent, next, IR_OP_BITCAST, &outer, &fusion, 1,
                                     ir_module_series_name(m, "bitcast", false)) : NULL;
    if (!nr || !after) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    ir_set_root(c, nr);
    ir_shape_format(&outer, false, old_shape, sizeof old_shape);
    fusion->shape = with_dims(m, &fusion->shape, rd, rr);
    /* every other reader of the fusion reads the bitcast after it */
    ir_replace_all_uses(fusion, after);
    ir_set_operand(after, 0, fusion);
    after->loc = fusion->loc;
  }
  /* every bitcast, consumers first (the new root bitcast first of all) */
  Planner pl = {.c = c};
  for (int k = c->ninstrs - 1; k >= 0; k--) {
    if (k >= c->ninstrs) continue;
    IrInstr *b = c->instrs[k];
    if (b->op != IR_OP_BITCAST && b->op != IR_OP_RESHAPE) continue;
    bool is_new_root = b == nr;
    pl.p = fx_calloc((size_t)c->ninstrs, sizeof *pl.p);
    if (!pl.p) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    bool can = plan_upwards(&pl, b);
    bool ok = !can || hoist_upwards(&pl, fusion, b, cx->err);
    fx_free(pl.p);
    if (!ok) return false;
    if (can && is_new_root) sunk = true;
    else if (can) hoisted++;
    else if (is_new_root) { /* it cannot go up: the fusion keeps its result shape */
      ir_set_root(c, old_root);
      ir_instr_remove(nr);
      fusion->shape = outer;
      ir_replace_all_uses(after, fusion);
      ir_instr_remove(after);
    }
  }
  /* a bitcast into or out of a layout (a transposed weight layout-assignment made one) reading a
     parameter only it reads: the parameter takes its shape, layout included, and the bitcast
     moves onto the operand outside, producers first so a chain goes out whole (XLA's fusion then
     reads the weight as f32[K,N]{0,1}) */
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *b = c->instrs[k], *p = b->noperands == 1 ? b->operands[0] : NULL;
    if (b->op != IR_OP_BITCAST || !p || p->op != IR_OP_PARAMETER || p->nusers != 1 || !ir_shape_is_array(&b->shape) ||
        (ir_shape_default_layout(&b->shape) && ir_shape_default_layout(&p->shape)) || p->param_number < 0 ||
        p->param_number >= fusion->noperands)
      continue;
    int num = (int)p->param_number;
    IrInstr *op = fusion->operands[num];
    int reads = 0;
    for (int q = 0; q < fusion->noperands; q++) reads += fusion->operands[q] == op;
    IrInstr *src = op->op == IR_OP_BITCAST && op->nusers == 1 && reads == 1 ? op->operands[0] : op;
    IrInstr *nb = ir_instr_new_before(fusion->parent, fusion, IR_OP_BITCAST, &b->shape, &src, 1,
                                      ir_module_series_name(m, "bitcast", false));
    if (!nb) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    nb->loc = b->loc;
    ir_set_operand(fusion, num, nb);
    if (src != op && op->nusers == 0) ir_instr_remove(op); /* a bitcast of a bitcast is one bitcast */
    p->shape = b->shape;
    ir_replace_all_uses(b, p);
    ir_instr_remove(b);
    k--;
    hoisted++;
  }
  if (!hoisted && !sunk) return true;
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "hoist", .producer = fname, .consumer = fname,
                    .result = fname, .accepted = true};
  pass_metric(&d, "bitcasts", hoisted);
  char shape[160];
  ir_shape_format(&fusion->shape, false, shape, sizeof shape);
  if (sunk)
    pass_emit(cx->sink, &d, "%s: %d bitcast(s) move out onto its operands, and it returns its dot's %s, bitcast to "
              "%s after it: priority fusion sees the bitcasts, not the GEMM, as the readers of its producers",
              fname, hoisted, shape, old_shape);
  else
    pass_emit(cx->sink, &d, "%s: %d bitcast(s) move out onto its operands: priority fusion sees the bitcasts, not "
              "the GEMM, as the readers of its producers", fname, hoisted);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true;
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    int n = 0;
    for (int k = 0; k < comp->ninstrs; k++) n += plan_fusion_backend(comp->instrs[k]) == PLAN_FB_TRITON_GEMM;
    if (!n) continue;
    IrInstr **fs = fx_malloc(sizeof *fs * (size_t)n);
    if (!fs) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    n = 0;
    for (int k = 0; k < comp->ninstrs; k++)
      if (plan_fusion_backend(comp->instrs[k]) == PLAN_FB_TRITON_GEMM) fs[n++] = comp->instrs[k];
    bool ok = true;
    for (int k = 0; ok && k < n && !pass_interrupted(cx); k++) ok = rewrite(fs[k], cx, changed);
    fx_free(fs);
    if (!ok) return false;
  }
  return true;
}

const Pass pass_hoist_fused_bitcasts = {
    "hoist-fused-bitcasts",
    "the bitcasts a Triton GEMM fusion took in move out onto its operands and after its result (XLA:GPU's "
    "HoistFusedBitcasts)",
    run,
};
