/* pass_conv_rewriter.c — XLA:GPU's ConvRewriter (conv_rewriter.cc, the first pass of the
 * conv_canonicalization pipeline): every forward convolution cuDNN can run becomes a custom call
 * to cuDNN's forward convolution,
 *
 *   conv = f32[1,112,112,64] convolution(x, k), window={size=7x7 stride=2x2}, dim_labels=b01f_01io->b01f
 *     ->
 *   cudnn-conv = (f32[1,112,112,64], u8[0]) custom-call(x, k), window=..., dim_labels=...,
 *                custom_call_target="__cudnn$convForward", backend_config={cudnn_conv_backend_config}
 *   get-tuple-element = f32[1,112,112,64] get-tuple-element(cudnn-conv), index=0
 *
 * returning its result and a scratch buffer (u8[0] until XLA's autotuner picks an algorithm),
 * which is what XLA's kernels and fusion decisions see from here on: an opaque library call.
 * cudnn-fused-convolution-rewriter then folds a bias, a scale and a ReLU into it, and
 * layout-assignment gives it the layouts cuDNN wants.
 *
 * Which convolutions (CanImplementAsGpuForwardConv): at most three spatial dimensions, no
 * zero-element operand, a window that is either not reversed or (2-D) reversed in every
 * dimension. A convolution with base (lhs) dilation or batch groups is what XLA matches as a
 * backward-input or backward-filter convolution (MatchBackwardInput, MatchBackwardFilter); fxplain
 * does not model those rewrites and leaves it a `convolution` (still the cuDNN library call of
 * the kernel plan), saying so.
 *
 * Before the rewrite, an explicit zero pad of the input's spatial dimensions is folded into the
 * window's padding, as XLA's simplifier does before conv canonicalization
 * (AlgebraicSimplifier's FoldConvInputPad): JAX pads images with a separate `pad` (Keras'
 * ZeroPadding2D, `padding="SAME"` lowered by hand), and cuDNN pads for free.
 *
 * Runs only for GPU device profiles (these are XLA:GPU's library rewrites). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* ---------- FoldConvInputPad ---------- */

/* FoldConvInputPad: conv(pad(x, 0), k) -> conv(x, k) with the pad's spatial edges added to the
 * window's padding. Only zero edge padding of the spatial dimensions, onto a window with no base
 * dilation (XLA also composes interior padding with a padless window; JAX does not write that).
 * Fills win and returns the pad's operand, or NULL when the pad cannot be folded. */
static IrInstr *foldable_pad(const IrInstr *conv, const IrConvDims *cd, IrWindow *win) {
  IrInstr *pad = conv->operands[0];
  double v;
  if (pad->op != IR_OP_PAD || pad->noperands != 2 || !simp_splat_value(pad->operands[1], &v) || v != 0) return NULL;
  int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK], in[IR_MAX_RANK];
  if (pad->shape.rank != cd->rank || ir_attr_padding(pad, lo, hi, in, IR_MAX_RANK) != pad->shape.rank) return NULL;
  for (int d = 0; d < cd->rank; d++) {
    if (in[d] != 0 || lo[d] < 0 || hi[d] < 0) return NULL;
    if ((d == cd->in_batch || d == cd->in_feature) && (lo[d] || hi[d])) return NULL;
  }
  for (int s = 0; s < cd->nspatial; s++) {
    if (win->lhs_dilate[s] != 1) return NULL;
    win->pad_lo[s] += lo[cd->in_spatial[s]];
    win->pad_hi[s] += hi[cd->in_spatial[s]];
  }
  return pad->operands[0];
}

/* ---------- CanImplementAsGpuForwardConv ---------- */

/* Why cuDNN's forward convolution cannot take conv (NULL when it can). */
static const char *not_forward(const IrInstr *conv, const IrConvDims *cd, const IrWindow *w) {
  if (cd->nspatial > 3) return "it has more than three spatial dimensions, which cuDNN does not take";
  if (ir_shape_elements(&conv->operands[0]->shape) == 0 || ir_shape_elements(&conv->operands[1]->shape) == 0)
    return "an operand has no elements, which cuDNN does not accept";
  int reversed = 0;
  for (int s = 0; s < w->rank; s++) reversed += w->reversal[s];
  if (cd->nspatial == 2 ? (reversed != 0 && reversed != w->rank) : reversed != 0)
    return "its window is reversed in some dimensions only, neither a cross-correlation nor a convolution for cuDNN";
  for (int s = 0; s < w->rank; s++)
    if (w->lhs_dilate[s] != 1)
      return "it dilates its input (base dilation): XLA matches that as cuDNN's backward-input convolution, a "
             "rewrite fxplain does not model";
  int64_t bgc = 1;
  ir_attr_int(conv, "batch_group_count", &bgc);
  if (bgc != 1)
    return "it has batch groups: XLA matches that as cuDNN's backward-filter convolution, a rewrite fxplain does "
           "not model";
  return NULL;
}

/* Copies conv's attributes that a cuDNN call keeps (its window comes separately). */
static void copy_attrs(IrInstr *call, const IrInstr *conv) {
  for (int k = 0; k < conv->nattrs; k++) {
    const IrAttr *a = &conv->attrs[k];
    if (a->kind != IR_ATTR_TEXT || strcmp(a->key, "window") == 0 || strcmp(a->key, "precision_config") == 0 ||
        strcmp(a->key, "operand_precision") == 0)
      continue;
    ir_attr_set_text(call, a->key, a->text);
  }
}

static bool rewrite(IrInstr *conv, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  IrComputation *c = conv->parent;
  IrModule *m = c->module;
  char why[600];
  IrConvDims cd;
  IrWindow w;
  if (conv->noperands != 2 || !ir_shape_is_array(&conv->shape) || !ir_conv_dims(conv, &cd, why, sizeof why) ||
      !ir_attr_window(conv, cd.nspatial, &w, why, sizeof why))
    return true; /* the verifier reports a malformed convolution; nothing to rewrite */
  const char *no = not_forward(conv, &cd, &w);
  if (no) {
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = conv->name};
    pass_emit(cx->sink, &d, "%s stays a convolution: %s", conv->name, no);
    return true;
  }
  IrInstr *input = conv->operands[0];
  char folded[300] = "";
  IrWindow padded = w;
  IrInstr *unpadded = foldable_pad(conv, &cd, &padded);
  if (unpadded) {
    snprintf(folded, sizeof folded, "; the zero pad %s of its input is folded into the window's padding, as "
             "XLA's simplifier does (FoldConvInputPad)", input->name);
    input = unpadded;
    w = padded;
  }
  /* (result, scratch): the scratch is u8[0] until an algorithm is picked */
  IrShape parts[2];
  parts[0] = conv->shape;
  int64_t zero = 0;
  parts[1] = ir_shape_array(&m->arena, IR_U8, 1, &zero);
  IrShape tuple = {.type = IR_TUPLE, .ntuple = 2, .tuple = parts};
  IrInstr *ops[2] = {input, conv->operands[1]};
  IrInstr *call = ir_instr_new_before(c, conv, IR_OP_CUSTOM_CALL, &tuple, ops, 2,
                                      ir_module_series_name(m, "cudnn-conv", false));
  if (!call) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  ir_attr_set_window(call, &w);
  copy_attrs(call, conv);
  ir_attr_set_text(call, "custom_call_target", "\"__cudnn$convForward\"");
  /* what XLA's ConvRewriter writes: no activation, result scale 1, no side input */
  PlanConvConfig cfg = {.activation = "kNone", .conv_result_scale = 1};
  char config[256];
  plan_conv_config_format(&cfg, config, sizeof config);
  ir_attr_set_text(call, "backend_config", config);
  call->loc = conv->loc;
  IrInstr *gte = ir_instr_new_before(c, conv, IR_OP_GET_TUPLE_ELEMENT, &conv->shape, &call, 1,
                                     ir_module_series_name(m, "get-tuple-element", false));
  if (!gte) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  ir_attr_set_text(gte, "index", "0");
  const char *meta = ir_attr_text(conv, "metadata");
  if (meta) ir_attr_set_text(gte, "metadata", meta);
  gte->loc = conv->loc;
  char shape[160], cname[256];
  ir_shape_format(&conv->shape, false, shape, sizeof shape);
  snprintf(cname, sizeof cname, "%s", conv->name);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = cname,
                    .consumer = call->name, .result = call->name, .accepted = true};
  pass_metric(&d, "flops", plan_instr_flops(conv));
  simp_replace(conv, gte);
  pass_emit(cx->sink, &d,
            "%s (a %s convolution) becomes %s, a call to cuDNN's forward convolution (__cudnn$convForward) that "
            "returns its result (read by %s) and a scratch buffer: a library kernel nothing fuses into%s",
            cname, shape, call->name, gte->name, folded);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true; /* XLA:GPU's rewrite: nothing for the host */
  if (cx->settings && !cx->settings->conv_is_library) return true; /* `set library conv off` */
  return simp_rewrite_each(m, cx, IR_OP_CONVOLUTION, rewrite, NULL, true, changed);
}

const Pass pass_conv_rewriter = {
    "conv-rewriter",
    "convolutions become calls to cuDNN's forward convolution (__cudnn$convForward), with zero input pads folded "
    "into the window (XLA:GPU's ConvRewriter)",
    run,
};
