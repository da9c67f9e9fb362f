/* plan.c — the kernel plan of a stage and its cost on a device profile (implements plan.h).
 *
 * Walks the entry computation the way XLA's GPU runtime executes it:
 *   - a fusion is one kernel; its kind comes from its kind attribute (kLoop -> loop,
 *     kInput -> input, kOutput -> output, kCustom -> library);
 *   - an unfused compute instruction is one kernel: dot, convolution, custom-call, rng, sort and
 *     the other library ops are opaque library kernels, reduce is an input kernel, everything
 *     else a loop kernel;
 *   - parameters, constants, tuples, get-tuple-element, bitcasts (and reshapes or transposes
 *     that are bitcasts) launch nothing;
 *   - a while loop runs its body kernels once per iteration (the loop's tuple stays in memory: the
 *     paper's first boundary). How its condition runs depends on whether the trip count is known
 *     at compile time, as in XLA:GPU: the trip count comes from backend_config's known_trip_count
 *     (XLA's WhileLoopTripCountAnnotator writes it before fusion) or from the condition comparing
 *     an integer counter with a constant (the counted-loop pattern that annotator finds, XLA's
 *     ComputeWhileLoopTripCount). A loop with a known trip count runs as a for loop: XLA's
 *     IrEmitterUnnested::HandleWhile built a ForThunk for it (2018-2023) and today's WhileThunk is
 *     given the trip count; either way the body runs N times and the condition is never evaluated
 *     and nothing is read back, so its condition kernels are listed with 0 launches and its control
 *     entry costs nothing. Only a loop whose trip count is unknown (WhileThunk without one) runs its
 *     condition kernels every iteration and once more (the test that ends the loop), each time
 *     followed by the predicate's read-back to the host (a device-to-host copy and a wait), which
 *     decides whether to go on; its trip count is then taken as 1 and the plan says trip counts
 *     are not known. A control entry is priced in the time (on a GPU a read-back costs about a
 *     launch) but is not a kernel: it is not counted in launches or bytes moved;
 *   - call walks into its callee; conditional reads its branch index back (a control kernel)
 *     and counts its costliest branch (the others are listed with 0 launches).
 * Bytes: a kernel reads its boundary inputs (each distinct operand once; a slice, dynamic-slice
 * or gather reads only what it takes) and writes its outputs (an in-place dynamic-update-slice
 * writes only the update). Time per launch = max(bytes / bandwidth, flops / peak) + launch
 * overhead. The plan points into the module: free it before the module. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#include "../ir/ir.h"

static const struct {
  const char *name, *xla;
} kinds[KERNEL_KIND_COUNT] = {
#define KIND(NAME, name, xla) [KERNEL_##NAME] = {name, xla},
#define LIBRARY(OP, library, what)
#include "kernels.def"
#undef KIND
#undef LIBRARY
};

const char *plan_kernel_kind_name(KernelKind k) { return k >= 0 && k < KERNEL_KIND_COUNT ? kinds[k].name : "?"; }

KernelKind plan_fusion_kernel_kind(const char *xla_kind) {
  for (int k = 0; xla_kind && k < KERNEL_KIND_COUNT; k++)
    if (kinds[k].xla && strcmp(kinds[k].xla, xla_kind) == 0) return (KernelKind)k;
  return KERNEL_LOOP;
}

bool plan_op_library(IrOpcode op, const char **library, const char **what) {
  switch (op) {
#define KIND(NAME, name, xla)
#define LIBRARY(OP, lib, w) \
  case IR_OP_##OP:          \
    *library = lib;         \
    *what = w;              \
    return true;
#include "kernels.def"
#undef KIND
#undef LIBRARY
  default: return false;
  }
}

static const struct {
  const char *target, *library, *what;
} custom_calls[PLAN_CC_COUNT] = {
#define KIND(NAME, name, xla)
#define LIBRARY(OP, library, what)
#define CUSTOM_CALL(NAME, target, library, what) [PLAN_CC_##NAME] = {target, library, what},
#include "kernels.def"
#undef KIND
#undef LIBRARY
#undef CUSTOM_CALL
};

static const struct {
  const char *kind, *library, *what;
} fusion_backends[PLAN_FB_COUNT] = {
#define KIND(NAME, name, xla)
#define LIBRARY(OP, library, what)
#define FUSION_BACKEND(NAME, kind, library, what) [PLAN_FB_##NAME] = {kind, library, what},
#include "kernels.def"
#undef KIND
#undef LIBRARY
#undef FUSION_BACKEND
};

/* Whether text (an attribute's value, quoted or not) is exactly s. */
static bool text_is(const char *text, const char *s) {
  size_t n = strlen(text), m = strlen(s);
  if (n == m + 2 && text[0] == '"' && text[n - 1] == '"') return strncmp(text + 1, s, m) == 0;
  return n == m && strcmp(text, s) == 0;
}

PlanCustomCall plan_custom_call(const IrInstr *i) {
  if (!i || i->op != IR_OP_CUSTOM_CALL) return PLAN_CC_NONE;
  const char *t = ir_attr_text(i, "custom_call_target");
  for (int k = 1; t && k < PLAN_CC_COUNT; k++)
    if (text_is(t, custom_calls[k].target)) return (PlanCustomCall)k;
  return PLAN_CC_NONE;
}

const char *plan_custom_call_target(PlanCustomCall c) {
  return c > PLAN_CC_NONE && c < PLAN_CC_COUNT ? custom_calls[c].target : NULL;
}

PlanFusionBackend plan_fusion_backend(const IrInstr *i) {
  if (!i || i->op != IR_OP_FUSION) return PLAN_FB_NONE;
  const char *bc = ir_attr_text(i, "backend_config");
  const char *at = bc ? strstr(bc, "\"fusion_backend_config\"") : NULL;
  const char *kind = at ? strstr(at, "\"kind\":\"") : NULL;
  if (!kind) return PLAN_FB_NONE;
  kind += strlen("\"kind\":\"");
  for (int k = 1; k < PLAN_FB_COUNT; k++) {
    size_t n = strlen(fusion_backends[k].kind);
    if (strncmp(kind, fusion_backends[k].kind, n) == 0 && kind[n] == '"') return (PlanFusionBackend)k;
  }
  return PLAN_FB_NONE;
}

const char *plan_fusion_backend_kind(PlanFusionBackend b) {
  return b > PLAN_FB_NONE && b < PLAN_FB_COUNT ? fusion_backends[b].kind : NULL;
}

bool plan_library_call(const IrInstr *i, const char **library, const char **what) {
  PlanCustomCall c = plan_custom_call(i);
  if (c != PLAN_CC_NONE) {
    *library = custom_calls[c].library;
    *what = custom_calls[c].what;
    return true;
  }
  PlanFusionBackend b = plan_fusion_backend(i);
  if (b != PLAN_FB_NONE) {
    *library = fusion_backends[b].library;
    *what = fusion_backends[b].what;
    return true;
  }
  return false;
}

/* The number after "key": in a JSON text, or false. */
static bool json_number(const char *text, const char *key, double *v) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *at = strstr(text, pat);
  if (!at) return false;
  char *end;
  double x = strtod(at + strlen(pat), &end);
  if (end == at + strlen(pat)) return false;
  *v = x;
  return true;
}

bool plan_conv_config(const IrInstr *i, PlanConvConfig *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->activation, sizeof c->activation, "kNone");
  c->conv_result_scale = 1;
  PlanCustomCall cc = plan_custom_call(i);
  if (cc != PLAN_CC_CUDNN_CONV && cc != PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION) return false;
  const char *bc = ir_attr_text(i, "backend_config");
  const char *cfg = bc ? strstr(bc, "\"cudnn_conv_backend_config\"") : NULL;
  if (!cfg) return true;
  const char *act = strstr(cfg, "\"activation_mode\":\"");
  if (act) {
    act += strlen("\"activation_mode\":\"");
    size_t n = strcspn(act, "\"");
    snprintf(c->activation, sizeof c->activation, "%.*s", (int)(n < 23 ? n : 23), act);
  }
  json_number(cfg, "conv_result_scale", &c->conv_result_scale);
  json_number(cfg, "side_input_scale", &c->side_input_scale);
  json_number(cfg, "leakyrelu_alpha", &c->leakyrelu_alpha);
  static const char *const known[] = {"kNone", "kRelu", "kRelu6", "kElu", "kLeakyRelu", "kSigmoid", "kTanh"};
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
    if (strcmp(c->activation, known[k]) == 0) return true;
  return false;
}

/* The shortest of %.15g and %.17g that reads back as v. */
static const char *shortest(double v, char *buf, size_t n) {
  snprintf(buf, n, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, n, "%.17g", v);
  return buf;
}

void plan_conv_config_format(const PlanConvConfig *c, char *buf, size_t n) {
  char a[32], b[32], d[32];
  snprintf(buf, n,
           "{\"cudnn_conv_backend_config\":{\"activation_mode\":\"%s\",\"conv_result_scale\":%s,"
           "\"side_input_scale\":%s,\"leakyrelu_alpha\":%s}}",
           c->activation, shortest(c->conv_result_scale, a, sizeof a), shortest(c->side_input_scale, b, sizeof b),
           shortest(c->leakyrelu_alpha, d, sizeof d));
}

/* ---------- what launches what ---------- */

/* Physical order of the non-degenerate dims, major first, as dimension indices. */
static int physical_dims(const IrShape *s, int *out) {
  int n = 0;
  for (int k = s->rank - 1; k >= 0; k--) {
    int d = s->has_layout ? s->minor_to_major[k] : s->rank - 1 - k;
    if (s->dims[d] != 1) out[n++] = d;
  }
  return n;
}

/* A reshape is a bitcast when the elements keep their order in memory: with row-major layouts on
 * both sides it always is; otherwise compare the physical sequence of non-degenerate dims. */
static bool reshape_is_bitcast(const IrInstr *i) {
  if (i->noperands != 1 || !i->operands[0]) return false;
  const IrShape *in = &i->operands[0]->shape, *out = &i->shape;
  if (!ir_shape_is_array(in) || !ir_shape_is_array(out)) return false;
  if (ir_shape_default_layout(in) && ir_shape_default_layout(out)) return true;
  /* Non-default layouts: a bitcast only when it just adds or drops size-1 dims and the other dims
   * keep their sizes and physical order. */
  int pa[IR_MAX_RANK], pb[IR_MAX_RANK];
  int na = physical_dims(in, pa), nb = physical_dims(out, pb);
  if (na != nb) return false;
  for (int k = 0; k < na; k++)
    if (in->dims[pa[k]] != out->dims[pb[k]]) return false;
  return true;
}

/* A transpose is a bitcast when the output layout undoes the permutation (layout assignment
 * makes many of them so). */
static bool transpose_is_bitcast(const IrInstr *i) {
  if (i->noperands != 1 || !i->operands[0]) return false;
  const IrShape *in = &i->operands[0]->shape, *out = &i->shape;
  if (!ir_shape_is_array(in) || !ir_shape_is_array(out) || in->rank != out->rank) return false;
  int64_t perm[IR_MAX_RANK];
  if (ir_attr_dims(i, "dimensions", perm, IR_MAX_RANK) != out->rank) return false;
  int pa[IR_MAX_RANK], pb[IR_MAX_RANK];
  int na = physical_dims(in, pa), nb = physical_dims(out, pb);
  if (na != nb) return false;
  for (int k = 0; k < na; k++)
    if (perm[pb[k]] != pa[k]) return false;
  return true;
}

typedef enum { LAUNCH_NOTHING, LAUNCH_KERNEL, LAUNCH_WHILE, LAUNCH_CALL, LAUNCH_CONDITIONAL } LaunchKind;

static LaunchKind launch_kind(const IrInstr *i, KernelKind *kind) {
  *kind = KERNEL_LOOP;
  switch (i->op) {
  case IR_OP_PARAMETER:
  case IR_OP_CONSTANT:
  case IR_OP_TUPLE:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_BITCAST:
  case IR_OP_AFTER_ALL:
  case IR_OP_OPT_BARRIER:
  case IR_OP_DOMAIN:
  case IR_OP_ADD_DEPENDENCY:
  case IR_OP_PARTITION_ID:
  case IR_OP_REPLICA_ID:
  case IR_OP_GET_DIMENSION_SIZE:
  case IR_OP_COPY_DONE:
  case IR_OP_SEND_DONE:
  case IR_OP_RECV_DONE:
  case IR_OP_ALL_REDUCE_DONE:
  case IR_OP_ALL_GATHER_DONE:
  case IR_OP_COLLECTIVE_PERMUTE_DONE:
  case IR_OP_ASYNC_UPDATE:
  case IR_OP_ASYNC_DONE:
    return LAUNCH_NOTHING;
  case IR_OP_RESHAPE:
    return reshape_is_bitcast(i) ? LAUNCH_NOTHING : LAUNCH_KERNEL;
  case IR_OP_TRANSPOSE:
    return transpose_is_bitcast(i) ? LAUNCH_NOTHING : LAUNCH_KERNEL;
  case IR_OP_WHILE:
    return LAUNCH_WHILE;
  case IR_OP_CALL:
    return LAUNCH_CALL;
  case IR_OP_CONDITIONAL:
    return LAUNCH_CONDITIONAL;
  case IR_OP_FUSION: {
    *kind = plan_fusion_kernel_kind(ir_fusion_kind(i));
    return LAUNCH_KERNEL;
  }
  case IR_OP_REDUCE:
    *kind = KERNEL_INPUT;
    return LAUNCH_KERNEL;
  default:
    break;
  }
  IrCategory cat = ir_op_info(i->op)->category;
  if (cat == IR_CAT_LIBRARY || cat == IR_CAT_COLLECTIVE || i->op == IR_OP_ASYNC_START) *kind = KERNEL_LIBRARY;
  return LAUNCH_KERNEL;
}

bool plan_instr_kernel(const IrInstr *i, KernelKind *kind) {
  LaunchKind l = launch_kind(i, kind);
  if (l == LAUNCH_WHILE || l == LAUNCH_CALL || l == LAUNCH_CONDITIONAL) *kind = KERNEL_CONTROL;
  return l != LAUNCH_NOTHING;
}

/* ---------- flops ---------- */

static double elems(const IrShape *s) {
  if (s->type == IR_TUPLE) {
    double n = 0;
    for (int k = 0; k < s->ntuple; k++) n += elems(&s->tuple[k]);
    return n;
  }
  return (double)ir_shape_elements(s);
}

/* Product of the window sizes of a reduce-window ("window={size=3x3 stride=...}"). */
static double window_size(const IrInstr *i) {
  IrWindow w;
  double prod = 1;
  if (ir_attr_window(i, -1, &w, NULL, 0))
    for (int k = 0; k < w.rank; k++) prod *= (double)w.size[k];
  return prod;
}

double plan_instr_flops(const IrInstr *i) {
  const IrOpInfo *info = ir_op_info(i->op);
  switch (i->op) {
  case IR_OP_DOT: {
    IrDotDims dd;
    double k = 1;
    if (i->noperands >= 1 && i->operands[0] && ir_dot_dims(i, &dd))
      for (int c = 0; c < dd.nlhs_contract; c++)
        if (dd.lhs_contract[c] >= 0 && dd.lhs_contract[c] < i->operands[0]->shape.rank)
          k *= (double)i->operands[0]->shape.dims[dd.lhs_contract[c]];
    return 2.0 * elems(&i->shape) * k;
  }
  case IR_OP_CUSTOM_CALL:
    /* cuDNN's convolutions (conv-rewriter's custom calls): the convolution's flops, on the
       result, the first element of their (result, scratch) tuple */
    if (plan_custom_call(i) != PLAN_CC_CUDNN_CONV && plan_custom_call(i) != PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION)
      return 0;
    /* fall through */
  case IR_OP_CONVOLUTION: {
    if (i->noperands < 2 || !i->operands[1]) return 0;
    const IrShape *ks = &i->operands[1]->shape;
    const IrShape *rs = i->shape.type == IR_TUPLE && i->shape.ntuple > 0 ? &i->shape.tuple[0] : &i->shape;
    IrConvDims cd;
    int o = ir_conv_dims(i, &cd, NULL, 0) ? cd.k_out : ks->rank - 1;
    double out_features = ks->rank > 0 && o >= 0 ? (double)ks->dims[o] : 1;
    if (out_features <= 0) return 0;
    return 2.0 * elems(rs) * elems(ks) / out_features;
  }
  case IR_OP_REDUCE: {
    double in = 0;
    for (int k = 0; k < i->noperands / 2; k++)
      if (i->operands[k]) in += elems(&i->operands[k]->shape);
    return in;
  }
  case IR_OP_REDUCE_WINDOW:
    return elems(&i->shape) * window_size(i);
  default:
    break;
  }
  if (info->category == IR_CAT_UNARY || info->category == IR_CAT_BINARY || info->category == IR_CAT_TERNARY)
    return elems(&i->shape);
  return 0;
}

/* ---------- trip counts ---------- */

/* A value as the loop sees it, looking through fusions: an instruction, and the fusion whose body
 * holds it (NULL: the loop's own computation). Fusion passes often fuse a loop's compare or its
 * counter increment, alone or inside a multi-output fusion, and the trip count must still be
 * found. */
typedef struct {
  const IrInstr *i;
  const IrInstr *fusion;
} LoopValue;

/* Resolves i (in fusion's body, or in the loop's computation when fusion is NULL): a fused
 * parameter becomes the fusion's operand, a fusion its root, a get-tuple-element of a
 * multi-output fusion the output it reads; converts, copies and reshapes are looked through. */
static LoopValue loop_value(const IrInstr *i, const IrInstr *fusion) {
  for (int guard = 0; i && guard < 64; guard++) {
    if ((i->op == IR_OP_CONVERT || i->op == IR_OP_COPY || i->op == IR_OP_RESHAPE) && i->noperands == 1) {
      i = i->operands[0];
    } else if (i->op == IR_OP_PARAMETER && fusion) {
      if (i->param_number < 0 || i->param_number >= fusion->noperands) break;
      i = fusion->operands[i->param_number];
      fusion = NULL; /* one level: fusions inside fusions do not hold loop counters */
    } else if (i->op == IR_OP_FUSION && !fusion) {
      IrComputation *f = ir_fused_computation(i);
      if (!f || !f->root || f->root->op == IR_OP_TUPLE) break;
      fusion = i;
      i = f->root;
    } else if (i->op == IR_OP_GET_TUPLE_ELEMENT && !fusion && i->noperands == 1 && i->operands[0] &&
               i->operands[0]->op == IR_OP_FUSION) {
      const IrInstr *g = i->operands[0];
      IrComputation *f = ir_fused_computation(g);
      int64_t k;
      if (!f || !f->root || f->root->op != IR_OP_TUPLE || !ir_attr_int(i, "index", &k) || k < 0 ||
          k >= f->root->noperands)
        break;
      fusion = g;
      i = f->root->operands[k];
    } else {
      break;
    }
  }
  return (LoopValue){i, fusion};
}

static LoopValue loop_operand(LoopValue v, int k) {
  if (!v.i || k >= v.i->noperands) return (LoopValue){NULL, NULL};
  return loop_value(v.i->operands[k], v.fusion);
}

static bool scalar_const(LoopValue v, double *out) {
  const IrInstr *i = v.i;
  if (!i || i->op != IR_OP_CONSTANT || !i->literal || !i->literal->values || i->literal->count < 1) return false;
  *out = i->literal->values[0];
  return true;
}

/* The tuple index k when v is get-tuple-element(param0, k) of computation c. */
static int counter_index(LoopValue v, const IrComputation *c) {
  const IrInstr *i = v.i;
  int64_t k;
  if (v.fusion || !i || i->op != IR_OP_GET_TUPLE_ELEMENT || i->noperands != 1 || !i->operands[0]) return -1;
  const IrInstr *p = i->operands[0];
  if (p->op != IR_OP_PARAMETER || p->parent != c || !ir_attr_int(i, "index", &k)) return -1;
  return (int)k;
}

static int64_t known_trip_count(const IrInstr *w) {
  const char *bc = ir_attr_text(w, "backend_config");
  const char *p = bc ? strstr(bc, "known_trip_count") : NULL;
  if (!p) return -1;
  p = strstr(p, "\"n\"");
  if (!p) return -1;
  p += 3;
  while (*p == ' ' || *p == ':' || *p == '"') p++;
  char *end;
  long long n = strtoll(p, &end, 10);
  return end == p || n < 0 ? -1 : (int64_t)n;
}

int64_t plan_while_trip_count(const IrInstr *w) {
  if (!w || w->op != IR_OP_WHILE) return -1;
  int64_t known = known_trip_count(w);
  if (known >= 0) return known;
  IrComputation *cond = ir_attr_comp(w, "condition"), *body = ir_attr_comp(w, "body");
  if (!cond || !body || !cond->root || !body->root) return -1;
  LoopValue cmp = loop_value(cond->root, NULL);
  if (!cmp.i || cmp.i->op != IR_OP_COMPARE || cmp.i->noperands != 2) return -1;
  LoopValue c0 = loop_operand(cmp, 0), c1 = loop_operand(cmp, 1);
  const char *dir = ir_compare_direction(cmp.i);
  if (!dir) return -1;
  double limit;
  int k = counter_index(c0, cond);
  char d[3] = {dir[0], dir[1], 0};
  if (k >= 0 && scalar_const(c1, &limit)) {
    /* counter DIR limit */
  } else if ((k = counter_index(c1, cond)) >= 0 && scalar_const(c0, &limit)) {
    /* limit DIR counter: flip the direction */
    if (strcmp(d, "LT") == 0) memcpy(d, "GT", 3);
    else if (strcmp(d, "LE") == 0) memcpy(d, "GE", 3);
    else if (strcmp(d, "GT") == 0) memcpy(d, "LT", 3);
    else if (strcmp(d, "GE") == 0) memcpy(d, "LE", 3);
  } else {
    return -1;
  }
  /* Start: the counter's element of the loop's initial tuple. */
  const IrInstr *init = w->noperands == 1 ? w->operands[0] : NULL;
  double start, step;
  if (!init || init->op != IR_OP_TUPLE || k >= init->noperands ||
      !scalar_const(loop_value(init->operands[k], NULL), &start))
    return -1;
  /* Only an integer counter, as XLA's ComputeWhileLoopTripCount: the count must be exact, and a
     float counter's rounding (0.1 added ten times) is not the arithmetic below. */
  if (!ir_type_is_int(init->operands[k]->shape.type)) return -1;
  /* Step: the body's new counter is counter + c (or counter - c). */
  const IrInstr *broot = body->root;
  if (broot->op != IR_OP_TUPLE || k >= broot->noperands) return -1;
  LoopValue upd = loop_value(broot->operands[k], NULL);
  if (!upd.i || upd.i->noperands != 2) return -1;
  LoopValue u0 = loop_operand(upd, 0), u1 = loop_operand(upd, 1);
  if (upd.i->op == IR_OP_ADD) {
    if (counter_index(u0, body) == k && scalar_const(u1, &step)) {
    } else if (counter_index(u1, body) == k && scalar_const(u0, &step)) {
    } else {
      return -1;
    }
  } else if (upd.i->op == IR_OP_SUBTRACT && counter_index(u0, body) == k && scalar_const(u1, &step)) {
    step = -step;
  } else {
    return -1;
  }
  if (step == 0) return -1;
  double n;
  if (strcmp(d, "LT") == 0 && step > 0) n = ceil((limit - start) / step);
  else if (strcmp(d, "LE") == 0 && step > 0) n = floor((limit - start) / step) + 1;
  else if (strcmp(d, "GT") == 0 && step < 0) n = ceil((start - limit) / -step);
  else if (strcmp(d, "GE") == 0 && step < 0) n = floor((start - limit) / -step) + 1;
  else if (strcmp(d, "NE") == 0 && fmod(limit - start, step) == 0 && (limit - start) / step >= 0)
    n = (limit - start) / step;
  else return -1;
  if (n < 0) n = 0;
  if (n > 9.0e15) return -1;
  return (int64_t)n;
}

bool plan_while_for_loop(const IrInstr *w, int64_t *trips) {
  int64_t n = plan_while_trip_count(w);
  if (trips) *trips = n;
  return n >= 0;
}

/* ---------- building ---------- */

typedef struct {
  KernelPlan *p;
  const DeviceProfile *dev;
  int cap;
  FxError *err;
  bool oom;
} Builder;

static int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > INT64_MAX / b) return INT64_MAX;
  return a * b;
}

/* Totals saturate too: two loops of 2^62 trips overflowed the sum of launches (issue 17). Byte
   totals stop at INT64_MAX / 2, so that read + written, which every report adds, cannot overflow. */
static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }
static int64_t sat_bytes(int64_t a, int64_t b) { return a > INT64_MAX / 2 - b ? INT64_MAX / 2 : a + b; }

static PlanKernel *new_kernel(Builder *b, IrInstr *i, KernelKind kind, int64_t launches) {
  KernelPlan *p = b->p;
  if (arena_grow(&p->arena, (void **)&p->kernels, &b->cap, p->nkernels + 1, sizeof(PlanKernel))) {
    b->oom = true;
    return NULL;
  }
  PlanKernel *k = &p->kernels[p->nkernels++];
  memset(k, 0, sizeof *k);
  k->name = i->name;
  k->instr = i;
  k->comp = i->parent;
  k->kind = kind;
  k->launches = launches;
  k->trip_count = -1;
  return k;
}

static bool is_member(const IrInstr *i) {
  return i->op != IR_OP_PARAMETER && i->op != IR_OP_TUPLE && i->op != IR_OP_GET_TUPLE_ELEMENT;
}

/* Whether a and b compute the same value inside one fused body: the same instruction, or the same
 * op with the same attributes (metadata aside) and literal over operands that compute the same
 * values. Parameters match only themselves. *budget bounds the work on large bodies (false when
 * spent). */
static bool same_value(const IrInstr *a, const IrInstr *b, int depth, int *budget) {
  if (a == b) return true;
  if (!a || !b || depth > 32 || --*budget < 0) return false;
  if (a->op != b->op || a->op == IR_OP_PARAMETER || a->noperands != b->noperands) return false;
  if (a->op == IR_OP_RNG || a->op == IR_OP_RNG_BIT_GENERATOR || a->op == IR_OP_CUSTOM_CALL) return false;
  if (a->shape.type != b->shape.type || a->shape.rank != b->shape.rank) return false;
  for (int d = 0; d < a->shape.rank; d++)
    if (a->shape.dims[d] != b->shape.dims[d]) return false;
  if (a->op == IR_OP_CONSTANT) {
    const char *ta = a->literal && !a->literal->elided ? a->literal->text : NULL;
    const char *tb = b->literal && !b->literal->elided ? b->literal->text : NULL;
    if (!ta || !tb || strcmp(ta, tb) != 0) return false;
  }
  int na = 0, nb = 0;
  for (int k = 0; k < a->nattrs; k++) na += strcmp(a->attrs[k].key, "metadata") != 0;
  for (int k = 0; k < b->nattrs; k++) nb += strcmp(b->attrs[k].key, "metadata") != 0;
  if (na != nb) return false;
  for (int k = 0; k < a->nattrs; k++) {
    const IrAttr *x = &a->attrs[k];
    if (strcmp(x->key, "metadata") == 0) continue;
    const IrAttr *y = ir_attr_get(b, x->key);
    if (!y || y->kind != x->kind) return false;
    if (x->kind == IR_ATTR_TEXT && strcmp(x->text ? x->text : "", y->text ? y->text : "") != 0) return false;
    if (x->kind == IR_ATTR_COMP) {
      if (x->ncomps != y->ncomps) return false;
      for (int j = 0; j < x->ncomps; j++)
        if (x->comps[j] != y->comps[j]) return false;
    }
  }
  for (int o = 0; o < a->noperands; o++)
    if (!same_value(a->operands[o], b->operands[o], depth + 1, budget)) return false;
  return true;
}

/* Bytes a fusion reads of its parameter `param` (operand `op`): only what slices take when every
 * use is a slice, dynamic-slice or gather of it (as XLA's fusion-merger and cost analysis count a
 * parameter read only through slices), each distinct slice once: copies of one slice, which
 * duplicating fusion leaves and XLA's CSE of fused computations removes, read the same elements;
 * nothing when it is the buffer an in-place dynamic-update-slice root updates. */
static int64_t fused_param_read(const IrInstr *param, const IrInstr *op, const IrComputation *body) {
  int64_t full = ir_shape_bytes(&op->shape);
  if (!param) return full;
  if (body->root && body->root->op == IR_OP_DYNAMIC_UPDATE_SLICE && body->root->operands[0] == param &&
      param->nusers == 1)
    return 0;
  if (param->nusers == 0) return 0;
  int64_t taken = 0;
  for (int u = 0; u < param->nusers; u++) {
    const IrInstr *us = param->users[u];
    if ((us->op == IR_OP_SLICE || us->op == IR_OP_DYNAMIC_SLICE || us->op == IR_OP_GATHER) &&
        us->operands[0] == param) {
      bool other_slot = false;
      for (int o = 1; o < us->noperands; o++) other_slot = other_slot || us->operands[o] == param;
      if (other_slot) return full;
      bool copy = false;
      int budget = 4096;
      for (int q = 0; q < u && !copy; q++) copy = same_value(param->users[q], us, 0, &budget);
      if (!copy) taken += ir_shape_bytes(&us->shape);
    } else {
      return full;
    }
  }
  return taken < full ? taken : full;
}

double plan_time_us(const DeviceProfile *dev, double bytes, double flops) {
  double mem_us = dev->dram_gbps > 0 ? bytes / (dev->dram_gbps * 1e3) : 0;
  double flop_us = dev->peak_gflops > 0 ? flops / (dev->peak_gflops * 1e3) : 0;
  return (mem_us > flop_us ? mem_us : flop_us) + dev->launch_us;
}

static void cost(Builder *b, PlanKernel *k) {
  k->est_us = plan_time_us(b->dev, (double)k->bytes_read + (double)k->bytes_written, k->flops);
}

static void add_compute_kernel(Builder *b, IrInstr *i, KernelKind kind, int64_t launches) {
  PlanKernel *k = new_kernel(b, i, kind, launches);
  if (!k) return;
  Arena *a = &b->p->arena;
  IrComputation *body = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  /* members */
  if (body) {
    int n = 0;
    for (int j = 0; j < body->ninstrs; j++) n += is_member(body->instrs[j]);
    k->members = arena_alloc(a, sizeof(IrInstr *) * (size_t)(n ? n : 1));
    if (!k->members) {
      b->oom = true;
      return;
    }
    for (int j = 0; j < body->ninstrs; j++) {
      IrInstr *x = body->instrs[j];
      if (!is_member(x)) continue;
      k->members[k->nmembers++] = x;
      k->flops += plan_instr_flops(x);
    }
  } else {
    k->members = arena_alloc(a, sizeof(IrInstr *));
    if (!k->members) {
      b->oom = true;
      return;
    }
    k->members[k->nmembers++] = i;
    k->flops = plan_instr_flops(i);
  }
  /* inputs: distinct operands */
  k->inputs = arena_alloc(a, sizeof(IrInstr *) * (size_t)(i->noperands ? i->noperands : 1));
  if (!k->inputs) {
    b->oom = true;
    return;
  }
  for (int o = 0; o < i->noperands; o++) {
    IrInstr *op = i->operands[o];
    if (!op) continue;
    bool seen = false;
    for (int q = 0; q < k->ninputs && !seen; q++) seen = k->inputs[q] == op;
    if (!seen) k->inputs[k->ninputs++] = op;
  }
  plan_kernel_bytes(i, &k->bytes_read, &k->bytes_written);
  cost(b, k);
}

void plan_kernel_bytes(const IrInstr *i, int64_t *read, int64_t *written) {
  int64_t rd = 0;
  for (int o = 0; o < i->noperands; o++) {
    const IrInstr *op = i->operands[o];
    if (!op) continue;
    bool seen = false;
    for (int q = 0; q < o && !seen; q++) seen = i->operands[q] == op;
    if (!seen) rd += plan_operand_bytes_read(i, o);
  }
  *read = rd;
  *written = plan_bytes_written(i);
}

int64_t plan_operand_bytes_read(const IrInstr *i, int o) {
  const IrInstr *op = o >= 0 && o < i->noperands ? i->operands[o] : NULL;
  if (!op) return 0;
  IrComputation *body = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  int64_t rd = ir_shape_bytes(&op->shape);
  if (body) {
    const IrInstr *param = o < body->nparams ? body->params[o] : NULL;
    rd = fused_param_read(param, op, body);
  } else if ((i->op == IR_OP_SLICE || i->op == IR_OP_DYNAMIC_SLICE || i->op == IR_OP_GATHER) && o == 0) {
    int64_t out = ir_shape_bytes(&i->shape);
    rd = out < rd ? out : rd;
  } else if (i->op == IR_OP_DYNAMIC_UPDATE_SLICE && o == 0) {
    rd = 0; /* updated in place */
  }
  return rd;
}

int64_t plan_bytes_written(const IrInstr *i) {
  IrComputation *body = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  const IrInstr *root = body ? body->root : i;
  if (root && root->op == IR_OP_DYNAMIC_UPDATE_SLICE && root->noperands >= 2 && root->operands[1])
    return ir_shape_bytes(&root->operands[1]->shape);
  return ir_shape_bytes(&i->shape);
}

static PlanKernel *add_control_kernel(Builder *b, IrInstr *i, int64_t launches, int64_t bytes_read) {
  PlanKernel *k = new_kernel(b, i, KERNEL_CONTROL, launches);
  if (!k) return NULL;
  k->bytes_read = bytes_read;
  cost(b, k);
  return k;
}

static bool walk(Builder *b, IrComputation *c, int64_t mult, int depth);

static double range_cost(const KernelPlan *p, int from, int to) {
  double t = 0;
  for (int k = from; k < to; k++) t += (double)p->kernels[k].launches * p->kernels[k].est_us;
  return t;
}

static bool walk(Builder *b, IrComputation *c, int64_t mult, int depth) {
  if (depth > 64) return fx_error_set(b->err, NULL, 0, 0, "kernel plan: calls nested more than 64 deep");
  for (int j = 0; j < c->ninstrs && !b->oom; j++) {
    IrInstr *i = c->instrs[j];
    KernelKind kind;
    switch (launch_kind(i, &kind)) {
    case LAUNCH_NOTHING:
      break;
    case LAUNCH_KERNEL:
      add_compute_kernel(b, i, kind, mult);
      break;
    case LAUNCH_WHILE: {
      int64_t trips;
      bool for_loop = plan_while_for_loop(i, &trips);
      if (!for_loop) {
        trips = 1;
        b->p->trip_counts_known = false;
      }
      /* The body runs trips times. A for loop (known trip count: XLA's ForThunk, or WhileThunk
         given the trip count) never runs its condition and reads nothing back; a loop whose trip
         count is unknown (WhileThunk without one) runs the condition and its read-back once more
         than the body: the test that ends the loop. */
      int64_t n = sat_mul(mult, trips), ncond = for_loop ? 0 : sat_mul(mult, trips + 1);
      IrComputation *cond = ir_attr_comp(i, "condition"), *body = ir_attr_comp(i, "body");
      if (cond && !walk(b, cond, ncond, depth + 1)) return false;
      if (body && !walk(b, body, n, depth + 1)) return false;
      PlanKernel *k = add_control_kernel(b, i, ncond, for_loop ? 0 : 1);
      if (k) {
        k->trip_count = for_loop ? trips : -1;
        k->for_loop = for_loop;
      }
      break;
    }
    case LAUNCH_CALL: {
      IrComputation *callee = ir_attr_comp(i, "to_apply");
      if (callee && !walk(b, callee, mult, depth + 1)) return false;
      break;
    }
    case LAUNCH_CONDITIONAL: {
      add_control_kernel(b, i, mult, i->noperands && i->operands[0] ? ir_shape_bytes(&i->operands[0]->shape) : 0);
      IrComputation *branches[64];
      int nb = ir_called_computations(i, branches, 64);
      if (nb > 64) nb = 64;
      int starts[65];
      for (int k = 0; k < nb; k++) {
        starts[k] = b->p->nkernels;
        if (branches[k] && !walk(b, branches[k], mult, depth + 1)) return false;
      }
      starts[nb] = b->p->nkernels;
      int best = 0;
      for (int k = 1; k < nb; k++)
        if (range_cost(b->p, starts[k], starts[k + 1]) > range_cost(b->p, starts[best], starts[best + 1])) best = k;
      for (int k = 0; k < nb; k++)
        if (k != best)
          for (int q = starts[k]; q < starts[k + 1]; q++) b->p->kernels[q].launches = 0;
      break;
    }
    }
  }
  return true;
}

/* ---------- buffers ---------- */

/* Instruction -> position + 1 in its computation (ptrmap.h); -1 when not there. */
static bool posmap_init(PtrMap *m, const IrComputation *c) {
  memset(m, 0, sizeof *m);
  if (!ptrmap_reserve(m, (size_t)c->ninstrs)) return false;
  for (int j = 0; j < c->ninstrs; j++)
    if (!ptrmap_put(m, c->instrs[j], (void *)(uintptr_t)(j + 1))) return false;
  return true;
}

static int posmap_get(const PtrMap *m, const IrInstr *i) { return (int)(uintptr_t)ptrmap_get(m, i) - 1; }

/* Does user u pass the buffer it reads on, so that the buffer stays live as long as u's value?
 * Everything that is not a kernel does (tuple, get-tuple-element, bitcast, while, call, ...), and so
 * do library kernels (a collective on one device or an identity custom-call returns its operand). */
static bool passes_on(const IrInstr *u) {
  KernelKind kind;
  return launch_kind(u, &kind) != LAUNCH_KERNEL || kind == KERNEL_LIBRARY;
}

/* Extends buffer bf's live range over the users of v (v is the buffer's producer or a value that
 * passes it on); `element` >= 0 follows only get-tuple-elements of that index from the producer. */
static void extend_live(PlanBuffer *bf, const IrInstr *v, int element, const PtrMap *pm, int depth, int *budget) {
  if (v->is_root || v == bf->comp->root) bf->live_out = true;
  if (depth > 256 || --*budget < 0) {
    /* absurd chains or fans of forwarding ops: assume it lives to the end and reaches the result */
    bf->last_use = bf->comp->ninstrs;
    bf->live_out = true;
    return;
  }
  for (int u = 0; u < v->nusers; u++) {
    const IrInstr *us = v->users[u];
    int64_t idx;
    if (element >= 0 && us->op == IR_OP_GET_TUPLE_ELEMENT && ir_attr_int(us, "index", &idx) && idx != element)
      continue;
    int pos = posmap_get(pm, us);
    if (pos < 0) { /* a user elsewhere (not expected): keep it to the end and to the caller */
      bf->last_use = bf->comp->ninstrs;
      bf->live_out = true;
      continue;
    }
    if (pos > bf->last_use) bf->last_use = pos;
    if (passes_on(us)) extend_live(bf, us, -1, pm, depth + 1, budget);
  }
}

typedef struct {
  int64_t bytes;
  int occupant; /* buffer index now holding it; -1 when free */
  int last;     /* the buffer that held it last */
} Slot;

/* Buffers of one computation and their slots. */
static bool assign_buffers(KernelPlan *p, const IrComputation *c, bool loop_body, int *bcap, int *scap) {
  PtrMap pm;
  if (!posmap_init(&pm, c)) {
    ptrmap_free(&pm);
    return false;
  }
  int first = p->nbuffers;
  for (int j = 0; j < c->ninstrs; j++) {
    const IrInstr *i = c->instrs[j];
    KernelKind kind;
    if (launch_kind(i, &kind) != LAUNCH_KERNEL) continue;
    int nout = i->shape.type == IR_TUPLE ? i->shape.ntuple : 1;
    for (int o = 0; o < nout; o++) {
      if (arena_grow(&p->arena, (void **)&p->buffers, bcap, p->nbuffers + 1, sizeof(PlanBuffer))) {
        ptrmap_free(&pm);
        return false;
      }
      PlanBuffer *bf = &p->buffers[p->nbuffers++];
      memset(bf, 0, sizeof *bf);
      bf->producer = i;
      bf->output = i->shape.type == IR_TUPLE ? o : -1;
      bf->comp = c;
      bf->bytes = ir_shape_bytes(i->shape.type == IR_TUPLE ? &i->shape.tuple[o] : &i->shape);
      bf->def = bf->last_use = j;
      bf->reuses = bf->slot2 = -1;
      int budget = 100000; /* forwarding ops visited per buffer */
      extend_live(bf, i, bf->output, &pm, 0, &budget);
      p->buffer_bytes += bf->bytes;
    }
  }
  ptrmap_free(&pm);
  /* Slots, in definition order: a buffer takes the smallest free slot that is large enough. */
  int nb = p->nbuffers - first;
  Slot *slots = fx_calloc((size_t)(nb ? 2 * nb : 1), sizeof *slots);
  if (!slots) return false;
  int ns = 0;
  /* Occupied slots whose occupant can die, by its last reader (a min-heap), and free slots by
   * (bytes, index) (a sorted array): the same choices as scanning every slot for each buffer,
   * which made large computations quadratic. */
  /* A heap entry holds its occupant's last reader beside the slot: the sift compares it without
   * going through the slot and the buffer (two misses per comparison on large computations). */
  typedef struct {
    int dies, slot;
  } HeapEntry;
  HeapEntry *heap = fx_malloc(sizeof(HeapEntry) * (size_t)(nb ? 2 * nb : 1));
  int *freel = fx_malloc(sizeof(int) * (size_t)(nb ? 2 * nb : 1));
  if (!heap || !freel) {
    fx_free(heap);
    fx_free(freel);
    fx_free(slots);
    return false;
  }
  int nheap = 0, nfree = 0;
#define FREE_BEFORE(a, b) (slots[a].bytes < slots[b].bytes || (slots[a].bytes == slots[b].bytes && (a) < (b)))
  for (int q = first; q < p->nbuffers; q++) {
    PlanBuffer *bf = &p->buffers[q];
    /* free the slots whose occupant's last reader ran before this buffer's kernel */
    while (nheap > 0 && heap[0].dies < bf->def) {
      int s = heap[0].slot;
      slots[s].occupant = -1;
      heap[0] = heap[--nheap];
      for (int h = 0;;) { /* sift down */
        int l = 2 * h + 1, r = l + 1, m2 = h;
        if (l < nheap && heap[l].dies < heap[m2].dies) m2 = l;
        if (r < nheap && heap[r].dies < heap[m2].dies) m2 = r;
        if (m2 == h) break;
        HeapEntry t = heap[h];
        heap[h] = heap[m2];
        heap[m2] = t;
        h = m2;
      }
      int lo = 0, hi = nfree; /* insert s into the free list in (bytes, index) order */
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (FREE_BEFORE(freel[mid], s)) lo = mid + 1;
        else hi = mid;
      }
      memmove(&freel[lo + 1], &freel[lo], sizeof(int) * (size_t)(nfree - lo));
      freel[lo] = s;
      nfree++;
    }
    int best = -1;
    if (!bf->live_out) { /* the first free slot large enough: the smallest, the lowest index among equals */
      int lo = 0, hi = nfree;
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (slots[freel[mid]].bytes < bf->bytes) lo = mid + 1;
        else hi = mid;
      }
      if (lo < nfree) {
        best = freel[lo];
        memmove(&freel[lo], &freel[lo + 1], sizeof(int) * (size_t)(nfree - lo - 1));
        nfree--;
      }
    }
    if (best >= 0) {
      bf->reuses = slots[best].last;
    } else {
      best = ns++;
      slots[best].bytes = bf->bytes;
    }
    slots[best].occupant = slots[best].last = q;
    if (!bf->live_out) { /* it can die: into the heap */
      int h = nheap++;
      heap[h] = (HeapEntry){bf->last_use, best};
      while (h > 0 && heap[(h - 1) / 2].dies > heap[h].dies) {
        HeapEntry t = heap[h];
        heap[h] = heap[(h - 1) / 2];
        heap[(h - 1) / 2] = t;
        h = (h - 1) / 2;
      }
    }
    bf->slot = p->nslots + best;
    if (bf->live_out && loop_body) { /* a loop's result (the next state, the go-on flag): a second slot */
      p->buffer_bytes += bf->bytes; /* without reuse too, the state read and the state written coexist */
      int second = ns++;
      slots[second].bytes = bf->bytes;
      slots[second].occupant = slots[second].last = q;
      bf->slot2 = p->nslots + second;
    }
  }
#undef FREE_BEFORE
  fx_free(heap);
  fx_free(freel);
  if (ns && arena_grow(&p->arena, (void **)&p->slot_bytes, scap, p->nslots + ns, sizeof(int64_t))) {
    fx_free(slots);
    return false;
  }
  for (int s = 0; s < ns; s++) {
    p->slot_bytes[p->nslots + s] = slots[s].bytes;
    p->slot_total += slots[s].bytes;
  }
  p->nslots += ns;
  fx_free(slots);
  return true;
}

/* Assigns the buffers of every computation that has kernels in the plan, each once. */
static bool assign_all_buffers(KernelPlan *p) {
  int bcap = 0, scap = 0;
  const IrComputation **done = fx_calloc((size_t)(p->nkernels ? p->nkernels : 1), sizeof *done);
  if (!done) return false;
  int ndone = 0;
  bool ok = true;
  for (int k = 0; ok && k < p->nkernels; k++) {
    const IrComputation *c = p->kernels[k].comp;
    if (!c || p->kernels[k].kind == KERNEL_CONTROL) continue;
    bool seen = false;
    for (int q = 0; q < ndone && !seen; q++) seen = done[q] == c;
    if (seen) continue;
    done[ndone++] = c;
    bool loop_body = false;
    for (int w = 0; w < p->nkernels && !loop_body; w++)
      loop_body = p->kernels[w].kind == KERNEL_CONTROL && p->kernels[w].instr->op == IR_OP_WHILE &&
                  (ir_attr_comp(p->kernels[w].instr, "body") == c || ir_attr_comp(p->kernels[w].instr, "condition") == c);
    ok = assign_buffers(p, c, loop_body, &bcap, &scap);
  }
  fx_free(done);
  return ok;
}

const PlanBuffer *plan_buffer_of(const KernelPlan *p, const IrInstr *i, int output) {
  if (!p || !i) return NULL;
  for (int q = 0; q < p->nbuffers; q++)
    if (p->buffers[q].producer == i && p->buffers[q].output == output) return &p->buffers[q];
  return NULL;
}

KernelPlan *plan_build_kernels(const IrModule *m, const DeviceProfile *dev, FxError *err) {
  if (!m || !m->entry) {
    fx_error_set(err, NULL, 0, 0, "kernel plan: the module has no entry computation");
    return NULL;
  }
  KernelPlan *p = fx_calloc(1, sizeof *p);
  if (!p) {
    fx_error_set(err, NULL, 0, 0, "kernel plan: out of memory");
    return NULL;
  }
  arena_init(&p->arena);
  p->trip_counts_known = true;
  Builder b = {p, dev ? dev : device_default(), 0, err, false};
  bool ok = walk(&b, m->entry, 1, 0);
  if (ok && b.oom) ok = fx_error_set(err, NULL, 0, 0, "kernel plan: out of memory");
  if (!ok) {
    plan_free(p);
    return NULL;
  }
  for (int k = 0; k < p->nkernels; k++) {
    const PlanKernel *kn = &p->kernels[k];
    p->est_us += (double)kn->launches * kn->est_us;
    if (kn->kind == KERNEL_CONTROL) continue; /* a read-back, not a kernel: priced, not counted */
    p->ncompute++;
    p->launches = sat_add(p->launches, kn->launches);
    p->bytes_read = sat_bytes(p->bytes_read, sat_mul(kn->bytes_read, kn->launches));
    p->bytes_written = sat_bytes(p->bytes_written, sat_mul(kn->bytes_written, kn->launches));
  }
  return p;
}

bool plan_assign_buffers(KernelPlan *p, FxError *err) {
  if (p->buffers_assigned) return true;
  if (!assign_all_buffers(p)) {
    /* what a half-done assignment left is not a result */
    p->buffers = NULL;
    p->nbuffers = p->nslots = 0;
    p->slot_bytes = NULL;
    p->buffer_bytes = p->slot_total = 0;
    return fx_error_set(err, NULL, 0, 0, "kernel plan: out of memory");
  }
  p->buffers_assigned = true;
  return true;
}

KernelPlan *plan_build(const IrModule *m, const DeviceProfile *dev, FxError *err) {
  KernelPlan *p = plan_build_kernels(m, dev, err);
  if (p && !plan_assign_buffers(p, err)) {
    plan_free(p);
    return NULL;
  }
  return p;
}

void plan_free(KernelPlan *p) {
  if (!p) return;
  arena_free(&p->arena);
  fx_free(p);
}

const PlanKernel *plan_kernel_of(const KernelPlan *p, const IrInstr *i) {
  if (!p || !i) return NULL;
  for (int k = 0; k < p->nkernels; k++) {
    const PlanKernel *kn = &p->kernels[k];
    if (kn->instr == i) return kn;
    for (int j = 0; j < kn->nmembers; j++)
      if (kn->members[j] == i) return kn;
  }
  return NULL;
}
