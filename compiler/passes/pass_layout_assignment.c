/* pass_layout_assignment.c — XLA:GPU's layout assignment (LayoutAssignment with GpuLayoutAssignment's
 * backend constraints, layout_assignment.cc; the layout_assignment pipeline, after conv
 * canonicalization): every value gets a physical layout.
 *
 * The layouts a JAX dump carries on its instructions are hints XLA does not keep: layout
 * assignment chooses them again, by propagating constraints (LayoutAssignment::PropagateConstraints):
 *   - fixed: the entry computation's parameters keep the layout they arrive in and its result is
 *     row-major; GEMMs constrain their operands and results (AddDotBackendConstraints: a side with
 *     batch dimensions, or more than one contracting or free dimension, is read row-major when a
 *     GEMM can read that, SetDotOperandLayout; a batched result is written row-major, SetDotLayout;
 *     a plain matrix product's operands and result are free, and a dot read only by a transpose
 *     writes its result in the transpose's order, the kTranspose constraint);
 *   - propagated, depth first, from each constrained value to its operands and readers:
 *     elementwise operations take one layout for their result and operands
 *     (InstructionCanChangeLayout is false), a transpose and a reshape take the layout that makes
 *     them bitcasts (ChooseOperandLayoutFromOutputLayout, ChooseOutputLayoutFromOperandLayout;
 *     forward through a transpose it is mandatory), a reduce prefers an operand layout that makes
 *     it a row reduction (PropagateReductionLayoutToOperand) and a broadcast is made in its result's
 *     layout, its operand in the same order. A mandatory layout replaces another, a preferred one only fills a
 *     value nothing constrained (NegotiateLayout declines);
 *   - what is left gets the default layout, first value first, and that propagates too
 *     (AssignLayoutsToUnconstrainedBuffers);
 *   - wherever a reader needs an operand in another layout than it has, a copy in that layout is
 *     inserted (CopyOperandIfLayoutsDiffer; layout-normalization makes it a transpose), and a
 *     reshape that no layout makes a bitcast reads row-major and is copied after (ReshapeDecomposer).
 * So a weight JAX transposes for a matmul reaches the GEMM as bitcast(w): [K,N]{0,1}, and a value
 * transposed and then reduced is reduced where it lies, with no kernel moving it.
 *
 * Loops: a loop's body is laid out first with its state free, so the state's elements take what
 * their uses want, then again with its state fixed to the layouts its result got (XLA's second
 * round resets a body's parameter layout to its result layout); the condition gets the same state,
 * the loop's tuple those layouts, and the caller copies the initial values into them.
 *
 * fxplain lets layouts flow only through what layout-normalization rewrites on physical shapes
 * (elementwise operations, slices, dynamic slices and updates, concatenates, pads, reverses,
 * reduce-windows of one input, transposes, reshapes, reduces, GEMMs, broadcasts) and through loops
 * whose body and condition only that loop runs; every other value and its operands keep the default layout, and so do the
 * parameters and results of other computations. Propagation order follows XLA's: mandatory
 * constraints first, then depth first.
 *
 * cuDNN's convolutions (AddBackendConstraintsToDnnConvCustomCall, HeuristicLayoutAssignment)
 * take their input, filter and output in the layouts the device prefers: on Hopper (sm_90) and
 * later NHWC for every type but f64 (input and output batch, spatial..., feature; filter output
 * feature, spatial..., input feature); on Volta to Ada NHWC for f16 and bf16 2-D convolutions,
 * NCHW otherwise; integer and FP8 convolutions NHWC. An operand in another layout is copied into
 * it (`copy` with the new layout: layout-normalization makes that a transpose) unless it is a
 * broadcast or constant only the convolution reads, which is simply made in that layout; the
 * result is copied back to row-major for its readers, and a side input (operand 3) takes the
 * output's layout. XLA propagates such constraints further through elementwise producers and
 * consumers; fxplain places the copy next to the call, which makes the same transposes.
 *
 * Runs only for GPU device profiles; fused computations (none exist yet before fusion) are left
 * alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ptrmap.h"
#include "passes.h"
#include "simplify.h"

typedef struct {
  PassContext *cx;
  IrModule *m;
  int relaid, copies;
} Assigner;

static void default_order(int rank, int *m2m) {
  for (int k = 0; k < rank; k++) m2m[k] = rank - 1 - k;
}

static bool same_order(const IrShape *s, const int *m2m) {
  if (!s->has_layout) return m2m == NULL;
  for (int k = 0; k < s->rank; k++)
    if (s->minor_to_major[k] != m2m[k]) return false;
  return true;
}

static void layout_text(const IrShape *s, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "{");
  for (int k = 0; k < s->rank; k++)
    len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%d", k ? "," : "",
                            s->has_layout ? s->minor_to_major[k] : s->rank - 1 - k);
  snprintf(buf + len, len < n ? n - len : 0, "}");
}

/* A copy of s (into m's arena) with layout m2m for an array, or the default layout for every
 * array inside a tuple when m2m is NULL. False when out of memory. */
static bool relaid(IrModule *m, const IrShape *s, const int *m2m, IrShape *out) {
  if (!ir_shape_copy(&m->arena, out, s)) return false;
  if (out->type == IR_TUPLE) {
    for (int k = 0; k < out->ntuple; k++) {
      IrShape e;
      if (!relaid(m, &out->tuple[k], NULL, &e)) return false;
      out->tuple[k] = e;
    }
    return true;
  }
  if (out->rank == 0 || out->type == IR_TOKEN) return true;
  if (!out->minor_to_major) {
    out->minor_to_major = arena_alloc(&m->arena, sizeof(int) * (size_t)out->rank);
    if (!out->minor_to_major) return false;
  }
  out->has_layout = true;
  if (m2m) memcpy(out->minor_to_major, m2m, sizeof(int) * (size_t)out->rank);
  else default_order(out->rank, out->minor_to_major);
  return true;
}

/* Whether every array in s has the default layout (or none). */
static bool all_default(const IrShape *s) {
  if (s->type == IR_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (!all_default(&s->tuple[k])) return false;
    return true;
  }
  return ir_shape_default_layout(s);
}

/* ---------- every value row-major ---------- */

static bool default_layouts(Assigner *a, IrComputation *c) {
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *i = c->instrs[k];
    if (i->op == IR_OP_PARAMETER && c->is_entry) continue; /* the program's interface */
    if (all_default(&i->shape)) continue;
    char was[128], now[128];
    layout_text(&i->shape, was, sizeof was);
    IrShape s;
    if (!relaid(a->m, &i->shape, NULL, &s)) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
    i->shape = s;
    layout_text(&i->shape, now, sizeof now);
    a->relaid++;
    PassDecision d = {.pass = a->cx->pass, .stage = a->cx->stage, .action = "rewrite", .producer = i->name,
                      .accepted = true};
    if (i->shape.type == IR_TUPLE)
      pass_emit(a->cx->sink, &d, "%s gets the default layout for every array it holds: XLA's layout assignment chooses "
                "layouts itself, and nothing here needs another", i->name);
    else
      pass_emit(a->cx->sink, &d, "%s (%s) gets the default layout %s instead of %s: XLA's layout assignment chooses "
                "layouts itself%s", i->name, ir_op_name(i->op), now, was,
                i->op == IR_OP_TRANSPOSE ? ", so this transpose now moves data" : "");
  }
  return true;
}

/* An entry parameter in another layout is copied into the default one for its readers. */
static bool copy_parameters(Assigner *a, IrComputation *entry) {
  for (int k = 0; k < entry->nparams; k++) {
    IrInstr *p = entry->params[k];
    if (!p || !ir_shape_is_array(&p->shape) || ir_shape_default_layout(&p->shape) || p->nusers == 0) continue;
    IrShape s;
    if (!relaid(a->m, &p->shape, NULL, &s)) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
    IrInstr *copy = ir_instr_new(entry, IR_OP_COPY, &s, &p, 1, ir_module_series_name(a->m, "copy", false));
    if (!copy) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
    for (int u = p->nusers - 1; u >= 0; u--) {
      IrInstr *user = p->users[u];
      if (user == copy) continue;
      for (int o = 0; o < user->noperands; o++)
        if (user->operands[o] == p) ir_set_operand(user, o, copy);
    }
    char was[128];
    layout_text(&p->shape, was, sizeof was);
    a->copies++;
    PassDecision d = {.pass = a->cx->pass, .stage = a->cx->stage, .action = "rewrite", .producer = p->name,
                      .consumer = copy->name, .result = copy->name, .accepted = true};
    pass_emit(a->cx->sink, &d, "the parameter %s arrives in layout %s (entry_computation_layout); %s copies it into the "
              "default layout its readers get", p->name, was, copy->name);
  }
  return true;
}

/* ---------- cuDNN's layouts ---------- */

static int sm_of(const DeviceProfile *d) {
  return d && strncmp(d->arch, "sm_", 3) == 0 ? atoi(d->arch + 3) : 0;
}

/* HeuristicLayoutAssignment: whether the convolution runs in NHWC (else NCHW). */
static bool wants_nhwc(const IrInstr *conv, const IrConvDims *cd, const DeviceProfile *dev, const char **why) {
  IrType t = conv->operands[0]->shape.type;
  int sm = sm_of(dev);
  if (ir_type_is_int(t)) {
    *why = "integer convolutions run in NHWC";
    return true;
  }
  if (ir_type_is_f8(t)) {
    *why = "FP8 convolutions run in NHWC";
    return true;
  }
  if (sm >= 90) {
    if (t == IR_F64) {
      *why = "cuDNN has no NHWC for f64";
      return false;
    }
    *why = "on Hopper and later cuDNN takes NHWC (tensor cores)";
    return true;
  }
  if ((t == IR_F16 || t == IR_BF16) && sm >= 70 && cd->rank == 4) {
    *why = "cuDNN takes f16 and bf16 2-D convolutions in NHWC from Volta on";
    return true;
  }
  *why = t == IR_F16 || t == IR_BF16 ? "before Volta, or for a convolution that is not 2-D, cuDNN takes NCHW"
                                     : "before Hopper cuDNN takes this type in NCHW";
  return false;
}

/* minor_to_major for the physical order `major` (dimension indices, major first). */
static void order_to_m2m(const int *major, int rank, int *m2m) {
  for (int k = 0; k < rank; k++) m2m[k] = major[rank - 1 - k];
}

/* The physical orders of input, filter and output (major first). */
static void conv_orders(const IrConvDims *cd, bool nhwc, int *in, int *filt, int *out) {
  int r = cd->rank, ns = cd->nspatial, k = 0;
  in[k] = cd->in_batch;
  out[k] = cd->out_batch;
  filt[k] = cd->k_out;
  k++;
  if (!nhwc) {
    in[k] = cd->in_feature;
    out[k] = cd->out_feature;
    filt[k] = cd->k_in;
    k++;
  }
  for (int s = 0; s < ns; s++, k++) {
    in[k] = cd->in_spatial[s];
    out[k] = cd->out_spatial[s];
    filt[k] = cd->k_spatial[s];
  }
  if (nhwc) {
    in[k] = cd->in_feature;
    out[k] = cd->out_feature;
    filt[k] = cd->k_in;
  }
  (void)r;
}

/* Gives operand `idx` of conv layout m2m: the operand itself when it is a broadcast or constant
 * only conv reads (it is made in that layout), else a copy in that layout. */
static bool constrain_operand(Assigner *a, IrInstr *conv, int idx, const int *m2m, const char *role, const char *why) {
  IrInstr *op = conv->operands[idx];
  if (same_order(&op->shape, m2m)) return true;
  char lay[128], name[256];
  IrShape s;
  if (!relaid(a->m, &op->shape, m2m, &s)) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
  layout_text(&s, lay, sizeof lay);
  snprintf(name, sizeof name, "%s", op->name);
  PassDecision d = {.pass = a->cx->pass, .stage = a->cx->stage, .action = "rewrite", .producer = name,
                    .consumer = conv->name, .accepted = true};
  if ((op->op == IR_OP_BROADCAST || op->op == IR_OP_CONSTANT || op->op == IR_OP_IOTA) && op->nusers == 1 &&
      (op->op != IR_OP_BROADCAST || ir_shape_is_scalar(&op->operands[0]->shape))) {
    op->shape = s;
    pass_emit(a->cx->sink, &d, "%s, the %s of %s, is made in layout %s: %s", name, role, conv->name, lay, why);
    return true;
  }
  IrInstr *copy = ir_instr_new_before(conv->parent, conv, IR_OP_COPY, &s, &op, 1,
                                      ir_module_series_name(a->m, "copy", false));
  if (!copy) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
  ir_set_operand(conv, idx, copy);
  a->copies++;
  d.result = copy->name;
  pass_emit(a->cx->sink, &d, "%s copies %s, the %s of %s, into layout %s: %s", copy->name, name, role, conv->name, lay, why);
  return true;
}

static bool constrain_conv(Assigner *a, IrInstr *conv) {
  IrConvDims cd;
  if (conv->noperands < 2 || conv->shape.type != IR_TUPLE || conv->shape.ntuple < 1 ||
      !ir_conv_dims(conv, &cd, NULL, 0))
    return true;
  /* A vectorized integer convolution (int8x4 or int8x32: one more, minor dimension than its
   * dim_labels name, as XLA's CudnnVectorizeConvolutions writes it) already has cuDNN's layout:
   * its operands are left as they are. */
  for (int k = 0; k < conv->noperands && k < 4; k++)
    if (k != 2 && conv->operands[k]->shape.rank != cd.rank) return true;
  if (conv->shape.tuple[0].rank != cd.rank) return true;
  const char *why;
  bool nhwc = wants_nhwc(conv, &cd, a->cx->device, &why);
  int in[IR_MAX_RANK], filt[IR_MAX_RANK], out[IR_MAX_RANK];
  int min[IR_MAX_RANK], mfilt[IR_MAX_RANK], mout[IR_MAX_RANK];
  conv_orders(&cd, nhwc, in, filt, out);
  order_to_m2m(in, cd.rank, min);
  order_to_m2m(filt, cd.rank, mfilt);
  order_to_m2m(out, cd.rank, mout);
  char reason[200];
  snprintf(reason, sizeof reason, "%s (%s)", nhwc ? "NHWC" : "NCHW", why);
  if (!constrain_operand(a, conv, 0, min, "input", reason)) return false;
  if (!constrain_operand(a, conv, 1, mfilt, "filter", reason)) return false;
  if (conv->noperands >= 4 && !constrain_operand(a, conv, 3, mout, "side input", reason)) return false;
  if (same_order(&conv->shape.tuple[0], mout)) return true;
  /* the result in that layout, copied back to row-major for its readers */
  IrShape parts[2], t = conv->shape;
  if (t.ntuple > 2) return true;
  memcpy(parts, t.tuple, sizeof(IrShape) * (size_t)t.ntuple);
  if (!relaid(a->m, &conv->shape.tuple[0], mout, &parts[0]))
    return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
  t.tuple = parts;
  IrShape ts;
  if (!ir_shape_copy(&a->m->arena, &ts, &t)) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
  conv->shape = ts;
  char lay[128];
  layout_text(&parts[0], lay, sizeof lay);
  for (int u = 0; u < conv->nusers; u++) {
    IrInstr *gte = conv->users[u];
    int64_t index;
    if (gte->op != IR_OP_GET_TUPLE_ELEMENT || !ir_attr_int(gte, "index", &index) || index != 0) continue;
    IrInstr *copy = NULL;
    if (gte->nusers > 0 || gte->is_root) { /* the program's result is row-major */
      copy = ir_instr_new_before(gte->parent, NULL, IR_OP_COPY, &gte->shape, &gte, 1,
                                 ir_module_series_name(a->m, "copy", false));
      if (!copy) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
      ir_replace_all_uses(gte, copy); /* its readers and the root read the copy; the copy reads gte */
    }
    IrShape gs;
    if (!relaid(a->m, &gte->shape, mout, &gs)) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
    gte->shape = gs;
    PassDecision d = {.pass = a->cx->pass, .stage = a->cx->stage, .action = "rewrite", .producer = conv->name,
                      .consumer = copy ? copy->name : NULL, .result = copy ? copy->name : NULL, .accepted = true};
    if (copy) a->copies++;
    pass_emit(a->cx->sink, &d, "%s writes its result in layout %s, %s%s%s", conv->name, lay, reason,
              copy ? "; " : "", copy ? copy->name : "");
    if (copy) ir_computation_sort(gte->parent);
  }
  return true;
}

/* ---------- propagation: LayoutAssignment's constraint propagation ---------- */

/* How a layout flows through an instruction (LayoutAssignment::InstructionCanChangeLayout and the
 * Choose*Layout* functions). fxplain lets layouts flow through the instructions layout-normalization
 * rewrites on physical shapes; every other array instruction and its array operands keep the
 * default layout (where XLA would let some of them, such as slices, concatenates or a while loop's
 * state, carry another one). */
typedef enum {
  FLOW_FIXED,       /* its result and array operands have the default layout (or, an entry parameter, its own) */
  FLOW_ELEMENTWISE, /* cannot change layout (elementwise ops, slices, dynamic slices and updates,
                       concatenates): operands of its rank and result share one */
  FLOW_TRANSPOSE,   /* the layout that makes it a bitcast, both ways */
  FLOW_RESHAPE,     /* the layout that makes it a bitcast (ShapeUtil::AlignLayouts), when one does */
  FLOW_REDUCE,      /* result row-major; its operand's layout is free (a row reduction preferred) */
  FLOW_DOT,         /* GpuLayoutAssignment's GEMM constraints; result row-major unless a transpose reads it */
  FLOW_BROADCAST,   /* made in its result's layout; its operand in the same order (GetBroadcastLayoutFromOutput) */
} Flow;

/* Where a value's layout came from, for the decision that reports it. */
typedef enum { WHY_DEFAULT, WHY_FIXED, WHY_OPERAND, WHY_READER, WHY_GEMM, WHY_LOOP } Why;

typedef struct {
  int m2m[IR_MAX_RANK];
  bool set, fixed;
  int updates;
  Why why;
  int from; /* the node whose layout this one follows, or -1 */
} Lay;

typedef struct {
  Flow flow;
  Lay out;
  Lay *ops; /* noperands */
} Node;

typedef struct {
  int node, operand; /* operand -1: the node's result */
} Work;

typedef struct {
  Assigner *a;
  IrComputation *c;
  IrInstr **order; /* the computation's instructions as they were: node k is order[k] */
  Node *nodes;
  Work *work; /* depth first: the last pushed is taken first */
  int nwork, capwork;
  Work *queue; /* breadth first: taken in order once nothing depth first is left */
  int qhead, qtail, capqueue;
  bool bfs;    /* the next push goes to the queue */
  bool oom;
  Why why; /* what the next set_buffer records */
  int from;
} Prop;

static int node_of(const IrInstr *i) { return (int)(intptr_t)i->aux - 1; }

static bool is_array2(const IrShape *s) { return ir_shape_is_array(s) && s->type != IR_TOKEN && s->rank >= 2; }

/* Whether every operand of i is an array of i's rank or a scalar (index operands). */
static bool operands_of_its_rank(const IrInstr *i) {
  for (int k = 0; k < i->noperands; k++) {
    const IrShape *o = &i->operands[k]->shape;
    if (!ir_shape_is_array(o) || (o->rank != i->shape.rank && o->rank != 0)) return false;
  }
  return true;
}

static Flow flow_of(const IrInstr *i) {
  if (!ir_shape_is_array(&i->shape) || i->shape.type == IR_TOKEN) return FLOW_FIXED;
  if (ir_op_is_elementwise(i->op) && i->op != IR_OP_BITCAST_CONVERT)
    return operands_of_its_rank(i) ? FLOW_ELEMENTWISE : FLOW_FIXED;
  switch (i->op) {
  case IR_OP_SLICE:
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_DYNAMIC_UPDATE_SLICE:
  case IR_OP_CONCATENATE:
  case IR_OP_PAD:
  case IR_OP_REVERSE:
    /* data movement that cannot change layout: its array operands and result share one */
    return i->noperands > 0 && operands_of_its_rank(i) ? FLOW_ELEMENTWISE : FLOW_FIXED;
  case IR_OP_REDUCE_WINDOW:
    /* nor can a reduce-window (InstructionCanChangeLayout): one input, its result alike */
    return i->noperands == 2 && operands_of_its_rank(i) ? FLOW_ELEMENTWISE : FLOW_FIXED;
  case IR_OP_TRANSPOSE:
    return i->noperands == 1 ? FLOW_TRANSPOSE : FLOW_FIXED;
  case IR_OP_RESHAPE:
    return i->noperands == 1 && ir_shape_is_array(&i->operands[0]->shape) ? FLOW_RESHAPE : FLOW_FIXED;
  case IR_OP_REDUCE:
    return i->noperands == 2 && ir_shape_is_array(&i->operands[0]->shape) ? FLOW_REDUCE : FLOW_FIXED;
  case IR_OP_DOT:
    return i->noperands == 2 ? FLOW_DOT : FLOW_FIXED;
  case IR_OP_BROADCAST:
    return i->noperands == 1 && ir_shape_is_array(&i->operands[0]->shape) ? FLOW_BROADCAST : FLOW_FIXED;
  default:
    return FLOW_FIXED;
  }
}

static bool same_lay(const Lay *l, const int *m2m, int rank) {
  for (int k = 0; k < rank; k++)
    if (l->m2m[k] != m2m[k]) return false;
  return true;
}

/* LayoutAssignment's worklist is a deque: a constraint that propagates depth first (dfs) goes to
 * its front, one that does not to its back, and the front is taken first. So what a reduce or a
 * broadcast would like its operand in, and what a reshape that is no mere unit-dimension change
 * would, waits until the depth-first propagation before it has run out
 * (InstructionShouldPropagateDepthFirst). */
static void push(Prop *p, int node, int operand) {
  bool bfs = p->bfs;
  p->bfs = false;
  Work **arr = bfs ? &p->queue : &p->work;
  int *len = bfs ? &p->qtail : &p->nwork, *cap = bfs ? &p->capqueue : &p->capwork;
  if (*len == *cap) {
    int ncap = *cap ? 2 * *cap : 256;
    Work *w = fx_realloc(*arr, sizeof *w * (size_t)ncap);
    if (!w) {
      p->oom = true;
      return;
    }
    *arr = w;
    *cap = ncap;
  }
  (*arr)[(*len)++] = (Work){node, operand};
}

/* The rule SetBufferLayout and SetOperandLayout share: a mandatory layout replaces another (a
 * bounded number of times), a preferred one only fills an unconstrained one (NegotiateLayout
 * declines the rest). True when l took m2m. */
static bool update_lay(Lay *l, const int *m2m, int rank, bool mandatory) {
  if (l->set) {
    if (same_lay(l, m2m, rank)) return false;
    if (l->fixed || !mandatory || l->updates >= 4) return false;
    l->updates++;
  }
  memcpy(l->m2m, m2m, sizeof(int) * (size_t)rank);
  l->set = true;
  return true;
}

/* SetBufferLayout: node n's result. */
static void set_buffer(Prop *p, int n, const int *m2m, bool mandatory) {
  Lay *l = &p->nodes[n].out;
  if (!update_lay(l, m2m, p->order[n]->shape.rank, mandatory)) return;
  l->why = p->why;
  l->from = p->from;
  push(p, n, -1);
}

static void set_buffer_why(Prop *p, int n, const int *m2m, bool mandatory, Why why, int from) {
  p->why = why;
  p->from = from;
  set_buffer(p, n, m2m, mandatory);
}

/* SetOperandLayout: what instruction n needs operand k in. */
static void set_operand(Prop *p, int n, int k, const int *m2m, bool mandatory) {
  Node *nd = &p->nodes[n];
  if (nd->ops && update_lay(&nd->ops[k], m2m, p->order[n]->operands[k]->shape.rank, mandatory)) push(p, n, k);
}

/* set_operand or set_buffer_why for a constraint that does not propagate depth first: it waits
 * in the queue (LayoutAssignment's dfs=false). */
static void set_operand_later(Prop *p, int n, int k, const int *m2m, bool mandatory) {
  p->bfs = true;
  set_operand(p, n, k, m2m, mandatory);
  p->bfs = false;
}

static void set_buffer_later(Prop *p, int n, const int *m2m, bool mandatory, Why why, int from) {
  p->bfs = true;
  set_buffer_why(p, n, m2m, mandatory, why, from);
  p->bfs = false;
}

/* InstructionShouldPropagateDepthFirst for a reshape: one of a vector, or one that only adds or
 * drops dimensions of size 1. */
static bool reshape_depth_first(const IrInstr *r) {
  return r->operands[0]->shape.rank == 1 || simp_reshape_only_unit_dims(&r->operands[0]->shape, &r->shape, NULL);
}

static void major_of(const int *m2m, int rank, int *major) {
  for (int k = 0; k < rank; k++) major[k] = m2m[rank - 1 - k];
}

/* ChooseOperandLayoutFromOutputLayout / ChooseOutputLayoutFromOperandLayout for a reshape: the
 * layout of `to` that keeps the bytes of `from` in layout m2m (ShapeUtil::AlignLayouts). */
static bool aligned(const IrShape *from, const int *m2m, const IrShape *to, int *out) {
  int major[IR_MAX_RANK];
  major_of(m2m, from->rank, major);
  return simp_reshape_layout(from, major, to, out);
}

/* PropagateBufferConstraint: node n's result has its layout; its operands and readers learn it. */
static void propagate_result(Prop *p, int n) {
  IrInstr *i = p->order[n];
  Node *nd = &p->nodes[n];
  const int *L = nd->out.m2m;
  int rank = i->shape.rank;
  if (rank < 2) return;
  /* to its operands (PropagateBufferConstraintToOperands) */
  for (int k = 0; k < i->noperands; k++) {
    IrInstr *x = i->operands[k];
    if (!is_array2(&x->shape)) continue;
    int m[IR_MAX_RANK];
    switch (nd->flow) {
    case FLOW_ELEMENTWISE:
      if (x->shape.rank == rank) set_operand(p, n, k, L, true);
      break;
    case FLOW_TRANSPOSE: {
      int64_t perm[IR_MAX_RANK];
      if (ir_attr_dims(i, "dimensions", perm, IR_MAX_RANK) != rank) break;
      for (int q = 0; q < rank; q++) m[q] = (int)perm[L[q]];
      set_operand(p, n, k, m, false);
      break;
    }
    case FLOW_RESHAPE:
      if (!aligned(&i->shape, L, &x->shape, m)) break;
      if (reshape_depth_first(i)) set_operand(p, n, k, m, false);
      else set_operand_later(p, n, k, m, false);
      break;
    case FLOW_BROADCAST: {
      /* GetBroadcastLayoutFromOutput: the operand's dimensions in the order their result
         dimensions have (mandatory) */
      int64_t bd[IR_MAX_RANK];
      int nb = ir_attr_dims(i, "dimensions", bd, IR_MAX_RANK), q = 0;
      if (nb != x->shape.rank) break;
      for (int t = 0; t < rank; t++)
        for (int j = 0; j < nb; j++)
          if (bd[j] == L[t]) m[q++] = j;
      if (q == nb) set_operand_later(p, n, k, m, true);
      break;
    }
    case FLOW_REDUCE: {
      /* GpuLayoutAssignment::PropagateReductionLayoutToOperand: the operand layout that makes it a
         row reduction (the reduced dimensions most minor, the kept ones in the result's order),
         when the row-reduction emitter beats a loop (IsUnnestedReductionFasterThanElemental:
         the reduced size at least a warp, or dividing one) */
      int64_t dims[IR_MAX_RANK];
      int nd = ir_attr_dims(i, "dimensions", dims, IR_MAX_RANK), q = 0;
      if (k != 0 || nd < 0 || nd + rank != x->shape.rank) break;
      int64_t reduced = 1;
      for (int t = 0; t < nd; t++) reduced *= x->shape.dims[dims[t]];
      if (reduced < 32 && 32 % (reduced > 0 ? reduced : 1) != 0) break;
      int kept[IR_MAX_RANK], nk = 0;
      for (int d = 0; d < x->shape.rank; d++)
        if (!ir_dims_contain(dims, nd, d)) kept[nk++] = d;
      for (int t = nd - 1; t >= 0; t--) m[q++] = (int)dims[t];
      for (int t = 0; t < rank; t++) m[q++] = kept[L[t]];
      set_operand_later(p, n, k, m, false);
      break;
    }
    default:
      break;
    }
  }
  /* to its readers (PropagateBufferConstraintToUses) */
  for (int u = 0; u < i->nusers; u++) {
    IrInstr *r = i->users[u];
    int rn = node_of(r);
    if (rn < 0 || p->nodes[rn].flow == FLOW_FIXED) continue;
    for (int k = 0; k < r->noperands; k++)
      if (r->operands[k] == i) set_operand(p, rn, k, L, false);
  }
}

/* PropagateOperandConstraint: what node n needs operand k in goes to the operand's producer, to
 * the other operands and to n's own result. */
static void propagate_operand(Prop *p, int n, int k) {
  IrInstr *i = p->order[n], *x = i->operands[k];
  Node *nd = &p->nodes[n];
  const int *C = nd->ops[k].m2m;
  if (!is_array2(&x->shape)) return;
  int xn = node_of(x);
  if (xn >= 0) set_buffer_why(p, xn, C, false, WHY_READER, n); /* PropagateUseConstraintToDefs */
  int m[IR_MAX_RANK];
  switch (nd->flow) {
  case FLOW_ELEMENTWISE:
    for (int j = 0; j < i->noperands; j++)
      if (j != k && i->operands[j]->shape.rank == x->shape.rank) set_operand(p, n, j, C, true);
    if (i->shape.rank == x->shape.rank) set_buffer_why(p, n, C, true, WHY_OPERAND, xn);
    break;
  case FLOW_TRANSPOSE: {
    int64_t perm[IR_MAX_RANK];
    int rank = i->shape.rank, inv[IR_MAX_RANK];
    if (ir_attr_dims(i, "dimensions", perm, IR_MAX_RANK) != rank) break;
    for (int q = 0; q < rank; q++) inv[perm[q]] = q;
    for (int q = 0; q < rank; q++) m[q] = inv[C[q]];
    set_buffer_why(p, n, m, true, WHY_OPERAND, xn); /* OperandLayoutAlwaysPropagateForward(transpose) */
    break;
  }
  case FLOW_RESHAPE:
    if (!is_array2(&i->shape) || !aligned(&x->shape, C, &i->shape, m)) break;
    if (reshape_depth_first(i)) set_buffer_why(p, n, m, false, WHY_OPERAND, xn);
    else set_buffer_later(p, n, m, false, WHY_OPERAND, xn);
    break;
  default:
    break;
  }
}

static void drain(Prop *p) {
  while ((p->nwork > 0 || p->qhead < p->qtail) && !p->oom) {
    Work w = p->nwork > 0 ? p->work[--p->nwork] : p->queue[p->qhead++];
    if (w.operand < 0) propagate_result(p, w.node);
    else propagate_operand(p, w.node, w.operand);
  }
  p->qhead = p->qtail = 0;
}

static void fix_default(Prop *p, int n, int k) {
  IrInstr *i = p->order[n];
  int m[IR_MAX_RANK];
  if (k < 0) {
    default_order(i->shape.rank, m);
    set_buffer_why(p, n, m, true, WHY_FIXED, -1);
    p->nodes[n].out.fixed = true;
  } else {
    default_order(i->operands[k]->shape.rank, m);
    set_operand(p, n, k, m, true);
    p->nodes[n].ops[k].fixed = true;
  }
}

/* GpuLayoutAssignment::AddDotBackendConstraints: a side with batch dimensions or more than one
 * contracting or free dimension is read row-major when a GEMM can read that (SetDotOperandLayout),
 * else batch, contracting, free; the result is row-major when the dot has batch dimensions or more
 * than one free dimension on a side (SetDotLayout), unless a transpose that alone reads it takes
 * it in its own order (the kTranspose constraint). The other sides and results are free. */
static void dot_constraints(Prop *p, int n) {
  IrInstr *d = p->order[n];
  IrDotDims dd;
  if (!ir_dot_dims(d, &dd)) {
    fix_default(p, n, -1);
    for (int k = 0; k < d->noperands; k++)
      if (is_array2(&d->operands[k]->shape)) fix_default(p, n, k);
    return;
  }
  IrType lt = d->operands[0]->shape.type, rt = d->operands[1]->shape.type;
  bool minor_contracting = (lt == IR_S8 && rt == IR_S8 && d->shape.type == IR_S32) || ir_type_is_f8(lt) || ir_type_is_f8(rt);
  int nfree[2];
  for (int side = 0; side < 2; side++) {
    const IrShape *s = &d->operands[side]->shape;
    const int64_t *batch = side ? dd.rhs_batch : dd.lhs_batch, *contract = side ? dd.rhs_contract : dd.lhs_contract;
    int nb = side ? dd.nrhs_batch : dd.nlhs_batch, nc = side ? dd.nrhs_contract : dd.nlhs_contract;
    int64_t fr[IR_MAX_RANK];
    int nf = 0;
    for (int q = 0; q < s->rank; q++)
      if (!ir_dims_contain(batch, nb, q) && !ir_dims_contain(contract, nc, q)) fr[nf++] = q;
    nfree[side] = nf;
    if (!is_array2(s)) continue;
    if (!minor_contracting && nb == 0 && nc <= 1 && nf <= 1) continue; /* free */
    int m[IR_MAX_RANK];
    if (!minor_contracting && simp_matrix_layout(s->rank, NULL, batch, nb, contract, nc, fr, nf)) {
      default_order(s->rank, m);
    } else { /* major to minor: batch, then contracting or free (minor-contracting: free, contracting) */
      int major[IR_MAX_RANK], q = 0;
      for (int t = 0; t < nb; t++) major[q++] = (int)batch[t];
      const int64_t *g1 = minor_contracting ? fr : contract, *g2 = minor_contracting ? contract : fr;
      int n1 = minor_contracting ? nf : nc, n2 = minor_contracting ? nc : nf;
      for (int t = 0; t < n1; t++) major[q++] = (int)g1[t];
      for (int t = 0; t < n2; t++) major[q++] = (int)g2[t];
      order_to_m2m(major, s->rank, m);
    }
    set_operand(p, n, side, m, true);
    p->nodes[n].ops[side].fixed = true;
  }
  if (!is_array2(&d->shape)) return;
  /* the kTranspose constraint: a transpose alone reads d */
  if (d->nusers == 1 && !d->is_root && d->users[0]->op == IR_OP_TRANSPOSE) {
    IrInstr *t = d->users[0];
    int64_t perm[IR_MAX_RANK];
    int r = d->shape.rank, m[IR_MAX_RANK];
    if (ir_attr_dims(t, "dimensions", perm, IR_MAX_RANK) == r) {
      for (int j = 0; j < r; j++) m[r - 1 - j] = (int)perm[j];
      int nb = dd.nlhs_batch > dd.nrhs_batch ? dd.nlhs_batch : dd.nrhs_batch;
      int64_t dims[IR_MAX_RANK];
      for (int j = 0; j < r; j++) dims[j] = j;
      if (nb + nfree[0] + nfree[1] == r &&
          simp_matrix_layout(r, m, dims, nb, dims + nb, nfree[0], dims + nb + nfree[0], nfree[1])) {
        set_buffer_why(p, n, m, true, WHY_GEMM, node_of(t));
        p->nodes[n].out.fixed = true;
        return;
      }
    }
  }
  /* SetDotLayout for batched or multi-dimensional sides (a user's layout when the GEMM can write it
     is not looked for: row-major); a plain matrix product's result is free */
  if (dd.nlhs_batch > 0 || nfree[0] > 1 || nfree[1] > 1) fix_default(p, n, -1);
}

/* The layouts of a loop's state, element by element (an element not set keeps the default). */
typedef struct {
  int n;
  Lay *elem;
} LoopLayout;

/* What a computation's interface fixes: the entry's parameters and result; a loop body's state,
 * free in the first round (its elements take what their uses want), then fixed to the layouts its
 * result got (LayoutAssignment's second round: the body's parameter layout is reset to its result
 * layout); a loop condition's state as its body's. */
typedef struct {
  const LoopLayout *state; /* fixed layouts of the tuple parameter's elements and of the root tuple's */
  bool state_free;         /* first round of a loop body */
  bool apply;              /* false: only compute (root_out) */
  LoopLayout *root_out;    /* the layouts the root tuple's elements got */
  PtrMap *loops;           /* body computation -> LoopLayout, for the loops c runs */
} Iface;

static const LoopLayout *loop_of(const Iface *f, const IrInstr *w) {
  if (!f || !f->loops || w->op != IR_OP_WHILE) return NULL;
  return ptrmap_get(f->loops, ir_attr_comp(w, "body"));
}

/* Element k of c's tuple parameter read by gte g, or -1. */
static int param_element(const IrComputation *c, const IrInstr *g) {
  int64_t k;
  if (g->op != IR_OP_GET_TUPLE_ELEMENT || g->noperands != 1 || g->operands[0]->op != IR_OP_PARAMETER ||
      g->operands[0]->shape.type != IR_TUPLE || c->is_entry || !ir_attr_int(g, "index", &k))
    return -1;
  return (int)k;
}

/* The decision that says where a value's layout (not the default) came from. */
static void report_layout(Assigner *a, const Prop *p, int k) {
  const IrInstr *i = p->order[k];
  const Lay *l = &p->nodes[k].out;
  const IrInstr *src = l->from >= 0 ? p->order[l->from] : NULL;
  char lay[128];
  layout_text(&i->shape, lay, sizeof lay);
  PassDecision d = {.pass = a->cx->pass, .stage = a->cx->stage, .action = "rewrite", .producer = i->name,
                    .consumer = src ? src->name : NULL, .accepted = true};
  switch (l->why) {
  case WHY_OPERAND:
    if (i->op == IR_OP_TRANSPOSE || i->op == IR_OP_RESHAPE)
      pass_emit(a->cx->sink, &d, "%s gets layout %s, the one that leaves %s's bytes where they are: the %s is a bitcast",
                i->name, lay, src ? src->name : "its operand", ir_op_name(i->op));
    else
      pass_emit(a->cx->sink, &d, "%s gets layout %s from its operand %s: a %s cannot change layout", i->name, lay,
                src ? src->name : "?", ir_op_name(i->op));
    break;
  case WHY_READER:
    pass_emit(a->cx->sink, &d, "%s is made in layout %s, the layout %s reads it in", i->name, lay, src ? src->name : "its reader");
    break;
  case WHY_GEMM:
    pass_emit(a->cx->sink, &d, "%s writes its result in layout %s, the order %s reads it in: only that transpose reads "
              "the GEMM's result and a GEMM writes either order of a matrix, so the transpose is a bitcast",
              i->name, lay, src ? src->name : "its transpose");
    break;
  case WHY_LOOP:
    pass_emit(a->cx->sink, &d, "%s, part of a loop's state, has layout %s: the layout the loop's body gives that element",
              i->name, lay);
    break;
  default:
    pass_emit(a->cx->sink, &d, "%s gets layout %s", i->name, lay);
    break;
  }
}

/* Gives back what propagation held: the instructions' node indices (aux) and its tables. */
static void prop_release(Prop *p, int n) {
  for (int k = 0; k < n; k++) {
    p->order[k]->aux = NULL;
    fx_free(p->nodes[k].ops);
  }
  fx_free(p->nodes);
  fx_free(p->order);
  fx_free(p->work);
  fx_free(p->queue);
}

/* Lays out computation c: constraints, propagation, defaults for what is left, then the layouts
 * written into the shapes and a copy wherever an operand's layout is not the one its reader
 * needs (AssignLayouts' CopyOperandIfLayoutsDiffer). */
static bool propagate_layouts(Assigner *a, IrComputation *c, const Iface *f) {
  int n = c->ninstrs;
  Prop p = {.a = a,
            .c = c,
            .order = fx_malloc(sizeof(IrInstr *) * (size_t)(n ? n : 1)),
            .nodes = fx_calloc((size_t)(n ? n : 1), sizeof(Node)),
            .why = WHY_DEFAULT,
            .from = -1};
  if (!p.nodes || !p.order) {
    fx_free(p.nodes);
    fx_free(p.order);
    return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
  }
  memcpy(p.order, c->instrs, sizeof(IrInstr *) * (size_t)n);
  bool ok = true;
  for (int k = 0; k < n; k++) {
    IrInstr *i = p.order[k];
    i->aux = (void *)(intptr_t)(k + 1);
    p.nodes[k].flow = flow_of(i);
    if (i->noperands && !(p.nodes[k].ops = fx_calloc((size_t)i->noperands, sizeof(Lay)))) p.oom = true;
  }
  /* mandatory constraints: an entry parameter keeps the layout it arrives in, everything that
     cannot take another layout the default one (the GEMMs' come after the result's, below) */
  for (int k = 0; k < n && !p.oom; k++) {
    IrInstr *i = p.order[k];
    Node *nd = &p.nodes[k];
    if (nd->flow != FLOW_FIXED) continue;
    /* a loop state element read in a body or condition: free in a body's first round, else its
       loop's layout */
    int pe = f && (f->state || f->state_free) ? param_element(c, i) : -1;
    const LoopLayout *ll = NULL;
    int we = -1;
    if (i->op == IR_OP_GET_TUPLE_ELEMENT && i->noperands == 1 && (ll = loop_of(f, i->operands[0]))) {
      int64_t idx;
      we = ir_attr_int(i, "index", &idx) && idx >= 0 && idx < ll->n ? (int)idx : -1;
    }
    if (is_array2(&i->shape)) {
      if (i->op == IR_OP_PARAMETER && c->is_entry && i->shape.has_layout) {
        set_buffer_why(&p, k, i->shape.minor_to_major, true, WHY_FIXED, -1);
        nd->out.fixed = true;
      } else if (pe >= 0 && f->state_free) {
        /* nothing fixes it */
      } else if (pe >= 0 && pe < f->state->n && f->state->elem[pe].set) {
        set_buffer_why(&p, k, f->state->elem[pe].m2m, true, WHY_LOOP, -1);
        nd->out.fixed = true;
      } else if (we >= 0 && ll->elem[we].set) {
        set_buffer_why(&p, k, ll->elem[we].m2m, true, WHY_LOOP, -1);
        nd->out.fixed = true;
      } else {
        fix_default(&p, k, -1);
      }
    }
    /* the tuple a loop starts from, and a body's result: its loop's layouts (free in a body's
       first round) */
    const LoopLayout *tl = NULL;
    bool tfree = false;
    if (i->op == IR_OP_TUPLE && i == c->root && f && (f->state || f->state_free)) {
      tl = f->state;
      tfree = f->state_free;
    } else if (i->op == IR_OP_TUPLE && i->nusers == 1) {
      tl = loop_of(f, i->users[0]);
    }
    for (int q = 0; q < i->noperands; q++) {
      if (!is_array2(&i->operands[q]->shape) || tfree) continue;
      if (tl && q < tl->n && tl->elem[q].set) {
        set_operand(&p, k, q, tl->elem[q].m2m, true);
        nd->ops[q].fixed = true;
      } else {
        fix_default(&p, k, q);
      }
    }
  }
  /* the computation's result: row-major, the last of AddMandatoryConstraints */
  if (c->root && is_array2(&c->root->shape) && node_of(c->root) >= 0) {
    int m[IR_MAX_RANK];
    default_order(c->root->shape.rank, m);
    set_buffer_why(&p, node_of(c->root), m, false, WHY_FIXED, -1);
  }
  /* then the backend's, GpuLayoutAssignment::AddBackendConstraints: the GEMMs in reverse post order
     ("that the earliest ... layout propagates first"). The constraints made together propagate the
     last made first, as XLA's worklist takes them from the front of its deque: the earliest GEMM's,
     then the result's, then the parameters'. Which GEMM reaches a value first decides its layout
     where two disagree: Gemma 2's key/value cache is laid out for its first layer's q.K product, as
     in XLA's module, not for the last layer's attention-weighted values. */
  for (int k = n - 1; k >= 0 && !p.oom; k--)
    if (p.nodes[k].flow == FLOW_DOT) dot_constraints(&p, k);
  drain(&p);
  /* AssignLayoutsToUnconstrainedBuffers: the first unconstrained result gets the default layout,
     and that propagates, until none is left */
  for (int k = 0; k < n && !p.oom; k++) {
    IrInstr *i = p.order[k];
    if (!is_array2(&i->shape) || p.nodes[k].out.set) continue;
    int m[IR_MAX_RANK];
    default_order(i->shape.rank, m);
    set_buffer_why(&p, k, m, false, WHY_DEFAULT, -1);
    drain(&p);
  }
  if (p.oom) ok = fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
  if (ok && f && f->root_out && c->root && c->root->op == IR_OP_TUPLE) {
    LoopLayout *ro = f->root_out;
    for (int q = 0; q < c->root->noperands && q < ro->n; q++) {
      IrInstr *x = c->root->operands[q];
      int xn = node_of(x);
      if (!is_array2(&x->shape) || xn < 0 || !p.nodes[xn].out.set) continue;
      ro->elem[q] = p.nodes[xn].out;
      ro->elem[q].fixed = false;
    }
  }
  if (ok && f && !f->apply) {
    prop_release(&p, n);
    return true;
  }
  /* AssignLayouts */
  for (int k = 0; ok && k < n; k++) {
    IrInstr *i = p.order[k];
    if (!is_array2(&i->shape)) continue;
    if (!same_order(&i->shape, p.nodes[k].out.m2m) || !i->shape.has_layout) {
      IrShape s;
      if (!relaid(a->m, &i->shape, p.nodes[k].out.m2m, &s)) {
        ok = fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
        break;
      }
      bool was_default = ir_shape_default_layout(&i->shape);
      i->shape = s;
      if (was_default != ir_shape_default_layout(&i->shape) || !was_default) a->relaid++;
    }
    if (!ir_shape_default_layout(&i->shape) && !(i->op == IR_OP_PARAMETER && c->is_entry)) report_layout(a, &p, k);
  }
  /* a reshape reads its operand in the layout that keeps the bytes of its result's (a bitcast);
     where none does, it reads it row-major and a copy after it makes its result's layout
     (ReshapeDecomposer's bitcast and copy) */
  for (int k = 0; ok && k < n; k++) {
    IrInstr *i = p.order[k];
    Node *nd = &p.nodes[k];
    if (nd->flow != FLOW_RESHAPE || !nd->ops || !is_array2(&i->operands[0]->shape) || !ir_shape_is_array(&i->shape))
      continue;
    IrInstr *x = i->operands[0];
    int want[IR_MAX_RANK], out[IR_MAX_RANK];
    if (i->shape.rank >= 2 ? aligned(&i->shape, nd->out.m2m, &x->shape, want) : (default_order(x->shape.rank, want), true)) {
      memcpy(nd->ops[0].m2m, want, sizeof(int) * (size_t)x->shape.rank);
      nd->ops[0].set = true;
      continue;
    }
    default_order(x->shape.rank, nd->ops[0].m2m);
    nd->ops[0].set = true;
    int d[IR_MAX_RANK];
    default_order(x->shape.rank, d);
    if (!aligned(&x->shape, d, &i->shape, out)) continue;
    IrShape rs, cs = i->shape;
    if (!relaid(a->m, &i->shape, out, &rs)) {
      ok = fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
      break;
    }
    i->shape = rs;
    IrInstr *copy = ir_instr_new_before(c, NULL, IR_OP_COPY, &cs, &i, 1, ir_module_series_name(a->m, "copy", false));
    if (!copy) {
      ok = fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
      break;
    }
    ir_replace_all_uses(i, copy); /* its readers and the root read the copy; the copy reads i */
    a->copies++;
  }
  for (int k = 0; ok && k < n; k++) {
    IrInstr *i = p.order[k];
    Node *nd = &p.nodes[k];
    for (int q = 0; q < i->noperands && nd->ops; q++) {
      IrInstr *x = i->operands[q];
      if (!nd->ops[q].set || !is_array2(&x->shape) || same_order(&x->shape, nd->ops[q].m2m)) continue;
      IrShape s;
      if (!relaid(a->m, &x->shape, nd->ops[q].m2m, &s)) {
        ok = fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
        break;
      }
      IrInstr *copy = ir_instr_new_before(c, i, IR_OP_COPY, &s, &x, 1, ir_module_series_name(a->m, "copy", false));
      if (!copy) {
        ok = fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
        break;
      }
      ir_set_operand(i, q, copy);
      a->copies++;
      char lay[128], was[128];
      layout_text(&s, lay, sizeof lay);
      layout_text(&x->shape, was, sizeof was);
      PassDecision d = {.pass = a->cx->pass, .stage = a->cx->stage, .action = "rewrite", .producer = x->name,
                        .consumer = i->name, .result = copy->name, .accepted = true};
      pass_emit(a->cx->sink, &d, "%s copies %s from layout %s into %s, the layout %s reads it in", copy->name, x->name,
                was, lay, i->name);
    }
  }
  if (ok && c->root && is_array2(&c->root->shape) && !ir_shape_default_layout(&c->root->shape)) {
    IrInstr *r = c->root;
    IrShape s;
    IrInstr *copy = relaid(a->m, &r->shape, NULL, &s)
                        ? ir_instr_new_before(c, NULL, IR_OP_COPY, &s, &r, 1, ir_module_series_name(a->m, "copy", false))
                        : NULL;
    if (!copy) ok = fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
    else {
      ir_set_root(c, copy);
      a->copies++;
    }
  }
  prop_release(&p, n);
  if (ok) ir_computation_sort(c);
  return ok;
}

/* ---------- loops ---------- */

/* t with the array elements ll lays out in their layouts (a copy in m's arena). */
static bool tuple_relaid(IrModule *m, const IrShape *t, const LoopLayout *ll, IrShape *out) {
  if (!ir_shape_copy(&m->arena, out, t)) return false;
  if (out->type != IR_TUPLE) return true;
  for (int k = 0; k < out->ntuple && k < ll->n; k++) {
    if (!ll->elem[k].set || !is_array2(&out->tuple[k])) continue;
    IrShape e;
    if (!relaid(m, &out->tuple[k], ll->elem[k].m2m, &e)) return false;
    out->tuple[k] = e;
  }
  return true;
}

static bool relay_tuple(Assigner *a, IrInstr *i, const LoopLayout *ll) {
  IrShape s;
  if (!tuple_relaid(a->m, &i->shape, ll, &s)) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
  i->shape = s;
  return true;
}

typedef struct {
  Assigner *a;
  PtrMap loops; /* body -> LoopLayout */
  PtrMap done;  /* computations laid out */
  LoopLayout **owned;
  int nowned, capowned;
} Driver;

static LoopLayout *new_loop_layout(Driver *d, int n) {
  LoopLayout *ll = fx_calloc(1, sizeof *ll);
  if (ll) ll->elem = fx_calloc((size_t)(n > 0 ? n : 1), sizeof(Lay));
  if (ll && ll->elem && d->nowned == d->capowned) {
    int cap = d->capowned ? 2 * d->capowned : 16;
    LoopLayout **o = fx_realloc(d->owned, sizeof *o * (size_t)cap);
    if (o) {
      d->owned = o;
      d->capowned = cap;
    }
  }
  if (!ll || !ll->elem || d->nowned == d->capowned) {
    if (ll) fx_free(ll->elem);
    fx_free(ll);
    return NULL;
  }
  ll->n = n;
  d->owned[d->nowned++] = ll;
  return ll;
}

static bool lay_out(Driver *d, IrComputation *c, const LoopLayout *state);

/* The loops computation c runs are laid out before it: each body twice (its state free, then fixed
 * to the layouts its result got), its condition with the same state. A loop whose body or condition
 * another instruction also calls, or that starts from anything but a tuple only it reads, keeps its
 * state row-major. */
static bool lay_out_loops(Driver *d, IrComputation *c) {
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *w = c->instrs[k];
    if (w->op != IR_OP_WHILE || w->noperands != 1) continue;
    IrComputation *body = ir_attr_comp(w, "body"), *cond = ir_attr_comp(w, "condition");
    if (!body || !cond || ptrmap_get(&d->loops, body)) continue;
    int n = w->shape.type == IR_TUPLE ? w->shape.ntuple : 0;
    LoopLayout *ll = new_loop_layout(d, n);
    if (!ll) return fx_error_set(d->a->cx->err, NULL, 0, 0, "%s: out of memory", d->a->cx->pass);
    IrInstr *init = w->operands[0];
    bool free_state = n > 0 && init->op == IR_OP_TUPLE && init->nusers == 1 && body->root &&
                      body->root->op == IR_OP_TUPLE && body->nparams == 1 && cond->nparams == 1 &&
                      simp_callers(d->a->m, body) == 1 && simp_callers(d->a->m, cond) == 1 &&
                      !ptrmap_get(&d->done, body) && !ptrmap_get(&d->done, cond);
    if (free_state) {
      if (!lay_out_loops(d, body)) return false;
      Iface first = {NULL, true, false, ll, &d->loops};
      if (!propagate_layouts(d->a, body, &first)) return false;
    }
    if (!ptrmap_put(&d->loops, body, ll)) return fx_error_set(d->a->cx->err, NULL, 0, 0, "%s: out of memory", d->a->cx->pass);
    if (!ptrmap_get(&d->done, body) && !lay_out(d, body, ll)) return false;
    if (!ptrmap_get(&d->done, cond) && !lay_out(d, cond, ll)) return false;
  }
  return true;
}

/* Lays out c (its loops first); state: the layouts of its loop state when c is a body or a
 * condition. */
static bool lay_out(Driver *d, IrComputation *c, const LoopLayout *state) {
  if (!ptrmap_put(&d->done, c, c)) return fx_error_set(d->a->cx->err, NULL, 0, 0, "%s: out of memory", d->a->cx->pass);
  if (!lay_out_loops(d, c)) return false;
  Iface f = {state, false, true, NULL, &d->loops};
  if (!propagate_layouts(d->a, c, &f)) return false;
  /* the tuple shapes that carry the state */
  if (state) {
    for (int k = 0; k < c->nparams; k++)
      if (c->params[k] && c->params[k]->shape.type == IR_TUPLE && !relay_tuple(d->a, c->params[k], state)) return false;
    if (c->root && c->root->op == IR_OP_TUPLE && c->root->shape.type == IR_TUPLE && !relay_tuple(d->a, c->root, state))
      return false;
  }
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *w = c->instrs[k];
    const LoopLayout *ll = w->op == IR_OP_WHILE ? ptrmap_get(&d->loops, ir_attr_comp(w, "body")) : NULL;
    if (!ll) continue;
    if (!relay_tuple(d->a, w, ll)) return false;
    if (w->operands[0]->op == IR_OP_TUPLE && w->operands[0]->nusers == 1 && !relay_tuple(d->a, w->operands[0], ll))
      return false;
  }
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true;
  Assigner a = {cx, m, 0, 0};
  /* bitcasts exist only after layout assignment (XLA's refuses them): a module that has them was
     laid out already (XLA's own pre-fusion module, an optimized dump), and its values only get the
     default layout back where nothing needs another */
  bool laid_out = false;
  for (int k = 0; k < m->ncomps && !laid_out; k++) {
    IrComputation *c = m->comps[k];
    for (int q = 0; !simp_is_fused_computation(c) && q < c->ninstrs && !laid_out; q++)
      laid_out = c->instrs[q]->op == IR_OP_BITCAST;
  }
  for (int k = 0; k < m->ncomps; k++) {
    IrComputation *c = m->comps[k];
    if (simp_is_fused_computation(c)) continue;
    if (!default_layouts(&a, c)) return false;
  }
  if (m->entry && !copy_parameters(&a, m->entry)) return false;
  Driver d;
  memset(&d, 0, sizeof d);
  d.a = &a;
  bool ok = laid_out || !m->entry || lay_out(&d, m->entry, NULL);
  for (int k = 0; ok && k < m->ncomps; k++) {
    IrComputation *c = m->comps[k];
    if (!simp_is_fused_computation(c) && !laid_out && !ptrmap_get(&d.done, c)) ok = lay_out(&d, c, NULL);
  }
  for (int k = 0; k < d.nowned; k++) {
    fx_free(d.owned[k]->elem);
    fx_free(d.owned[k]);
  }
  fx_free(d.owned);
  ptrmap_free(&d.loops);
  ptrmap_free(&d.done);
  if (!ok) return false;
  for (int k = 0; k < m->ncomps; k++) {
    IrComputation *c = m->comps[k];
    if (simp_is_fused_computation(c)) continue;
    /* a constrained call gets copies inserted before it: it is met again, and is then done */
    for (int q = 0; q < c->ninstrs; q++) {
      IrInstr *i = c->instrs[q];
      PlanCustomCall cc = plan_custom_call(i);
      if ((cc == PLAN_CC_CUDNN_CONV || cc == PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION) && !constrain_conv(&a, i)) return false;
    }
    ir_computation_sort(c);
  }
  *changed = a.relaid > 0 || a.copies > 0;
  return true;
}

const Pass pass_layout_assignment = {
    "layout-assignment",
    "every value gets a physical layout: constraints (parameters, the result, GEMMs, cuDNN) propagate through "
    "elementwise ops, transposes, reshapes and reduces, copies where two disagree (XLA:GPU's GpuLayoutAssignment)",
    run,
};
