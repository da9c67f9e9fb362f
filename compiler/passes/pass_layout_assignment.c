/* pass_layout_assignment.c — XLA:GPU's layout assignment (GpuLayoutAssignment, layout_assignment.cc;
 * the layout_assignment pipeline, after conv canonicalization): every value gets a physical layout.
 *
 * The layouts a JAX dump carries on its instructions are hints XLA does not keep: layout
 * assignment chooses them again. Apart from the entry computation's parameters and result (the
 * program's interface, entry_computation_layout) and the operands and results of library calls
 * that constrain them, every value gets the default, row-major layout ({rank-1,...,1,0}). So a
 * transpose JAX wrote with a layout that made it a mere relabelling (`transpose(k){2,3,1,0}`)
 * moves data again, and every reshape between row-major values is a bitcast (layout-normalization
 * makes it one).
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
 * GEMMs leave an operand's layout free when that side has no batch dimension and one contracting
 * and at most one non-contracting dimension (AddBackendConstraints constrains only the others,
 * SetDotOperandLayout). A transpose only such GEMMs read, directly or through reshapes, then takes
 * the layout that makes it a bitcast of its operand, as XLA's propagation gives it, and so do the
 * reshapes: Gemma's weights reach their GEMMs as bitcast(w): [K,N]{0,1}, no kernel moving them.
 *
 * Runs only for GPU device profiles; fused computations (none exist yet before fusion) are left
 * alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
      for (int v = gte->nusers - 1; v >= 0; v--) {
        IrInstr *user = gte->users[v];
        if (user == copy) continue;
        for (int o = 0; o < user->noperands; o++)
          if (user->operands[o] == gte) ir_set_operand(user, o, copy);
      }
      if (gte->is_root) ir_set_root(gte->parent, copy);
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

/* ---------- GEMM operands ---------- */

/* Whether dot d leaves the layout of its operand `side` free (GpuLayoutAssignment::
 * AddBackendConstraints for a kDot): it constrains an operand only when that side has batch
 * dimensions or more than one contracting or non-contracting dimension (SetDotOperandLayout), or
 * for s8 x s8 -> s32 and FP8 before Blackwell (SetDotOperandLayoutToMinorContracting). */
static bool dot_operand_free(const IrInstr *d, int side) {
  IrDotDims dd;
  if (d->op != IR_OP_DOT || d->noperands != 2 || d->operands[0] == d->operands[1] || !ir_dot_dims(d, &dd)) return false;
  IrType lt = d->operands[0]->shape.type, rt = d->operands[1]->shape.type;
  if (!ir_type_is_float(lt) || !ir_type_is_float(rt) || ir_type_is_f8(lt) || ir_type_is_f8(rt)) return false;
  int nbatch = side ? dd.nrhs_batch : dd.nlhs_batch, ncontract = side ? dd.nrhs_contract : dd.nlhs_contract;
  int rank = d->operands[side]->shape.rank;
  return nbatch == 0 && ncontract == 1 && rank - ncontract <= 1;
}

typedef struct {
  IrInstr *i;
  int m2m[IR_MAX_RANK];
} Relayout;

/* Whether x, given layout m2m, is read only by GEMMs that leave its layout free, directly or
 * through reshapes that stay bitcasts; the reshapes' layouts are added to plan. */
static bool gemm_only(IrInstr *x, const int *m2m, Relayout *plan, int *nplan, int depth) {
  if (x->nusers == 0 || x->is_root || depth > 8) return false;
  int major[IR_MAX_RANK];
  for (int k = 0; k < x->shape.rank; k++) major[k] = m2m[x->shape.rank - 1 - k];
  for (int u = 0; u < x->nusers; u++) {
    IrInstr *r = x->users[u];
    if (r->op == IR_OP_DOT) {
      if (r->noperands != 2 || !((r->operands[0] == x && dot_operand_free(r, 0)) ||
                                 (r->operands[1] == x && dot_operand_free(r, 1))))
        return false;
      continue;
    }
    bool seen = false; /* a reshape met twice (it reads x once) */
    for (int q = 0; q < *nplan; q++) seen = seen || plan[q].i == r;
    if (seen) continue;
    if (r->op != IR_OP_RESHAPE || !ir_shape_is_array(&r->shape) || !ir_shape_default_layout(&r->shape) ||
        *nplan >= 16)
      return false;
    Relayout *e = &plan[(*nplan)++];
    e->i = r;
    if (!simp_reshape_layout(&x->shape, major, &r->shape, e->m2m)) return false;
    int m[IR_MAX_RANK];
    memcpy(m, e->m2m, sizeof m);
    if (!gemm_only(r, m, plan, nplan, depth + 1)) return false;
  }
  return true;
}

/* A transpose that only GEMMs read (directly or through reshapes), each leaving the layout of
 * what it reads free, gets the layout that makes it a bitcast of its operand (LayoutAssignment's
 * propagation from operand to user where nothing constrains the user; the layout-sensitive
 * simplifier then makes it a bitcast, which layout-normalization does here), and so do the
 * reshapes in between: the GEMM reads the weights where they are, transposed by its operand's
 * layout ({0,1}), and no kernel moves them. A transpose with any other reader keeps the default
 * layout and moves data. */
static bool gemm_operand_layouts(Assigner *a, IrComputation *c) {
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *t = c->instrs[k];
    if (t->op != IR_OP_TRANSPOSE || t->noperands != 1 || !ir_shape_is_array(&t->shape) || t->shape.rank < 2 ||
        !ir_shape_default_layout(&t->shape) || !ir_shape_default_layout(&t->operands[0]->shape))
      continue;
    int64_t perm[IR_MAX_RANK];
    int r = t->shape.rank;
    if (ir_attr_dims(t, "dimensions", perm, IR_MAX_RANK) != r) continue;
    /* output dimension j holds operand dimension perm[j]: in the operand's physical order
       (major first 0..r-1), output dimension j sits where perm[j] does */
    int major[IR_MAX_RANK], m2m[IR_MAX_RANK];
    bool identity = true;
    for (int j = 0; j < r; j++) {
      if (perm[j] < 0 || perm[j] >= r) identity = false;
      else major[perm[j]] = j;
      identity = identity && perm[j] == j;
    }
    if (identity) continue;
    order_to_m2m(major, r, m2m);
    Relayout plan[16];
    int nplan = 0;
    if (!gemm_only(t, m2m, plan, &nplan, 0)) continue;
    IrShape s;
    if (!relaid(a->m, &t->shape, m2m, &s)) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
    t->shape = s;
    for (int q = 0; q < nplan; q++) {
      if (!relaid(a->m, &plan[q].i->shape, plan[q].m2m, &s))
        return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
      plan[q].i->shape = s;
    }
    a->relaid += 1 + nplan;
    char lay[128];
    layout_text(&t->shape, lay, sizeof lay);
    PassDecision d = {.pass = a->cx->pass, .stage = a->cx->stage, .action = "rewrite", .producer = t->name,
                      .consumer = t->users[0]->name, .accepted = true};
    pass_emit(a->cx->sink, &d, "%s gets layout %s, the one that leaves %s's bytes where they are%s: only GEMMs read it "
              "(%s%s), and a GEMM takes either order of a matrix, so the transpose is a bitcast", t->name, lay,
              t->operands[0]->name, nplan ? ", and so do the reshapes between it and the GEMMs" : "",
              t->users[0]->name, t->nusers > 1 ? ", ..." : "");
  }
  return true;
}

/* ---------- a GEMM's result read through a transpose ---------- */

/* GpuLayoutAssignment::AddBackendConstraints for a kTranspose whose operand is a dot read by
 * nothing else: the dot writes its result in the layout that makes the transpose a bitcast (major
 * to minor the transpose's permutation) when the GEMM can write that layout
 * (DotCanSupportShapeWithLayout: MatrixLayout::For over the result's batch, row and column
 * dimensions). The transpose's result keeps the default layout, so layout-normalization makes it
 * a bitcast: the GEMM writes the transposed matrix itself and no kernel moves it. */
static bool dot_result_layouts(Assigner *a, IrComputation *c) {
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *t = c->instrs[k];
    if (t->op != IR_OP_TRANSPOSE || t->noperands != 1 || !ir_shape_is_array(&t->shape) || t->shape.rank < 2 ||
        !ir_shape_default_layout(&t->shape))
      continue;
    IrInstr *d = t->operands[0];
    IrDotDims dd;
    if (d->op != IR_OP_DOT || d->nusers != 1 || d->is_root || d->noperands != 2 || !ir_shape_is_array(&d->shape) ||
        !ir_shape_default_layout(&d->shape) || !ir_dot_dims(d, &dd))
      continue;
    int r = d->shape.rank;
    int64_t perm[IR_MAX_RANK];
    if (ir_attr_dims(t, "dimensions", perm, IR_MAX_RANK) != r) continue;
    int m2m[IR_MAX_RANK];
    bool identity = true, valid = true;
    for (int j = 0; j < r; j++) {
      if (perm[j] < 0 || perm[j] >= r) {
        valid = false;
        break;
      }
      m2m[r - 1 - j] = (int)perm[j]; /* LayoutUtil::MakeLayoutFromMajorToMinor(dimensions) */
      identity = identity && perm[j] == j;
    }
    if (!valid || identity) continue;
    /* the result's dimensions: batch, then the left side's free ones (rows), then the right's
       (columns) */
    int nb = dd.nlhs_batch > dd.nrhs_batch ? dd.nlhs_batch : dd.nrhs_batch;
    int nrows = d->operands[0]->shape.rank - dd.nlhs_contract - dd.nlhs_batch;
    int ncols = d->operands[1]->shape.rank - dd.nrhs_contract - dd.nrhs_batch;
    if (nb + nrows + ncols != r) continue;
    int64_t dims[IR_MAX_RANK];
    for (int j = 0; j < r; j++) dims[j] = j;
    if (!simp_matrix_layout(r, m2m, dims, nb, dims + nb, nrows, dims + nb + nrows, ncols)) continue;
    IrShape s;
    if (!relaid(a->m, &d->shape, m2m, &s)) return fx_error_set(a->cx->err, NULL, 0, 0, "%s: out of memory", a->cx->pass);
    d->shape = s;
    a->relaid++;
    char lay[128];
    layout_text(&d->shape, lay, sizeof lay);
    PassDecision dec = {.pass = a->cx->pass, .stage = a->cx->stage, .action = "rewrite", .producer = d->name,
                        .consumer = t->name, .accepted = true};
    pass_emit(a->cx->sink, &dec, "%s writes its result in layout %s, the order %s reads it in: only that transpose "
              "reads the GEMM's result and a GEMM writes either order of a matrix, so the transpose is a bitcast",
              d->name, lay, t->name);
  }
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true;
  Assigner a = {cx, m, 0, 0};
  for (int k = 0; k < m->ncomps; k++) {
    IrComputation *c = m->comps[k];
    if (simp_is_fused_computation(c)) continue;
    if (!default_layouts(&a, c)) return false;
  }
  if (m->entry && !copy_parameters(&a, m->entry)) return false;
  for (int k = 0; k < m->ncomps; k++) {
    IrComputation *c = m->comps[k];
    if (simp_is_fused_computation(c)) continue;
    /* a constrained call gets copies inserted before it: it is met again, and is then done */
    for (int q = 0; q < c->ninstrs; q++) {
      IrInstr *i = c->instrs[q];
      PlanCustomCall cc = plan_custom_call(i);
      if ((cc == PLAN_CC_CUDNN_CONV || cc == PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION) && !constrain_conv(&a, i)) return false;
    }
    if (!dot_result_layouts(&a, c) || !gemm_operand_layouts(&a, c)) return false;
    ir_computation_sort(c);
  }
  *changed = a.relaid > 0 || a.copies > 0;
  return true;
}

const Pass pass_layout_assignment = {
    "layout-assignment",
    "every value gets the default row-major layout except where cuDNN wants another (copies); XLA:GPU's "
    "GpuLayoutAssignment",
    run,
};
