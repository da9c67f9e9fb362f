/* fusion_cost.c — what XLA's GpuHloCostAnalysis counts for one instruction, the numbers its
 * GpuPerformanceModel and priority-fusion's ProducerConsumerMergedTooLarge work from: the flops,
 * the bytes each operand slot reads (operand_bytes_accessed), the share of each operand it uses
 * (operand_utilization), the bytes it writes, and for a fusion the per-instruction utilizations
 * and emission counts of its body (FusionCalculateUtilizations). XLA runs the analysis with
 * count_multiple_input_accesses on, so a broadcast reads its operand once per output element.
 * Each function names the XLA handler it follows. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "fusion_analysis.h"

/* HloOpProfiles (xla/service/gpu/model/hlo_op_profiles_data.h, measured by XLA on each GPU): the
 * clock cycles one element of an elementwise op takes, which GpuHloCostAnalysis counts as its
 * flops (GetFlopsPerElementwiseOpElement). The profile is the device's own, by its compute
 * capability: sm_90 (H100) and sm_80 (A100) are the ones fxplain's GPU profiles need. An op and
 * type the profile does not list costs kDefaultFlopsPerElement = 3: on an A100 that is most f32
 * ops (add, exp, rsqrt, ...), while power (1221) and tanh (504) are listed. */
typedef struct {
  const char *arch;
  IrOpcode op;
  IrType type;
  short cycles;
} OpProfile;

static const OpProfile op_profiles[] = {
    {"sm_90", IR_OP_DIVIDE, IR_S8, 356}, {"sm_90", IR_OP_MULTIPLY, IR_S8, 7}, {"sm_90", IR_OP_POWER, IR_S8, 122},
    {"sm_90", IR_OP_DIVIDE, IR_S16, 364}, {"sm_90", IR_OP_MULTIPLY, IR_S16, 7}, {"sm_90", IR_OP_POWER, IR_S16, 122},
    {"sm_90", IR_OP_DIVIDE, IR_S32, 297}, {"sm_90", IR_OP_MULTIPLY, IR_S32, 3}, {"sm_90", IR_OP_POWER, IR_S32, 71},
    {"sm_90", IR_OP_DIVIDE, IR_S64, 685}, {"sm_90", IR_OP_MULTIPLY, IR_S64, 11}, {"sm_90", IR_OP_POWER, IR_S64, 253},
    {"sm_90", IR_OP_DIVIDE, IR_U8, 300}, {"sm_90", IR_OP_MULTIPLY, IR_U8, 7}, {"sm_90", IR_OP_POWER, IR_U8, 122},
    {"sm_90", IR_OP_DIVIDE, IR_U16, 304}, {"sm_90", IR_OP_MULTIPLY, IR_U16, 7}, {"sm_90", IR_OP_POWER, IR_U16, 126},
    {"sm_90", IR_OP_DIVIDE, IR_U32, 122}, {"sm_90", IR_OP_MULTIPLY, IR_U32, 3}, {"sm_90", IR_OP_POWER, IR_U32, 71},
    {"sm_90", IR_OP_DIVIDE, IR_U64, 629}, {"sm_90", IR_OP_MULTIPLY, IR_U64, 11}, {"sm_90", IR_OP_POWER, IR_U64, 253},
    {"sm_90", IR_OP_CBRT, IR_F16, 201}, {"sm_90", IR_OP_COS, IR_F16, 997}, {"sm_90", IR_OP_EXP, IR_F16, 102},
    {"sm_90", IR_OP_EXPM1, IR_F16, 217}, {"sm_90", IR_OP_LOG, IR_F16, 182}, {"sm_90", IR_OP_LOG1P, IR_F16, 245},
    {"sm_90", IR_OP_RSQRT, IR_F16, 95}, {"sm_90", IR_OP_SIN, IR_F16, 993}, {"sm_90", IR_OP_SQRT, IR_F16, 95},
    {"sm_90", IR_OP_TANH, IR_F16, 502}, {"sm_90", IR_OP_ADD, IR_F16, 7}, {"sm_90", IR_OP_ATAN2, IR_F16, 451},
    {"sm_90", IR_OP_DIVIDE, IR_F16, 43}, {"sm_90", IR_OP_MULTIPLY, IR_F16, 7}, {"sm_90", IR_OP_POWER, IR_F16, 526},
    {"sm_90", IR_OP_SUBTRACT, IR_F16, 7},
    {"sm_90", IR_OP_CBRT, IR_F32, 178}, {"sm_90", IR_OP_COS, IR_F32, 978}, {"sm_90", IR_OP_EXP, IR_F32, 79},
    {"sm_90", IR_OP_EXPM1, IR_F32, 190}, {"sm_90", IR_OP_LOG, IR_F32, 166}, {"sm_90", IR_OP_LOG1P, IR_F32, 229},
    {"sm_90", IR_OP_RSQRT, IR_F32, 75}, {"sm_90", IR_OP_SIN, IR_F32, 958}, {"sm_90", IR_OP_SQRT, IR_F32, 75},
    {"sm_90", IR_OP_TANH, IR_F32, 467}, {"sm_90", IR_OP_ADD, IR_F32, 7}, {"sm_90", IR_OP_ATAN2, IR_F32, 431},
    {"sm_90", IR_OP_DIVIDE, IR_F32, 19}, {"sm_90", IR_OP_MULTIPLY, IR_F32, 3}, {"sm_90", IR_OP_POWER, IR_F32, 510},
    {"sm_90", IR_OP_SUBTRACT, IR_F32, 7},
    {"sm_90", IR_OP_CBRT, IR_F64, 586}, {"sm_90", IR_OP_COS, IR_F64, 558}, {"sm_90", IR_OP_EXP, IR_F64, 376},
    {"sm_90", IR_OP_EXPM1, IR_F64, 712}, {"sm_90", IR_OP_LOG, IR_F64, 815}, {"sm_90", IR_OP_LOG1P, IR_F64, 1259},
    {"sm_90", IR_OP_RSQRT, IR_F64, 277}, {"sm_90", IR_OP_SIN, IR_F64, 554}, {"sm_90", IR_OP_SQRT, IR_F64, 332},
    {"sm_90", IR_OP_TANH, IR_F64, 431}, {"sm_90", IR_OP_ADD, IR_F64, 15}, {"sm_90", IR_OP_ATAN2, IR_F64, 930},
    {"sm_90", IR_OP_DIVIDE, IR_F64, 526}, {"sm_90", IR_OP_MULTIPLY, IR_F64, 15}, {"sm_90", IR_OP_POWER, IR_F64, 2205},
    {"sm_90", IR_OP_SUBTRACT, IR_F64, 15},
    {"sm_90", IR_OP_COS, IR_C64, 2415}, {"sm_90", IR_OP_EXP, IR_C64, 641}, {"sm_90", IR_OP_EXPM1, IR_C64, 2055},
    {"sm_90", IR_OP_LOG, IR_C64, 756}, {"sm_90", IR_OP_LOG1P, IR_C64, 633}, {"sm_90", IR_OP_RSQRT, IR_C64, 3148},
    {"sm_90", IR_OP_SIN, IR_C64, 2324}, {"sm_90", IR_OP_SQRT, IR_C64, 4344}, {"sm_90", IR_OP_TANH, IR_C64, 2379},
    {"sm_90", IR_OP_ADD, IR_C64, 7}, {"sm_90", IR_OP_ATAN2, IR_C64, 6462}, {"sm_90", IR_OP_DIVIDE, IR_C64, 498},
    {"sm_90", IR_OP_MULTIPLY, IR_C64, 79}, {"sm_90", IR_OP_POWER, IR_C64, 5532}, {"sm_90", IR_OP_SUBTRACT, IR_C64, 7},
    {"sm_90", IR_OP_COS, IR_C128, 1750}, {"sm_90", IR_OP_EXP, IR_C128, 1342}, {"sm_90", IR_OP_EXPM1, IR_C128, 1275},
    {"sm_90", IR_OP_LOG, IR_C128, 2455}, {"sm_90", IR_OP_LOG1P, IR_C128, 2403}, {"sm_90", IR_OP_RSQRT, IR_C128, 5500},
    {"sm_90", IR_OP_SIN, IR_C128, 1999}, {"sm_90", IR_OP_SQRT, IR_C128, 6636}, {"sm_90", IR_OP_TANH, IR_C128, 4613},
    {"sm_90", IR_OP_ADD, IR_C128, 15}, {"sm_90", IR_OP_ATAN2, IR_C128, 13131}, {"sm_90", IR_OP_DIVIDE, IR_C128, 2280},
    {"sm_90", IR_OP_MULTIPLY, IR_C128, 39}, {"sm_90", IR_OP_POWER, IR_C128, 8363},
    {"sm_90", IR_OP_SUBTRACT, IR_C128, 15},
    {"sm_80", IR_OP_DIVIDE, IR_S8, 417},
    {"sm_80", IR_OP_DIVIDE, IR_S16, 468},
    {"sm_80", IR_OP_DIVIDE, IR_S64, 1094},
    {"sm_80", IR_OP_DIVIDE, IR_U8, 420}, {"sm_80", IR_OP_POWER, IR_U8, 417},
    {"sm_80", IR_OP_DIVIDE, IR_U16, 391}, {"sm_80", IR_OP_POWER, IR_U16, 454},
    {"sm_80", IR_OP_DIVIDE, IR_U64, 908}, {"sm_80", IR_OP_POWER, IR_U64, 744},
    {"sm_80", IR_OP_CBRT, IR_F16, 1195}, {"sm_80", IR_OP_LOG, IR_F16, 321}, {"sm_80", IR_OP_LOG1P, IR_F16, 346},
    {"sm_80", IR_OP_SQRT, IR_F16, 124}, {"sm_80", IR_OP_TANH, IR_F16, 499},
    {"sm_80", IR_OP_LOG, IR_F32, 259}, {"sm_80", IR_OP_TANH, IR_F32, 504}, {"sm_80", IR_OP_POWER, IR_F32, 1221},
    {"sm_80", IR_OP_CBRT, IR_F64, 1638}, {"sm_80", IR_OP_EXPM1, IR_F64, 572}, {"sm_80", IR_OP_LOG, IR_F64, 699},
    {"sm_80", IR_OP_LOG1P, IR_F64, 1223}, {"sm_80", IR_OP_RSQRT, IR_F64, 329}, {"sm_80", IR_OP_SIN, IR_F64, 597},
    {"sm_80", IR_OP_SQRT, IR_F64, 397}, {"sm_80", IR_OP_TANH, IR_F64, 733}, {"sm_80", IR_OP_ATAN2, IR_F64, 1080},
    {"sm_80", IR_OP_DIVIDE, IR_F64, 831}, {"sm_80", IR_OP_POWER, IR_F64, 1861},
    {"sm_80", IR_OP_LOG, IR_C64, 1037}, {"sm_80", IR_OP_LOG1P, IR_C64, 1029}, {"sm_80", IR_OP_ATAN2, IR_C64, 6618},
    {"sm_80", IR_OP_POWER, IR_C64, 4131},
    {"sm_80", IR_OP_COS, IR_C128, 2309}, {"sm_80", IR_OP_LOG, IR_C128, 2371}, {"sm_80", IR_OP_LOG1P, IR_C128, 2405},
    {"sm_80", IR_OP_RSQRT, IR_C128, 3945}, {"sm_80", IR_OP_SIN, IR_C128, 2284}, {"sm_80", IR_OP_SQRT, IR_C128, 5304},
    {"sm_80", IR_OP_TANH, IR_C128, 3618}, {"sm_80", IR_OP_ATAN2, IR_C128, 13564},
    {"sm_80", IR_OP_DIVIDE, IR_C128, 3037}, {"sm_80", IR_OP_POWER, IR_C128, 6054},
};

/* The profile of the architecture asked for last, as a table by opcode and type (the cost
 * model asks for every elementwise instruction of every tiling it times). */
static _Thread_local struct {
  bool built;
  char arch[32];
  short cycles[IR_OP_COUNT][IR_TYPE_COUNT];
} profile;

static int64_t flops_per_element(const DeviceProfile *d, IrOpcode op, IrType t) {
  const char *arch = d ? d->arch : "sm_90"; /* NULL: H100 */
  if ((unsigned)op >= IR_OP_COUNT || (unsigned)t >= IR_TYPE_COUNT) return 3;
  if (!profile.built || strncmp(profile.arch, arch, sizeof profile.arch) != 0) {
    for (int o = 0; o < IR_OP_COUNT; o++)
      for (int y = 0; y < IR_TYPE_COUNT; y++) profile.cycles[o][y] = 3; /* kDefaultFlopsPerElement */
    /* The table's first entry for an op and type counts, as a scan from its start would find. */
    for (size_t k = sizeof op_profiles / sizeof op_profiles[0]; k-- > 0;) {
      const OpProfile *e = &op_profiles[k];
      if (strcmp(e->arch, arch) == 0) profile.cycles[e->op][e->type] = e->cycles;
    }
    snprintf(profile.arch, sizeof profile.arch, "%s", arch);
    profile.built = true;
  }
  return profile.cycles[op][t];
}

static double elements(const IrShape *s) { return ir_shape_is_array(s) ? (double)ir_shape_elements(s) : 0; }

/* All array leaves of a shape, in bytes (GetShapeSize of a tuple counts its pointer table only,
 * but XLA asks for array shapes wherever it matters here). */
static double shape_bytes(const IrShape *s) { return (double)ir_shape_bytes(s); }

/* The flops of one computation run once (a reducer, a scatter's combiner): GpuHloCostAnalysis of
 * each elementwise instruction on its (scalar) shape. */
/* The elements of a reduce-window's window (1 when it has none). */
static double window_elements(const IrInstr *x) {
  IrWindow w;
  char why[8];
  if (!ir_attr_window(x, -1, &w, why, sizeof why)) return 1;
  double e = 1;
  for (int d = 0; d < w.rank; d++) e *= (double)w.size[d];
  return e;
}

static double computation_flops(const DeviceProfile *d, const IrComputation *r) {
  double per = 0;
  for (int k = 0; r && k < r->ninstrs; k++)
    if (ir_op_is_elementwise(r->instrs[k]->op))
      per += (double)flops_per_element(d, r->instrs[k]->op, r->instrs[k]->shape.type) * elements(&r->instrs[k]->shape);
  return per;
}

double hlo_cost_instr_flops(const DeviceProfile *d, const IrInstr *x) {
  if (ir_op_is_elementwise(x->op)) /* HandleElementwiseOp: the profile's cycles per element */
    return (double)flops_per_element(d, x->op, x->shape.type) * elements(&x->shape);
  switch (x->op) {
  case IR_OP_REDUCE: {
    /* HloCostAnalysis::HandleReduce: the reducer once per element folded in. */
    if (!x->noperands) return 0;
    const IrShape *out = x->shape.type == IR_TUPLE && x->shape.ntuple ? &x->shape.tuple[0] : &x->shape;
    return computation_flops(d, ir_attr_comp(x, "to_apply")) * (elements(&x->operands[0]->shape) - elements(out));
  }
  case IR_OP_REDUCE_WINDOW: {
    /* HandleReduceWindow: the reducer (window size - 1) times per output element. */
    double w = window_elements(x);
    const IrShape *out = x->shape.type == IR_TUPLE && x->shape.ntuple ? &x->shape.tuple[0] : &x->shape;
    return computation_flops(d, ir_attr_comp(x, "to_apply")) * elements(out) * (w - 1 > 0 ? w - 1 : 0);
  }
  case IR_OP_SCATTER: {
    /* HandleScatter: the combiner once per update element. */
    int n = (x->noperands - 1) / 2;
    if (n < 1) return 0;
    return computation_flops(d, ir_attr_comp(x, "to_apply")) * elements(&x->operands[n + 1]->shape);
  }
  case IR_OP_SORT: {
    /* HandleSort: n log2(n) comparisons. */
    double e = x->noperands ? elements(&x->operands[0]->shape) : 0;
    return e > 1 ? e * ceil(log2(e)) : 0;
  }
  case IR_OP_DOT:
  case IR_OP_CONVOLUTION: return plan_instr_flops(x);
  case IR_OP_CONCATENATE: {
    /* GpuHloCostAnalysis::HandleConcatenate: a compare and branch per element (6), and 400 when
     * the concatenation is along a non-major dimension whose first piece is not a multiple of 32
     * wide: warps then straddle the pieces and run both branches. */
    int64_t dim = 0;
    ir_attr_dims(x, "dimensions", &dim, 1);
    int per = dim > 0 && x->noperands && dim < x->operands[0]->shape.rank && (x->operands[0]->shape.dims[dim] & 31)
                  ? 400
                  : 6;
    return (double)per * elements(&x->shape);
  }
  default: return 0;
  }
}

/* operand_bytes_accessed and operand_utilization of operand slot k of a non-fusion instruction,
 * by its HloCostAnalysis handler (the default: the whole operand, used once). */
static void operand_access(const IrInstr *x, int k, double *bytes, double *util) {
  const IrInstr *op = x->operands[k];
  double size = shape_bytes(&op->shape), in = elements(&op->shape), out = elements(&x->shape);
  *bytes = size;
  *util = 1;
  switch (x->op) {
  case IR_OP_BITCAST: /* HandleBitcast: touches no memory */
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_TUPLE: *bytes = 0; return;
  case IR_OP_BROADCAST: /* HandleBroadcast, count_multiple_input_accesses */
    *bytes = shape_bytes(&x->shape);
    *util = in > 0 ? out / in : 0;
    return;
  case IR_OP_SLICE:
    if (k == 0) {
      *bytes = shape_bytes(&x->shape);
      *util = in > 0 ? out / in : 0;
    }
    return;
  case IR_OP_DYNAMIC_SLICE:
    if (k == 0) {
      *bytes = shape_bytes(&x->shape);
      *util = in > 0 ? out / in : 0;
    }
    return;
  case IR_OP_GATHER:
    if (k == 0) {
      *bytes = shape_bytes(&x->shape);
      *util = in > 0 ? out / in : 0;
    }
    return;
  case IR_OP_DYNAMIC_UPDATE_SLICE:
    if (k == 0) { /* aliased with the output; the updated part is never read */
      double upd = x->noperands > 1 ? elements(&x->operands[1]->shape) : 0;
      *bytes = 0;
      *util = out > 0 ? (out - upd) / out : 0;
    }
    return;
  case IR_OP_REDUCE: {
    /* GpuHloCostAnalysis::HandleReduce: each init value is read once per output element. */
    int inputs = x->noperands / 2;
    if (k >= inputs) {
      const IrShape *o = x->shape.type == IR_TUPLE && x->shape.ntuple ? &x->shape.tuple[0] : &x->shape;
      *bytes = elements(o) * size;
      *util = elements(o);
    }
    return;
  }
  case IR_OP_REDUCE_WINDOW: {
    /* HandleReduceWindow: every output element reads its whole window. */
    int inputs = x->noperands / 2;
    if (k < inputs) {
      const IrShape *o = x->shape.type == IR_TUPLE && x->shape.ntuple ? &x->shape.tuple[0] : &x->shape;
      double e = elements(o) * window_elements(x);
      *bytes = e * (double)ir_type_bytes(op->shape.type);
      *util = in > 0 ? e / in : 0;
    }
    return;
  }
  case IR_OP_SCATTER: {
    /* HandleScatter: the operands and the updates are read as much as the updates are large. */
    int n = (x->noperands - 1) / 2;
    if (n >= 1 && (k < n || k > n)) *bytes = shape_bytes(&x->operands[n + 1 + (k < n ? k : k - n - 1)]->shape);
    return;
  }
  default: return;
  }
}

/* output_bytes_accessed of a non-fusion instruction. */
static double output_access(const IrInstr *x) {
  switch (x->op) {
  case IR_OP_BITCAST:
  case IR_OP_PARAMETER:
  case IR_OP_CONSTANT:
  case IR_OP_GET_TUPLE_ELEMENT: return 0;
  case IR_OP_DYNAMIC_UPDATE_SLICE: return x->noperands > 1 ? shape_bytes(&x->operands[1]->shape) : 0;
  case IR_OP_SCATTER: {
    int n = (x->noperands - 1) / 2;
    double b = 0;
    for (int k = 0; k < n; k++) b += shape_bytes(&x->operands[n + 1 + k]->shape);
    return b;
  }
  default: return shape_bytes(&x->shape);
  }
}

/* ---------- fusions: FusionCalculateUtilizations ---------- */

static bool add_root(HloCost *c, int dst, int r) {
  for (int j = 0; j < c->nroots[dst]; j++)
    if (c->roots[dst][j] == r) return true;
  if (c->nroots[dst] == c->caps[dst]) {
    int nc = c->caps[dst] ? c->caps[dst] * 2 : 4;
    int *nr = fx_realloc(c->roots[dst], sizeof(int) * (size_t)nc);
    if (!nr) return false;
    c->roots[dst] = nr;
    c->caps[dst] = nc;
  }
  c->roots[dst][c->nroots[dst]++] = r;
  return true;
}

/* Walks the body from the root to the parameters: an instruction is used as much as the
 * "elementwise-use roots" it feeds through elementwise ops, tuples and get-tuple-elements; a
 * non-elementwise user makes its operand a root of its own, used as much as that user uses it
 * (rounded up to whole elements) and emitted as often as the user is. */
static bool fusion_utilizations(const DeviceProfile *d, HloCost *c) {
  const IrComputation *fc = c->body;
  int n = fc->ninstrs;
  size_t m = (size_t)(n ? n : 1);
  c->util = fx_calloc(m, sizeof(double));
  c->times = fx_calloc(m, sizeof(double));
  c->root_util = fx_calloc(m, sizeof(double));
  c->root_ir = fx_calloc(m, sizeof(double));
  c->nbody = n; /* the body may change after; hlo_cost_free goes by this */
  c->roots = fx_calloc(m, sizeof(int *));
  c->nroots = fx_calloc(m, sizeof(int));
  c->caps = fx_calloc(m, sizeof(int));
  if (!c->util || !c->times || !c->root_util || !c->root_ir || !c->roots || !c->nroots || !c->caps) return false;
  void **saved = fx_calloc(m, sizeof(void *));
  if (!saved) return false;
  for (int k = 0; k < n; k++) {
    saved[k] = fc->instrs[k]->aux;
    fc->instrs[k]->aux = (void *)(intptr_t)(k + 1);
  }
  bool ok = true;
  int rootk = -1;
  for (int k = 0; k < n; k++)
    if (fc->instrs[k] == fc->root) rootk = k;
  c->root_index = rootk;
  if (rootk >= 0) {
    c->root_util[rootk] = 1;
    c->root_ir[rootk] = 1;
    ok = add_root(c, rootk, rootk);
  }
  for (int k = n - 1; ok && k >= 0; k--) {
    const IrInstr *x = fc->instrs[k];
    double u = 0, t = 0;
    for (int q = 0; q < c->nroots[k]; q++) {
      u += c->root_util[c->roots[k][q]];
      t += c->root_ir[c->roots[k][q]];
    }
    c->util[k] = u;
    c->times[k] = t;
    c->flops += u * hlo_cost_instr_flops(d, x);
    bool passes = ir_op_is_elementwise(x->op) || x->op == IR_OP_TUPLE || x->op == IR_OP_GET_TUPLE_ELEMENT;
    for (int o = 0; ok && o < x->noperands; o++) {
      intptr_t tag = (intptr_t)x->operands[o]->aux;
      if (tag <= 0 || tag > n || fc->instrs[tag - 1] != x->operands[o]) continue;
      int ok_ = (int)tag - 1;
      if (passes) {
        for (int q = 0; ok && q < c->nroots[k]; q++) ok = add_root(c, ok_, c->roots[k][q]);
      } else {
        ok = add_root(c, ok_, ok_);
        double b, ou;
        operand_access(x, o, &b, &ou);
        /* FusionProcessOutputBytesAccessed: an in-place dynamic-update-slice root reads nothing
         * of the buffer it updates. */
        if (x == fc->root && x->op == IR_OP_DYNAMIC_UPDATE_SLICE && o == 0) ou = 0;
        double e = elements(&x->operands[o]->shape);
        double v = u * ou;
        v = e > 0 ? ceil(v * e - 1e-9) / e : 0;
        c->root_util[ok_] += v;
        c->root_ir[ok_] += t;
      }
    }
  }
  /* Where each parameter sits in the body, while the tags are there. */
  c->param_index = fx_calloc((size_t)(fc->nparams ? fc->nparams : 1), sizeof(int));
  if (!c->param_index) ok = false;
  for (int k = 0; ok && k < fc->nparams; k++) {
    intptr_t tag = fc->params[k] ? (intptr_t)fc->params[k]->aux : 0;
    c->param_index[k] = tag > 0 && tag <= n && fc->instrs[tag - 1] == fc->params[k] ? (int)tag - 1 : -1;
  }
  for (int k = 0; k < n; k++) fc->instrs[k]->aux = saved[k];
  fx_free(saved);
  return ok;
}

/* The index in the body of x; parameters and the root are found at once, other instructions by
 * a scan. */
static int body_index(const HloCost *c, const IrInstr *x) {
  if (x == c->body->root && c->root_index >= 0) return c->root_index;
  if (x->op == IR_OP_PARAMETER && c->param_index && x->parent == c->body && x->param_number >= 0 &&
      x->param_number < c->body->nparams && c->body->params[x->param_number] == x)
    return c->param_index[x->param_number];
  for (int k = 0; k < c->body->ninstrs; k++)
    if (c->body->instrs[k] == x) return k;
  return -1;
}

bool hlo_cost_analyze(const DeviceProfile *d, const IrInstr *i, HloCost *c) {
  memset(c, 0, sizeof *c);
  c->root_index = -1;
  c->instr = i;
  c->n = i->noperands;
  size_t m = (size_t)(i->noperands ? i->noperands : 1);
  c->op_bytes = fx_calloc(m, sizeof(double));
  c->op_util = fx_calloc(m, sizeof(double));
  if (!c->op_bytes || !c->op_util) return false;
  IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  if (!fc) {
    c->flops = hlo_cost_instr_flops(d, i);
    c->out_bytes = output_access(i);
    c->reads_nothing = true;
    for (int k = 0; k < i->noperands; k++) {
      operand_access(i, k, &c->op_bytes[k], &c->op_util[k]);
      c->reads_nothing = c->reads_nothing && c->op_bytes[k] == 0;
    }
    return true;
  }
  c->body = fc;
  if (!fusion_utilizations(d, c)) return false;
  /* A Triton fusion too: GpuHloCostAnalysis analyses every fusion's body the same way, a value
   * computed again for every reader (a reduce broadcast back over its row reads each input once
   * per output). The tiled model (triton_config_estimate, fusion_triton_tiling) gives a Triton
   * fusion's own time and the fused time of the pairs CanFuseTriton judged; what else reads the
   * analysis (the fused time of a pair it did not judge, a bitcast user) reads this. */
  /* FusionProcessOutputBytesAccessed: each output, an in-place dynamic-update-slice's update. */
  const IrInstr *r = fc->root;
  int nr = r && r->op == IR_OP_TUPLE ? r->noperands : 1;
  for (int k = 0; k < nr; k++) {
    const IrInstr *x = r && r->op == IR_OP_TUPLE ? r->operands[k] : r;
    if (!x) continue;
    if (x->op == IR_OP_DYNAMIC_UPDATE_SLICE && x->noperands > 1) c->out_bytes += shape_bytes(&x->operands[1]->shape);
    else c->out_bytes += shape_bytes(&x->shape);
  }
  /* FusionProcessOperandBytesRead with GpuHloCostAnalysis::FusionParameterReadBytes: the
   * parameter's size times its utilization (not capped at one). */
  for (int k = 0; k < i->noperands && k < fc->nparams; k++) {
    const IrInstr *p = fc->params[k];
    int pk = p ? body_index(c, p) : -1;
    double u = pk >= 0 ? c->util[pk] : 0;
    c->op_util[k] = u;
    c->op_bytes[k] = round(shape_bytes(&i->operands[k]->shape) * u);
  }
  return true;
}

void hlo_cost_free(HloCost *c) {
  if (c->roots)
    for (int k = 0; k < c->nbody; k++) fx_free(c->roots[k]);
  fx_free(c->roots);
  fx_free(c->nroots);
  fx_free(c->caps);
  fx_free(c->util);
  fx_free(c->times);
  fx_free(c->root_util);
  fx_free(c->root_ir);
  fx_free(c->op_bytes);
  fx_free(c->op_util);
  fx_free(c->param_index);
  memset(c, 0, sizeof *c);
}

int hlo_cost_operand_index(const IrInstr *i, const IrInstr *op) {
  for (int k = 0; k < i->noperands; k++)
    if (i->operands[k] == op) return k;
  return -1;
}

double hlo_cost_common_elementwise(const HloCost *c, const IrInstr *a, const IrInstr *b) {
  if (!c->body) return 0;
  int ka = body_index(c, a), kb = body_index(c, b);
  if (ka < 0 || kb < 0) return 0;
  double s = 0;
  for (int x = 0; x < c->nroots[ka]; x++)
    for (int y = 0; y < c->nroots[kb]; y++)
      if (c->roots[ka][x] == c->roots[kb][y]) s += c->root_util[c->roots[ka][x]];
  return s;
}
