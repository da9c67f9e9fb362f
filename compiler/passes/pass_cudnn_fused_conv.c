/* pass_cudnn_fused_conv.c — XLA:GPU's CudnnFusedConvRewriter (cudnn_fused_conv_rewriter.cc, in the
 * conv_canonicalization pipeline after conv-rewriter): the elementwise work cuDNN can do inside
 * its convolution call is folded into it, so it costs no kernel of its own. cuDNN's fused forward
 * convolution (__cudnn$convBiasActivationForward) computes
 *
 *   activation(conv_result_scale * conv(input, filter) + side_input_scale * side_input + bias)
 *
 * with the two scales, the activation and LeakyReLU's slope in the call's backend_config, the bias
 * (one value per output feature) as operand 2 and the side input (the result's shape) as operand
 * 3. The rewrites, in XLA's order ("inside out", starting with what is closest to the convolution):
 *
 *   FuseConvAlpha        multiply(conv, broadcast(scalar constant)) -> conv_result_scale
 *   FuseBiasOrSideInput  add(conv, broadcast(b) along the output features) -> bias b
 *                        add(conv, anything else) -> side input (twice: a bias and a side input)
 *   FuseSideInputAlpha   a side input multiply(s, broadcast(scalar constant)) -> side_input_scale
 *   FuseRelu             maximum(conv, broadcast(0)) -> activation kRelu
 *
 * then the bias, side input and ReLU rewrites once more. Each needs the convolution's result to
 * have that one reader (WithOneUse), the convolution not to be depthwise (IsConvDepthwise: the
 * fused cuDNN kernels are slower for those, so XLA leaves them a plain __cudnn$convForward), no
 * activation yet (bias and side input are added before it), and a scale that f32 holds exactly
 * (IsLosslesslyConvertibleTo). A plain __cudnn$convForward becomes a
 * __cudnn$convBiasActivationForward with a zero bias first (EnsureIsConvBiasActivation).
 *
 * Not done, as in XLA's default configuration: ELU, ReLU6 and LeakyReLU need cuDNN's runtime
 * fusion (xla_gpu_use_runtime_fusion, off by default); the s8 and f16 conversions
 * (FuseConvertToS8, FuseConvertToF16) and FP8 graph convolutions are not modelled.
 *
 * XLA's simplifier has already turned a bias broadcast through size-1 reshapes
 * (broadcast(reshape(b)), as JAX writes `x + b[None, None, None, :]`) into broadcast(b) along the
 * feature dimension; fxplain's simplifier leaves those chains, so the bias match looks through
 * reshapes that only add or remove dimensions of size 1 (and broadcasts that only relabel). */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

typedef struct {
  PassContext *cx;
  IrComputation *comp;
  bool changed;
} Fuser;

/* ---------- matching ---------- */

static bool is_conv_call(const IrInstr *i) {
  PlanCustomCall c = plan_custom_call(i);
  return c == PLAN_CC_CUDNN_CONV || c == PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION;
}

/* IsConvDepthwise: feature groups, as many as input features. */
static bool is_depthwise(const IrInstr *conv) {
  int64_t fgc = 1;
  ir_attr_int(conv, "feature_group_count", &fgc);
  IrConvDims cd;
  if (fgc == 1 || !ir_conv_dims(conv, &cd, NULL, 0)) return false;
  return conv->operands[0]->shape.dims[cd.in_feature] == fgc;
}

/* gte(conv, 0) where conv is a cuDNN convolution call read only by that gte, and the gte has one
 * reader: the convolution whose result x is, or NULL. */
static IrInstr *conv_of(const IrInstr *x) {
  if (x->op != IR_OP_GET_TUPLE_ELEMENT || x->nusers != 1 || x->noperands != 1) return NULL;
  int64_t index;
  if (!ir_attr_int(x, "index", &index) || index != 0) return NULL;
  IrInstr *conv = x->operands[0];
  if (!is_conv_call(conv) || conv->nusers != 1 || is_depthwise(conv)) return NULL;
  return conv;
}

/* ConstantEffectiveScalar under a broadcast: its value. */
static bool broadcast_scalar(const IrInstr *i, double *v) {
  if (i->op != IR_OP_BROADCAST || i->noperands != 1) return false;
  const IrInstr *c = i->operands[0];
  while (c->op == IR_OP_RESHAPE || c->op == IR_OP_BITCAST) c = c->operands[0];
  if (c->op != IR_OP_CONSTANT || ir_shape_elements(&c->shape) != 1 || !c->literal || !c->literal->values) return false;
  *v = c->literal->values[0];
  return true;
}

/* Whether a value of type `from` keeps every value of type `to` exactly (CastPreservesValues for
 * the float types a convolution's operands have). */
static bool widens(IrType from, IrType to) {
  if (from == to) return true;
  switch (to) {
  case IR_F64: return from == IR_F32 || from == IR_F16 || from == IR_BF16;
  case IR_F32: return from == IR_F16 || from == IR_BF16;
  default: return false;
  }
}

/* IsLosslesslyConvertibleTo: instr's values survive conversion to ty. */
static bool lossless(const IrInstr *i, IrType ty) {
  if (i->shape.type == ty) return true;
  if (i->op == IR_OP_CONVERT && i->noperands == 1) return i->operands[0]->shape.type == ty && widens(ty, i->shape.type);
  if (i->op == IR_OP_CONSTANT && i->literal && i->literal->values) {
    for (int64_t k = 0; k < i->literal->count; k++) {
      double v = i->literal->values[k];
      float f = (float)v;
      if (ty == IR_F32 && (double)f != v) return false;
      if (ty != IR_F32 && ty != IR_F64) return false;
    }
    return true;
  }
  if ((i->op == IR_OP_BROADCAST || i->op == IR_OP_RESHAPE || i->op == IR_OP_TRANSPOSE || i->op == IR_OP_BITCAST) &&
      i->noperands == 1)
    return lossless(i->operands[0], ty);
  return false;
}

/* The alpha a scale must fit: f32, or f64 for an f64 convolution. */
static IrType alpha_type(IrType conv_ty) { return conv_ty == IR_F64 ? IR_F64 : IR_F32; }

static bool scalar_fits(double v, IrType ty) { return ty == IR_F64 || (double)(float)v == v; }

/* Whether i only adds or removes dimensions of size 1: its non-unit dimensions are its operand's,
 * in order. */
static bool unit_reshape(const IrInstr *i) {
  if ((i->op != IR_OP_RESHAPE && i->op != IR_OP_BITCAST) || i->noperands != 1) return false;
  const IrShape *a = &i->shape, *b = &i->operands[0]->shape;
  int x = 0, y = 0;
  for (;;) {
    while (x < a->rank && a->dims[x] == 1) x++;
    while (y < b->rank && b->dims[y] == 1) y++;
    if (x == a->rank || y == b->rank) return x == a->rank && y == b->rank;
    if (a->dims[x++] != b->dims[y++]) return false;
  }
}

/* A broadcast that only relabels (its dimensions are 0..rank-1 and it adds none). */
static bool identity_broadcast(const IrInstr *i) {
  if (i->op != IR_OP_BROADCAST || i->noperands != 1 || i->operands[0]->shape.rank != i->shape.rank) return false;
  int64_t d[IR_MAX_RANK];
  int n = ir_attr_dims(i, "dimensions", d, IR_MAX_RANK);
  if (n != i->shape.rank) return false;
  for (int k = 0; k < n; k++)
    if (d[k] != k || i->shape.dims[k] != i->operands[0]->shape.dims[k]) return false;
  return true;
}

/* When addend is a broadcast of one value per output feature (dimension `feature` of the
 * result), the value holding them (looked through size-1 reshapes and relabelling broadcasts):
 * XLA's addend_may_be_rank1_bias. NULL otherwise. */
static IrInstr *rank1_bias(IrInstr *addend, int feature) {
  if (addend->op != IR_OP_BROADCAST || addend->noperands != 1) return NULL;
  int64_t d[IR_MAX_RANK];
  IrInstr *b = addend->operands[0];
  int n = ir_attr_dims(addend, "dimensions", d, IR_MAX_RANK);
  if (n != b->shape.rank) return NULL;
  int on_feature = 0;
  for (int k = 0; k < n; k++) {
    if (b->shape.dims[k] == 1) continue;
    if (d[k] != feature) return NULL;
    on_feature++;
  }
  if (on_feature > 1 || ir_shape_elements(&b->shape) != addend->shape.dims[feature]) return NULL;
  while (b->shape.rank != 1 && (unit_reshape(b) || identity_broadcast(b))) b = b->operands[0];
  return b;
}

/* ---------- editing the call ---------- */

static IrInstr *add_instr(Fuser *f, IrInstr *before, IrOpcode op, const IrShape *shape, IrInstr **ops, int n,
                          const char *base) {
  return ir_instr_new_before(f->comp, before, op, shape, ops, n, ir_module_series_name(f->comp->module, base, false));
}

/* A copy of conv with operands ops[0..n) (same attributes), named from the fused series; conv's
 * one reader (its gte) reads the copy. */
static IrInstr *reoperand(Fuser *f, IrInstr *conv, IrInstr **ops, int n, const char *config) {
  IrInstr *call = add_instr(f, conv, IR_OP_CUSTOM_CALL, &conv->shape, ops, n, "cudnn-conv-bias-activation");
  if (!call) return NULL;
  for (int k = 0; k < conv->nattrs; k++)
    if (conv->attrs[k].kind == IR_ATTR_TEXT) ir_attr_set_text(call, conv->attrs[k].key, conv->attrs[k].text);
  ir_attr_set_text(call, "custom_call_target", "\"__cudnn$convBiasActivationForward\"");
  if (config) ir_attr_set_text(call, "backend_config", config);
  call->loc = conv->loc;
  simp_replace(conv, call);
  return call;
}

/* EnsureIsConvBiasActivation: a plain forward convolution gets a zero bias (one per output
 * feature) and becomes the fused call. Returns the fused call, or NULL when out of memory. */
static IrInstr *ensure_bias_activation(Fuser *f, IrInstr *conv) {
  if (plan_custom_call(conv) == PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION) return conv;
  IrConvDims cd;
  if (!ir_conv_dims(conv, &cd, NULL, 0)) return NULL;
  const IrShape *rs = &conv->shape.tuple[0];
  IrType bias_ty = ir_type_is_float(rs->type) ? rs->type : IR_F32;
  IrShape scalar = ir_shape_scalar(bias_ty);
  IrInstr *zero = add_instr(f, conv, IR_OP_CONSTANT, &scalar, NULL, 0, "constant");
  if (!zero) return NULL;
  double z = 0;
  zero->literal = ir_literal_new(&f->comp->module->arena, &z, 1, bias_ty, &scalar);
  if (!zero->literal) return NULL;
  int64_t features = rs->dims[cd.out_feature];
  IrShape bshape = ir_shape_array(&f->comp->module->arena, bias_ty, 1, &features);
  IrInstr *bias = add_instr(f, conv, IR_OP_BROADCAST, &bshape, &zero, 1, "broadcast");
  if (!bias) return NULL;
  ir_attr_set_text(bias, "dimensions", "{}");
  IrInstr *ops[3] = {conv->operands[0], conv->operands[1], bias};
  return reoperand(f, conv, ops, 3, NULL);
}

static void set_config(IrInstr *conv, const PlanConvConfig *c) {
  char text[320];
  plan_conv_config_format(c, text, sizeof text);
  ir_attr_set_text(conv, "backend_config", text);
}

static void report(Fuser *f, const char *producer, const IrInstr *conv, const char *fmt_detail) {
  PassDecision d = {.pass = f->cx->pass, .stage = f->cx->stage, .action = "fuse", .producer = producer,
                    .consumer = conv->name, .result = conv->name, .accepted = true};
  pass_emit(f->cx->sink, &d, "%s", fmt_detail);
  f->changed = true;
}

/* The convolution and the other operand of a binary instruction one of whose operands is a fused
 * convolution's result (conv_of); NULL when neither is. */
static IrInstr *conv_operand(IrInstr *i, IrInstr **gte, IrInstr **other) {
  if (i->noperands != 2) return NULL;
  for (int k = 0; k < 2; k++) {
    IrInstr *conv = conv_of(i->operands[k]);
    if (conv) {
      *gte = i->operands[k];
      *other = i->operands[1 - k];
      return conv;
    }
  }
  return NULL;
}

/* ---------- the rewrites ---------- */

/* FuseConvAlpha: alpha * conv -> conv_result_scale = alpha. */
static bool fuse_alpha(Fuser *f, IrInstr *i) {
  IrInstr *gte, *other, *conv;
  double alpha;
  if (i->op != IR_OP_MULTIPLY || !(conv = conv_operand(i, &gte, &other)) || !broadcast_scalar(other, &alpha))
    return true;
  IrType aty = alpha_type(gte->shape.type);
  PlanConvConfig c;
  if (!lossless(other, aty) || !scalar_fits(alpha, aty) || !plan_conv_config(conv, &c) || c.conv_result_scale != 1)
    return true;
  char name[256], msg[600];
  snprintf(name, sizeof name, "%s", i->name);
  if (!(conv = ensure_bias_activation(f, conv))) return false;
  plan_conv_config(conv, &c);
  c.conv_result_scale = alpha;
  set_config(conv, &c);
  simp_replace(i, gte);
  snprintf(msg, sizeof msg, "%s scales the convolution's result by %g: cuDNN does it inside %s (conv_result_scale), "
           "so the multiply costs no kernel (FuseConvAlpha)", name, alpha, conv->name);
  report(f, name, conv, msg);
  return true;
}

/* FuseBiasOrSideInput: conv + b -> the bias operand; conv + x -> the side input. */
static bool fuse_bias(Fuser *f, IrInstr *i) {
  IrInstr *gte, *addend, *conv;
  if (i->op != IR_OP_ADD || !(conv = conv_operand(i, &gte, &addend))) return true;
  PlanConvConfig c;
  IrConvDims cd;
  if (!plan_conv_config(conv, &c) || strcmp(c.activation, "kNone") != 0 || !ir_conv_dims(conv, &cd, NULL, 0))
    return true;
  double z;
  bool can_bias = conv->noperands < 3 || (broadcast_scalar(conv->operands[2], &z) && z == 0);
  bool can_side = conv->noperands < 4;
  IrType conv_ty = gte->shape.type;
  IrType bias_ty = ir_type_is_float(conv_ty) ? conv_ty : IR_F32;
  IrInstr *b1 = rank1_bias(addend, cd.out_feature);
  double scalar_bias;
  bool rank1 = b1 && lossless(addend, bias_ty);
  bool rank0 = !rank1 && broadcast_scalar(addend, &scalar_bias) && lossless(addend, bias_ty);
  bool as_bias = can_bias && (rank1 || rank0);
  if (!as_bias && !can_side) return true; /* it has a bias and a side input already */
  char name[256], aname[256], msg[800];
  snprintf(name, sizeof name, "%s", i->name);
  snprintf(aname, sizeof aname, "%s", addend->name);
  if (!(conv = ensure_bias_activation(f, conv))) return false;
  plan_conv_config(conv, &c);
  int64_t features = gte->shape.dims[cd.out_feature];
  IrInstr *ops[4] = {conv->operands[0], conv->operands[1], conv->operands[2], NULL};
  int nops = conv->noperands;
  if (nops == 4) ops[3] = conv->operands[3];
  if (as_bias) {
    /* the bias: one value per output feature, of the convolution's type */
    IrInstr *bias = rank1 ? b1 : addend->operands[0];
    if (bias->shape.type != bias_ty) {
      IrShape cs = bias->shape;
      cs.type = bias_ty;
      if (!(bias = add_instr(f, conv, IR_OP_CONVERT, &cs, &bias, 1, "convert"))) return false;
    }
    IrShape vs = ir_shape_array(&f->comp->module->arena, bias_ty, 1, &features);
    if (rank1 && (bias->shape.rank != 1 || bias->shape.dims[0] != features) &&
        !(bias = add_instr(f, conv, IR_OP_RESHAPE, &vs, &bias, 1, "reshape")))
      return false;
    if (rank0) {
      if (!(bias = add_instr(f, conv, IR_OP_BROADCAST, &vs, &bias, 1, "broadcast"))) return false;
      ir_attr_set_text(bias, "dimensions", "{}");
    }
    ops[2] = bias;
  } else {
    ops[3] = addend;
    nops = 4;
    c.side_input_scale = 1;
  }
  char config[320];
  plan_conv_config_format(&c, config, sizeof config);
  IrInstr *call = reoperand(f, conv, ops, nops, config);
  if (!call) return false;
  simp_replace(i, gte);
  if (as_bias)
    snprintf(msg, sizeof msg, "%s adds %s (%s) to the convolution's result: cuDNN adds it as %s's bias, so the add "
             "costs no kernel (FuseBiasOrSideInput)", name, aname,
             rank1 ? "one value per output feature" : "one value for every element", call->name);
  else
    snprintf(msg, sizeof msg, "%s adds %s, a value of the result's shape, to the convolution's result: cuDNN reads "
             "it as %s's side input, so the add costs no kernel (FuseBiasOrSideInput)", name, aname, call->name);
  report(f, name, call, msg);
  return true;
}

/* FuseSideInputAlpha: a side input s * alpha (through reshapes and transposes) -> s, with
 * side_input_scale = alpha. */
static bool fuse_side_alpha(Fuser *f, IrInstr *conv) {
  PlanConvConfig c;
  if (!is_conv_call(conv) || conv->noperands != 4 || !plan_conv_config(conv, &c) || c.side_input_scale != 1) return true;
  /* side = chain[0] <- chain[1] <- ... <- the multiply */
  IrInstr *chain[16], *before = conv->operands[3];
  int len = 0;
  while ((before->op == IR_OP_RESHAPE || before->op == IR_OP_TRANSPOSE) && before->noperands == 1 && len < 16) {
    chain[len++] = before;
    before = before->operands[0];
  }
  if (before->op != IR_OP_MULTIPLY || before->noperands != 2) return true;
  IrType aty = alpha_type(conv->shape.tuple[0].type);
  double alpha = 1;
  IrInstr *base = NULL;
  for (int k = 0; k < 2 && !base; k++)
    if (broadcast_scalar(before->operands[k], &alpha) && lossless(before->operands[k], aty) && scalar_fits(alpha, aty))
      base = before->operands[1 - k];
  if (!base) return true;
  /* the chain again, on base (XLA clones it too, even when others read it) */
  IrInstr *v = base;
  for (int k = len - 1; k >= 0; k--) {
    IrInstr *x = chain[k];
    IrInstr *copy = add_instr(f, conv, x->op, &x->shape, &v, 1, ir_op_name(x->op));
    if (!copy) return false;
    for (int a = 0; a < x->nattrs; a++)
      if (x->attrs[a].kind == IR_ATTR_TEXT) ir_attr_set_text(copy, x->attrs[a].key, x->attrs[a].text);
    v = copy;
  }
  char sname[256], msg[600];
  snprintf(sname, sizeof sname, "%s", before->name);
  IrInstr *side = conv->operands[3];
  c.side_input_scale = alpha;
  set_config(conv, &c);
  ir_set_operand(conv, 3, v);
  simp_drop_dead(side);
  snprintf(msg, sizeof msg, "%s scales the side input of %s by %g: cuDNN does it inside the call (side_input_scale), "
           "so the multiply costs no kernel (FuseSideInputAlpha)", sname, conv->name, alpha);
  report(f, sname, conv, msg);
  return true;
}

/* FuseRelu: max(conv, 0) -> activation kRelu. */
static bool fuse_relu(Fuser *f, IrInstr *i) {
  IrInstr *gte, *other, *conv;
  double zero;
  if (i->op != IR_OP_MAXIMUM || !(conv = conv_operand(i, &gte, &other)) || !broadcast_scalar(other, &zero) || zero != 0)
    return true;
  PlanConvConfig c;
  if (!plan_conv_config(conv, &c) || strcmp(c.activation, "kNone") != 0) return true;
  char name[256], msg[600];
  snprintf(name, sizeof name, "%s", i->name);
  if (!(conv = ensure_bias_activation(f, conv))) return false;
  plan_conv_config(conv, &c);
  snprintf(c.activation, sizeof c.activation, "kRelu");
  set_config(conv, &c);
  simp_replace(i, gte);
  snprintf(msg, sizeof msg, "%s is a ReLU of the convolution's result: cuDNN applies it inside %s (activation kRelu), "
           "so it costs no kernel (FuseRelu)", name, conv->name);
  report(f, name, conv, msg);
  return true;
}

typedef bool (*Rule)(Fuser *, IrInstr *);

/* One rule over the computation in post order (instructions in order; a rewrite may remove or
 * add some, so the list is taken first). */
static bool apply(Fuser *f, Rule rule) {
  IrComputation *c = f->comp;
  int n = c->ninstrs;
  IrInstr **order = fx_malloc(sizeof *order * (size_t)(n ? n : 1));
  if (!order) return fx_error_set(f->cx->err, NULL, 0, 0, "%s: out of memory", f->cx->pass);
  memcpy(order, c->instrs, sizeof *order * (size_t)n);
  bool ok = true;
  for (int k = 0; ok && k < n; k++)
    if (!order[k]->dead && order[k]->parent == c) ok = rule(f, order[k]);
  fx_free(order);
  if (!ok && !f->cx->err->set) fx_error_set(f->cx->err, NULL, 0, 0, "%s: out of memory", f->cx->pass);
  ir_computation_sort(c);
  return ok;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true;
  for (int k = 0; k < m->ncomps; k++) {
    IrComputation *comp = m->comps[k];
    if (simp_is_fused_computation(comp)) continue;
    bool any = false;
    for (int q = 0; q < comp->ninstrs && !any; q++) any = is_conv_call(comp->instrs[q]);
    if (!any) continue;
    Fuser f = {cx, comp, false};
    /* XLA's order: alpha, bias or side input twice, side-input alpha, ReLU; then (after the
       conversions fxplain does not model) bias, side input and ReLU once more */
    static const Rule rules[] = {fuse_alpha, fuse_bias, fuse_bias, fuse_side_alpha, fuse_relu,
                                 fuse_bias,  fuse_bias, fuse_side_alpha, fuse_relu};
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++)
      if (!apply(&f, rules[r])) return false;
    *changed |= f.changed;
  }
  return true;
}

const Pass pass_cudnn_fused_conv = {
    "cudnn-fused-convolution-rewriter",
    "a scale, a bias, a side input and a ReLU after a cuDNN convolution go into the call "
    "(__cudnn$convBiasActivationForward; XLA:GPU's CudnnFusedConvRewriter)",
    run,
};
