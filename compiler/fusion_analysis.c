/* fusion_analysis.c — what XLA's GPU fusion passes ask about a fusion before they build it: is
 * an op fusible at all, which emitter a (hypothetical) fusion would get, what its hero is, and
 * how long its kernel would take by XLA's GpuPerformanceModel. Shared by priority-fusion and
 * today's multi_output_fusion; each function names the XLA function it follows. */
#include <string.h>

#include "fusion_analysis.h"
#include "plan.h"

/* ---------- what may fuse (XLA's priority_fusion.cc IsFusible) ---------- */

const IrInstr *fusion_fused_root(const IrInstr *i) {
  IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  return fc && fc->root ? fc->root : i;
}

static bool kind_is(const IrInstr *i, const char *kind) {
  const char *k = ir_fusion_kind(i);
  return strcmp(k ? k : "kLoop", kind) == 0;
}

/* A Triton fusion XLA built earlier (the softmax rewriter's `__triton`, not a Triton GEMM):
 * XLA's IsGenericTritonFusion. Priority fusion grows these through CanFuseTriton. */
bool fusion_is_generic_triton(const IrInstr *i) {
  if (i->op != IR_OP_FUSION || !kind_is(i, "kCustom")) return false;
  const char *bc = ir_attr_text(i, "backend_config");
  return bc && strstr(bc, "\"kind\":\"__triton\"") != NULL;
}

/* XLA's IsFusible for priority fusion: side-effect free, and elementwise or an op the loop,
 * reduction, scatter or concatenate emitters can take. Library calls (dot, convolution,
 * custom-call, sort, rng) are opaque kernels unless the user made them fusible with `set library`. */
bool fusion_xla_fusible(const IrInstr *i, const PassSettings *s) {
  if (i->dead) return false;
  if (ir_op_is_elementwise(i->op)) return i->op != IR_OP_RNG;
  switch (i->op) {
  case IR_OP_FUSION: return !kind_is(i, "kCustom");
  case IR_OP_COPY:
  case IR_OP_IOTA:
  case IR_OP_CONSTANT:
  case IR_OP_REDUCE:
  case IR_OP_BITCAST:
  case IR_OP_BROADCAST:
  case IR_OP_CONCATENATE:
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_DYNAMIC_UPDATE_SLICE:
  case IR_OP_GATHER:
  case IR_OP_PAD:
  case IR_OP_REDUCE_WINDOW:
  case IR_OP_RESHAPE:
  case IR_OP_REVERSE:
  case IR_OP_SCATTER:
  case IR_OP_SLICE:
  case IR_OP_TRANSPOSE: return true;
  case IR_OP_DOT:
  case IR_OP_CONVOLUTION: return !fusion_is_library_call(i, s);
  default: return false;
  }
}

/* XLA's IsIntermediate with one operand: what FindNonTrivialHero walks through. */
bool fusion_intermediate(const IrInstr *x) {
  if (x->noperands != 1) return false;
  return ir_op_is_elementwise(x->op) || x->op == IR_OP_BITCAST || x->op == IR_OP_RESHAPE;
}

/* The operand x reads, followed across the fusion boundaries of consumer c and producer p (the
 * fusion being considered); NULL when it lies outside the fusion. */
static const IrInstr *inside_operand(const IrInstr *x, const IrInstr *c, const IrInstr *p) {
  const IrInstr *o = x->operands[0];
  for (int guard = 0; guard < 4; guard++) {
    if (o->op == IR_OP_PARAMETER && o->parent && !o->parent->is_entry) {
      const IrInstr *owner = NULL;
      if (c->op == IR_OP_FUSION && o->parent == ir_fused_computation(c)) owner = c;
      else if (p && p->op == IR_OP_FUSION && o->parent == ir_fused_computation(p)) owner = p;
      if (!owner || o->param_number < 0 || o->param_number >= owner->noperands) return NULL;
      o = owner->operands[o->param_number];
      if (owner == p) return NULL; /* a parameter of the producer: outside */
      continue;
    }
    if (p && o == p) return fusion_fused_root(p)->op == IR_OP_TUPLE ? NULL : fusion_fused_root(p);
    if (o->parent && c->op == IR_OP_FUSION && o->parent == ir_fused_computation(c)) return o;
    if (p && p->op == IR_OP_FUSION && o->parent == ir_fused_computation(p)) return o;
    return NULL;
  }
  return NULL;
}

/* Whether the fusion of p into c (p may be NULL: c alone) is a reduction fusion in XLA's
 * HloFusionAnalysis: some root's hero, found through single-operand elementwise ops and bitcasts,
 * is a reduction from or to contiguous dimensions. */
bool fusion_reduction_emitter(const IrInstr *c, const IrInstr *p) {
  const IrInstr *r = fusion_fused_root(c);
  const IrInstr *roots[64];
  int n = 0;
  if (r->op == IR_OP_TUPLE && c->op == IR_OP_FUSION)
    for (int k = 0; k < r->noperands && n < 64; k++) roots[n++] = r->operands[k];
  else
    roots[n++] = r;
  for (int k = 0; k < n; k++) {
    const IrInstr *h = roots[k];
    if (h->op == IR_OP_PARAMETER && c->op == IR_OP_FUSION && p && h->param_number >= 0 &&
        h->param_number < c->noperands && c->operands[h->param_number] == p)
      h = fusion_fused_root(p);
    for (int guard = 0; guard < 100000 && fusion_intermediate(h); guard++) {
      const IrInstr *o = inside_operand(h, c, p);
      if (!o) break;
      h = o;
    }
    if (h->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(h)) return true;
  }
  return false;
}

bool fusion_reads(const IrInstr *p, const IrInstr *x) {
  for (int k = 0; k < p->noperands; k++)
    if (p->operands[k] == x) return true;
  return false;
}

#define MEMORY_COMPUTE_PARALLELISM 0.95

static bool launches(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_PARAMETER:
  case IR_OP_CONSTANT:
  case IR_OP_TUPLE:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_BITCAST: return false;
  default: return true;
  }
}

static double bw_bytes_per_us(const DeviceProfile *d) { return (d && d->dram_gbps > 0 ? d->dram_gbps : 1000.0) * 1e3; }
static double flops_per_us(const DeviceProfile *d) { return (d && d->peak_gflops > 0 ? d->peak_gflops : 1000.0) * 1e3; }

/* CombineComputeAndMemoryAccessTime: compute and memory overlap, but not perfectly. */
static double combine(double compute, double memory) {
  double lo = compute < memory ? compute : memory;
  return compute + memory - MEMORY_COMPUTE_PARALLELISM * lo;
}

/* EstimateRunTimeForInstruction: one kernel, without the launch. */
double perf_exec_us(const DeviceProfile *d, const IrInstr *i) {
  if (!launches(i)) return 0;
  double bw = bw_bytes_per_us(d);
  double read = 0;
  for (int k = 0; k < i->noperands; k++) {
    bool dup = false;
    for (int j = 0; j < k; j++) dup = dup || i->operands[j] == i->operands[k];
    if (!dup) read += (double)plan_operand_bytes_read(i, k);
  }
  double write = (double)plan_bytes_written(i);
  return combine(fusion_flops(i) / flops_per_us(d), (read + write) / bw);
}

/* EstimateRunTimeForFusion: consumer c with producer p inlined. The fused kernel reads the
 * producer's operands as much as c uses the producer's output, c's other operands as before,
 * writes what c writes, and computes the producer's arithmetic once per use. */
double perf_fused_exec_us(const DeviceProfile *d, const IrInstr *p, const IrInstr *c) {
  double bw = bw_bytes_per_us(d);
  double pbytes = (double)ir_shape_bytes(&p->shape);
  double used = 0;
  for (int k = 0; k < c->noperands; k++)
    if (c->operands[k] == p) used += (double)plan_operand_bytes_read(c, k);
  double util = pbytes > 0 ? used / pbytes : 1;
  double read = 0;
  for (int k = 0; k < c->noperands; k++) {
    const IrInstr *op = c->operands[k];
    bool dup = op == p;
    for (int j = 0; j < k; j++) dup = dup || c->operands[j] == op;
    if (!dup) read += (double)plan_operand_bytes_read(c, k);
  }
  for (int k = 0; k < p->noperands; k++) {
    const IrInstr *op = p->operands[k];
    bool dup = false;
    for (int j = 0; j < k; j++) dup = dup || p->operands[j] == op;
    if (dup) continue;
    double b = (double)plan_operand_bytes_read(p, k) * util;
    double size = (double)ir_shape_bytes(&op->shape);
    /* Read once from memory; what c also reads of it directly comes from the same lines. */
    if (fusion_reads(c, op) && b > size) b = size;
    read += b;
  }
  double write = (double)plan_bytes_written(c);
  double flops = fusion_flops(c) + fusion_flops(p) * (util > 0 ? util : 1);
  return combine(flops / flops_per_us(d), (read + write) / bw);
}


/* ---------- heroes and emitters (XLA's HloFusionAnalysis) ---------- */

/* FindNonTrivialHero inside one computation: up through single-operand elementwise ops, bitcasts
 * and reshapes, stopping at a parameter. */
const IrInstr *fusion_hero(const IrInstr *root) {
  const IrInstr *h = root;
  for (int guard = 0; guard < 100000 && fusion_intermediate(h); guard++) {
    const IrInstr *o = h->operands[0];
    if (o->op == IR_OP_PARAMETER && o->parent && !o->parent->is_entry) break;
    h = o;
  }
  return h;
}

/* GetDescriptionForTiledTransposeEmitter, in outline: a transpose (or layout-changing copy) that
 * moves the minor dimension, large enough in both tiled dimensions for the shared-memory tile. */
bool fusion_tiled_transpose(const IrInstr *x) {
  if (x->op != IR_OP_TRANSPOSE || x->noperands != 1 || x->shape.rank < 2) return false;
  int64_t perm[IR_MAX_RANK];
  int n = ir_attr_dims(x, "dimensions", perm, IR_MAX_RANK);
  int r = x->shape.rank;
  if (n != r || perm[r - 1] == r - 1) return false;
  int64_t minor_out = x->shape.dims[r - 1], minor_in = x->operands[0]->shape.dims[r - 1];
  return minor_out >= 16 && minor_in >= 16 && minor_out * minor_in >= 64 * 128;
}

static int roots_of(const IrInstr *i, const IrInstr **out, int max) {
  const IrInstr *r = fusion_fused_root(i);
  int n = 0;
  if (i->op == IR_OP_FUSION && r->op == IR_OP_TUPLE)
    for (int k = 0; k < r->noperands && n < max; k++) out[n++] = r->operands[k];
  else
    out[n++] = r;
  return n;
}

bool fusion_contiguous_reduce(const IrInstr *x) {
  return x->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(x);
}

FusionEmitter fusion_emitter_kind(const IrInstr *i) {
  if (i->op == IR_OP_FUSION && kind_is(i, "kCustom")) return FUSION_EMITTER_CUSTOM;
  const IrInstr *roots[64];
  int n = roots_of(i, roots, 64);
  for (int k = 0; k < n; k++)
    if (fusion_contiguous_reduce(fusion_hero(roots[k]))) return FUSION_EMITTER_REDUCTION;
  for (int k = 0; k < n; k++)
    if (fusion_tiled_transpose(fusion_hero(roots[k]))) return FUSION_EMITTER_TRANSPOSE;
  if (n == 1 && roots[0]->op == IR_OP_CONCATENATE) return FUSION_EMITTER_CONCATENATE;
  if (n == 1 && roots[0]->op == IR_OP_SCATTER) return FUSION_EMITTER_SCATTER;
  return FUSION_EMITTER_LOOP;
}
