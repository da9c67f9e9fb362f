/* pass_splitk_rewriter.c — XLA:GPU's SplitkRewriter (splitk_rewriter.cc, hlo_normalization
 * pipeline, just before triton-gemm-rewriter): a matrix multiplication with few rows and columns
 * but a long contraction leaves most of the GPU idle, so its contracting dimension K is split into
 * S chunks computed as a batch of S products, which a reduce then sums:
 *
 *   dot(a[11,1152], b[1152,1024])  ->  reduce(dot(a[11,8,144], b[8,144,1024]) : f32[8,11,1024], dims={0})
 *
 * (in the GEMM accumulator type, f32 for bf16, converted back). The split is XLA's cost model
 * (ChooseSplitK over 1, 2, 4, ..., 2048; EstimateGemmCostAfterSplitK): 128x128 output tiles spread
 * over the SMs in waves, each tile's flops on K/S, the bytes the operands and partial results move,
 * and for S > 1 the reduce's bytes and launch, with the weights XLA fitted for Hopper and for
 * earlier GPUs. K is padded with zeros to a multiple of S and 16 bytes when needed. The reduce is a
 * kernel of its own after the GEMM (priority fusion gives it the conversions around it), which is
 * where Gemma's inference modules get their extra reductions.
 *
 * Only dots with one contracting dimension per operand and no s32 operand; run where XLA runs
 * Triton GEMMs (Ampere and later: sm_80+). Fused computations are left alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

typedef struct {
  int64_t b, m, n, k;
  int lhs_bits, rhs_bits, acc_bits, out_bits, flops_per_element;
} DotSize;

typedef struct {
  double compute, memory, reduction_memory, reduction_launch;
} Weights;

/* GetCostWeights */
static Weights weights_for(int sm) {
  if (sm >= 100) return (Weights){100.0, 0.0848863, 189.711, 1.21563e+08};
  if (sm >= 90) return (Weights){100.0, 0.194136, 193.1384, 4.36e+07};
  return (Weights){100.0, 0.0666955, 467.815, 5.65307e+07};
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* EstimateGemmCostAfterSplitK */
static double cost(const DotSize *g, int64_t split, int cores, const Weights *w) {
  const int64_t tile = 128; /* kMTileSize, kNTileSize */
  int64_t k = ceil_div(g->k, split), batch = g->b * split;
  int64_t mt = g->m < tile ? g->m : tile, nt = g->n < tile ? g->n : tile;
  double tiles = (double)(batch * ceil_div(g->m, tile) * ceil_div(g->n, tile));
  double concurrent = (double)(tile * tile) / (double)(mt * nt);
  double waves = fmax(1.0, tiles / ((double)cores * concurrent));
  double compute = (double)g->flops_per_element * (double)mt * (double)nt * (double)k * waves * w->compute;
  double reads = (double)g->m * (double)g->k * (double)g->b * g->lhs_bits / 8.0 +
                 (double)g->n * (double)g->k * (double)g->b * g->rhs_bits / 8.0;
  double writes = (double)g->m * (double)g->n * (double)batch * (split > 1 ? g->acc_bits : g->out_bits) / 8.0;
  double dot = fmax(compute, (reads + writes) * w->memory);
  if (split == 1) return dot;
  double reduction = ((double)batch * g->m * g->n * g->acc_bits / 8.0 + (double)g->b * g->m * g->n * g->out_bits / 8.0) *
                     w->reduction_memory;
  return dot + w->reduction_launch + reduction;
}

/* ChooseSplitK */
static int64_t choose(const DotSize *g, int sm, int cores, double *best_cost, double *unsplit_cost) {
  static const int64_t candidates[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  Weights w = weights_for(sm);
  int64_t best = 1;
  double bc = 0;
  for (size_t q = 0; q < sizeof candidates / sizeof candidates[0]; q++) {
    double c = cost(g, candidates[q], cores, &w);
    if (q == 0) *unsplit_cost = c;
    if (q == 0 || c < bc) {
      bc = c;
      best = candidates[q];
    }
  }
  *best_cost = bc;
  return best;
}

/* The element size XLA assumes a side is read in: up a chain of unary elementwise ops (a convert
 * in front of the dot is fused into the GEMM). */
static int side_bits(const IrInstr *i) {
  while (ir_op_is_elementwise(i->op) && i->noperands == 1) i = i->operands[0];
  return ir_type_bytes(i->shape.type) * 8;
}

static IrType accumulator(IrType t) { return t == IR_F16 || t == IR_BF16 ? IR_F32 : t; }

static void dot_size(const IrInstr *dot, const IrDotDims *dd, DotSize *g) {
  const IrShape *l = &dot->operands[0]->shape, *r = &dot->operands[1]->shape;
  g->b = g->m = g->n = g->k = 1;
  for (int d = 0; d < l->rank; d++) {
    if (ir_dims_contain(dd->lhs_batch, dd->nlhs_batch, d)) g->b *= l->dims[d];
    else if (ir_dims_contain(dd->lhs_contract, dd->nlhs_contract, d)) g->k *= l->dims[d];
    else g->m *= l->dims[d];
  }
  for (int d = 0; d < r->rank; d++)
    if (!ir_dims_contain(dd->rhs_batch, dd->nrhs_batch, d) && !ir_dims_contain(dd->rhs_contract, dd->nrhs_contract, d))
      g->n *= r->dims[d];
  g->lhs_bits = side_bits(dot->operands[0]);
  g->rhs_bits = side_bits(dot->operands[1]);
  g->acc_bits = ir_type_bytes(accumulator(dot->shape.type)) * 8;
  g->out_bits = ir_type_bytes(dot->shape.type) * 8;
  g->flops_per_element = 2;
}

typedef struct {
  IrComputation *c;
  IrInstr *dot;
} Builder;

static IrInstr *add(Builder *b, IrOpcode op, const IrShape *s, IrInstr **ops, int n, const char *base) {
  IrInstr *x = ir_instr_new_before(b->c, b->dot, op, s, ops, n, ir_module_series_name(b->c->module, base, false));
  if (x) {
    const char *meta = ir_attr_text(b->dot, "metadata");
    if (meta) ir_attr_set_text(x, "metadata", meta);
    x->loc = b->dot->loc;
  }
  return x;
}

/* SplitKOperand: pads dimension kd to padded_k (with zeros) and splits it into [split, k/split]. */
static IrInstr *split_operand(Builder *b, IrInstr *op, int kd, int64_t split, int64_t padded_k) {
  const IrShape *s = &op->shape;
  IrModule *m = b->c->module;
  if (s->dims[kd] != padded_k) {
    IrShape zs = ir_shape_scalar(s->type);
    IrInstr *zero = add(b, IR_OP_CONSTANT, &zs, NULL, 0, "constant");
    double z = 0;
    if (!zero || !(zero->literal = ir_literal_new(&m->arena, &z, 1, s->type, &zs))) return NULL;
    int64_t pd[IR_MAX_RANK];
    memcpy(pd, s->dims, sizeof(int64_t) * (size_t)s->rank);
    pd[kd] = padded_k;
    IrShape ps = ir_shape_array(&m->arena, s->type, s->rank, pd);
    IrInstr *ops[2] = {op, zero};
    IrInstr *pad = add(b, IR_OP_PAD, &ps, ops, 2, "pad");
    if (!pad) return NULL;
    int64_t lo[IR_MAX_RANK] = {0}, hi[IR_MAX_RANK] = {0};
    hi[kd] = padded_k - s->dims[kd];
    ir_attr_set_padding(pad, lo, hi, NULL, s->rank);
    op = pad;
    s = &op->shape;
  }
  int64_t nd[IR_MAX_RANK];
  int n = 0;
  for (int d = 0; d < s->rank; d++) {
    if (d == kd) {
      nd[n++] = split;
      nd[n++] = s->dims[d] / split;
    } else {
      nd[n++] = s->dims[d];
    }
  }
  IrShape rs = ir_shape_array(&m->arena, s->type, n, nd);
  if (!ir_shape_default_layout(s)) {
    /* an operand in a layout (a transposed weight layout-assignment made a bitcast): the split
       dimension's two halves take its place in memory, so this is still a bitcast */
    int major[IR_MAX_RANK], m2m[IR_MAX_RANK];
    for (int k = 0; k < s->rank; k++) major[k] = s->minor_to_major[s->rank - 1 - k];
    if (!simp_reshape_layout(s, major, &rs, m2m) || !rs.minor_to_major) return NULL;
    memcpy(rs.minor_to_major, m2m, sizeof(int) * (size_t)rs.rank);
  }
  return add(b, IR_OP_BITCAST, &rs, &op, 1, "bitcast"); /* a bitcast (XLA normalizes it to one) */
}

static bool rewrite(IrInstr *dot, PassContext *cx, void *arg, bool *changed) {
  int sm = *(const int *)arg;
  IrDotDims dd;
  if (dot->noperands != 2 || !ir_dot_dims(dot, &dd) || dd.nlhs_contract != 1 || dd.nrhs_contract != 1) return true;
  for (int k = 0; k < 2; k++)
    if (dot->operands[k]->shape.type == IR_S32) return true; /* neither cuBLAS nor Triton takes s32 */
  DotSize g;
  dot_size(dot, &dd, &g);
  double best = 0, unsplit = 0;
  int64_t split = choose(&g, sm, cx->device->sm_count, &best, &unsplit);
  if (split == 1) return true;
  /* GetPaddedK: a multiple of split and of 16 bytes of the narrower operand */
  int minbits = g.lhs_bits < g.rhs_bits ? g.lhs_bits : g.rhs_bits;
  if (minbits > 128) minbits = 128;
  int64_t unit = split * 128 / (minbits > 0 ? minbits : 8);
  int64_t padded_k = ceil_div(g.k, unit) * unit;
  Builder b = {dot->parent, dot};
  int kl = (int)dd.lhs_contract[0], kr = (int)dd.rhs_contract[0];
  IrInstr *lhs = split_operand(&b, dot->operands[0], kl, split, padded_k);
  IrInstr *rhs = lhs ? split_operand(&b, dot->operands[1], kr, split, padded_k) : NULL;
  if (!rhs) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  /* the split is a new batch dimension, at the same place among the batch dimensions on both sides */
  int pos = 0;
  for (int q = 0; q < dd.nlhs_batch; q++) pos += dd.lhs_batch[q] < kl;
  int64_t lb[IR_MAX_RANK], rb[IR_MAX_RANK];
  int nb = 0;
  for (int q = 0; q <= dd.nlhs_batch; q++) {
    if (q == pos) {
      lb[nb] = kl;
      rb[nb] = kr;
      nb++;
    }
    if (q < dd.nlhs_batch) {
      lb[nb] = dd.lhs_batch[q] + (dd.lhs_batch[q] >= kl);
      rb[nb] = dd.rhs_batch[q] + (dd.rhs_batch[q] >= kr);
      nb++;
    }
  }
  int64_t lc = kl + 1, rc = kr + 1;
  /* the result: batch dimensions (the split among them), then the original's others */
  IrType acc = accumulator(dot->shape.type);
  int64_t od[IR_MAX_RANK];
  int no = 0;
  for (int q = 0; q < nb; q++) od[no++] = lhs->shape.dims[lb[q]];
  for (int d = dd.nlhs_batch; d < dot->shape.rank; d++) od[no++] = dot->shape.dims[d];
  IrShape ds = ir_shape_array(&b.c->module->arena, acc, no, od);
  IrInstr *ops[2] = {lhs, rhs};
  IrInstr *nd = add(&b, IR_OP_DOT, &ds, ops, 2, "dot");
  if (!nd) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  ir_attr_set_dims(nd, "lhs_batch_dims", lb, nb);
  ir_attr_set_dims(nd, "lhs_contracting_dims", &lc, 1);
  ir_attr_set_dims(nd, "rhs_batch_dims", rb, nb);
  ir_attr_set_dims(nd, "rhs_contracting_dims", &rc, 1);
  /* ReduceDimension: the partial products summed over the split */
  IrShape zs = ir_shape_scalar(acc);
  IrInstr *zero = add(&b, IR_OP_CONSTANT, &zs, NULL, 0, "constant");
  double z = 0;
  if (!zero || !(zero->literal = ir_literal_new(&b.c->module->arena, &z, 1, acc, &zs)))
    return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  char rname[300];
  snprintf(rname, sizeof rname, "%s.reduce_sub_computation", nd->name);
  IrComputation *sum = simp_add_computation(b.c->module, b.c, acc, rname);
  if (!sum) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  IrShape rs = dot->shape;
  rs.type = acc;
  IrInstr *rops[2] = {nd, zero};
  IrInstr *red = add(&b, IR_OP_REDUCE, &rs, rops, 2, "reduce");
  if (!red) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  int64_t rdim = pos;
  ir_attr_set_dims(red, "dimensions", &rdim, 1);
  ir_attr_set_comp(red, "to_apply", sum);
  IrInstr *v = red;
  if (acc != dot->shape.type && !(v = add(&b, IR_OP_CONVERT, &dot->shape, &red, 1, "convert")))
    return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  char name[256];
  snprintf(name, sizeof name, "%s", dot->name);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = name, .consumer = nd->name,
                    .result = red->name, .accepted = true};
  pass_metric(&d, "split", (double)split);
  pass_metric(&d, "cost", best);
  pass_metric(&d, "cost_unsplit", unsplit);
  simp_replace(dot, v);
  pass_emit(cx->sink, &d,
            "%s (%lld x %lld outputs, contracting %lld) is split %lld ways along its contraction: %s computes %lld partial "
            "products in f32 and %s sums them, since XLA's cost model rates that %.3g against %.3g unsplit on %d SMs "
            "(ChooseSplitK)", name, (long long)g.m, (long long)g.n, (long long)g.k, (long long)split, nd->name,
            (long long)split, red->name, best, unsplit, cx->device->sm_count);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  const char *arch = cx->device ? cx->device->arch : "";
  int sm = strncmp(arch, "sm_", 3) == 0 ? atoi(arch + 3) : 0;
  if (sm < 80 || cx->device->sm_count <= 0) return true;
  return simp_rewrite_each(m, cx, IR_OP_DOT, rewrite, &sm, true, changed);
}

const Pass pass_splitk_rewriter = {
    "splitk-rewriter",
    "a matrix multiplication with a long contraction and few outputs is split along it into a batch of partial "
    "products and a reduce (XLA:GPU's SplitkRewriter; Ampere+)",
    run,
};
