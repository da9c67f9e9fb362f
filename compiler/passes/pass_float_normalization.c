/* pass_float_normalization.c — float-normalization-bf16: a bf16 operation the GPU does not compute
 * in bf16 computes in f32 (XLA's FloatNormalization with GpuFloatSupport for BF16, which XLA:GPU
 * runs after layout assignment, before fusion), for the priority pipeline.
 *
 * What the GPU computes in bf16 (GpuFloatSupport::IsSupported, by compute capability): data
 * movement (broadcast, concatenate, copy, dynamic-slice, dynamic-update-slice, gather, pad,
 * reshape, reverse, scatter, select, slice, transpose, bitcast), convert, bitcast-convert,
 * compare, reduce-precision, xor, dot and convolution (library kernels), exp and log; abs,
 * maximum, minimum and negate from Ampere (sm_80) on; add, multiply and subtract from Hopper
 * (sm_90) on; a reduce or a sort when everything its computation does is. Anything else with a
 * bf16 operand or result (divide, sqrt, rsqrt, tanh, power, ...; add on an A100) reads its bf16
 * operands through converts to f32, computes in f32 and converts its result back to bf16
 * (HandleInstruction: unsupported operands, then the output, ChangeOutputTypeThenInsertConvertBack);
 * a user that converted the result to f32 anyway reads the f32 result directly. A reduce or sort
 * whose computation is not supported also gets a copy of that computation working in f32
 * (ConvertCalledComputations). Every computation is visited, the fused ones too (the Triton
 * fusions softmax-rewriter-triton made). XLA's mixed-precision rule for an instruction without a
 * called computation whose operands mix bf16 and f32 (its "can use low precision" path) is not
 * modelled: HLO from JAX has none before fusion (dot and convolution, which may mix, are
 * supported as they are).
 *
 * The converts this leaves back to back (bf16 -> f32 -> bf16, f32 -> bf16 -> f32) are removed
 * by simplify-fp-conversions, which XLA runs right after. On a device that is not a CUDA GPU
 * (no sm_ architecture) nothing changes. Each normalized instruction is reported: "divide.5
 * computes in f32: the GPU (sm_90) has no bf16 divide; its operands and result are converted". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

typedef struct {
  int sm;            /* compute capability x 10: 90 for sm_90 */
  PassContext *cx;
  IrModule *m;
  int changed;
} Norm;

static bool is_supported(const IrInstr *h, int sm, int depth);

/* Whether everything computation c does (its parameters aside) is supported. */
static bool computation_supported(const IrComputation *c, int sm, int depth) {
  if (!c || depth > 8) return false;
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->op != IR_OP_PARAMETER && !is_supported(c->instrs[k], sm, depth + 1)) return false;
  return true;
}

/* GpuFloatSupport::IsSupported for bf16. */
static bool is_supported(const IrInstr *h, int sm, int depth) {
  switch (h->op) {
  case IR_OP_ALL_REDUCE:
  case IR_OP_REDUCE_SCATTER:
  case IR_OP_DOT:
  case IR_OP_CONVOLUTION:
  case IR_OP_ALL_GATHER:
  case IR_OP_ALL_TO_ALL:
  case IR_OP_BROADCAST:
  case IR_OP_COLLECTIVE_PERMUTE:
  case IR_OP_CONCATENATE:
  case IR_OP_COPY:
  case IR_OP_CONSTANT:
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_DYNAMIC_UPDATE_SLICE:
  case IR_OP_GATHER:
  case IR_OP_PAD:
  case IR_OP_RESHAPE:
  case IR_OP_REVERSE:
  case IR_OP_SCATTER:
  case IR_OP_SELECT:
  case IR_OP_SELECT_AND_SCATTER:
  case IR_OP_SLICE:
  case IR_OP_TRANSPOSE:
  case IR_OP_BITCAST:
  case IR_OP_BITCAST_CONVERT:
  case IR_OP_CONVERT:
  case IR_OP_COMPARE:
  case IR_OP_REDUCE_PRECISION:
  case IR_OP_XOR:
  case IR_OP_EXP:
  case IR_OP_LOG:
    return true;
  case IR_OP_ABS:
  case IR_OP_MAXIMUM:
  case IR_OP_MINIMUM:
  case IR_OP_NEGATE:
    return sm >= 80;
  case IR_OP_ADD:
  case IR_OP_MULTIPLY:
  case IR_OP_SUBTRACT:
    return sm >= 90;
  case IR_OP_REDUCE:
  case IR_OP_SORT:
    return computation_supported(ir_attr_comp(h, "to_apply"), sm, depth);
  default:
    return false;
  }
}

/* FloatSupport's own answers, before the GPU's (SupportsLowPrecisionOperand / Output / Mixed). */
static bool passes_precision_through(IrOpcode op) {
  return op == IR_OP_CALL || op == IR_OP_CONDITIONAL || op == IR_OP_CUSTOM_CALL || op == IR_OP_DOMAIN ||
         op == IR_OP_GET_TUPLE_ELEMENT || op == IR_OP_TUPLE || op == IR_OP_WHILE || op == IR_OP_OPT_BARRIER;
}

static bool low_operand_ok(const IrInstr *h, int i, int sm) {
  if (passes_precision_through(h->op)) return true;
  if (h->op == IR_OP_CONVERT && h->operands[i]->shape.type == IR_BF16) return true;
  return is_supported(h, sm, 0);
}

static bool low_output_ok(const IrInstr *h, int sm) {
  if (passes_precision_through(h->op)) return true;
  if (h->op == IR_OP_CONVERT && h->shape.type == IR_BF16) return true;
  return is_supported(h, sm, 0);
}

static bool mixed_ok(const IrInstr *h) {
  if (passes_precision_through(h->op) || h->op == IR_OP_CONVERT) return true;
  if (h->op == IR_OP_DOT && h->noperands == 2) {
    IrType a = h->operands[0]->shape.type, b = h->operands[1]->shape.type;
    return h->shape.type == IR_F32 && a == b && (a == IR_BF16 || a == IR_F16);
  }
  return false;
}

/* How many leaves of shape s have type t. */
static int count_type(const IrShape *s, IrType t) {
  if (s->type != IR_TUPLE) return s->type == t;
  int n = 0;
  for (int k = 0; k < s->ntuple; k++) n += count_type(&s->tuple[k], t);
  return n;
}

/* The instruction after h in its computation (NULL when h is last). */
static IrInstr *next_of(const IrInstr *h) {
  const IrComputation *c = h->parent;
  int k = ir_computation_index(c, h);
  return k >= 0 && k + 1 < c->ninstrs ? c->instrs[k + 1] : NULL;
}

static IrInstr *convert_of(IrInstr *x, IrType t, IrInstr *before) {
  IrShape s = x->shape;
  s.type = t;
  return ir_instr_new_before(x->parent, before, IR_OP_CONVERT, &s, &x, 1, "convert");
}

/* InsertConvertBeforeOperand, bf16 -> f32: h reads operand i through a convert to f32. */
static bool convert_operand(IrInstr *h, int i) {
  IrInstr *x = h->operands[i];
  if (x->shape.type != IR_BF16) return true; /* tuples of bf16: not modelled */
  IrInstr *c = convert_of(x, IR_F32, h);
  if (!c) return false;
  ir_set_operand(h, i, c);
  return true;
}

/* ChangeOutputTypeThenInsertConvertBack, bf16 -> f32: h computes in f32; its users read a
 * convert back to bf16, but a user that converted it to f32 is h itself now (excess precision). */
static bool convert_output(IrInstr *h) {
  if (h->shape.type != IR_BF16) return true;
  IrInstr *after = next_of(h);
  h->shape.type = IR_F32;
  IrInstr *back = convert_of(h, IR_BF16, after);
  if (!back) return false;
  /* back was made a user of h; move every other user. */
  IrInstr **users = fx_malloc(sizeof(IrInstr *) * (size_t)(h->nusers ? h->nusers : 1));
  if (!users) return false;
  int n = 0;
  for (int u = 0; u < h->nusers; u++)
    if (h->users[u] != back) users[n++] = h->users[u];
  for (int u = 0; u < n; u++) {
    IrInstr *user = users[u];
    if (user->op == IR_OP_CONVERT && user->shape.type == IR_F32) {
      ir_replace_all_uses(user, h);
      simp_drop_dead(user);
      continue;
    }
    for (int k = 0; k < user->noperands; k++)
      if (user->operands[k] == h) ir_set_operand(user, k, back);
  }
  fx_free(users);
  if (h->parent->root == h) ir_set_root(h->parent, back);
  return true;
}

/* ConvertCalledComputations: h's computation with bf16 parameters or result works in f32. */
static bool convert_called(Norm *n, IrInstr *h) {
  IrComputation *c = ir_attr_comp(h, "to_apply");
  if (!c || !c->root) return true;
  bool low = count_type(&c->root->shape, IR_BF16) > 0;
  for (int p = 0; p < c->nparams; p++) low = low || (c->params[p] && count_type(&c->params[p]->shape, IR_BF16) > 0);
  if (!low) return true;
  IrComputation *f = simp_clone_computation(n->m, c);
  if (!f) return false;
  ir_attr_set_comp(h, "to_apply", f);
  IrInstr *root = f->root;
  if (root->shape.type == IR_BF16) {
    IrInstr *r = convert_of(root, IR_F32, NULL);
    if (!r) return false;
    ir_set_root(f, r);
  }
  for (int p = 0; p < f->nparams; p++)
    if (f->params[p] && !convert_output(f->params[p])) return false;
  return true;
}

static void report(Norm *n, const IrInstr *h, const char *what) {
  char detail[400];
  snprintf(detail, sizeof detail, "%s computes in f32: the GPU (sm_%d) has no bf16 %s; %s", h->name, n->sm,
           ir_op_name(h->op), what);
  PassDecision d = {.pass = n->cx->pass, .stage = n->cx->stage, .action = "rewrite", .producer = h->name,
                    .result = h->name, .accepted = true};
  pass_emit(n->cx->sink, &d, "%s", detail);
}

/* FloatNormalizationVisitor::DefaultAction and HandleInstruction. Returns false when out of memory. */
static bool normalize(Norm *n, IrInstr *h) {
  switch (h->op) {
  case IR_OP_TUPLE:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_CONSTANT:
  case IR_OP_DOMAIN:
  case IR_OP_PARAMETER:
  case IR_OP_FUSION:
  case IR_OP_CONVERT:
  case IR_OP_CALL:
  case IR_OP_CUSTOM_CALL:
  case IR_OP_WHILE:
  case IR_OP_CONDITIONAL:
  case IR_OP_BITCAST_CONVERT:
    return true;
  default:
    break;
  }
  if (simp_has_side_effect(h) || h->shape.type == IR_TUPLE) return true; /* several outputs: not modelled */
  int low = count_type(&h->shape, IR_BF16), high = count_type(&h->shape, IR_F32);
  for (int i = 0; i < h->noperands; i++) {
    low += count_type(&h->operands[i]->shape, IR_BF16);
    high += count_type(&h->operands[i]->shape, IR_F32);
  }
  IrComputation *called = ir_attr_comp(h, "to_apply");
  if (called && called->root) {
    low += count_type(&called->root->shape, IR_BF16);
    high += count_type(&called->root->shape, IR_F32);
    for (int p = 0; p < called->nparams; p++)
      if (called->params[p]) {
        low += count_type(&called->params[p]->shape, IR_BF16);
        high += count_type(&called->params[p]->shape, IR_F32);
      }
  }
  if (low == 0) return true;
  bool did = false;
  for (int i = 0; i < h->noperands; i++) {
    int l = count_type(&h->operands[i]->shape, IR_BF16);
    if (l > 0 && !low_operand_ok(h, i, n->sm)) {
      if (!convert_operand(h, i)) return false;
      low -= l;
      high += l;
      did = true;
    }
  }
  if (!low_output_ok(h, n->sm) && h->shape.type == IR_BF16) {
    if (!convert_output(h)) return false;
    low--;
    high++;
    did = true;
  }
  if (!mixed_ok(h) && low > 0 && high > 0) {
    /* Everything in f32, the called computation too. */
    if (!convert_output(h)) return false;
    for (int i = 0; i < h->noperands; i++)
      if (!convert_operand(h, i)) return false;
    if (!convert_called(n, h)) return false;
    did = true;
  }
  if (did) {
    report(n, h, called ? "its operands, its result and its computation are converted" : "its operands and result are converted");
    n->changed++;
  }
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  const char *arch = cx->device ? cx->device->arch : "";
  int sm = strncmp(arch, "sm_", 3) == 0 ? atoi(arch + 3) : 0;
  *changed = false;
  if (sm <= 0) return true;
  Norm n = {sm, cx, m, 0};
  /* The computations as the pass starts (XLA's post order): the f32 copies of computations made
   * on the way are not visited. */
  int nc = m->ncomps;
  IrComputation **comps = fx_malloc(sizeof(IrComputation *) * (size_t)(nc ? nc : 1));
  if (!comps) return fx_error_set(cx->err, NULL, 0, 0, "float-normalization-bf16: out of memory");
  memcpy(comps, m->comps, sizeof(IrComputation *) * (size_t)nc);
  for (int c = 0; c < nc && !pass_interrupted(cx); c++) {
    IrComputation *comp = comps[c];
    /* The instructions as the computation's visit starts (converts added on the way are not). */
    int ni = comp->ninstrs;
    IrInstr **instrs = fx_malloc(sizeof(IrInstr *) * (size_t)(ni ? ni : 1));
    if (!instrs) {
      fx_free(comps);
      return fx_error_set(cx->err, NULL, 0, 0, "float-normalization-bf16: out of memory");
    }
    memcpy(instrs, comp->instrs, sizeof(IrInstr *) * (size_t)ni);
    for (int k = 0; k < ni; k++) {
      if (instrs[k]->dead) continue;
      if (!normalize(&n, instrs[k])) {
        fx_free(instrs);
        fx_free(comps);
        return fx_error_set(cx->err, NULL, 0, 0, "float-normalization-bf16: out of memory");
      }
    }
    fx_free(instrs);
  }
  fx_free(comps);
  if (n.changed) ir_module_remove_unreachable(m);
  *changed = n.changed > 0;
  return true;
}

const Pass pass_float_normalization = {
    "float-normalization-bf16",
    "a bf16 operation the GPU does not compute in bf16 (divide, sqrt, ...; add before Hopper) computes in f32 "
    "between converts",
    run};
