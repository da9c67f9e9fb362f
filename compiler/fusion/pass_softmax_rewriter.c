/* pass_softmax_rewriter.c — XLA's SoftmaxRewriterTriton (softmax_rewriter_triton.cc), which runs
 * before priority fusion on GPUs from Ampere on: each "normalization diamond" — a row reduction
 * whose result is broadcast back along the reduced dimension and combined, elementwise, with the
 * value that was reduced (softmax, layer norm, RMS norm) — becomes one Triton fusion
 * (`triton_softmax`, kind kCustom, backend kind __triton) when the cost model finds it faster
 * than what priority fusion would make of the same instructions. Priority fusion then grows those
 * fusions through its Triton rules (CanFuseTriton).
 *
 * The matching follows MatchesTritonCompatibleClosedReductionDiamondImpl: the root is a binary
 * elementwise op; its second operand leads through "trivially fusible" ops (IsTriviallyFusible:
 * one user, default layout, a bitcast, a unary elementwise op, or a binary one whose operands are
 * the same or exactly one of which is a broadcast of a scalar constant or of a parameter) to a
 * broadcast, the broadcast's operand likewise to a reduce of the last dimension with a constant
 * init (ShouldFuseReduction), both with one user, the broadcast not along the last dimension; the
 * reduced value, followed up through trivially fusible ops, is the producer, and the root's first
 * operand must lead back to it the same way (IsTriviallyConnectedProducerOf). The fusion holds
 * everything between the producer (its parameter 0) and the root (MakeFusionForDiamond).
 *
 * The decision (DecideIfShouldFuseAndMaybeSetBlockLevelParameters, only_fuse_if_profitable): the
 * Triton fusion's tiled estimate against the diamond's instructions as priority fusion and
 * multi-output fusion would fuse them on their own (EstimateOptimizedHloRunTimeWithoutSoftMax-
 * RewriterTriton: the diamond extracted into a module, fused, each kernel's time summed). Before
 * that, XLA drops a diamond SymbolicTileAnalysis cannot tile (a reshape joining dimensions:
 * reshape_tileable, the shape behind every such verdict in its log), and one for which no tiling
 * is valid (fusion_triton_tiling, which priority fusion's CanFuseTriton asks too). Diamonds are
 * fused in reverse post-order, so that a diamond whose root is the next one's producer is fused
 * first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion_analysis.h"
#include "fusion_build.h"
#include "../hlo/hlo.h"
#include "../passes/passes.h"

/* What marks a fusion as a generic Triton fusion (fusion_is_generic_triton reads it). */
#define TRITON_BACKEND_CONFIG "{\"fusion_backend_config\":{\"kind\":\"__triton\"}}"

/* IsTritonSupportedInstruction, for what a normalization diamond holds: elementwise ops and
 * reductions over the float and integer types Triton's emitter takes. */
static bool triton_type(IrType t) {
  return t == IR_F32 || t == IR_F16 || t == IR_BF16 || t == IR_F64 || t == IR_PRED || t == IR_S8 || t == IR_S16 ||
         t == IR_S32 || t == IR_S64;
}

static bool triton_supported(const IrInstr *i) {
  if (!triton_type(i->shape.type)) return false;
  for (int k = 0; k < i->noperands; k++)
    if (ir_shape_is_array(&i->operands[k]->shape) && !triton_type(i->operands[k]->shape.type)) return false;
  switch (i->op) {
  case IR_OP_REDUCE_PRECISION: case IR_OP_BITCAST_CONVERT: case IR_OP_RNG: case IR_OP_CBRT: case IR_OP_POPCNT:
  case IR_OP_CLZ:
    return false;
  default: break;
  }
  if (i->op == IR_OP_REDUCE) {
    /* one operand and one init, reduced by a single binary op of the two parameters */
    const IrComputation *r = ir_attr_comp(i, "to_apply");
    return i->noperands == 2 && r && r->root && r->ninstrs == 3 && ir_op_info(r->root->op)->category == IR_CAT_BINARY;
  }
  return ir_op_is_elementwise(i->op);
}

/* A reshape that only renames dimensions is what XLA's layout assignment turns into a bitcast. */
static bool is_bitcast(const IrInstr *i) {
  return i->op == IR_OP_BITCAST || (i->op == IR_OP_RESHAPE && ir_shape_default_layout(&i->shape) &&
                                    ir_shape_default_layout(&i->operands[0]->shape));
}

static bool unary_elementwise(const IrInstr *i) {
  return ir_op_is_elementwise(i->op) && i->noperands == 1;
}

static bool binary_elementwise(const IrInstr *i) {
  return ir_op_is_elementwise(i->op) && i->noperands == 2;
}

/* IsBroadcastOfScalarConstant || IsBroadcastOfParameter */
static bool splat(const IrInstr *i) {
  if (i->op != IR_OP_BROADCAST || i->noperands != 1) return false;
  const IrInstr *o = i->operands[0];
  return (o->op == IR_OP_CONSTANT && ir_shape_is_scalar(&o->shape)) || o->op == IR_OP_PARAMETER;
}

static bool trivially_fusible(const IrInstr *i) {
  if (i->nusers > 1 || !ir_shape_default_layout(&i->shape)) return false;
  if (is_bitcast(i)) return true;
  if (unary_elementwise(i)) return triton_supported(i);
  if (binary_elementwise(i)) {
    if (i->operands[0] == i->operands[1]) return triton_supported(i);
    if (splat(i->operands[0]) != splat(i->operands[1])) return triton_supported(i);
  }
  return false;
}

/* ChooseOperandForFusionProcessing: the first operand that is not a splat. */
static IrInstr *choose_operand(IrInstr *i) {
  if (i->noperands > 1 && splat(i->operands[0])) return i->operands[1];
  return i->operands[0];
}

/* TrivialEdge: from consumer through trivially fusible ops to the first op of kind `op`. */
static IrInstr *trivial_edge(IrInstr *consumer, IrOpcode op) {
  while (consumer->op != op) {
    if (!trivially_fusible(consumer) || consumer->noperands == 0) return NULL;
    consumer = choose_operand(consumer);
  }
  return consumer;
}

static bool trivially_connected(IrInstr *producer, IrInstr *consumer) {
  if (producer == consumer) return true;
  for (;;) {
    IrInstr *found = trivial_edge(consumer, producer->op);
    if (!found) return false;
    if (found == producer) return true;
    if (!trivially_fusible(found) || found->noperands == 0) return false;
    consumer = found->operands[0];
  }
}

/* MatchesTritonCompatibleClosedReductionDiamondImpl: the diamond's producer, or NULL. */
static IrInstr *match_diamond(IrInstr *root) {
  if (!binary_elementwise(root) || !triton_supported(root)) return NULL;
  IrInstr *bcast = trivial_edge(root->operands[1], IR_OP_BROADCAST);
  if (!bcast || bcast->noperands != 1) return NULL;
  IrInstr *reduce = trivial_edge(bcast->operands[0], IR_OP_REDUCE);
  if (!reduce) return NULL;
  if (!ir_shape_default_layout(&bcast->shape) || !ir_shape_default_layout(&reduce->shape)) return NULL;
  /* ShouldFuseReduction: supported, one dimension reduced and it is the operand's last */
  if (!triton_supported(reduce)) return NULL;
  int64_t dims[IR_MAX_RANK];
  int nd = ir_attr_dims(reduce, "dimensions", dims, IR_MAX_RANK);
  if (nd != 1 || dims[0] != reduce->operands[0]->shape.rank - 1) return NULL;
  const IrInstr *init = reduce->operands[1];
  bool const_init = init->op == IR_OP_CONSTANT ||
                    (init->op == IR_OP_CONVERT && init->operands[0]->op == IR_OP_CONSTANT && triton_supported(init));
  if (!const_init) return NULL;
  if (bcast->nusers != 1 || reduce->nusers != 1) return NULL;
  IrInstr *producer = reduce->operands[0];
  int64_t bd[IR_MAX_RANK];
  int nb = ir_attr_dims(bcast, "dimensions", bd, IR_MAX_RANK);
  for (int k = 0; k < nb; k++)
    if (bd[k] == bcast->shape.rank - 1) return NULL; /* not along the reduction dimension */
  while (producer->noperands > 0 && trivially_fusible(producer)) producer = choose_operand(producer);
  if (!ir_shape_default_layout(&producer->shape)) return NULL;
  if (!trivially_connected(producer, root->operands[0])) return NULL;
  if (producer != root->operands[0] && root->operands[0]->nusers != 1) return NULL;
  return producer;
}

/* ---------- the diamond's body ---------- */

typedef struct {
  IrInstr **v;
  int n, cap;
} List;

static bool list_has(const List *l, const IrInstr *i) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == i) return true;
  return false;
}

static bool list_add(List *l, IrInstr *i) {
  if (l->n == l->cap) {
    int nc = l->cap ? l->cap * 2 : 16;
    IrInstr **g = fx_realloc(l->v, sizeof *g * (size_t)nc);
    if (!g) return false;
    l->v = g;
    l->cap = nc;
  }
  l->v[l->n++] = i;
  return true;
}

/* create_computation of MakeFusionForDiamond: every instruction from the root up to the producer,
 * stopping at parameters; operands before users. */
static bool collect(IrInstr *i, IrInstr *producer, List *body) {
  if (i == producer || i->op == IR_OP_PARAMETER || list_has(body, i)) return true;
  for (int k = 0; k < i->noperands; k++)
    if (!collect(i->operands[k], producer, body)) return false;
  return list_add(body, i);
}

/* ---------- tiling ---------- */

/* Whether a reshape (or bitcast) x maps each of its non-unit dimensions onto one non-unit operand
 * dimension or onto a part of one. An output dimension that joins several operand dimensions
 * (f32[4096] from f32[8,512]) is indexed through a floordiv and a mod, which SymbolicTile cannot
 * express: the analysis of the whole diamond fails (CanSymbolicTileAnalysisTileDiamond). */
static bool reshape_tileable(const IrInstr *x) {
  const IrShape *o = &x->shape, *in = &x->operands[0]->shape;
  int i = 0, j = 0;
  while (i < o->rank || j < in->rank) {
    while (i < o->rank && o->dims[i] == 1) i++;
    while (j < in->rank && in->dims[j] == 1) j++;
    if (i == o->rank || j == in->rank) break;
    /* one group: the shortest runs of dimensions on both sides with equal products */
    int64_t po = o->dims[i++], pi = in->dims[j++];
    int nin = 1;
    while (po != pi) {
      if (po < pi && i < o->rank) po *= o->dims[i++];
      else if (pi < po && j < in->rank) {
        if (in->dims[j] != 1) nin++;
        pi *= in->dims[j++];
      } else {
        return false;
      }
    }
    if (nin > 1) return false;
  }
  return true;
}

static bool tileable(const List *body) {
  for (int k = 0; k < body->n; k++) {
    const IrInstr *x = body->v[k];
    if ((x->op == IR_OP_RESHAPE || x->op == IR_OP_BITCAST) && !reshape_tileable(x)) return false;
  }
  return true;
}

/* ---------- the decision ---------- */

/* One instruction's line (ROOT when root), at whatever length it takes. */
static void put_instr(FILE *f, const IrInstr *x, bool root) {
  int n = hlo_format_instr(x, NULL, 0);
  char *line = fx_malloc((size_t)n + 1);
  if (!line) return; /* the text then fails to parse and the diamond is left alone */
  hlo_format_instr(x, line, (size_t)n + 1);
  fprintf(f, "  %s%s\n", root ? "ROOT " : "", line);
  fx_free(line);
}

static void put_comp(FILE *f, const IrComputation *c, List *seen);

/* The reducers the instructions call (to_apply), each printed once, callees first. */
static void put_callees(FILE *f, IrInstr *const *v, int n, List *seen) {
  for (int k = 0; k < n; k++) {
    const IrComputation *r = ir_attr_comp(v[k], "to_apply");
    if (r && !list_has(seen, (IrInstr *)(void *)r)) {
      list_add(seen, (IrInstr *)(void *)r);
      put_comp(f, r, seen);
    }
  }
}

static void put_comp(FILE *f, const IrComputation *c, List *seen) {
  put_callees(f, c->instrs, c->ninstrs, seen);
  fprintf(f, "%s {\n", c->name);
  for (int k = 0; k < c->ninstrs; k++) put_instr(f, c->instrs[k], c->instrs[k] == c->root);
  fprintf(f, "}\n\n");
}

/* The diamond as a module of its own (ExtractComputationIntoNewModule): a parameter for each value
 * it reads from outside, then its instructions. NULL when it cannot be built. */
static IrModule *extract(const List *body) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  List seen = {0}, outside = {0};
  fprintf(f, "HloModule normalization_diamond\n\n");
  put_callees(f, body->v, body->n, &seen);
  fprintf(f, "ENTRY diamond {\n");
  for (int k = 0; k < body->n; k++)
    for (int q = 0; q < body->v[k]->noperands; q++) {
      IrInstr *o = body->v[k]->operands[q];
      if (list_has(body, o) || list_has(&outside, o)) continue;
      list_add(&outside, o);
      char sh[512];
      ir_shape_format(&o->shape, true, sh, sizeof sh);
      fprintf(f, "  %%%s = %s parameter(%d)\n", o->name, sh, outside.n - 1);
    }
  for (int k = 0; k < body->n; k++) put_instr(f, body->v[k], k == body->n - 1);
  fprintf(f, "}\n");
  fclose(f);
  fx_free(seen.v);
  fx_free(outside.v);
  FxError e;
  fx_error_clear(&e);
  IrModule *m = hlo_parse(text, len, "<diamond>", &e);
  free(text);
  return m;
}

/* Wraps the extracted diamond's root and fuses everything above it into one Triton fusion. */
static IrInstr *fuse_all(IrInstr *root) {
  IrInstr *f = fusion_wrap(root, "kCustom");
  for (bool more = true; f && more;) {
    more = false;
    for (int q = 0; f && q < f->noperands; q++)
      if (f->operands[q]->op != IR_OP_PARAMETER) {
        f = fusion_fuse(f, f->operands[q]);
        more = true;
        break;
      }
  }
  if (f) ir_attr_set_text(f, "backend_config", TRITON_BACKEND_CONFIG);
  return f;
}

/* What the Triton fusion of a diamond is worth: whether it can be tiled, its best tiling's estimate
 * and the unfused estimate. */
typedef enum { DIAMOND_ERROR, DIAMOND_UNTILEABLE, DIAMOND_NO_TILING, DIAMOND_ESTIMATED } DiamondVerdict;

/* DecideIfShouldFuseAndMaybeSetBlockLevelParameters' numbers. The diamond is extracted, fused
 * into one Triton fusion and handed to the tiling search (fusion_triton_tiling: SymbolicTile-
 * Analysis, then TryFindBestTilingForFusion's tilings and their tiled estimates), after the
 * reshape rule above, which XLA's log shows for diamonds (CanSymbolicTileAnalysisTileDiamond);
 * a diamond the search does not model gets the flat estimate. The unfused time is
 * EstimateOptimizedHloRunTimeWithoutSoftMaxRewriterTriton: the extracted diamond through priority
 * fusion and multi-output fusion, each kernel's time (launch excluded, as
 * EstimateRunTimeForInstruction's exec_time) summed. */
static DiamondVerdict estimate(const List *body, const PassContext *cx, double *fused, double *apart, char *why,
                               size_t nwhy) {
  IrModule *m = extract(body);
  if (!m) return DIAMOND_ERROR;
  IrModule *t = ir_module_clone(m);
  IrInstr *f = t ? fuse_all(t->entry->root) : NULL;
  DiamondVerdict v = f ? DIAMOND_ESTIMATED : DIAMOND_ERROR;
  if (f && !tileable(body)) {
    v = DIAMOND_UNTILEABLE;
    snprintf(why, nwhy, "it reads a value reshaped so that one of its dimensions joins several, which XLA's "
                        "SymbolicTileAnalysis cannot tile");
  } else if (f) {
    TritonTiling tt;
    int tiled = fusion_triton_tiling(cx->device, f, NULL, NULL, &tt);
    if (tiled == 0 && tt.untileable) {
      v = DIAMOND_UNTILEABLE;
      snprintf(why, nwhy, "XLA's SymbolicTileAnalysis cannot derive a tile for %s", tt.untileable->name);
    } else if (tiled == 0) {
      v = DIAMOND_NO_TILING;
      if (tt.too_big)
        snprintf(why, nwhy, "no tiling fits: %s needs a tile of %lld elements, over the %lld the registers hold",
                 tt.too_big->name, (long long)tt.too_big_elems, (long long)tt.max_elems);
      else snprintf(why, nwhy, "no tiling is valid");
    } else if (tiled == 1) {
      *fused = tt.best.exec_us;
    } else {
      *fused = perf_exec_us(cx->device, f);
    }
  }
  if (t) ir_module_free(t);
  if (v != DIAMOND_ESTIMATED) {
    ir_module_free(m);
    return v;
  }
  DecisionSink quiet = {0};
  FxError e;
  fx_error_clear(&e);
  PassContext pc = *cx;
  pc.sink = &quiet;
  pc.err = &e;
  pc.interrupted = NULL;
  const Pass *passes[] = {&pass_priority_fusion, &pass_multi_output_fusion_current};
  for (int k = 0; k < 2; k++) {
    IrModule *out = NULL;
    bool changed = false;
    if (!pass_run_stage(passes[k], m, &pc, &out, &changed)) {
      ir_module_free(m);
      return DIAMOND_ERROR;
    }
    if (out) {
      ir_module_free(m);
      m = out;
    }
  }
  *apart = 0;
  for (int k = 0; k < m->entry->ninstrs; k++) {
    const IrInstr *x = m->entry->instrs[k];
    switch (x->op) {
    case IR_OP_PARAMETER: case IR_OP_CONSTANT: case IR_OP_TUPLE: case IR_OP_GET_TUPLE_ELEMENT: case IR_OP_BITCAST:
      continue;
    default: *apart += perf_exec_us(cx->device, x);
    }
  }
  ir_module_free(m);
  return DIAMOND_ESTIMATED;
}

static bool fuse_diamond(IrInstr *root, IrInstr *producer, PassContext *cx, bool *changed) {
  List body = {0};
  if (!collect(root, producer, &body)) {
    fx_free(body.v);
    return fx_error_set(cx->err, NULL, 0, 0, "out of memory");
  }
  char rname[256], pname[256];
  snprintf(rname, sizeof rname, "%s", root->name);
  snprintf(pname, sizeof pname, "%s", producer->name);
  double fused = 0, apart = 0;
  char why[400] = "";
  DiamondVerdict verdict = estimate(&body, cx, &fused, &apart, why, sizeof why);
  if (verdict == DIAMOND_ERROR) {
    fx_free(body.v);
    return true;
  }
  if (verdict != DIAMOND_ESTIMATED) {
    /* CanSymbolicTileAnalysisTileDiamond ("Cannot tile the diamond pattern"), or
     * TryFindBestTilingForFusion's "No valid tilings found" */
    fx_free(body.v);
    PassDecision t = {.pass = cx->pass, .action = "fuse", .producer = pname, .consumer = rname, .reason = "not_fusible"};
    pass_emit(cx->sink, &t, "the normalization diamond from %s to %s cannot be one Triton kernel: %s; it stays apart for priority fusion",
              pname, rname, why);
    return true;
  }
  PassDecision d = {.pass = cx->pass, .action = "fuse", .producer = pname, .consumer = rname};
  pass_metric(&d, "us_fused", fused);
  pass_metric(&d, "us_unfused", apart);
  if (apart < fused) {
    /* "Run time estimate for without applying the custom normalization rewrite is faster." */
    fx_free(body.v);
    d.reason = "slower_if_fused";
    pass_emit(cx->sink, &d,
              "the normalization diamond from %s to %s as one Triton kernel: %.3f us; as priority fusion would "
              "fuse it: %.3f us, faster, so it is left to priority fusion",
              pname, rname, fused, apart);
    return true;
  }
  /* MakeFusionForDiamond: the body, users first, into the root's fusion (cloned where others read
   * an instruction too) */
  IrInstr *f = fusion_wrap(root, "kCustom");
  for (int k = body.n - 2; f && k >= 0; k--) {
    bool operand = false;
    for (int q = 0; q < f->noperands; q++) operand |= f->operands[q] == body.v[k];
    if (operand) f = fusion_fuse(f, body.v[k]);
  }
  fx_free(body.v);
  if (!f) return fx_error_set(cx->err, NULL, 0, 0, "out of memory");
  /* SoftmaxRewriterTriton records the best tiling in the fusion's backend config (its
   * block_level_fusion_config), with which the cost model times it as one kernel. */
  TritonTiling best;
  char config[512];
  if (fusion_triton_tiling(cx->device, f, NULL, NULL, &best) == 1) fusion_triton_config_text(&best, config, sizeof config);
  else snprintf(config, sizeof config, "%s", TRITON_BACKEND_CONFIG);
  ir_attr_set_text(f, "backend_config", config);
  ir_instr_rename(f, ir_module_series_name(f->parent->module, "triton_softmax", false));
  d.accepted = true;
  d.result = f->name;
  pass_emit(cx->sink, &d,
            "the normalization diamond from %s to %s (a row reduction broadcast back onto the value it reduced) "
            "becomes one Triton kernel: %.3f us, against %.3f us as priority fusion would fuse it",
            pname, rname, fused, apart);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  /* Triton's normalization fusions need an Ampere or newer GPU (sm_80+). */
  const char *arch = cx->device ? cx->device->arch : "";
  int sm = strncmp(arch, "sm_", 3) == 0 ? atoi(arch + 3) : 0;
  if (sm < 80) return true;
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (comp->fusion_instr || !comp->ninstrs) continue;
    /* post order: the roots and producers of every diamond, fused last first */
    List roots = {0}, producers = {0};
    for (int k = 0; k < comp->ninstrs; k++) {
      IrInstr *p = match_diamond(comp->instrs[k]);
      if (p && (!list_add(&roots, comp->instrs[k]) || !list_add(&producers, p))) {
        fx_free(roots.v);
        fx_free(producers.v);
        return fx_error_set(cx->err, NULL, 0, 0, "out of memory");
      }
    }
    bool ok = true;
    for (int k = roots.n - 1; ok && k >= 0; k--) {
      if (pass_interrupted(cx)) break;
      /* an earlier fusion may have taken this diamond's instructions */
      if (roots.v[k]->parent != comp || producers.v[k]->parent != comp) continue;
      if (match_diamond(roots.v[k]) != producers.v[k]) continue;
      ok = fuse_diamond(roots.v[k], producers.v[k], cx, changed);
    }
    fx_free(roots.v);
    fx_free(producers.v);
    if (!ok) return false;
    if (*changed) ir_computation_sort(comp);
  }
  return true;
}

const Pass pass_softmax_rewriter = {
    "softmax-rewriter-triton",
    "normalization diamonds (softmax, layer norm) become one Triton kernel where the cost model says it is faster (Ampere+)",
    run,
};
