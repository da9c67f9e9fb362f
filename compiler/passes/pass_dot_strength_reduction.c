/* pass_dot_strength_reduction.c — XLA:GPU's DotStrengthReduction (dot_strength_reduction.cc, in
 * the simplification pipeline): a dot with a vector operand that is not worth a GEMM kernel
 * becomes an elementwise multiply and a reduce, which priority fusion then fuses like any
 * reduction:
 *
 *   dot(v[2048], W[2048,1000]) -> reduce(multiply(broadcast(v), transpose(W)), add), dims={last}
 *
 * Which dots (InstructionMatchesPattern): one operand is a vector (only batch and contracting
 * dimensions: a [1,K] row is one once algsimp has reshaped its size-1 dimension away), or an s32 dot contracting the right operand's dimension 1; and then both are
 * vectors, or (rows + columns) x contraction is under 10,000,000
 * (IsMatrixMultiplicationTooSmallForRewriting), or Triton's GEMM emitter cannot take it. The
 * expansion (ExpandInstruction): both operands converted to the result's type and transposed to
 * [batch, non-contracting, contracting], broadcast to [batch, left rows, right columns,
 * contracting], multiplied, summed over the contracting dimensions in the GEMM accumulator type
 * (f32 for f16 and bf16) and converted back. XLA runs it in its simplification round, right before
 * algsimp, so it runs again in each round here. Fused computations are left alone. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

#define STRENGTH_REDUCTION_SIZE 10000000 /* IsMatrixMultiplicationTooSmallForRewriting's threshold here */

typedef struct {
  int nb, nnc, nc;
  int64_t batch[IR_MAX_RANK], noncontract[IR_MAX_RANK], contract[IR_MAX_RANK];
  int64_t ncsize, csize;
} Side;

static void side_of(const IrInstr *dot, const IrDotDims *dd, int k, Side *s) {
  const IrShape *sh = &dot->operands[k]->shape;
  memset(s, 0, sizeof *s);
  s->nb = k ? dd->nrhs_batch : dd->nlhs_batch;
  s->nc = k ? dd->nrhs_contract : dd->nlhs_contract;
  memcpy(s->batch, k ? dd->rhs_batch : dd->lhs_batch, sizeof(int64_t) * (size_t)s->nb);
  memcpy(s->contract, k ? dd->rhs_contract : dd->lhs_contract, sizeof(int64_t) * (size_t)s->nc);
  s->ncsize = s->csize = 1;
  for (int d = 0; d < sh->rank; d++) {
    if (ir_dims_contain(s->contract, s->nc, d)) s->csize *= sh->dims[d];
    else if (!ir_dims_contain(s->batch, s->nb, d)) {
      s->noncontract[s->nnc++] = d;
      s->ncsize *= sh->dims[d];
    }
  }
}

/* A vector: nothing but batch and contracting dimensions (a size-1 one is a dimension here too:
 * algsimp, which runs right after in the same round, reshapes those away, and the next round
 * finds the vector). */
static bool is_vector(const IrInstr *dot, const Side *s, int k) {
  (void)dot;
  (void)k;
  return s->nnc == 0;
}

/* legacy CanTritonHandleGEMM: the types and at most one batch dimension. */
static bool triton_handles(const IrInstr *dot, const IrDotDims *dd) {
  IrType t = dot->shape.type;
  if (!(t == IR_F16 || t == IR_BF16 || t == IR_F32 || t == IR_F64 || t == IR_S32)) return false;
  for (int k = 0; k < 2; k++) {
    IrType o = dot->operands[k]->shape.type;
    if (!(o == IR_F16 || o == IR_BF16 || o == IR_F32 || o == IR_F64 || o == IR_S8 || o == IR_F8E4M3FN || o == IR_F8E5M2))
      return false;
  }
  return dd->nlhs_batch <= 1;
}

/* Why the dot is strength-reduced, or NULL when it is not. */
static const char *matches(const IrInstr *dot, const IrDotDims *dd, const Side *l, const Side *r) {
  bool lv = is_vector(dot, l, 0), rv = is_vector(dot, r, 1);
  bool s32 = dot->shape.type == IR_S32 && dot->operands[0]->shape.type == IR_S32 && dot->operands[1]->shape.type == IR_S32 &&
             dd->nrhs_contract == 1 && dd->rhs_contract[0] == 1;
  if (!lv && !rv && !s32) return NULL;
  if (lv && rv) return "both operands are vectors";
  if ((l->ncsize + r->ncsize) * l->csize < STRENGTH_REDUCTION_SIZE)
    return "a vector times a matrix this small is not worth a GEMM kernel ((rows + columns) x contraction under "
           "10,000,000)";
  if (!triton_handles(dot, dd)) return "Triton's GEMM emitter cannot take it";
  return NULL;
}

/* ---------- building ---------- */

typedef struct {
  IrComputation *c;
  IrInstr *before;
  const IrInstr *from;
} Builder;

static IrInstr *add(Builder *b, IrOpcode op, const IrShape *s, IrInstr **ops, int n, const char *base) {
  IrInstr *x = ir_instr_new_before(b->c, b->before, op, s, ops, n, ir_module_series_name(b->c->module, base, false));
  if (x) {
    const char *meta = ir_attr_text(b->from, "metadata");
    if (meta) ir_attr_set_text(x, "metadata", meta);
    x->loc = b->from->loc;
  }
  return x;
}

static IrInstr *convert_to(Builder *b, IrInstr *x, IrType t) {
  if (x->shape.type == t) return x;
  IrShape s = x->shape;
  s.type = t;
  return add(b, IR_OP_CONVERT, &s, &x, 1, "convert");
}

/* Operand k in [batch, non-contracting, contracting] order, broadcast to [batch, lhs
 * non-contracting, rhs non-contracting, contracting]. */
static IrInstr *spread(Builder *b, IrInstr *dot, int k, Side *s, const Side *other, IrType t) {
  IrInstr *v = convert_to(b, dot->operands[k], t);
  if (!v) return NULL;
  const IrShape *sh = &v->shape;
  int64_t perm[IR_MAX_RANK];
  int np = 0;
  for (int q = 0; q < s->nb; q++) perm[np++] = s->batch[q];
  for (int q = 0; q < s->nnc; q++) perm[np++] = s->noncontract[q];
  for (int q = 0; q < s->nc; q++) perm[np++] = s->contract[q];
  bool sorted = true;
  for (int q = 0; q < np; q++) sorted &= perm[q] == q;
  if (!sorted) {
    int64_t td[IR_MAX_RANK];
    for (int q = 0; q < np; q++) td[q] = sh->dims[perm[q]];
    IrShape ts = ir_shape_array(&b->c->module->arena, t, np, td);
    IrInstr *tr = add(b, IR_OP_TRANSPOSE, &ts, &v, 1, "transpose");
    if (!tr) return NULL;
    ir_attr_set_dims(tr, "dimensions", perm, np);
    v = tr;
  }
  if (other->nnc == 0) return v;
  /* insert the other side's non-contracting dimensions: after ours (lhs) or after the batch (rhs) */
  int insert = s->nb + (k == 0 ? s->nnc : 0);
  int64_t od[IR_MAX_RANK], bd[IR_MAX_RANK];
  int no = 0, nbd = 0;
  for (int q = 0; q < v->shape.rank; q++) {
    if (q == insert)
      for (int o = 0; o < other->nnc; o++) od[no++] = dot->operands[1 - k]->shape.dims[other->noncontract[o]];
    bd[nbd++] = no;
    od[no++] = v->shape.dims[q];
  }
  if (insert == v->shape.rank)
    for (int o = 0; o < other->nnc; o++) od[no++] = dot->operands[1 - k]->shape.dims[other->noncontract[o]];
  IrShape bs = ir_shape_array(&b->c->module->arena, t, no, od);
  IrInstr *bc = add(b, IR_OP_BROADCAST, &bs, &v, 1, "broadcast");
  if (bc) ir_attr_set_dims(bc, "dimensions", bd, nbd);
  return bc;
}

static bool reduce_dot(IrInstr *dot, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  IrDotDims dd;
  if (dot->noperands != 2 || !ir_dot_dims(dot, &dd)) return true;
  Side l, r;
  side_of(dot, &dd, 0, &l);
  side_of(dot, &dd, 1, &r);
  const char *why = matches(dot, &dd, &l, &r);
  if (!why) return true;
  IrType t = dot->shape.type;
  IrType acc = (t == IR_F16 || t == IR_BF16) ? IR_F32 : t; /* GetGemmAccumulatorType */
  Builder b = {dot->parent, dot, dot};
  IrInstr *a = spread(&b, dot, 0, &l, &r, t);
  IrInstr *c = a ? spread(&b, dot, 1, &r, &l, t) : NULL;
  if (!c) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  IrInstr *ops[2] = {a, c};
  IrInstr *prod = add(&b, IR_OP_MULTIPLY, &a->shape, ops, 2, "multiply");
  if (!prod) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  IrInstr *v = prod;
  if (l.nc > 0) {
    v = convert_to(&b, prod, acc);
    IrShape zs = ir_shape_scalar(acc);
    IrInstr *zero = v ? add(&b, IR_OP_CONSTANT, &zs, NULL, 0, "constant") : NULL;
    double z = 0;
    if (zero) zero->literal = ir_literal_new(&dot->parent->module->arena, &z, 1, acc, &zs);
    IrComputation *sum =
        zero && zero->literal ? simp_add_computation(dot->parent->module, dot->parent, acc, "scalar_add_computation") : NULL;
    if (!sum) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    int rank = v->shape.rank;
    int64_t rd[IR_MAX_RANK], dims[IR_MAX_RANK];
    for (int q = 0; q < l.nc; q++) rd[q] = rank - l.nc + q;
    for (int q = 0; q < rank - l.nc; q++) dims[q] = v->shape.dims[q];
    IrShape rs = ir_shape_array(&dot->parent->module->arena, acc, rank - l.nc, dims);
    IrInstr *rops[2] = {v, zero};
    IrInstr *red = add(&b, IR_OP_REDUCE, &rs, rops, 2, "reduce");
    if (!red) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    ir_attr_set_dims(red, "dimensions", rd, l.nc);
    ir_attr_set_comp(red, "to_apply", sum);
    v = convert_to(&b, red, t);
    if (!v) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  }
  if (!ir_shape_same_dims(&v->shape, &dot->shape)) {
    IrInstr *rs = add(&b, IR_OP_RESHAPE, &dot->shape, &v, 1, "reshape");
    if (!rs) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    v = rs;
  }
  char name[256], msg[700];
  snprintf(name, sizeof name, "%s", dot->name);
  snprintf(msg, sizeof msg, "%s becomes a multiply (%s) and a sum over its contracting dimension%s: %s (DotStrengthReduction)",
           name, prod->name, l.nc > 1 ? "s" : "", why);
  const char *result = v->name;
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = name, .result = result,
                    .accepted = true};
  simp_replace(dot, v);
  pass_emit(cx->sink, &d, "%s", msg);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true; /* XLA:GPU's */
  return simp_rewrite_each(m, cx, IR_OP_DOT, reduce_dot, NULL, true, changed);
}

const Pass pass_dot_strength_reduction = {
    "dot-strength-reduction",
    "a dot with a vector operand, too small for a GEMM kernel, becomes a multiply and a reduce (XLA:GPU's "
    "DotStrengthReduction)",
    run,
};
