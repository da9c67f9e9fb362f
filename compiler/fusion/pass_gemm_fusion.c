/* pass_gemm_fusion.c — XLA:GPU's GemmFusion (gemm_fusion.cc, the pass XLA's dumps call
 * triton-gemm-rewriter; hlo_normalization pipeline, after layout normalization, on Ampere and
 * later): every matrix multiplication Triton can emit becomes a `__triton_gemm` fusion (kind
 * kCustom, named gemm_fusion_DOT) holding the dot and what Triton can compute on the way in and
 * out of it, so a transpose or a scaling of an operand, a bias add and an activation of the
 * result cost no kernel of their own:
 *
 *   gemm_fusion_dot.2 = bf16[12,128,128] fusion(q, k), kind=kCustom, calls=...
 *     { transpose(k); dot; multiply(dot, broadcast(0.125)) }, "kind":"__triton_gemm"
 *
 * Which dots (GemmFusionVisitor::HandleDot): not a tiny one the classical emitters take
 * (IsMatrixMultiplicationTooSmallForRewriting with xla_gpu_gemm_rewrite_size_threshold 100:
 * (rows + columns) * contraction < 100, for f16, bf16, f32: it stays a plain dot that priority
 * fusion treats like any op), and one Triton supports (types, one contracting and one
 * non-contracting dimension per operand). This XLA fuses even pure matrix multiplications
 * (xla_gpu_triton_gemm_any is on: its autotuner would pick cuBLAS on a real GPU; deviceless it
 * keeps Triton, which is what its dumps show).
 *
 * What goes in follows triton_tiling_propagation.cc: a "dimension order" — each tensor's
 * dimensions as fragments of the dot's dimensions, minor first — is propagated from each dot
 * operand towards its producers (FuseDotOperand: breadth first, at most 4 parameters per operand,
 * kMaxParameterPerDotOperand) and from the result towards its single user, recursively
 * (FuseDotOutput / FuseTowardUsers). An instruction joins when
 *   - Triton can emit it (legacy IsTritonSupportedInstruction: elementwise ops of the types and
 *     opcodes Triton handles, bitcast, reshape, transpose, broadcast, slice, concatenate;
 *     never a reduce, pad, tuple or dynamic-slice);
 *   - its dimension order can be propagated (GetPropagatedDimOrders: a reshape or bitcast splits
 *     and merges fragments; a slice or broadcast only towards the inputs; a concatenate only of
 *     the non-contracting dimension, each piece a multiple of 64; nothing whose user is a
 *     concatenate) and is one Triton can tile (GetRequirementsIfSupportedOrder: no transpose
 *     within a dimension, only the left operand's non-contracting dimension split, once);
 *   - it is worth it: into the inputs when it does not read more than 1 KiB beyond what it writes,
 *     or it is a binary op with a broadcast of a parameter or constant, or its operands are
 *     parameters and constants it alone reads (IsInputWorthFusing); into the output when its
 *     other operands are parameters or broadcasts of scalars or parameters and it does not write
 *     more than 1 KiB beyond what it reads (IsOutputWorthFusing).
 * Instructions with other readers are cloned into the fusion; XLA's clones are its own.
 *
 * Each dot's decision is recorded: what it absorbed, and every neighbour it did not with XLA's
 * reason. Fused computations are left alone; GPUs before Ampere (and the host) get no Triton
 * GEMMs: their dots stay cuBLAS calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion_build.h"
#include "fusion_rules.h"
#include "../passes/passes.h"
#include "../passes/simplify.h"

#define GF_MAX_FRAGS 24 /* fragments of one tensor */
#define GF_MAX_DIMS 16  /* dot dimensions a tensor's fragments belong to */
#define GF_MAX_NODES 256
#define GF_MAX_PARAMS_PER_OPERAND 4 /* TritonFusionAnalysis::kMaxParameterPerDotOperand */
#define GF_IO_TOLERANCE 1024        /* kIoToleranceBytes */
#define GF_REWRITE_SIZE_THRESHOLD 100 /* xla_gpu_gemm_rewrite_size_threshold */
#define GF_NO_SPLIT (-1)            /* kNoSplitRequirement */

/* ---------- dimension orders (triton_tiling_propagation.cc) ---------- */

/* A part of one of the dot's dimensions that a tensor dimension holds. */
typedef struct {
  int dst;               /* the dot dimension it belongs to */
  int64_t count;         /* full count */
  int64_t slice_start, sliced_count;
} Frag;

/* A tensor's fragments, minor first, and for each dot dimension the fragments that hold it. */
typedef struct {
  int n;
  Frag f[GF_MAX_FRAGS];
  int ndims;
  int dim[GF_MAX_DIMS];
  int nidx[GF_MAX_DIMS];
  int idx[GF_MAX_DIMS][GF_MAX_FRAGS];
} DimOrder;

/* DotProperties */
typedef struct {
  int noncontracting; /* the operand's non-contracting dimension, -1 for the output */
  int splittable;     /* the dimension that may be split once physically, -1 for none */
} Props;

/* Why propagation or profitability failed (a FusionDecision's text), or NULL. */
typedef const char *Why;

static Frag frag(int dst, int64_t count) { return (Frag){dst, count, 0, count}; }
static bool sliced(const Frag *f) { return f->sliced_count != f->count; }

static int dim_slot(DimOrder *o, int dst, bool add) {
  for (int k = 0; k < o->ndims; k++)
    if (o->dim[k] == dst) return k;
  if (!add || o->ndims >= GF_MAX_DIMS) return -1;
  o->dim[o->ndims] = dst;
  o->nidx[o->ndims] = 0;
  return o->ndims++;
}

static bool push_idx(DimOrder *o, int dst, int index) {
  int s = dim_slot(o, dst, true);
  if (s < 0 || o->nidx[s] >= GF_MAX_FRAGS) return false;
  o->idx[s][o->nidx[s]++] = index;
  return true;
}

static bool push_frag(DimOrder *o, Frag f) {
  if (o->n >= GF_MAX_FRAGS) return false;
  o->f[o->n++] = f;
  return true;
}

/* DimensionOrder::FromDotOperandOrOutput: one fragment per dimension, labelled by itself. */
static void order_from_shape(const IrShape *s, DimOrder *o) {
  memset(o, 0, sizeof *o);
  for (int d = s->rank - 1; d >= 0; d--) { /* minor to major: default layouts */
    push_idx(o, d, o->n);
    push_frag(o, frag(d, s->dims[d]));
  }
}

static bool same_order(const DimOrder *a, const DimOrder *b) {
  if (a->n != b->n) return false;
  for (int k = 0; k < a->n; k++)
    if (memcmp(&a->f[k], &b->f[k], sizeof(Frag)) != 0) return false;
  return true;
}

/* GetPropagatedDimOrdersForBitcast: src's fragments re-cut along dst's dimensions. */
static Why propagate_bitcast(const DimOrder *src, const IrShape *dst_shape, DimOrder *dst) {
  memset(dst, 0, sizeof *dst);
  int map_n[GF_MAX_FRAGS] = {0}, map[GF_MAX_FRAGS][GF_MAX_FRAGS];
  int64_t dst_remaining = 1;
  int di = dst_shape->rank - 1; /* minor to major */
  for (int s = 0; s < src->n; s++) {
    const Frag *sf = &src->f[s];
#define ADD(F)                                                                          \
  do {                                                                                  \
    if (!push_frag(dst, (F)) || map_n[s] >= GF_MAX_FRAGS) return "too many fragments"; \
    map[s][map_n[s]++] = dst->n - 1;                                                    \
  } while (0)
    if (dst_remaining >= sf->count) {
      if (dst_remaining % sf->count) return "Unsupported bitcast";
      ADD(*sf);
      dst_remaining /= sf->count;
    } else {
      int64_t src_remaining = sf->count;
      if (dst_remaining > 1) {
        if (src_remaining % dst_remaining || sliced(sf)) return "Unsupported bitcast";
        ADD(frag(sf->dst, dst_remaining));
        src_remaining /= dst_remaining;
        dst_remaining = 1;
      }
      while (src_remaining > 1) {
        if (di < 0) return "Unsupported bitcast";
        int64_t dsize = dst_shape->dims[di], size = dsize;
        if (dsize > src_remaining) {
          if (dsize % src_remaining) return "Unsupported bitcast";
          dst_remaining = dsize / src_remaining;
          size = src_remaining;
        }
        if (sliced(sf)) return "Unsupported bitcast";
        ADD(frag(sf->dst, size));
        src_remaining /= size;
        di--;
      }
    }
#undef ADD
  }
  if (dst_remaining != 1) return "Unsupported bitcast";
  /* remaining major dimensions: size-1 ones join the most major fragment's dimension */
  for (; di >= 0; di--) {
    if (dst_shape->dims[di] != 1) return "Unsupported bitcast";
    if (dst->n > 0 && src->n > 0) {
      if (!push_frag(dst, frag(dst->f[dst->n - 1].dst, 1))) return "too many fragments";
      int last = src->n - 1;
      if (map_n[last] >= GF_MAX_FRAGS) return "too many fragments";
      map[last][map_n[last]++] = dst->n - 1;
    }
  }
  for (int d = 0; d < src->ndims; d++)
    for (int q = 0; q < src->nidx[d]; q++) {
      int s = src->idx[d][q];
      for (int t = 0; t < map_n[s]; t++)
        if (!push_idx(dst, src->dim[d], map[s][t])) return "too many fragments";
    }
  return NULL;
}

typedef enum { OUT_TO_IN, IN_TO_OUT } Direction;

/* GetPropagatedDimOrdersForDimAlteringOp, for one destination (an operand of hlo, or hlo):
 * transpose, copy, broadcast, slice, concatenate. `concat_offset` accumulates a concatenate's
 * operand sizes across calls. */
static Why propagate_altering(const IrInstr *hlo, Direction dir, const DimOrder *src_order, const IrInstr *dst,
                              int64_t *concat_offset, DimOrder *out) {
  memset(out, 0, sizeof *out);
  const IrInstr *src = dir == OUT_TO_IN ? hlo : hlo->operands[0];
  DimOrder so = *src_order; /* a slice edits fragments in place */
  if (hlo->op == IR_OP_SLICE && ir_shape_elements(&hlo->shape) == 1) return "Slice to scalar is not implemented yet.";
  int rank = src->shape.rank;
  if (so.n < rank) return "Cannot propagate further from trivial sized tensor";
  /* group fragments by physical dimension (minor to major), then by logical dimension */
  int group_start[IR_MAX_RANK], group_len[IR_MAX_RANK];
  int fi = 0;
  for (int d = rank - 1; d >= 0; d--) {
    int64_t acc = 1;
    group_start[d] = fi;
    group_len[d] = 0;
    do {
      if (fi >= so.n) return "fragments do not cover the dimensions";
      acc *= so.f[fi].count;
      group_len[d]++;
      fi++;
    } while (acc < src->shape.dims[d]);
    if (acc != src->shape.dims[d]) return "fragments do not cover the dimensions";
  }
  /* dst logical dimension -> list of source fragment indices (or -1 - k: the k-th new fragment) */
  int dl_n[IR_MAX_RANK] = {0}, dl[IR_MAX_RANK][GF_MAX_FRAGS];
  Frag extra[IR_MAX_RANK];
  int nextra = 0;
  int drank = dst->shape.rank;
#define TAKE(D, L)                                                       \
  do {                                                                   \
    for (int q_ = 0; q_ < group_len[L]; q_++) dl[D][dl_n[D]++] = group_start[L] + q_; \
  } while (0)
  if (hlo->op == IR_OP_TRANSPOSE) {
    int64_t perm[IR_MAX_RANK];
    if (ir_attr_dims(hlo, "dimensions", perm, IR_MAX_RANK) != hlo->shape.rank) return "malformed transpose";
    /* out dimension i is operand dimension perm[i] */
    for (int i = 0; i < hlo->shape.rank; i++) {
      if (dir == OUT_TO_IN) TAKE(perm[i], i);
      else TAKE(i, perm[i]);
    }
  } else if (hlo->op == IR_OP_BROADCAST) {
    int64_t bd[IR_MAX_RANK];
    int nb = ir_attr_dims(hlo, "dimensions", bd, IR_MAX_RANK);
    if (nb != drank) return "malformed broadcast";
    for (int i = 0; i < nb; i++) TAKE(i, bd[i]);
  } else if (hlo->op == IR_OP_CONCATENATE) {
    int64_t cd;
    if (!ir_attr_int(hlo, "dimensions", &cd)) {
      int64_t v[1];
      if (ir_attr_dims(hlo, "dimensions", v, 1) != 1) return "malformed concatenate";
      cd = v[0];
    }
    for (int i = 0; i < drank; i++) {
      if (i == cd) {
        if (group_len[i] != 1 || sliced(&so.f[group_start[i]])) return "Unsupported concatenation.";
        Frag nf = frag(so.f[group_start[i]].dst, dst->shape.dims[i]);
        nf.slice_start = -*concat_offset;
        nf.sliced_count = dst->shape.dims[i];
        *concat_offset += dst->shape.dims[i];
        extra[nextra] = nf;
        dl[i][dl_n[i]++] = -1 - nextra;
        nextra++;
      } else {
        TAKE(i, i);
      }
    }
  } else if (hlo->op == IR_OP_COPY) {
    for (int i = 0; i < drank; i++) TAKE(i, i);
  } else if (hlo->op == IR_OP_SLICE) {
    int64_t start[IR_MAX_RANK], limit[IR_MAX_RANK], stride[IR_MAX_RANK];
    if (ir_attr_slice(hlo, start, limit, stride, IR_MAX_RANK) != drank) return "malformed slice";
    for (int i = 0; i < drank; i++) {
      TAKE(i, i);
      if (limit[i] - start[i] != dst->shape.dims[i]) {
        if (dl_n[i] > 1) return "Slicing of fragmented dimension.";
        Frag *f = &so.f[dl[i][0]];
        f->count = dst->shape.dims[i];
        f->slice_start += start[i];
      }
    }
  } else {
    return "Function called on a wrong instruction.";
  }
#undef TAKE
  /* destination physical order (minor to major), and each dot dimension's fragments */
  int src_to_dst[GF_MAX_FRAGS];
  for (int k = 0; k < GF_MAX_FRAGS; k++) src_to_dst[k] = -1;
  bool nontrivial[GF_MAX_FRAGS * 2] = {false};
  for (int d = drank - 1; d >= 0; d--)
    for (int q = 0; q < dl_n[d]; q++) {
      int s = dl[d][q];
      Frag f = s >= 0 ? so.f[s] : extra[-1 - s];
      if (!push_frag(out, f)) return "too many fragments";
      if (s >= 0) src_to_dst[s] = out->n - 1;
      if (f.count > 1 && f.dst >= 0 && f.dst < GF_MAX_FRAGS * 2) nontrivial[f.dst] = true;
    }
  for (int d = 0; d < so.ndims; d++) {
    int dst_dim = so.dim[d];
    for (int q = 0; q < so.nidx[d]; q++) {
      int s = so.idx[d][q];
      int t = src_to_dst[s];
      /* (a concatenated dimension's new fragment is in the tensor's order but, as in XLA, not in
         its dimension's list) */
      if (t < 0) {
        if (hlo->op == IR_OP_BROADCAST && so.f[s].count > 1 && dst_dim >= 0 && dst_dim < GF_MAX_FRAGS * 2 &&
            nontrivial[dst_dim])
          return "Unsupported broadcast";
        continue;
      }
      if (!push_idx(out, dst_dim, t)) return "too many fragments";
    }
  }
  return NULL;
}

/* GetRequirementsIfSupportedOrder: the split a dimension order needs, or why Triton cannot tile
 * it. *split gets the splittable dimension's major part size (GF_NO_SPLIT when unsplit). */
static Why requirements(const DimOrder *o, const Props *p, int64_t *split) {
  *split = GF_NO_SPLIT;
  for (int d = 0; d < o->ndims; d++) {
    int n = o->nidx[d];
    const int *ix = o->idx[d];
    for (int i = 0; i < n - 1; i++)
      if (sliced(&o->f[ix[i]])) return "Sliced non-major-most fragment.";
    int groups = 0, last = -1;
    for (int i = 0; i < n;) {
      int64_t size = o->f[ix[i]].count;
      while (i + 1 < n && ix[i + 1] == ix[i] + 1) {
        i++;
        size *= o->f[ix[i]].count;
      }
      if (size == 1) {
        i++;
        continue;
      }
      if (last > ix[i]) return "Transpose within a dimension.";
      if (++groups > 1) {
        if (o->dim[d] != p->splittable) return "Unsupported split of a dimension.";
        if (groups > 2) return "2nd split of a splittable dimension.";
        if (*split != GF_NO_SPLIT && *split != size) return "Conflicting splits of splittable dimension";
        *split = size;
      }
      last = ix[i];
      i++;
    }
  }
  return NULL;
}

static Why combine(int64_t *acc, int64_t b) {
  if (*acc == b || b == GF_NO_SPLIT) return NULL;
  if (*acc == GF_NO_SPLIT) {
    *acc = b;
    return NULL;
  }
  return "Conflicting splits of splittable dimension";
}

/* ---------- what Triton emits (support_legacy.cc) ---------- */

static bool triton_type(IrType t) {
  switch (t) {
  case IR_PRED: case IR_S8: case IR_S16: case IR_S32: case IR_S64: case IR_F16: case IR_BF16: case IR_F32:
  case IR_F64: case IR_F8E4M3FN: case IR_F8E5M2:
    return true;
  default: return false;
  }
}

/* IsTritonSupportedElementwiseUpToFloatNormalization: the opcodes Triton's emitter takes for an
 * operand of type t (bf16 and f16 math is done in f32). */
static bool triton_elementwise_op(IrOpcode op, IrType t) {
  switch (op) {
  case IR_OP_CONVERT: return true;
  case IR_OP_SELECT: case IR_OP_CLAMP: return true;
  default: break;
  }
  if (t == IR_PRED) return op == IR_OP_NOT || op == IR_OP_AND || op == IR_OP_OR || op == IR_OP_XOR || op == IR_OP_COMPARE;
  switch (op) {
  case IR_OP_ABS: case IR_OP_NEGATE: case IR_OP_ADD: case IR_OP_COMPARE: case IR_OP_MAXIMUM: case IR_OP_MINIMUM:
  case IR_OP_MULTIPLY: case IR_OP_SUBTRACT:
    return true;
  default: break;
  }
  if (ir_type_is_int(t))
    return op == IR_OP_NOT || op == IR_OP_AND || op == IR_OP_OR || op == IR_OP_XOR || op == IR_OP_DIVIDE ||
           op == IR_OP_REMAINDER || op == IR_OP_SHL || op == IR_OP_SHRA ||
           op == IR_OP_SHRL;
  if (!ir_type_is_float(t)) return false;
  switch (op) {
  case IR_OP_COS: case IR_OP_EXP: case IR_OP_EXPM1: case IR_OP_FLOOR: case IR_OP_CEIL: case IR_OP_LOG:
  case IR_OP_LOG1P: case IR_OP_RSQRT: case IR_OP_SIN: case IR_OP_SQRT: case IR_OP_CBRT: case IR_OP_TAN:
  case IR_OP_TANH: case IR_OP_ERF: case IR_OP_ATAN2: case IR_OP_DIVIDE: case IR_OP_POWER:
    return true;
  default: return false;
  }
}

/* legacy_triton::IsTritonSupportedInstruction for what may join a GEMM fusion (not the dot). */
static Why triton_supported(const IrInstr *i) {
  if (ir_op_is_elementwise(i->op)) {
    if (!triton_type(i->shape.type)) return "Unsupported output data type.";
    for (int k = 0; k < i->noperands; k++)
      if (!triton_type(i->operands[k]->shape.type)) return "Unsupported input data type.";
    if (i->noperands == 0 || !triton_elementwise_op(i->op, i->operands[0]->shape.type))
      return "Unsupported elementwise operation.";
    return NULL;
  }
  switch (i->op) {
  case IR_OP_BITCAST: case IR_OP_TRANSPOSE: case IR_OP_SLICE: case IR_OP_RESHAPE: case IR_OP_PAD:
  case IR_OP_CONCATENATE: case IR_OP_PARAMETER: case IR_OP_BROADCAST:
    return NULL;
  case IR_OP_CONSTANT: return triton_type(i->shape.type) ? NULL : "Unsupported output data type.";
  default: return "Unsupported opcode.";
  }
}

/* ---------- propagation through one instruction ---------- */

/* The dimension orders propagation gives: up to 4 operands (out->in) or the instruction (in->out). */
typedef struct {
  int n;
  const IrInstr *who[8];
  DimOrder order[8];
} OrderMap;

static DimOrder *map_put(OrderMap *m, const IrInstr *who) {
  for (int k = 0; k < m->n; k++)
    if (m->who[k] == who) return &m->order[k];
  if (m->n >= 8) return NULL;
  m->who[m->n] = who;
  return &m->order[m->n++];
}

static const DimOrder *map_get(const OrderMap *m, const IrInstr *who) {
  for (int k = 0; k < m->n; k++)
    if (m->who[k] == who) return &m->order[k];
  return NULL;
}

static bool scalar_constant(const IrInstr *i) { return i->op == IR_OP_CONSTANT && ir_shape_is_scalar(&i->shape); }

/* GetPropagatedDimOrders */
static Why propagate(const IrInstr *hlo, Direction dir, const DimOrder *src, const Props *p, OrderMap *out) {
  memset(out, 0, sizeof *out);
  if (hlo->op != IR_OP_PARAMETER && dir == OUT_TO_IN)
    for (int u = 0; u < hlo->nusers; u++)
      if (hlo->users[u]->op == IR_OP_CONCATENATE || hlo->users[u]->op == IR_OP_DYNAMIC_SLICE)
        return "No fusion into concatenations or dynamic slice.";
  if (hlo->op == IR_OP_PARAMETER || scalar_constant(hlo)) return NULL;
  if (hlo->op == IR_OP_TRANSPOSE || hlo->op == IR_OP_COPY || hlo->op == IR_OP_BROADCAST || hlo->op == IR_OP_SLICE) {
    if (hlo->op == IR_OP_BROADCAST && dir != OUT_TO_IN) return "Unsupported broadcast direction.";
    if (hlo->op == IR_OP_SLICE && dir != OUT_TO_IN) return "Unsupported slice direction.";
    const IrInstr *dst = dir == OUT_TO_IN ? hlo->operands[0] : hlo;
    DimOrder *o = map_put(out, dst);
    int64_t off = 0;
    return o ? propagate_altering(hlo, dir, src, dst, &off, o) : "too many operands";
  }
  if (hlo->noperands > 0 && ir_op_is_elementwise(hlo->op) &&
      triton_elementwise_op(hlo->op, hlo->operands[0]->shape.type)) {
    if (dir == OUT_TO_IN) {
      for (int k = 0; k < hlo->noperands; k++) {
        DimOrder *o = map_put(out, hlo->operands[k]);
        if (!o) return "too many operands";
        *o = *src;
      }
    } else {
      DimOrder *o = map_put(out, hlo);
      if (!o) return "too many operands";
      *o = *src;
    }
    return NULL;
  }
  if (hlo->op == IR_OP_BITCAST || hlo->op == IR_OP_RESHAPE) {
    /* with row-major layouts every reshape is a bitcast (ReshapeIsBitcast) */
    const IrInstr *dst = dir == OUT_TO_IN ? hlo->operands[0] : hlo;
    DimOrder *o = map_put(out, dst);
    return o ? propagate_bitcast(src, &dst->shape, o) : "too many operands";
  }
  if (hlo->op == IR_OP_CONCATENATE && dir == OUT_TO_IN) {
    int nc = p->noncontracting;
    int slot = -1;
    for (int d = 0; d < src->ndims; d++)
      if (src->dim[d] == nc) slot = d;
    if (slot >= 0 && src->nidx[slot] > 1) return "Concatenations on split non-contracting dimensions are unsupported.";
    /* LogicalIndexOfLabeledDimension: the dimension holding the non-contracting fragments */
    int64_t cd = -1;
    {
      int64_t v[1];
      if (ir_attr_dims(hlo, "dimensions", v, 1) == 1) cd = v[0];
    }
    int found = -1, fi = 0;
    for (int d = hlo->shape.rank - 1; d >= 0 && found < 0; d--) {
      int64_t acc = 1;
      while (acc < hlo->shape.dims[d] && fi < src->n) {
        acc *= src->f[fi].count;
        if (src->f[fi].dst == nc) found = d;
        fi++;
      }
    }
    if (found < 0 || found != cd) return "Unsupported concatenation.";
    for (int k = 0; k < hlo->noperands; k++)
      if (hlo->operands[k]->shape.dims[cd] % 64) return "At least one operand of concatenation can not be perfectly tiled.";
    int64_t off = 0;
    for (int k = 0; k < hlo->noperands; k++) {
      DimOrder *o = map_put(out, hlo->operands[k]);
      if (!o) return "too many operands";
      Why w = propagate_altering(hlo, dir, src, hlo->operands[k], &off, o);
      if (w) return w;
    }
    return NULL;
  }
  return "Unimplemented instruction.";
}

/* GetPropagatedDimOrdersAndRequirements */
static Why propagate_with_requirements(const IrInstr *hlo, Direction dir, const DimOrder *src, const Props *p,
                                       OrderMap *out, int64_t *split) {
  Why w = propagate(hlo, dir, src, p, out);
  if (w) return w;
  *split = GF_NO_SPLIT;
  for (int k = 0; k < hlo->noperands; k++) {
    const DimOrder *o = map_get(out, hlo->operands[k]);
    if (!o) continue;
    int64_t s;
    if ((w = requirements(o, p, &s)) || (w = combine(split, s))) return w;
  }
  const DimOrder *o = map_get(out, hlo);
  if (o) {
    int64_t s;
    if ((w = requirements(o, p, &s)) || (w = combine(split, s))) return w;
  }
  return NULL;
}

static int64_t input_minus_output_bytes(const IrInstr *i) {
  int64_t in = 0;
  for (int k = 0; k < i->noperands; k++) in += ir_shape_bytes(&i->operands[k]->shape);
  return in - ir_shape_bytes(&i->shape);
}

static bool param_or_constant(const IrInstr *i) { return i->op == IR_OP_PARAMETER || i->op == IR_OP_CONSTANT; }

/* IsInputWorthFusing */
static bool input_worth_fusing(const IrInstr *i) {
  if (input_minus_output_bytes(i) <= GF_IO_TOLERANCE) return true;
  if (i->nusers > 1) return false;
  bool all_pc = true, all_single = true;
  for (int k = 0; k < i->noperands; k++) {
    all_pc &= param_or_constant(i->operands[k]);
    all_single &= param_or_constant(i->operands[k]) && i->operands[k]->nusers == 1;
  }
  if (i->op == IR_OP_SLICE && all_pc) return true;
  if (i->op == IR_OP_MULTIPLY) return false; /* xla_gpu_experimental_enable_subchannel_dequantisation_fusion is off */
  return all_single;
}

/* IsEffectiveParameter */
static bool effective_parameter(const IrInstr *i) {
  while ((i->op == IR_OP_BITCAST || i->op == IR_OP_GET_TUPLE_ELEMENT) && i->noperands == 1) i = i->operands[0];
  return i->op == IR_OP_PARAMETER;
}

/* IsOutputWorthFusing: CanNotBeFusedIntoAUser, or it does not write more than 1 KiB beyond what
 * it reads. */
static bool output_worth_fusing(const IrInstr *i) {
  if (i->is_root || (i->nusers == 1 && i->users[0]->is_root && i->users[0]->op == IR_OP_TUPLE)) return true;
  return input_minus_output_bytes(i) >= -GF_IO_TOLERANCE;
}

/* GetPropagatedDimOrdersAndRequirementsIfProfitablyFusible. src_operand: the operand the order
 * comes from (in->out), -1 for out->in. */
static Why profitably_fusible(const IrInstr *hlo, Direction dir, int src_operand, const DimOrder *src, const Props *p,
                              OrderMap *out, int64_t *split) {
  if (hlo->op == IR_OP_TUPLE || hlo->op == IR_OP_GET_TUPLE_ELEMENT) return "Unsupported instruction.";
  if (hlo->op == IR_OP_REDUCE || hlo->op == IR_OP_ALL_REDUCE) return "Reductions are not fused yet.";
  if (hlo->op == IR_OP_PAD) return "Pads are not fused yet.";
  Why w = triton_supported(hlo);
  if (w) return w;
  if ((w = propagate_with_requirements(hlo, dir, src, p, out, split))) return w;
  if (dir == OUT_TO_IN) {
    bool accepted = false;
    if (ir_op_is_elementwise(hlo->op) && hlo->noperands == 2)
      for (int k = 0; k < 2 && !accepted; k++) {
        const IrInstr *o = hlo->operands[k];
        const DimOrder *oo = map_get(out, o);
        if (o->op == IR_OP_BROADCAST && o->noperands == 1 && param_or_constant(o->operands[0]) && oo) {
          OrderMap tmp;
          int64_t s;
          accepted = profitably_fusible(o, OUT_TO_IN, -1, oo, p, &tmp, &s) == NULL;
        }
      }
    if (!accepted && !input_worth_fusing(hlo)) return "Not obviously profitable to fuse as input.";
  } else {
    for (int k = 0; k < hlo->noperands; k++) {
      if (k == src_operand) continue;
      const IrInstr *o = hlo->operands[k];
      if ((o->op == IR_OP_BROADCAST && o->noperands == 1 &&
           (ir_shape_is_scalar(&o->operands[0]->shape) || effective_parameter(o->operands[0]))) ||
          effective_parameter(o))
        continue;
      return "Has multiple inputs - not properly analyzed yet.";
    }
    if (!output_worth_fusing(hlo)) return "Not obviously profitable to fuse as output.";
  }
  return NULL;
}

/* ---------- the fusion plan ---------- */

typedef struct {
  const IrInstr *hlo;
  DimOrder order;
  int fuse; /* -1 undecided, 0 parameter, 1 fused */
  Why why;  /* why not fused */
} Node;

typedef struct {
  Node *nodes;
  int n;
} Plan;

/* One instruction the GEMM fusion did not take, and why (for the decision log). */
typedef struct {
  const IrInstr *hlo;
  char why[160];
} Refusal;

typedef struct {
  const IrInstr *v[GF_MAX_NODES];
  int n;
  Refusal refused[GF_MAX_NODES];
  int nrefused;
} Chosen;

static bool chosen_has(const Chosen *c, const IrInstr *i) {
  for (int k = 0; k < c->n; k++)
    if (c->v[k] == i) return true;
  return false;
}

static void choose(Chosen *c, const IrInstr *i) {
  if (!chosen_has(c, i) && c->n < GF_MAX_NODES) c->v[c->n++] = i;
}

static void refuse(Chosen *c, const IrInstr *i, Why why) {
  for (int k = 0; k < c->nrefused; k++)
    if (c->refused[k].hlo == i) return;
  if (c->nrefused >= GF_MAX_NODES) return;
  c->refused[c->nrefused].hlo = i;
  snprintf(c->refused[c->nrefused].why, sizeof c->refused[0].why, "%s", why);
  c->nrefused++;
}

static int num_added_parameters(const IrInstr *i) {
  if (i->op == IR_OP_PARAMETER || (i->op == IR_OP_CONSTANT && !ir_shape_is_scalar(&i->shape))) return 0;
  return i->noperands - 1;
}

/* BuildFusionPlanTowardOperands: breadth first from root with its order; what joins goes into
 * `chosen`, what does not (and why) into its refusals. max_params < 0: no limit. */
static bool plan_toward_operands(const IrInstr *root, const DimOrder *root_order, int max_params, const Props *p,
                                 int64_t *split, Chosen *chosen) {
  Node *nodes = fx_malloc(sizeof *nodes * GF_MAX_NODES);
  if (!nodes) return false;
  int nnodes = 0;
  int queue[GF_MAX_NODES * 4], qh = 0, qt = 0;
  int ninputs = 1;
  nodes[nnodes++] = (Node){root, *root_order, -1, NULL};
  queue[qt++] = 0;
  int requeued = 0;
  while (qt - qh > requeued) {
    int id = queue[qh++];
    Node *nd = &nodes[id];
    if (max_params >= 0 && ninputs + num_added_parameters(nd->hlo) > max_params) {
      if (qt < (int)(sizeof queue / sizeof queue[0])) queue[qt++] = id;
      requeued++;
      continue;
    }
    requeued = 0;
    if (nd->hlo->op == IR_OP_PARAMETER) {
      nd->fuse = 0;
      continue;
    }
    if (nd->hlo->op == IR_OP_DYNAMIC_SLICE) {
      nd->fuse = 0;
      nd->why = "dynamic slices are not fused into GEMMs";
      continue;
    }
    OrderMap om;
    int64_t s = GF_NO_SPLIT;
    Why w = profitably_fusible(nd->hlo, OUT_TO_IN, -1, &nd->order, p, &om, &s);
    int64_t combined = *split;
    if (!w) w = combine(&combined, s);
    if (w) {
      nd->fuse = 0;
      nd->why = w;
      continue;
    }
    *split = combined;
    ninputs--;
    for (int k = 0; k < nd->hlo->noperands; k++) {
      const IrInstr *op = nd->hlo->operands[k];
      const DimOrder *oo = map_get(&om, op);
      if (!oo) continue;
      int found = -1;
      for (int q = 0; q < nnodes && found < 0; q++)
        if (nodes[q].hlo == op && same_order(&nodes[q].order, oo)) found = q;
      if (found >= 0) continue;
      if (nnodes >= GF_MAX_NODES || qt >= (int)(sizeof queue / sizeof queue[0])) continue;
      nodes[nnodes] = (Node){op, *oo, -1, NULL};
      ninputs++;
      queue[qt++] = nnodes++;
    }
    nodes[id].fuse = 1;
  }
  for (; qh < qt; qh++)
    if (nodes[queue[qh]].fuse < 0) {
      nodes[queue[qh]].fuse = 0;
      nodes[queue[qh]].why = "the fusion would read more than 4 parameters per operand (kMaxParameterPerDotOperand)";
    }
  for (int k = 0; k < nnodes; k++) {
    if (nodes[k].fuse == 1) choose(chosen, nodes[k].hlo);
    else if (nodes[k].why && nodes[k].hlo->op != IR_OP_PARAMETER) refuse(chosen, nodes[k].hlo, nodes[k].why);
  }
  fx_free(nodes);
  return true;
}

/* The dot's one contracting and one non-contracting dimension of operand k; false when it has
 * another number of them (ContractingDimensionIndex, NonContractingDimensionIndex). */
static bool operand_dims(const IrInstr *dot, const IrDotDims *dd, int k, int *contracting, int *noncontracting) {
  const IrShape *s = &dot->operands[k]->shape;
  int nb = k ? dd->nrhs_batch : dd->nlhs_batch, nc = k ? dd->nrhs_contract : dd->nlhs_contract;
  const int64_t *b = k ? dd->rhs_batch : dd->lhs_batch, *c = k ? dd->rhs_contract : dd->lhs_contract;
  if (nc != 1) return false;
  *contracting = (int)c[0];
  int found = 0;
  for (int d = 0; d < s->rank; d++) {
    bool other = d == c[0];
    for (int q = 0; q < nb; q++) other |= b[q] == d;
    if (!other) {
      *noncontracting = d;
      found++;
    }
  }
  return found == 1;
}

/* ---------- which dots ---------- */

static bool dot_output_type(IrType t) { return t == IR_F16 || t == IR_BF16 || t == IR_F32 || t == IR_F64 || t == IR_S32; }
static bool dot_input_type(IrType t) {
  return t == IR_F16 || t == IR_BF16 || t == IR_F32 || t == IR_F64 || t == IR_S8 || t == IR_F8E4M3FN || t == IR_F8E5M2;
}

/* IsMatrixMultiplicationTooSmallForRewriting && IsDotSupportedByClassicalEmitters */
static bool tiny(const IrInstr *dot, const IrDotDims *dd, int64_t *size) {
  const IrShape *l = &dot->operands[0]->shape, *r = &dot->operands[1]->shape;
  int64_t k = 1, m = 1, n = 1;
  for (int q = 0; q < dd->nlhs_contract; q++) k *= l->dims[dd->lhs_contract[q]];
  for (int d = 0; d < l->rank; d++) {
    bool other = false;
    for (int q = 0; q < dd->nlhs_contract; q++) other |= dd->lhs_contract[q] == d;
    for (int q = 0; q < dd->nlhs_batch; q++) other |= dd->lhs_batch[q] == d;
    if (!other) m *= l->dims[d];
  }
  for (int d = 0; d < r->rank; d++) {
    bool other = false;
    for (int q = 0; q < dd->nrhs_contract; q++) other |= dd->rhs_contract[q] == d;
    for (int q = 0; q < dd->nrhs_batch; q++) other |= dd->rhs_batch[q] == d;
    if (!other) n *= r->dims[d];
  }
  *size = (m + n) * k;
  IrType t = dot->shape.type;
  return *size < GF_REWRITE_SIZE_THRESHOLD && (t == IR_F16 || t == IR_F32 || t == IR_BF16);
}

/* Why Triton cannot emit the dot (IsTritonSupportedInstruction for a dot), or NULL. */
static Why dot_unsupported(const IrInstr *dot, const IrDotDims *dd) {
  if (!dot_output_type(dot->shape.type)) return "its result type is not one Triton's GEMM emitter writes";
  for (int k = 0; k < 2; k++)
    if (!dot_input_type(dot->operands[k]->shape.type)) return "an operand's type is not one Triton's GEMM emitter reads";
  int c, nc;
  for (int k = 0; k < 2; k++)
    if (!operand_dims(dot, dd, k, &c, &nc))
      return "an operand does not have exactly one contracting and one non-contracting dimension";
  return NULL;
}

/* ---------- building the fusion ---------- */

typedef struct {
  PassContext *cx;
  int made;
} Gemm;

/* Fuses the chosen producers of f (operands of f, repeatedly) into it. */
static IrInstr *fuse_chosen_operands(IrInstr *f, const Chosen *c) {
  for (bool more = true; f && more;) {
    more = false;
    for (int k = 0; f && k < f->noperands; k++)
      if (chosen_has(c, f->operands[k])) {
        f = fusion_fuse(f, f->operands[k]);
        more = true;
        break;
      }
  }
  return f;
}

static void list_names(const Chosen *c, const IrInstr *skip, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  int shown = 0;
  for (int k = 0; k < c->n && len < n; k++) {
    if (c->v[k] == skip || c->v[k]->op == IR_OP_CONSTANT) continue;
    if (shown == 8) {
      len += (size_t)snprintf(buf + len, n - len, ", ...");
      break;
    }
    len += (size_t)snprintf(buf + len, n - len, "%s%s (%s)", shown ? ", " : "", c->v[k]->name, ir_op_name(c->v[k]->op));
    shown++;
  }
}

static bool build(Gemm *g, IrInstr *dot, const IrDotDims *dd, const char *dname, Chosen *chosen, Chosen *others);

static bool gemm_fuse(Gemm *g, IrInstr *dot) {
  PassContext *cx = g->cx;
  IrDotDims dd;
  if (!ir_dot_dims(dot, &dd) || dot->noperands != 2) return true;
  char dname[256];
  snprintf(dname, sizeof dname, "%s", dot->name);
  int64_t size;
  if (tiny(dot, &dd, &size)) {
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = dname};
    pass_metric(&d, "size", (double)size);
    pass_metric(&d, "limit", GF_REWRITE_SIZE_THRESHOLD);
    pass_emit(cx->sink, &d, "%s stays a plain dot that fusion treats like any op: (rows + columns) x contraction is %lld, "
              "under %d, too small for a GEMM kernel (IsMatrixMultiplicationTooSmallForRewriting)",
              dname, (long long)size, GF_REWRITE_SIZE_THRESHOLD);
    return true;
  }
  Why no = dot_unsupported(dot, &dd);
  if (no) {
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = dname};
    pass_emit(cx->sink, &d, "%s stays a cuBLAS matmul: Triton's GEMM emitter cannot take it: %s", dname, no);
    return true;
  }
  /* what joins and what stays out: for the operands, then for each fused user's other operands */
  Chosen *all = fx_calloc(17, sizeof *all);
  if (!all) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  Chosen *chosen = &all[0], *others = &all[1];
  bool ok = build(g, dot, &dd, dname, chosen, others);
  fx_free(all);
  return ok;
}

/* Plans and builds the GEMM fusion of dot (gemm_fuse's second half). */
static bool build(Gemm *g, IrInstr *dot, const IrDotDims *ddp, const char *dname, Chosen *chosen, Chosen *others) {
  PassContext *cx = g->cx;
  IrDotDims dd = *ddp;
  int64_t split = GF_NO_SPLIT;
  /* the operands (FuseDotOperand), the left one first */
  for (int k = 0; k < 2; k++) {
    int c = 0, nc = 0;
    operand_dims(dot, &dd, k, &c, &nc);
    Props p = {nc, (k == 0 && dd.nlhs_batch == 0) ? nc : -1};
    DimOrder o;
    order_from_shape(&dot->operands[k]->shape, &o);
    int64_t s = GF_NO_SPLIT;
    if (!plan_toward_operands(dot->operands[k], &o, GF_MAX_PARAMS_PER_OPERAND, &p, &s, chosen))
      return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    if (k == 0) split = s;
  }
  /* the result (FuseDotOutput: FuseTowardUsers) */
  const IrInstr *users[GF_MAX_NODES];
  int nusers = 0;
  {
    Props p = {-1, split != GF_NO_SPLIT && split > 1 ? 0 : -1};
    DimOrder o;
    order_from_shape(&dot->shape, &o);
    const IrInstr *h = dot;
    int64_t reqs = split;
    while (h->nusers == 1 && nusers < 16) {
      const IrInstr *u = h->users[0];
      int src = -1;
      for (int k = 0; k < u->noperands; k++)
        if (u->operands[k] == h) src = k;
      OrderMap om;
      int64_t s;
      Why w = profitably_fusible(u, IN_TO_OUT, src, &o, &p, &om, &s);
      int64_t combined = reqs;
      if (!w) w = combine(&combined, s);
      if (w) {
        if (u->op != IR_OP_TUPLE) refuse(chosen, u, w);
        break;
      }
      const DimOrder *uo = map_get(&om, u);
      if (!uo) break;
      reqs = combined;
      Chosen *oc = &others[nusers];
      memset(oc, 0, sizeof *oc);
      if (u->noperands > 1) {
        /* the user's other operands (no profitability check: decided above) */
        OrderMap back;
        int64_t bs;
        if (propagate_with_requirements(u, OUT_TO_IN, uo, &p, &back, &bs)) break;
        for (int k = 0; k < u->noperands; k++) {
          if (k == src) continue;
          const DimOrder *ko = map_get(&back, u->operands[k]);
          if (ko && !plan_toward_operands(u->operands[k], ko, -1, &p, &reqs, oc))
            return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
        }
      }
      users[nusers++] = u;
      o = *uo;
      h = u;
    }
    if (h->nusers > 1) {
      char why[160];
      snprintf(why, sizeof why, "%s has %d users: GemmFusion fuses only into a single user", h->name, h->nusers);
      for (int u = 0; u < h->nusers; u++) refuse(chosen, h->users[u], why);
    }
  }
  /* build it: the dot, its operands' producers, then each user with its other operands */
  IrInstr *f = fusion_wrap(dot, "kCustom");
  f = f ? fuse_chosen_operands(f, chosen) : NULL;
  for (int k = 0; f && k < nusers; k++) {
    f = fusion_fuse((IrInstr *)users[k], f);
    if (f) f = fuse_chosen_operands(f, &others[k]);
  }
  if (!f) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  ir_attr_set_text(f, "kind", "kCustom");
  ir_attr_set_text(f, "backend_config", "{\"fusion_backend_config\":{\"kind\":\"__triton_gemm\"}}");
  char base[300];
  snprintf(base, sizeof base, "gemm_fusion_%s", dname);
  ir_instr_rename(f, ir_module_series_name(f->parent->module, base, false));
  g->made++;
  /* the decision: what it holds, then what stayed out and why */
  char in[900], out[600];
  list_names(chosen, dot, in, sizeof in);
  size_t len = 0;
  out[0] = '\0';
  for (int k = 0; k < nusers && len < sizeof out; k++)
    len += (size_t)snprintf(out + len, sizeof out - len, "%s%s (%s)", k ? ", " : "", users[k]->name,
                            ir_op_name(users[k]->op));
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "fuse", .producer = dname, .consumer = f->name,
                    .result = f->name, .accepted = true};
  pass_metric(&d, "prologue", chosen->n);
  pass_metric(&d, "epilogue", nusers);
  pass_emit(cx->sink, &d, "%s becomes %s, one Triton GEMM kernel (kind __triton_gemm)%s%s%s%s", dname, f->name,
            in[0] ? " that also computes its operands' " : "", in, out[0] ? (in[0] ? " and its result's " : " that also computes its result's ") : "", out);
  for (int k = 0; k < chosen->nrefused; k++) {
    const Refusal *r = &chosen->refused[k];
    if (chosen_has(chosen, r->hlo) || r->hlo->dead) continue; /* fused along another path */
    const char *reason = strstr(r->why, "profitable") ? FR_BYTES_INCREASE
                         : strstr(r->why, "parameters per operand") ? FR_OPERAND_BUDGET
                         : strstr(r->why, "single user") ? FR_CODE_DUPLICATION
                                                          : FR_NOT_FUSIBLE;
    PassDecision rd = {.pass = cx->pass, .stage = cx->stage, .action = "fuse", .producer = r->hlo->name,
                       .consumer = f->name, .reason = reason};
    pass_emit(cx->sink, &rd, "%s stays outside %s: %s", r->hlo->name, f->name, r->why);
  }
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  /* EnsureTritonSupportsComputeCapability: Triton GEMMs from Ampere (sm_80) on */
  const char *arch = cx->device ? cx->device->arch : "";
  int sm = strncmp(arch, "sm_", 3) == 0 ? atoi(arch + 3) : 0;
  if (sm < 80 || (cx->settings && !cx->settings->dot_is_library)) return true;
  Gemm g = {cx, 0};
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (comp->fusion_instr || !comp->ninstrs) continue;
    bool fused_body = false;
    for (int k = 0; k < m->ncomps && !fused_body; k++)
      for (int q = 0; q < m->comps[k]->ninstrs && !fused_body; q++)
        fused_body = m->comps[k]->instrs[q]->op == IR_OP_FUSION && ir_fused_computation(m->comps[k]->instrs[q]) == comp;
    if (fused_body) continue;
    int n;
    IrInstr **dots = simp_comp_collect(comp, IR_OP_DOT, &n);
    if (n < 0) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    if (!n) continue;
    bool ok = true;
    for (int k = 0; ok && k < n && !pass_interrupted(cx); k++)
      if (!dots[k]->dead && dots[k]->parent == comp) ok = gemm_fuse(&g, dots[k]);
    fx_free(dots);
    if (!ok) return false;
    ir_computation_sort(comp);
  }
  *changed = g.made > 0;
  return true;
}

const Pass pass_gemm_fusion = {
    "triton-gemm-rewriter",
    "matrix multiplications become Triton GEMM fusions with the operand and result work Triton can do (Ampere+; "
    "XLA:GPU's GemmFusion)",
    run,
};
