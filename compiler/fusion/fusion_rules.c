/* fusion_rules.c — the fusion rules and their explanations (see fusion_rules.h).
 *
 * Every check fills a FusionVerdict: the reason code, a sentence with the numbers and, where the
 * user can change the outcome, a suggestion naming the `set` command that does it. The rules are
 * XLA's GPU rules of October 2021 (gpu_fusible.cc, instruction_fusion.cc,
 * fusion_node_indexing_evaluation.cc); the constants are in fusion_rules.h. */
#include "fusion_rules.h"

#include "fusion_build.h"
#include "../plan/plan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* ---------- the reason vocabulary (reasons.def) ---------- */

#define REASON(NAME, code, meaning, suggestion, passes) const char FR_##NAME[] = code;
#include "reasons.def"
#undef REASON

const FusionReason fusion_reasons[FUSION_REASON_COUNT] = {
#define REASON(NAME, code, meaning, suggestion, passes) [FUSION_REASON_##NAME] = {code, meaning, suggestion, passes},
#include "reasons.def"
#undef REASON
};

const char *const fusion_reason_codes[FUSION_REASON_COUNT + 1] = {
#define REASON(NAME, code, meaning, suggestion, passes) [FUSION_REASON_##NAME] = code,
#include "reasons.def"
#undef REASON
    [FUSION_REASON_COUNT] = NULL,
};
_Static_assert(sizeof fusion_reasons / sizeof fusion_reasons[0] == FUSION_REASON_COUNT,
               "one table entry per reason code");

/* ---------- verdicts ---------- */

void fusion_verdict_ok(FusionVerdict *v, const char *fmt, ...) {
  v->ok = true;
  v->reason = NULL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->detail, sizeof v->detail, fmt, ap);
  va_end(ap);
}

bool fusion_refuse(FusionVerdict *v, const char *reason, const char *fmt, ...) {
  v->ok = false;
  v->reason = reason;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->detail, sizeof v->detail, fmt, ap);
  va_end(ap);
  return false;
}

void fusion_suggest(FusionVerdict *v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->suggestion, sizeof v->suggestion, fmt, ap);
  va_end(ap);
}

void fusion_verdict_metric(FusionVerdict *v, const char *key, double value) {
  for (int k = 0; k < v->nmetrics; k++)
    if (strcmp(v->metrics[k].key, key) == 0) {
      v->metrics[k].value = value;
      return;
    }
  if (v->nmetrics < (int)(sizeof v->metrics / sizeof v->metrics[0]))
    v->metrics[v->nmetrics++] = (PassMetric){key, value};
}

void fusion_verdict_emit(PassContext *cx, const char *action, const char *producer, const char *consumer,
                         const char *result, const FusionVerdict *v) {
  if (!cx || !cx->sink) return;
  PassDecision d;
  memset(&d, 0, sizeof d);
  d.stage = cx->stage;
  d.pass = cx->pass;
  d.action = action;
  d.producer = producer;
  d.consumer = consumer;
  d.accepted = v->ok;
  d.reason = v->reason;
  d.suggestion = v->suggestion[0] ? v->suggestion : NULL;
  d.result = result;
  for (int k = 0; k < v->nmetrics; k++) pass_metric(&d, v->metrics[k].key, v->metrics[k].value);
  pass_emit(cx->sink, &d, "%s", v->detail);
}

/* ---------- the register hook ---------- */

static FusionRegisterFn register_hook;
static void *register_hook_ctx;

void fusion_set_register_hook(FusionRegisterFn fn, void *ctx) {
  register_hook = fn;
  register_hook_ctx = ctx;
}

bool fusion_register_hook_installed(void) { return register_hook != NULL; }

const char *fusion_registers_note(void) {
  return register_hook ? "registers per thread are checked with ptxas"
                       : "registers were not checked: no ptxas figures are available in this session";
}

/* ---------- op properties ---------- */

static const IrInstr *fused_root(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  return fc && fc->root ? fc->root : i;
}

static IrType elem_type(const IrInstr *i) {
  if (i->shape.type == IR_TUPLE && i->shape.ntuple > 0) return i->shape.tuple[0].type;
  return i->shape.type;
}

bool fusion_is_library_call(const IrInstr *i, const PassSettings *s) {
  switch (i->op) {
  case IR_OP_DOT: return !s || s->dot_is_library;
  case IR_OP_CONVOLUTION: return !s || s->conv_is_library;
  case IR_OP_RNG:
  case IR_OP_RNG_BIT_GENERATOR: return !s || s->rng_is_library;
  default: return ir_op_info(i->op)->category == IR_CAT_LIBRARY;
  }
}

const char *fusion_library_name(const IrInstr *i, char *buf, size_t n) {
  switch (i->op) {
  case IR_OP_DOT: snprintf(buf, n, "a cuBLAS matrix multiply"); break;
  case IR_OP_CONVOLUTION: snprintf(buf, n, "a cuDNN convolution"); break;
  case IR_OP_RNG:
  case IR_OP_RNG_BIT_GENERATOR:
  case IR_OP_RNG_GET_AND_UPDATE_STATE: snprintf(buf, n, "the cuRAND random-number kernel"); break;
  case IR_OP_SORT: snprintf(buf, n, "a library sort kernel"); break;
  case IR_OP_CUSTOM_CALL: {
    const char *library, *what;
    if (plan_library_call(i, &library, &what)) { /* cuDNN, cuBLAS (kernels.def) */
      snprintf(buf, n, "a %s %s call", library, what);
      break;
    }
    const char *t = ir_attr_text(i, "custom_call_target");
    if (!t) t = "?";
    size_t len = strlen(t);
    if (len >= 2 && t[0] == '"' && t[len - 1] == '"') {
      t++;
      len -= 2;
    }
    bool rng = (len >= 8 && strstr(t, "threefry")) || strstr(t, "rng") || strstr(t, "Rng");
    snprintf(buf, n, "a custom call to %.*s%s", (int)(len > 120 ? 120 : len), t,
             rng ? " (the random-number kernel)" : "");
    break;
  }
  default: snprintf(buf, n, "an opaque %s library kernel", ir_op_name(i->op)); break;
  }
  return buf;
}

static bool is_rng_call(const IrInstr *i) {
  if (i->op == IR_OP_RNG || i->op == IR_OP_RNG_BIT_GENERATOR || i->op == IR_OP_RNG_GET_AND_UPDATE_STATE)
    return true;
  if (i->op != IR_OP_CUSTOM_CALL) return false;
  const char *t = ir_attr_text(i, "custom_call_target");
  return t && (strstr(t, "threefry") || strstr(t, "rng") || strstr(t, "Rng") || strstr(t, "philox"));
}

static bool op_is_expensive(const IrInstr *i, const PassSettings *s) {
  IrOpcode op = i->op;
  if (s && s->expensive_override[op] != 0) return s->expensive_override[op] > 0;
  IrType t = elem_type(i);
  switch (op) {
  case IR_OP_DIVIDE:
  case IR_OP_REMAINDER:
    /* Single hardware instructions for f32/f16 (GpuInstructionFusion::IsExpensive); integer
     * division by a constant, or a broadcast of one, is multiplies and shifts
     * (InstructionFusion::IsExpensive: ConstantEffectiveScalar or Broadcast of one). */
    if (op == IR_OP_DIVIDE && (t == IR_F32 || t == IR_F16)) return false;
    if (ir_type_is_int(t) && i->noperands == 2 && i->operands[1]) {
      const IrInstr *d = i->operands[1];
      if (d->op == IR_OP_BROADCAST && d->noperands == 1) d = d->operands[0];
      if (d->op == IR_OP_CONSTANT && ir_shape_is_array(&d->shape) && ir_shape_elements(&d->shape) == 1) return false;
    }
    return true;
  case IR_OP_RSQRT:
  case IR_OP_EXP: return !(t == IR_F32 || t == IR_F16);
  case IR_OP_SIN:
  case IR_OP_COS: return ir_type_is_complex(t);
  case IR_OP_FUSION: return false;
  default: return ir_op_info(op)->expensive;
  }
}

const IrInstr *fusion_expensive_member(const IrInstr *i, const PassSettings *s) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc) return op_is_expensive(i, s) ? i : NULL;
  for (int k = 0; k < fc->ninstrs; k++)
    if (fc->instrs[k]->op != IR_OP_PARAMETER && op_is_expensive(fc->instrs[k], s)) return fc->instrs[k];
  return NULL;
}

bool fusion_is_expensive(const IrInstr *i, const PassSettings *s) { return fusion_expensive_member(i, s) != NULL; }

bool fusion_op_never_fuses(IrOpcode op) {
  const IrOpInfo *info = ir_op_info(op);
  if (op == IR_OP_FUSION) return false;
  return !info->fusible && info->category != IR_CAT_LIBRARY;
}

bool fusion_is_contiguous_reduction(const IrInstr *r) {
  if (r->op != IR_OP_REDUCE) return false;
  const IrShape *in = &r->operands[0]->shape;
  if (!ir_shape_is_array(in) || in->rank == 0) return true;
  int64_t dims[IR_MAX_RANK];
  int nd = ir_attr_dims(r, "dimensions", dims, IR_MAX_RANK);
  if (nd < 0) return true;
  bool reduced[IR_MAX_RANK] = {0};
  for (int k = 0; k < nd; k++)
    if (dims[k] >= 0 && dims[k] < in->rank) reduced[dims[k]] = true;
  /* Physical order, minor to major. Dimensions of size 1 do not break contiguity. */
  int order[IR_MAX_RANK];
  for (int k = 0; k < in->rank; k++) order[k] = in->has_layout && in->minor_to_major ? in->minor_to_major[k] : in->rank - 1 - k;
  int runs_reduced = 0, runs_kept = 0;
  int last = -1;
  int64_t minor_run = 1, all_reduced = 1;
  bool in_first_run = true;
  for (int k = 0; k < in->rank; k++) {
    int d = order[k];
    if (d < 0 || d >= in->rank || in->dims[d] == 1) continue;
    int r2 = reduced[d] ? 1 : 0;
    if (r2 != last) {
      if (last != -1) in_first_run = false;
      if (r2) runs_reduced++;
      else runs_kept++;
      last = r2;
    }
    if (r2) {
      all_reduced *= in->dims[d];
      if (in_first_run) minor_run *= in->dims[d];
    }
  }
  if (runs_reduced > 1 && runs_kept > 1) return false;
  /* XLA's tiled reduction emitter wants at least a warp (32) of reduced elements along the
   * reduced extent it tiles; smaller reductions are emitted as plain loops. */
  bool row = runs_reduced > 0 && reduced[order[0]];
  for (int k = 0; k < in->rank && !row; k++) {
    int d = order[k];
    if (d < 0 || d >= in->rank || in->dims[d] == 1) continue;
    row = reduced[d];
    break;
  }
  return (row ? minor_run : all_reduced) >= 32;
}

/* Whether the reduce reduces the minor-most (non-degenerate) dimension: a row reduction. */
static bool is_row_reduction(const IrInstr *r) {
  const IrShape *in = &r->operands[0]->shape;
  if (!ir_shape_is_array(in) || in->rank == 0) return true;
  int64_t dims[IR_MAX_RANK];
  int nd = ir_attr_dims(r, "dimensions", dims, IR_MAX_RANK);
  for (int k = 0; k < in->rank; k++) {
    int d = in->has_layout && in->minor_to_major ? in->minor_to_major[k] : in->rank - 1 - k;
    if (d < 0 || d >= in->rank || in->dims[d] == 1) continue;
    for (int j = 0; j < nd; j++)
      if (dims[j] == d) return true;
    return false;
  }
  return true;
}

static const char *fusion_kind_of(const IrInstr *i) {
  const char *k = ir_fusion_kind(i);
  return k ? k : "kLoop";
}

bool fusion_is_loop_fusible(const IrInstr *i, const PassSettings *s) {
  switch (i->op) {
  case IR_OP_BITCAST:
  case IR_OP_BROADCAST:
  case IR_OP_CONCATENATE:
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_DYNAMIC_UPDATE_SLICE:
  case IR_OP_GATHER:
  case IR_OP_IOTA:
  case IR_OP_PAD:
  case IR_OP_REDUCE_WINDOW:
  case IR_OP_RESHAPE:
  case IR_OP_REVERSE:
  case IR_OP_SLICE:
  case IR_OP_CONSTANT:
  case IR_OP_TRANSPOSE:
  case IR_OP_MAP: return true;
  case IR_OP_REDUCE: return !fusion_is_contiguous_reduction(i) && i->shape.type != IR_TUPLE;
  case IR_OP_FUSION: return strcmp(fusion_kind_of(i), "kLoop") == 0;
  case IR_OP_DOT:
  case IR_OP_CONVOLUTION:
  case IR_OP_RNG: return !fusion_is_library_call(i, s);
  default: return ir_op_is_elementwise(i->op) && i->noperands > 0;
  }
}

bool fusion_is_input_fusible(const IrInstr *i) {
  if (i->op == IR_OP_FUSION) return strcmp(fusion_kind_of(i), "kInput") == 0;
  return (i->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(i)) || i->op == IR_OP_SCATTER;
}

bool fusion_is_input_fusible_reduction(const IrInstr *i) {
  if (i->op == IR_OP_REDUCE) return fusion_is_contiguous_reduction(i);
  if (i->op != IR_OP_FUSION || strcmp(fusion_kind_of(i), "kInput") != 0) return false;
  const IrInstr *r = fused_root(i);
  int n = r->op == IR_OP_TUPLE ? r->noperands : 1;
  for (int k = 0; k < n; k++) {
    const IrInstr *x = r->op == IR_OP_TUPLE ? r->operands[k] : r;
    if (x->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(x)) return true;
  }
  return false;
}

bool fusion_layouts_reduce_friendly(const IrInstr *p) {
  if (p->op == IR_OP_COPY) return false;
  IrComputation *fc = ir_fused_computation(p);
  for (int k = 0; fc && k < fc->ninstrs; k++)
    if (fc->instrs[k]->op == IR_OP_COPY) return false;
  return true;
}

/* Window sizes and strides of a reduce-window: "window={size=3x3 stride=2x2 ...}" (a malformed
 * window counts as one element). */
static void window_numbers(const IrInstr *i, int64_t *size_prod, int64_t *stride_prod, bool *overlap) {
  *size_prod = 1;
  *stride_prod = 1;
  *overlap = false;
  IrWindow w;
  if (!ir_attr_window(i, -1, &w, NULL, 0)) return;
  for (int k = 0; k < w.rank; k++) {
    *size_prod *= w.size[k];
    *stride_prod *= w.stride[k];
    if (w.size[k] != w.stride[k]) *overlap = true;
  }
}

/* Inputs read per output element by a reduce or reduce-window (0 for other ops). */
static double inputs_per_output(const IrInstr *i) {
  if (i->op == IR_OP_REDUCE) {
    int64_t in = ir_shape_elements(&i->operands[0]->shape);
    int64_t out = i->shape.type == IR_TUPLE ? (i->shape.ntuple ? ir_shape_elements(&i->shape.tuple[0]) : 1)
                                            : ir_shape_elements(&i->shape);
    return out > 0 ? (double)in / (double)out : (double)in;
  }
  if (i->op == IR_OP_REDUCE_WINDOW) {
    int64_t sz, st;
    bool ov;
    window_numbers(i, &sz, &st, &ov);
    return (double)sz;
  }
  return 0;
}

/* How many times consumer c reads each element of its operand k, roughly: the figure the
 * explanations give (1 where XLA counts a use as reuse without repeated reads). */
static double reuse_times(const IrInstr *c, int k) {
  double t = 1;
  bool reuse = false;
  const IrInstr *op = c->operands[k];
  int64_t in = op ? ir_shape_elements(&op->shape) : 1;
  int64_t out = ir_shape_elements(&c->shape);
  switch (c->op) {
  case IR_OP_FUSION: {
    IrComputation *fc = ir_fused_computation(c);
    if (!fc || k >= fc->nparams || !fc->params[k]) break;
    /* Walk from the parameter through ops that read each element once; the first op that reads
     * an element several times decides. */
    const IrInstr *stack[64];
    int sp = 0;
    stack[sp++] = fc->params[k];
    int guard = 0;
    while (sp > 0 && guard++ < 4096) {
      const IrInstr *x = stack[--sp];
      for (int u = 0; u < x->nusers; u++) {
        const IrInstr *us = x->users[u];
        for (int j = 0; j < us->noperands; j++) {
          if (us->operands[j] != x) continue;
          double tt;
          if (us->op != IR_OP_FUSION && (tt = reuse_times(us, j)) > 1) {
            reuse = true;
            if (tt > t) t = tt;
          } else if (sp < 64) {
            stack[sp++] = us;
          }
        }
      }
    }
    break;
  }
  case IR_OP_BROADCAST:
  case IR_OP_GATHER:
  case IR_OP_DOT:
  case IR_OP_CONVOLUTION:
    if (c->op == IR_OP_GATHER && k != 0) break;
    if (c->op == IR_OP_DOT || c->op == IR_OP_CONVOLUTION) {
      /* Every input element is read once per output column / filter position. */
      int64_t other = c->operands[1 - k] ? ir_shape_elements(&c->operands[1 - k]->shape) : 1;
      int64_t o = out > 0 ? out : 1;
      t = (double)in * (double)other / (double)o;
      if (t < 2) t = 2;
      reuse = true;
      break;
    }
    if (out > in) {
      reuse = true;
      t = in > 0 ? (double)out / (double)in : (double)out;
    }
    break;
  case IR_OP_REDUCE_WINDOW: {
    int64_t sz, st;
    bool ov;
    window_numbers(c, &sz, &st, &ov);
    if (ov && k == 0) {
      reuse = true;
      t = st > 0 ? (double)sz / (double)st : (double)sz;
    }
    break;
  }
  case IR_OP_PAD:
  case IR_OP_REDUCE:
    /* The padding value / the init value is read for many elements. */
    if ((c->op == IR_OP_PAD && k == 1) || (c->op == IR_OP_REDUCE && k >= c->noperands / 2)) {
      reuse = out > 1 || in < ir_shape_elements(&c->operands[0]->shape);
      t = (double)ir_shape_elements(&c->operands[0]->shape);
    }
    break;
  default: break;
  }
  return reuse && t > 1 ? t : 1;
}


/* XLA's HloInstruction::UseKind, in its order (std::min picks the stronger reuse). */
typedef enum { USE_NONE, USE_REUSE, USE_PERMUTING, USE_ONCE } UseKind;

/* XLA's HloInstruction::OperandElementUse (2021): how c uses the elements of its operand k.
 * Data movement permutes them; pad and reduce reuse their padding and init values; a dot reuses
 * both sides (but a matrix-vector product reads the matrix once); dynamic-update-slice reuses
 * its start indices; gather permutes what it gathers from; every other op that is not
 * elementwise (broadcast included, whatever its sizes) counts as reusing. */
static UseKind operand_element_use(const IrInstr *c, int k);

/* FusionReusesParamElements::ComputeInternal: how x, inside a fused body, uses parameter `param`:
 * along each operand the weaker use of the two hops, and over several operands XLA's Plus (two
 * different uses of one element are a reuse). memo holds each body instruction's answer + 1. */
static UseKind fused_param_use(const IrInstr *x, int64_t param, int *memo, int depth) {
  if (x->op == IR_OP_PARAMETER && x->param_number == param) return USE_ONCE;
  int pos = x->aux ? (int)(intptr_t)x->aux - 1 : -1;
  if (pos >= 0 && memo[pos]) return (UseKind)(memo[pos] - 1);
  UseKind acc = USE_NONE;
  if (depth < 512)
    for (int j = 0; j < x->noperands; j++) {
      UseKind a = operand_element_use(x, j), b = fused_param_use(x->operands[j], param, memo, depth + 1);
      UseKind u = a < b ? a : b;
      if (acc == USE_NONE) acc = u;
      else if (u == USE_NONE) continue;
      else if (acc == USE_REUSE || u == USE_REUSE || acc == USE_PERMUTING || u == USE_PERMUTING) acc = USE_REUSE;
      else acc = USE_ONCE;
    }
  if (pos >= 0) memo[pos] = (int)acc + 1;
  return acc;
}

static UseKind operand_element_use(const IrInstr *c, int k) {
  switch (c->op) {
  case IR_OP_BITCAST:
  case IR_OP_CONCATENATE:
  case IR_OP_RESHAPE:
  case IR_OP_REVERSE:
  case IR_OP_SLICE:
  case IR_OP_TRANSPOSE: return USE_PERMUTING;
  case IR_OP_PAD:
  case IR_OP_REDUCE: return k > 0 && (c->op == IR_OP_PAD || k >= c->noperands / 2) ? USE_REUSE : USE_PERMUTING;
  case IR_OP_DOT:
    if (c->shape.rank == 2 && ((k == 0 && c->shape.dims[1] == 1) || (k == 1 && c->shape.dims[0] == 1))) return USE_ONCE;
    return USE_REUSE;
  case IR_OP_DYNAMIC_UPDATE_SLICE: return k <= 1 ? USE_ONCE : USE_REUSE;
  case IR_OP_GATHER: return k == 0 ? USE_PERMUTING : USE_ONCE;
  case IR_OP_FUSION: {
    IrComputation *fc = ir_fused_computation(c);
    if (!fc || !fc->root) return USE_REUSE;
    int n = fc->ninstrs;
    int *memo = fx_calloc((size_t)(n ? n : 1), sizeof(int));
    void **saved = fx_malloc(sizeof(void *) * (size_t)(n ? n : 1));
    if (!memo || !saved) {
      fx_free(memo);
      fx_free(saved);
      return USE_REUSE;
    }
    for (int q = 0; q < n; q++) {
      saved[q] = fc->instrs[q]->aux;
      fc->instrs[q]->aux = (void *)(intptr_t)(q + 1);
    }
    UseKind u = fused_param_use(fc->root, k, memo, 0);
    for (int q = 0; q < n; q++) fc->instrs[q]->aux = saved[q];
    fx_free(memo);
    fx_free(saved);
    return u;
  }
  default: return ir_op_is_elementwise(c->op) ? USE_ONCE : USE_REUSE;
  }
}

/* XLA's InstructionFusion::ReusesOperandElements (2021): OperandElementUse says kReuse. */
bool fusion_reuses_operand(const IrInstr *c, int k, double *times) {
  bool reuse = operand_element_use(c, k) == USE_REUSE;
  if (times) *times = reuse ? reuse_times(c, k) : 1;
  return reuse;
}

int fusion_user_count(const IrInstr *i) { return i->nusers; }

int fusion_body_size(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc) return 1;
  int n = 0;
  for (int k = 0; k < fc->ninstrs; k++)
    if (fc->instrs[k]->op != IR_OP_PARAMETER) n++;
  return n;
}

/* NumUnnestedReductions as of 2021: the reductions from or to contiguous dimensions (the 2021
 * rule) in i's body. */
static int unnested_reductions_2021(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc) return i->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(i);
  int sum = 0;
  for (int k = 0; k < fc->ninstrs; k++) sum += unnested_reductions_2021(fc->instrs[k]);
  return sum;
}

/* ---------- emitted copies (XLA's fusion node indexing evaluation) ---------- */

/* A small set of instruction indices (positions in the fused body, or -1 for the consumer). */
typedef struct {
  int *v;
  int n, cap;
} IdxSet;

static bool idxset_add(IdxSet *s, int x) {
  for (int k = 0; k < s->n; k++)
    if (s->v[k] == x) return true;
  if (s->n == s->cap) {
    int nc = s->cap ? s->cap * 2 : 4;
    int *nv = fx_realloc(s->v, sizeof(int) * (size_t)nc);
    if (!nv) return false;
    s->v = nv;
    s->cap = nc;
  }
  s->v[s->n++] = x;
  return true;
}

static bool idxset_union(IdxSet *d, const IdxSet *s) {
  for (int k = 0; k < s->n; k++)
    if (!idxset_add(d, s->v[k])) return false;
  return true;
}

static bool reuses_index(const IrInstr *user, const IrInstr *operand) {
  return user->op == IR_OP_TRANSPOSE || ir_shape_same_dims(&user->shape, &operand->shape);
}

int fusion_emitted_copies(const IrInstr *producer, const IrInstr *consumer) {
  IrComputation *fc = ir_fused_computation(consumer);
  if (!fc || !fc->root) return 1;
  int n = fc->ninstrs;
  IdxSet *iu = fx_calloc((size_t)n + 1, sizeof(IdxSet));
  double *count = fx_calloc((size_t)n + 1, sizeof(double));
  if (!iu || !count) {
    fx_free(iu);
    fx_free(count);
    return 1;
  }
  /* Positions in the body via aux (scratch, restored below). */
  void **saved = fx_malloc(sizeof(void *) * (size_t)(n ? n : 1));
  if (!saved) {
    fx_free(iu);
    fx_free(count);
    return 1;
  }
  for (int k = 0; k < n; k++) {
    saved[k] = fc->instrs[k]->aux;
    fc->instrs[k]->aux = (void *)(intptr_t)(k + 1);
  }
  IdxSet prod = {0};
  int rootpos = (int)(intptr_t)fc->root->aux - 1;
  idxset_add(&iu[rootpos], rootpos);
  for (int k = n - 1; k >= 0; k--) {
    IrInstr *i = fc->instrs[k];
    if (k == rootpos) count[k] = 1;
    else {
      double tot = 0;
      for (int j = 0; j < iu[k].n; j++) tot += iu[k].v[j] == k ? 1 : count[iu[k].v[j]];
      count[k] = tot;
    }
    if (i->op == IR_OP_PARAMETER) continue;
    for (int o = 0; o < i->noperands; o++) {
      IrInstr *op = i->operands[o];
      if (!op || op->parent != fc) continue;
      int pos = (int)(intptr_t)op->aux - 1;
      bool into_producer = op->op == IR_OP_PARAMETER && op->param_number >= 0 &&
                           op->param_number < consumer->noperands && consumer->operands[op->param_number] == producer;
      IdxSet *dst = into_producer ? &prod : &iu[pos];
      if (reuses_index(i, op)) idxset_union(dst, &iu[k]);
      else idxset_add(dst, k);
    }
  }
  double tot = 0;
  for (int j = 0; j < prod.n; j++) tot += count[prod.v[j]];
  for (int k = 0; k < n; k++) {
    fc->instrs[k]->aux = saved[k];
    fx_free(iu[k].v);
  }
  fx_free(prod.v);
  fx_free(saved);
  fx_free(iu);
  fx_free(count);
  if (tot > 1e9) tot = 1e9;
  return tot < 1 ? 1 : (int)tot;
}

/* ---------- graph queries ---------- */

/* The search's scratch, kept between calls (per thread): a visit stamp per instruction id and a
 * stack. Allocating and zeroing arrays of the module's size at every call made each query cost
 * the whole module even when the search met three instructions (multi_output_fusion asks for
 * every sibling pair). A new stamp per call marks nothing visited without clearing. */
static _Thread_local struct {
  uint32_t *stamp;
  const IrInstr **stack;
  size_t cap;
  uint32_t gen;
} reach;

static bool reach_reserve(size_t need) {
  if (need <= reach.cap) return true;
  size_t cap = need * 2;
  uint32_t *st = fx_realloc(reach.stamp, sizeof(uint32_t) * cap);
  if (!st) return false;
  reach.stamp = st;
  const IrInstr **sk = fx_realloc(reach.stack, sizeof(IrInstr *) * cap);
  if (!sk) return false;
  reach.stack = sk;
  memset(st + reach.cap, 0, sizeof(uint32_t) * (cap - reach.cap));
  reach.cap = cap;
  return true;
}

bool fusion_path_exists(const IrInstr *from, const IrInstr *to, bool skip_direct) {
  const IrComputation *c = from->parent;
  if (!c || to->parent != c) return false;
  IrModule *m = c->module;
  if (!reach_reserve((size_t)m->next_id + 1)) return true; /* be safe: assume a path */
  if (++reach.gen == 0) { /* the stamps wrapped: start them afresh */
    memset(reach.stamp, 0, sizeof(uint32_t) * reach.cap);
    reach.gen = 1;
  }
  uint32_t *seen = reach.stamp, g = reach.gen;
  const IrInstr **stack = reach.stack;
  int sp = 0;
  bool found = false;
  for (int u = 0; u < from->nusers; u++) {
    const IrInstr *us = from->users[u];
    if (skip_direct && us == to) continue;
    if (us->parent == c && seen[us->id] != g) {
      seen[us->id] = g;
      stack[sp++] = us;
    }
  }
  while (sp > 0 && !found) {
    const IrInstr *x = stack[--sp];
    if (x == to) {
      found = true;
      break;
    }
    for (int u = 0; u < x->nusers; u++) {
      const IrInstr *us = x->users[u];
      if (us->parent == c && us->id <= m->next_id && seen[us->id] != g) {
        seen[us->id] = g;
        stack[sp++] = us;
      }
    }
  }
  return found;
}

static int output_count(const IrInstr *i) { return i->shape.type == IR_TUPLE ? i->shape.ntuple : 1; }

int fusion_operands_and_outputs(const IrInstr *a, const IrInstr *b, bool multi_output) {
  const IrInstr *seen[512];
  int n = 0, extra = 0;
  const IrInstr *both[2] = {a, b};
  for (int s = 0; s < 2; s++) {
    const IrInstr *x = both[s];
    if (!x) continue;
    for (int k = 0; k < x->noperands; k++) {
      const IrInstr *op = x->operands[k];
      if (!op || op == a || op == b) continue;
      bool dup = false;
      for (int j = 0; j < n; j++)
        if (seen[j] == op) dup = true;
      if (dup) continue;
      if (n < 512) seen[n++] = op;
      else extra++;
    }
  }
  int outs = output_count(b ? b : a);
  if (multi_output && a && b) outs += output_count(a);
  return n + extra + outs;
}

/* ---------- cost model ---------- */

int64_t fusion_bytes_read(const IrInstr *i) {
  int64_t b = 0;
  for (int k = 0; k < i->noperands; k++) {
    const IrInstr *op = i->operands[k];
    if (!op) continue;
    bool dup = false;
    for (int j = 0; j < k; j++)
      if (i->operands[j] == op) dup = true;
    if (!dup) b += plan_operand_bytes_read(i, k);
  }
  return b;
}

int64_t fusion_bytes_written(const IrInstr *i) { return plan_bytes_written(i); }

double fusion_flops(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc) return plan_instr_flops(i);
  double f = 0;
  for (int k = 0; k < fc->ninstrs; k++) f += plan_instr_flops(fc->instrs[k]);
  return f;
}

double fusion_kernel_us(const DeviceProfile *d, int64_t bytes, double flops) {
  if (!d) d = device_default();
  return plan_time_us(d, (double)bytes, flops);
}

/* ---------- the checks ---------- */

static const char *plural(int n, const char *one, const char *many) { return n == 1 ? one : many; }

static bool refuse_kind(const IrInstr *i, const char *side, const PassContext *cx, FusionVerdict *v) {
  const PassSettings *s = cx ? cx->settings : NULL;
  if (fusion_op_never_fuses(i->op)) {
    switch (i->op) {
    case IR_OP_PARAMETER:
      return fusion_refuse(v, FR_NOT_FUSIBLE,
                           "%s is a parameter: an input read from memory, not a computation, so there is "
                           "nothing to fuse",
                           i->name);
    case IR_OP_TUPLE:
      return fusion_refuse(v, FR_NOT_FUSIBLE,
                           "%s is a tuple: a location in memory, not a kernel; the values it groups are "
                           "written out to memory%s",
                           i->name, i->is_root && i->parent && !i->parent->is_entry ? " (the loop's state for the next iteration)" : "");
    case IR_OP_GET_TUPLE_ELEMENT:
      return fusion_refuse(v, FR_NOT_FUSIBLE,
                           "%s is a get-tuple-element: it names a buffer in memory (part of a tuple), not a "
                           "computation",
                           i->name);
    case IR_OP_WHILE:
      return fusion_refuse(v, FR_NOT_FUSIBLE,
                           "%s is a while loop: the host runs it, launching its condition and body kernels "
                           "every iteration, so nothing fuses across it",
                           i->name);
    default:
      return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a %s (%s), which never fuses", i->name, ir_op_name(i->op),
                           ir_op_info(i->op)->description);
    }
  }
  if (fusion_is_library_call(i, s)) {
    char lib[160];
    fusion_library_name(i, lib, sizeof lib);
    fusion_refuse(v, FR_CUSTOM_CALL,
                  "%s is %s: an opaque kernel, so nothing can be fused into or out of it as %s", i->name, lib,
                  side);
    if (is_rng_call(i))
      fusion_suggest(v, "precompute the random numbers and pass them in (the paper's §V-A)%s",
                     i->op == IR_OP_RNG ? ", or `set library rng off` to generate them inside the kernel" : "");
    else if (i->op == IR_OP_DOT)
      fusion_suggest(v, "`set library dot off` to treat the matrix multiply as a fusible loop");
    else if (i->op == IR_OP_CONVOLUTION)
      fusion_suggest(v, "`set library conv off` to treat the convolution as a fusible loop");
    return false;
  }
  return true;
}

bool fusion_check_producer(const IrInstr *p, const PassContext *cx, FusionVerdict *v) {
  const PassSettings *s = cx ? cx->settings : NULL;
  if (!refuse_kind(p, "a producer", cx, v)) return false;
  if (p->op == IR_OP_FUSION) {
    const char *k = fusion_kind_of(p);
    if (strcmp(k, "kInput") == 0)
      return fusion_refuse(v, FR_REDUCE_EPILOGUE,
                           "%s is a reduction (input) fusion; fusing a consumer into its output would turn it "
                           "into a loop fusion and lose the reduction's tiling",
                           p->name);
    if (strcmp(k, "kLoop") != 0)
      return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a %s fusion, which only takes its own operands", p->name, k);
    if (fused_root(p)->op == IR_OP_TUPLE)
      return fusion_refuse(v, FR_NOT_FUSIBLE,
                           "%s is a multi-output fusion: its outputs are written out, and XLA does not fuse it "
                           "into a consumer",
                           p->name);
  }
  if (p->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(p))
    return fusion_refuse(v, FR_REDUCE_EPILOGUE,
                         "%s is a %s reduction, emitted as a reduction (input) kernel; fusing its consumer into "
                         "its output would turn it into a loop fusion and lose the reduction's tiling",
                         p->name, is_row_reduction(p) ? "row" : "column");
  if (p->op == IR_OP_RNG && !fusion_is_library_call(p, s) && p->nusers > 1)
    return fusion_refuse(v, FR_NOT_FUSIBLE,
                         "%s generates random numbers and has %d users: duplicating it would give each user "
                         "different numbers",
                         p->name, p->nusers);
  if (!fusion_is_loop_fusible(p, s))
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s (%s) is not loop-fusible, so it cannot be a fused producer",
                         p->name, ir_op_name(p->op));
  return true;
}

bool fusion_check_consumer(const IrInstr *c, const PassContext *cx, FusionVerdict *v) {
  const PassSettings *s = cx ? cx->settings : NULL;
  if (!refuse_kind(c, "a consumer", cx, v)) return false;
  if (c->op == IR_OP_FUSION) {
    const char *k = fusion_kind_of(c);
    if (strcmp(k, "kLoop") != 0 && strcmp(k, "kInput") != 0)
      return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a %s fusion, which takes no more producers", c->name, k);
    return true;
  }
  if (!fusion_is_loop_fusible(c, s) && !fusion_is_input_fusible(c))
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s (%s) is neither loop- nor input-fusible", c->name, ir_op_name(c->op));
  return true;
}

/* XLA's IfFusedReadsElementsMultipleTimes (2021): a reduce XLA emits as a loop (not from or to
 * contiguous dimensions), or a reduce-window whose windows overlap (a size above its stride). */
static bool reads_elements_multiple_times(const IrInstr *x) {
  if (x->op == IR_OP_REDUCE) return !fusion_is_contiguous_reduction(x);
  if (x->op != IR_OP_REDUCE_WINDOW) return false;
  IrWindow w;
  if (!ir_attr_window(x, -1, &w, NULL, 0)) return false;
  for (int k = 0; k < w.rank; k++)
    if (w.size[k] > w.stride[k]) return true;
  return false;
}

/* The first instruction of i (i itself, or of its fused body) that reads elements several times. */
static const IrInstr *loop_codegen(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc) return reads_elements_multiple_times(i) ? i : NULL;
  for (int k = 0; k < fc->ninstrs; k++)
    if (reads_elements_multiple_times(fc->instrs[k])) return fc->instrs[k];
  return NULL;
}

const IrInstr *fusion_find_in_uses(const IrInstr *c, const IrComputation *fc, const IrInstr *p,
                                   bool (*hit)(const IrInstr *x, const IrInstr *param, const void *ctx),
                                   const void *ctx) {
  /* Depth first along users, each instruction looked at once (a stack as deep as the body has
   * edges: a parameter may have hundreds of users once siblings are merged). */
  const IrInstr *found = NULL;
  bool *seen = NULL;
  const IrInstr **stack = NULL;
  size_t cap = 0;
  for (int k = 0; k < c->noperands && k < fc->nparams && !found; k++) {
    if (c->operands[k] != p || !fc->params[k]) continue;
    if (!seen) {
      seen = fx_calloc((size_t)fc->ninstrs + 1, sizeof(bool));
      cap = (size_t)fc->ninstrs + 1;
      for (int j = 0; j < fc->ninstrs; j++) cap += (size_t)fc->instrs[j]->nusers;
      stack = fx_malloc(sizeof(IrInstr *) * cap);
      if (!seen || !stack) break; /* out of memory: nothing found */
    } else {
      memset(seen, 0, (size_t)fc->ninstrs + 1);
    }
    size_t sp = 0;
    stack[sp++] = fc->params[k];
    while (sp > 0 && !found) {
      const IrInstr *x = stack[--sp];
      int at = ir_computation_index(fc, x);
      if (at >= 0 && seen[at]) continue;
      if (at >= 0) seen[at] = true;
      if (hit(x, fc->params[k], ctx)) found = x;
      for (int u = 0; u < x->nusers && !found && sp < cap; u++) stack[sp++] = x->users[u];
    }
  }
  fx_free(seen);
  fx_free(stack);
  return found;
}

static bool multi_read(const IrInstr *x, const IrInstr *param, const void *ctx) {
  (void)param;
  (void)ctx;
  return reads_elements_multiple_times(x);
}

bool fusion_creates_nested_loop(const IrInstr *p, const IrInstr *c, const IrInstr **pl, const IrInstr **cl) {
  const IrInstr *a = loop_codegen(p);
  if (pl) *pl = a;
  if (cl) *cl = NULL;
  if (!a) return false;
  IrComputation *fc = ir_fused_computation(c);
  if (!fc) {
    if (cl) *cl = c;
    return reads_elements_multiple_times(c);
  }
  /* Whether p's value reaches, inside c, an instruction that reads elements several times. */
  const IrInstr *x = fusion_find_in_uses(c, fc, p, multi_read, NULL);
  if (x && cl) *cl = x;
  return x != NULL;
}

bool fusion_producer_consumer_fusible(const IrInstr *p, const IrInstr *c, const PassContext *cx, FusionVerdict *v) {
  if (!fusion_check_consumer(c, cx, v)) return false;
  if (!fusion_check_producer(p, cx, v)) return false;
  const IrInstr *pl, *cl;
  if (fusion_creates_nested_loop(p, c, &pl, &cl)) {
    fusion_verdict_metric(v, "inputs_per_output", inputs_per_output(pl));
    return fusion_refuse(v, FR_REDUCE_INTO_REDUCE,
                         "both sides read elements several times: %s (a %s) would run as a loop inside %s's loop (a "
                         "%s), a nested loop",
                         pl->name, ir_op_name(pl->op), cl->name, ir_op_name(cl->op));
  }
  if (fusion_is_input_fusible_reduction(c) && !fusion_layouts_reduce_friendly(p))
    return fusion_refuse(v, FR_LAYOUT,
                         "%s changes the layout (it %s a copy, which after layout assignment only transposes); %s "
                         "is a reduction and would read its result out of order (XLA: the producer layout is not "
                         "fusion-friendly for the consumer reduction)",
                         p->name, p->op == IR_OP_COPY ? "is" : "holds", c->name);
  if (p->op == IR_OP_CONSTANT && ir_shape_elements(&p->shape) > 1)
    return fusion_refuse(v, FR_NOT_FUSIBLE,
                         "%s is a constant of %" PRId64 " elements: XLA keeps large constants in memory and fuses "
                         "only scalar constants",
                         p->name, ir_shape_elements(&p->shape));
  if (p->op == IR_OP_CONSTANT && c->op != IR_OP_FUSION)
    return fusion_refuse(v, FR_NOT_FUSIBLE,
                         "%s is a scalar constant; XLA fuses constants only into an existing fusion, and %s is "
                         "not one yet",
                         p->name, c->name);
  return true;
}

/* Index of p among c's operands, or -1. */
static int operand_index(const IrInstr *c, const IrInstr *p) {
  for (int k = 0; k < c->noperands; k++)
    if (c->operands[k] == p) return k;
  return -1;
}

/* Ops XLA duplicates freely: scalar constants, broadcasts of scalars, iota. */
static bool always_duplicable(const IrInstr *p) {
  if (p->op == IR_OP_CONSTANT) return ir_shape_elements(&p->shape) <= 1;
  if (p->op == IR_OP_BROADCAST && p->noperands == 1) return ir_shape_elements(&p->operands[0]->shape) <= 1;
  if (p->op == IR_OP_IOTA) return true;
  return false;
}

static bool cache_invalidating(IrOpcode op) {
  return op == IR_OP_CONCATENATE || op == IR_OP_DOT || op == IR_OP_DYNAMIC_UPDATE_SLICE || op == IR_OP_PAD ||
         op == IR_OP_REDUCE || op == IR_OP_REDUCE_WINDOW;
}

/* XLA's FusionNodeIndexingEvaluation::CodeDuplicationTooHigh (fusion_node_indexing_evaluation.cc):
 * fusing p into c emits p once per distinct index computation of it in c; more copies than the
 * session's limit (kAllowedCodeDuplication, FUSION_MAX_DUPLICATION, by default) refuses. The count
 * goes to *copies_out (when given) for the cache-invalidating check that follows. */
static bool check_emitted_copies(const IrInstr *p, const IrInstr *c, const PassSettings *s, FusionVerdict *v,
                                 int *copies_out) {
  int copies = fusion_emitted_copies(p, c);
  if (copies_out) *copies_out = copies;
  int limit = s && s->max_duplication > 0 ? s->max_duplication : FUSION_MAX_DUPLICATION;
  fusion_verdict_metric(v, "copies", copies);
  if (copies <= limit) return true;
  fusion_verdict_metric(v, "limit", limit);
  return fusion_refuse(v, FR_CODE_DUPLICATION,
                       "fusing %s into %s would emit it %d times (once per distinct index computation); "
                       "limit %d copies",
                       p->name, c->name, copies, limit);
}

bool fusion_check_code_duplication(const IrInstr *p, const IrInstr *c, const PassContext *cx, FusionVerdict *v) {
  const PassSettings *s = cx ? cx->settings : NULL;
  if (p->op == IR_OP_BROADCAST) return true;
  int copies;
  if (!check_emitted_copies(p, c, s, v, &copies)) return false;
  const IrInstr *r = fused_root(p);
  if (cache_invalidating(r->op)) {
    int users = fusion_user_count(p);
    int limit = s && s->concat_user_limit > 0 ? s->concat_user_limit : 1;
    char what[200];
    if (r != p) snprintf(what, sizeof what, "%s (a fusion ending in %s)", p->name, r->name);
    else snprintf(what, sizeof what, "%s", p->name);
    fusion_verdict_metric(v, "users", users);
    fusion_verdict_metric(v, "limit", limit);
    if (users > limit) {
      char into[32];
      if (users == 2) snprintf(into, sizeof into, "both");
      else snprintf(into, sizeof into, "all %d", users);
      fusion_refuse(v, FR_CODE_DUPLICATION,
                    "%s has %d users; fusing it would duplicate the %s into %s; limit %d %s", what, users,
                    ir_op_name(r->op), into, limit, plural(limit, "user", "users"));
      if (r->op == IR_OP_CONCATENATE)
        fusion_suggest(v,
                       "raise the limit with `set dup_limit %d`, or pass the values separately instead of "
                       "concatenating",
                       users > 3 ? users : 3);
      else
        fusion_suggest(v, "raise the limit with `set dup_limit %d`", users);
      return false;
    }
    if (copies > limit) {
      fusion_verdict_metric(v, "copies", copies);
      /* Name its readers inside the consumer: where the copies come from. */
      char readers[200] = "";
      IrComputation *cc = ir_fused_computation(c);
      int nr = 0;
      for (int k = 0; cc && k < c->noperands && k < cc->nparams; k++) {
        if (c->operands[k] != p || !cc->params[k]) continue;
        for (int u = 0; u < cc->params[k]->nusers && nr < 4; u++, nr++)
          snprintf(readers + strlen(readers), sizeof readers - strlen(readers), "%s%s", nr ? ", " : "",
                   cc->params[k]->users[u]->name);
      }
      fusion_refuse(v, FR_CODE_DUPLICATION,
                    "fusing %s into %s would emit the %s %d times (its readers there%s%s%s index it %d different "
                    "ways); a %s invalidates the emitter's cache, so the limit is %d %s",
                    what, c->name, ir_op_name(r->op), copies, readers[0] ? ", " : "", readers, readers[0] ? "," : "",
                    copies, ir_op_name(r->op), limit, plural(limit, "copy", "copies"));
      if (r->op == IR_OP_CONCATENATE)
        fusion_suggest(v,
                       "raise the limit with `set dup_limit %d`, or pass the values separately instead of "
                       "concatenating",
                       copies > 3 ? copies : 3);
      else
        fusion_suggest(v, "raise the limit with `set dup_limit %d`", copies);
      return false;
    }
  }
  return true;
}

/* Asks the register hook about the fused kernel of p and c, built in a scratch copy. */
static bool check_registers(const IrInstr *p, const IrInstr *c, const DeviceProfile *d, bool mo, FusionVerdict *v) {
  IrModule *copy = ir_module_clone(p->parent->module);
  if (!copy) return true;
  IrInstr *pc = ir_module_find_instr(copy, p->name), *cc = ir_module_find_instr(copy, c->name);
  IrInstr *f = NULL;
  if (pc && cc) {
    bool consumer_of = false;
    for (int k = 0; k < cc->noperands; k++) consumer_of = consumer_of || cc->operands[k] == pc;
    if (consumer_of) f = mo ? fusion_fuse_multi_output(cc, pc) : fusion_fuse(cc, pc);
    else f = fusion_merge_siblings(cc, pc, NULL);
  }
  int regs = 0, spills = 0;
  bool got = f && register_hook(register_hook_ctx, ir_fused_computation(f), &regs, &spills);
  ir_module_free(copy);
  if (!got) return true;
  int limit = d->max_registers_per_thread > 0 ? d->max_registers_per_thread : FUSION_MAX_REGISTERS;
  fusion_verdict_metric(v, "registers", regs);
  fusion_verdict_metric(v, "spill_bytes", spills);
  if (regs > limit || spills > 0) {
    fusion_verdict_metric(v, "limit", limit);
    return fusion_refuse(v, FR_REGISTERS,
                         "ptxas needs %d registers per thread for %s fused with %s%s%d B spilled; %s allows %d and "
                         "no spills",
                         regs, p->name, c->name, spills ? " and " : ", ", spills, d->name, limit);
  }
  return true;
}

int64_t fusion_shared_memory_2021(const IrInstr *i) {
  if (i->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(i)) {
    int eb = ir_type_bytes(elem_type(i));
    if (eb <= 0) eb = 4;
    return is_row_reduction(i) ? 32 * (int64_t)eb : 2 * 32 * 33 * (int64_t)eb;
  }
  IrComputation *fc = ir_fused_computation(i);
  int64_t sum = 0;
  for (int k = 0; fc && k < fc->ninstrs; k++) sum += fusion_shared_memory_2021(fc->instrs[k]);
  return sum;
}

int fusion_subshape_count(const IrShape *sh) {
  if (sh->type != IR_TUPLE) return 1;
  int n = 1;
  for (int k = 0; k < sh->ntuple; k++) n += fusion_subshape_count(&sh->tuple[k]);
  return n;
}

int fusion_mof_priority(const IrInstr *i) {
  if (i->op != IR_OP_FUSION) return 0;
  IrComputation *fc = ir_fused_computation(i);
  return fc && fc->root && fc->root->op == IR_OP_TUPLE ? 2 : 1;
}

void fusion_sort_by_mof_priority(IrInstr **v, int n) {
  /* Stable, highest first; three priorities, so three passes over the list (a value may have
   * thousands of readers: an insertion sort was quadratic in them). */
  if (n < 2) return;
  IrInstr **tmp = fx_malloc(sizeof(IrInstr *) * (size_t)n);
  unsigned char *pr = fx_malloc((size_t)n);
  if (!tmp || !pr) {
    fx_free(tmp);
    fx_free(pr);
    for (int i = 1; i < n; i++) { /* out of memory: the insertion sort, stable too */
      IrInstr *x = v[i];
      int j = i - 1;
      while (j >= 0 && fusion_mof_priority(v[j]) < fusion_mof_priority(x)) {
        v[j + 1] = v[j];
        j--;
      }
      v[j + 1] = x;
    }
    return;
  }
  for (int i = 0; i < n; i++) pr[i] = (unsigned char)fusion_mof_priority(v[i]);
  int w = 0;
  for (int want = 2; want >= 0; want--)
    for (int i = 0; i < n; i++)
      if (pr[i] == want) tmp[w++] = v[i];
  memcpy(v, tmp, sizeof(IrInstr *) * (size_t)n);
  fx_free(tmp);
  fx_free(pr);
}

/* FusionWouldBeTooLarge's operand count (2021): the distinct operands of both, less the edge
 * between them. */
static int distinct_operands(const IrInstr *a, const IrInstr *b) {
  const IrInstr *seen[512];
  int n = 0, extra = 0;
  const IrInstr *both[2] = {a, b};
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < both[s]->noperands; k++) {
      const IrInstr *op = both[s]->operands[k];
      if (!op || op == a || op == b) continue;
      bool dup = false;
      for (int j = 0; j < n && !dup; j++) dup = seen[j] == op;
      if (dup) continue;
      if (n < 512) seen[n++] = op;
      else extra++;
    }
  return n + extra;
}

bool fusion_check_too_large(const IrInstr *p, const IrInstr *c, const PassContext *cx, FusionSizeFor how,
                            FusionVerdict *v) {
  const PassSettings *s = cx ? cx->settings : NULL;
  const DeviceProfile *d = cx ? cx->device : NULL;
  bool mo = how == FUSION_SIZE_MULTI_OUTPUT;
  int64_t smem = fusion_shared_memory_2021(p) + fusion_shared_memory_2021(c);
  if (smem > FUSION_SHARED_MEMORY_BUDGET_2021) {
    fusion_verdict_metric(v, "shared_bytes", (double)smem);
    fusion_verdict_metric(v, "limit", FUSION_SHARED_MEMORY_BUDGET_2021);
    return fusion_refuse(v, FR_SHARED_MEMORY,
                         "the reductions of %s and %s together need %" PRId64 " B of shared memory per block, over "
                         "the budget of %d B (XLA's kSharedMemoryBudgetInBytes, 2021)",
                         p->name, c->name, smem, FUSION_SHARED_MEMORY_BUDGET_2021);
  }
  /* Operands plus output buffers (XLA counts both sides' outputs, a tuple and its elements), first
   * by the quick bound, then exactly; fusing a producer into its consumer without adding operands
   * never makes the consumer too large. */
  int budget = s && s->operand_budget > 0 ? s->operand_budget : 64;
  int outputs = fusion_subshape_count(&p->shape) + fusion_subshape_count(&c->shape);
  int ops = distinct_operands(p, c);
  fusion_verdict_metric(v, "operands", ops + outputs);
  bool grows = how != FUSION_SIZE_PRODUCER_CONSUMER || ops > c->noperands;
  if (p->noperands + c->noperands - 1 + outputs > budget && grows && ops + outputs > budget) {
    fusion_verdict_metric(v, "budget", budget);
    fusion_refuse(v, FR_OPERAND_BUDGET,
                  "fusing %s with %s would give the kernel %d operands and %d output buffers; budget %d", p->name,
                  c->name, ops, outputs, budget);
    fusion_suggest(v, "raise the budget with `set operand_budget %d`", ops + outputs > 96 ? ops + outputs : 96);
    return false;
  }
  int red = unnested_reductions_2021(p) + unnested_reductions_2021(c);
  if (red > FUSION_MAX_UNNESTED_REDUCTIONS) {
    fusion_verdict_metric(v, "reductions", red);
    fusion_verdict_metric(v, "limit", FUSION_MAX_UNNESTED_REDUCTIONS);
    return fusion_refuse(v, FR_UNNESTED_REDUCTIONS,
                         "fusing %s with %s would put %d unnested reductions in one kernel; limit %d", p->name,
                         c->name, red, FUSION_MAX_UNNESTED_REDUCTIONS);
  }
  if (register_hook && d && d->is_gpu && !check_registers(p, c, d, mo, v)) return false;
  int size = fusion_body_size(p) + fusion_body_size(c);
  if (size > FUSION_MAX_IR_SIZE) {
    fusion_verdict_metric(v, "instructions", size);
    fusion_verdict_metric(v, "limit", FUSION_MAX_IR_SIZE);
    return fusion_refuse(v, FR_IR_SIZE, "fusing %s with %s would give a body of %d instructions; limit %d",
                         p->name, c->name, size, FUSION_MAX_IR_SIZE);
  }
  return true;
}

/* The operands of c whose buffers it updates in place (HloDataflowAnalysis::
 * GetInPlaceInputOutputPairs, 2021): operand 0 of a dynamic-update-slice or scatter, or the
 * fusion parameter that is operand 0 of such a root (or of an element of the root tuple).
 * Returns the count. */
static int in_place_operands(const IrInstr *c, int *out, int max) {
  if (c->op == IR_OP_DYNAMIC_UPDATE_SLICE || c->op == IR_OP_SCATTER) {
    out[0] = 0;
    return max > 0;
  }
  IrComputation *fc = ir_fused_computation(c);
  if (!fc || !fc->root) return 0;
  const IrInstr *r = fc->root;
  int nr = r->op == IR_OP_TUPLE ? r->noperands : 1, n = 0;
  for (int k = 0; k < nr && n < max; k++) {
    const IrInstr *x = r->op == IR_OP_TUPLE ? r->operands[k] : r;
    if ((x->op != IR_OP_DYNAMIC_UPDATE_SLICE && x->op != IR_OP_SCATTER) || x->noperands == 0) continue;
    const IrInstr *b = x->operands[0];
    if (b->op == IR_OP_PARAMETER && b->param_number >= 0 && b->param_number < c->noperands) out[n++] = (int)b->param_number;
  }
  return n;
}

/* XLA's ExtractInstruction: i itself when it matches, else the one matching instruction of its
 * fused body (NULL when none or several). */
static const IrInstr *extract_one(const IrInstr *i, bool (*match)(const IrInstr *)) {
  if (match(i)) return i;
  IrComputation *fc = ir_fused_computation(i);
  const IrInstr *found = NULL;
  for (int k = 0; fc && k < fc->ninstrs; k++)
    if (match(fc->instrs[k])) {
      if (found) return NULL;
      found = fc->instrs[k];
    }
  return found;
}

static bool is_dus(const IrInstr *x) { return x->op == IR_OP_DYNAMIC_UPDATE_SLICE; }
static bool is_non_elementwise(const IrInstr *x) { return x->op != IR_OP_FUSION && !ir_op_is_elementwise(x->op); }

const IrInstr *fusion_outer_operand(const IrInstr *owner, const IrInstr *x) {
  if (owner->op == IR_OP_FUSION && x->op == IR_OP_PARAMETER && x->param_number >= 0 && x->param_number < owner->noperands)
    return owner->operands[x->param_number];
  return x;
}

bool fusion_constant_int(const IrInstr *x, int64_t *v) {
  if (x->op != IR_OP_CONSTANT || !x->literal || !x->literal->values || x->literal->count < 1) return false;
  *v = (int64_t)x->literal->values[0];
  return true;
}

bool fusion_slice_matches_dus(const IrInstr *p, const IrInstr *pne, const IrInstr *buf, const IrInstr *c,
                              const IrInstr *dus, FusionVerdict *v) {
  int rank = dus->shape.rank;
  if (pne->op == IR_OP_SLICE) {
    int64_t st[IR_MAX_RANK], li[IR_MAX_RANK], sd[IR_MAX_RANK];
    int nd = ir_attr_slice(pne, st, li, sd, IR_MAX_RANK);
    for (int d = 0; d < rank; d++) {
      int64_t cv;
      if (d >= nd || 2 + d >= dus->noperands || !fusion_constant_int(fusion_outer_operand(c, dus->operands[2 + d]), &cv) ||
          cv != st[d] || sd[d] != 1)
        return fusion_refuse(v, FR_IN_PLACE,
                             "%s slices %s at other indices than %s updates in place (XLA: DUS and slice index "
                             "mismatch)",
                             p->name, buf->name, c->name);
    }
  } else if (pne->op == IR_OP_DYNAMIC_SLICE) {
    for (int d = 0; d < rank && 1 + d < pne->noperands && 2 + d < dus->noperands; d++) {
      const IrInstr *a = fusion_outer_operand(p, pne->operands[1 + d]), *b = fusion_outer_operand(c, dus->operands[2 + d]);
      int64_t av = 0, bv = 0;
      bool ac = fusion_constant_int(a, &av), bc = fusion_constant_int(b, &bv);
      if (ac != bc || (ac && av != bv) || (!ac && a != b))
        return fusion_refuse(v, FR_IN_PLACE,
                             "%s reads %s at other indices than %s updates in place (XLA: DUS and DS index mismatch)",
                             p->name, buf->name, c->name);
    }
  }
  return true;
}

/* XLA's InstructionFusion::ShouldFuseInPlaceOp (2021): a consumer that updates a buffer in place
 * takes a producer that is not elementwise and reads that same buffer only when the producer is
 * a slice or dynamic-slice of exactly the region the consumer's one dynamic-update-slice writes
 * (the update would change what the producer reads otherwise). An elementwise producer, or the
 * buffer itself, fuses. */
static bool classic_should_fuse_in_place_op(const IrInstr *p, const IrInstr *c, FusionVerdict *v) {
  if (ir_op_is_elementwise(p->op)) return true;
  int idx[16];
  int n = in_place_operands(c, idx, 16);
  for (int k = 0; k < n; k++) {
    const IrInstr *buf = c->operands[idx[k]];
    bool reads = false;
    for (int o = 0; o < p->noperands; o++) reads = reads || p->operands[o] == buf;
    if (!reads) continue;
    const IrInstr *dus = extract_one(c, is_dus), *pne = extract_one(p, is_non_elementwise);
    if (!dus || !pne || dus->noperands < 2 || !ir_shape_equal(&pne->shape, &dus->operands[1]->shape))
      return fusion_refuse(v, FR_IN_PLACE,
                           "%s reads %s, which %s updates in place, through a %s that is not the region the update "
                           "writes (XLA: the consumer is not a dus or the producer has several non-elementwise ops)",
                           p->name, buf->name, c->name, ir_op_name(p->op));
    if (pne->op == IR_OP_SLICE || pne->op == IR_OP_DYNAMIC_SLICE) {
      if (!fusion_slice_matches_dus(p, pne, buf, c, dus, v)) return false;
      continue;
    }
    return fusion_refuse(v, FR_IN_PLACE,
                         "%s reads %s through a %s while %s updates it in place: the update would change what it "
                         "reads",
                         p->name, buf->name, ir_op_name(pne->op), c->name);
  }
  return true;
}

bool fusion_should_fuse_priority(const IrInstr *p, const IrInstr *c, const PassContext *cx, FusionVerdict *v) {
  return fusion_should_fuse(p, c, cx, FUSION_MODE_PRIORITY, v);
}

/* In FUSION_MODE_PRIORITY the cost model decides duplication: no expensive-duplication or
 * user-limit rule, constants fuse anywhere, loop fusions are producers like any other. */
bool fusion_should_fuse(const IrInstr *p, const IrInstr *c, const PassContext *cx, FusionMode mode, FusionVerdict *v) {
  const PassSettings *s = cx ? cx->settings : NULL;
  bool may_dup = mode != FUSION_MODE_NO_DUPLICATION;
  memset(v, 0, sizeof *v);
  if (!fusion_check_consumer(c, cx, v)) return false;
  if (!fusion_check_producer(p, cx, v)) return false;
  if (mode != FUSION_MODE_PRIORITY && !fusion_producer_consumer_fusible(p, c, cx, v)) return false;
  if (p->is_root)
    return fusion_refuse(v, FR_ROOT,
                         "%s is the root of %s: its value is the computation's output, so it is not fused into "
                         "%s",
                         p->name, p->parent ? p->parent->name : "its computation", c->name);
  int users = fusion_user_count(p);
  fusion_verdict_metric(v, "users", users);
  bool dup = users > 1 && !always_duplicable(p);
  if (dup && !may_dup)
    return fusion_refuse(v, FR_CODE_DUPLICATION,
                         "%s has %d users; this run fuses only producers with one user, so fusing it would need "
                         "a copy per user (the next run may duplicate it)",
                         p->name, users);
  const IrInstr *exp = fusion_expensive_member(p, s);
  if (dup && exp && mode != FUSION_MODE_PRIORITY) {
    fusion_refuse(v, FR_EXPENSIVE_DUPLICATION,
                  "%s is expensive (%s) and has %d users; fusing it into %s would compute it again in each of "
                  "them",
                  p->name, ir_op_name(exp->op), users, c->name);
    fusion_suggest(v, "if %s is cheap on your device, `set expensive %s off`", ir_op_name(exp->op),
                   ir_op_name(exp->op));
    return false;
  }
  int k = operand_index(c, p);
  double times = 1;
  bool reuse = k >= 0 && fusion_reuses_operand(c, k, &times);
  const IrInstr *pr = fused_root(p);
  if (reuse && (pr->op == IR_OP_REDUCE || pr->op == IR_OP_REDUCE_WINDOW) &&
      inputs_per_output(pr) > FUSION_MAX_INPUTS_PER_OUTPUT) {
    fusion_verdict_metric(v, "inputs_per_output", inputs_per_output(pr));
    fusion_verdict_metric(v, "reuse", times);
    fusion_verdict_metric(v, "limit", FUSION_MAX_INPUTS_PER_OUTPUT);
    return fusion_refuse(v, FR_HEAVY_COMPUTATION,
                         "%s reads %.0f inputs per output and %s reads each of its elements %.0f times; fusing "
                         "would redo that work per read (limit %d inputs per output)",
                         pr->name, inputs_per_output(pr), c->name, times, FUSION_MAX_INPUTS_PER_OUTPUT);
  }
  if (reuse && exp) {
    fusion_verdict_metric(v, "reuse", times);
    if (times > 1)
      fusion_refuse(v, FR_EXPENSIVE_REUSE,
                    "%s is expensive (%s) and %s reads each of its elements %.0f times; fused, %s would be "
                    "recomputed %.0f times per element",
                    p->name, ir_op_name(exp->op), c->name, times, ir_op_name(exp->op), times);
    else
      fusion_refuse(v, FR_EXPENSIVE_REUSE,
                    "%s is expensive (%s) and %s (%s) reuses its operand's elements: XLA's OperandElementUse counts "
                    "every %s as reusing, and keeps an expensive producer out of it",
                    p->name, ir_op_name(exp->op), c->name, ir_op_name(c->op), ir_op_name(c->op));
    fusion_suggest(v, "if %s is cheap on your device, `set expensive %s off`", ir_op_name(exp->op),
                   ir_op_name(exp->op));
    return false;
  }
  if (!classic_should_fuse_in_place_op(p, c, v)) return false;
  if (!fusion_check_too_large(p, c, cx, FUSION_SIZE_PRODUCER_CONSUMER, v)) return false;
  if (mode == FUSION_MODE_PRIORITY) {
    if (!check_emitted_copies(p, c, s, v, NULL)) return false;
  } else if (may_dup || c->op == IR_OP_FUSION) {
    if (!fusion_check_code_duplication(p, c, cx, v)) return false;
  }
  if (dup)
    fusion_verdict_ok(v, "%s is cheap and has %d users: duplicated into %s", p->name, users, c->name);
  else
    fusion_verdict_ok(v, "%s fuses into %s", p->name, c->name);
  return true;
}

/* ---------- computations the passes walk ---------- */

static void control_visit(IrComputation *c, IrComputation **out, int max, int *n, char *seen) {
  if (!c || seen[c->id]) return;
  seen[c->id] = 1;
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *i = c->instrs[k];
    if (i->op != IR_OP_WHILE && i->op != IR_OP_CALL && i->op != IR_OP_CONDITIONAL) continue;
    for (int a = 0; a < i->nattrs; a++)
      if (i->attrs[a].kind == IR_ATTR_COMP)
        for (int j = 0; j < i->attrs[a].ncomps; j++) control_visit(i->attrs[a].comps[j], out, max, n, seen);
  }
  if (*n < max) out[*n] = c;
  (*n)++;
}

int fusion_control_computations(const IrModule *m, IrComputation **out, int max) {
  if (!m->entry) return 0;
  char *seen = fx_calloc((size_t)m->next_id + 1, 1);
  if (!seen) return 0;
  int n = 0;
  control_visit(m->entry, out, max, &n, seen);
  fx_free(seen);
  return n < max ? n : max;
}

/* ---------- pairs already reported ---------- */

static size_t pair_hash(const IrInstr *a, const IrInstr *b, const char *reason) {
  uint64_t h = (uint64_t)(uintptr_t)a * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)(uintptr_t)b + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
  h ^= (uint64_t)(uintptr_t)reason + (h << 6) + (h >> 2);
  return (size_t)(h ^ (h >> 29));
}

static bool pairs_insert(FusionPairSet *r, FusionPair p) {
  size_t m = r->cap - 1;
  for (size_t k = pair_hash(p.a, p.b, p.reason) & m;; k = (k + 1) & m) {
    FusionPair *q = &r->v[k];
    if (!q->a) {
      *q = p;
      r->n++;
      return true;
    }
    if (q->a == p.a && q->b == p.b && q->reason == p.reason) return false;
  }
}

/* True when (a, b) was refused for this reason before; otherwise remembers it. */
bool fusion_pair_seen(FusionPairSet *r, const IrInstr *a, const IrInstr *b, const char *reason, bool *oom) {
  if ((r->n + 1) * 2 > r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 64;
    FusionPair *nv = fx_calloc(cap, sizeof *nv);
    if (!nv) {
      *oom = true;
      return false;
    }
    FusionPairSet grown = {nv, 0, cap};
    for (size_t k = 0; k < r->cap; k++)
      if (r->v[k].a) pairs_insert(&grown, r->v[k]);
    fx_free(r->v);
    *r = grown;
  }
  return !pairs_insert(r, (FusionPair){a, b, reason});
}

void fusion_pair_set_free(FusionPairSet *r) {
  fx_free(r->v);
  memset(r, 0, sizeof *r);
}
