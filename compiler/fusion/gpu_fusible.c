/* gpu_fusible.c — today's gpu_fusible.cc: the predicates XLA's GPU fusion passes of the priority
 * pipeline ask (multi_output_fusion above all), as XLA has them now (openxla/xla,
 * xla/service/gpu/gpu_fusible.cc and ir_emission_utils.cc). The classic passes keep the 2021
 * versions (fusion_rules.c, pass_multi_output_fusion.c).
 *
 * Layouts are read where XLA reads them: a shape without a written layout has the default one
 * (row-major, minor_to_major = {rank-1, ..., 0}). */
#include <string.h>

#include "fusion_analysis.h"
#include "gpu_fusible.h"

/* primitive_util::BitWidth: pred is 1 bit, s4 and u4 4, every other type 8 per byte. */
static int bit_width(IrType t) { return t == IR_PRED ? 1 : t == IR_S4 || t == IR_U4 ? 4 : 8 * ir_type_bytes(t); }

/* GetBitwidth (ir_emission_utils.cc): a pred takes a byte; s4 and u4 4 bits. */
static int emitter_bits(IrType t) { return t == IR_PRED ? 8 : bit_width(t); }

/* The k-th most minor dimension of s. */
static int minor(const IrShape *s, int k) {
  return s->has_layout && s->minor_to_major ? s->minor_to_major[k] : s->rank - 1 - k;
}

/* ShapeUtil::TransposeIsBitcast: the transpose moves no element in memory (the input's
 * minor-to-major order is the output's, mapped through the permutation). */
static bool transpose_is_bitcast(const IrInstr *t) {
  const IrShape *in = &t->operands[0]->shape, *out = &t->shape;
  int64_t perm[IR_MAX_RANK];
  if (in->type != out->type || ir_attr_dims(t, "dimensions", perm, IR_MAX_RANK) != out->rank || in->rank != out->rank)
    return false;
  for (int k = 0; k < out->rank; k++)
    if (perm[minor(out, k)] != minor(in, k)) return false;
  return true;
}

bool fusion_physically_transposing(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  for (int k = 0; fc && k < fc->ninstrs; k++)
    if (fusion_physically_transposing(fc->instrs[k])) return true;
  return i->op == IR_OP_COPY || (i->op == IR_OP_TRANSPOSE && i->noperands == 1 && !transpose_is_bitcast(i));
}

/* MostMinorNonTrivialDimension: the most minor dimension of size > 1 and its position in the
 * minor-to-major order (-1 and the rank when there is none). */
static int most_minor_nontrivial(const IrShape *s, int *position) {
  for (int k = 0; k < s->rank; k++)
    if (s->dims[minor(s, k)] > 1) {
      *position = k;
      return minor(s, k);
    }
  *position = s->rank;
  return -1;
}

bool fusion_transposes_minor_dimension(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (fc) {
    for (int k = 0; k < fc->ninstrs; k++)
      if (fusion_transposes_minor_dimension(fc->instrs[k])) return true;
    return false;
  }
  int pos;
  if (i->op == IR_OP_COPY && i->noperands == 1)
    return most_minor_nontrivial(&i->operands[0]->shape, &pos) != most_minor_nontrivial(&i->shape, &pos);
  if (i->op != IR_OP_TRANSPOSE || i->noperands != 1) return false;
  const IrShape *in = &i->operands[0]->shape;
  int64_t perm[IR_MAX_RANK];
  if (ir_attr_dims(i, "dimensions", perm, IR_MAX_RANK) != i->shape.rank) return false;
  int position_in_minor[IR_MAX_RANK];
  for (int k = 0; k < in->rank; k++) position_in_minor[minor(in, k)] = k;
  int first_nontrivial;
  most_minor_nontrivial(in, &first_nontrivial);
  for (int k = 0; k < i->shape.rank; k++) {
    int out_dim = minor(&i->shape, k);
    if (i->shape.dims[out_dim] == 1) continue;
    int64_t in_dim = perm[out_dim];
    /* whether an input dimension of size > 1 is more minor than the one that becomes the output's
     * most minor non-trivial dimension */
    return in_dim >= 0 && in_dim < in->rank && position_in_minor[in_dim] > first_nontrivial;
  }
  return false;
}

/* ShapeUtil::ReshapeIsBitcast / IsReshapeOrTransposeBitcast for two arrays: the same elements in
 * the same physical order (the dimensions of size > 1, major to minor, agree after merging). */
static bool same_physical_order(const IrShape *a, const IrShape *b) {
  if (ir_shape_elements(a) != ir_shape_elements(b)) return false;
  if (ir_shape_default_layout(a) && ir_shape_default_layout(b)) return true;
  int64_t pa[IR_MAX_RANK], pb[IR_MAX_RANK];
  int na = 0, nb = 0;
  for (int k = a->rank - 1; k >= 0; k--)
    if (a->dims[minor(a, k)] > 1) pa[na++] = a->dims[minor(a, k)];
  for (int k = b->rank - 1; k >= 0; k--)
    if (b->dims[minor(b, k)] > 1) pb[nb++] = b->dims[minor(b, k)];
  return na == nb && memcmp(pa, pb, sizeof(int64_t) * (size_t)na) == 0;
}

/* ShapeUtil::EqualIgnoringElementType: dimensions and layout. */
static bool equal_ignoring_type(const IrShape *a, const IrShape *b) {
  if ((a->type == IR_TUPLE) != (b->type == IR_TUPLE)) return false;
  if (a->type == IR_TUPLE) {
    if (a->ntuple != b->ntuple) return false;
    for (int k = 0; k < a->ntuple; k++)
      if (!equal_ignoring_type(&a->tuple[k], &b->tuple[k])) return false;
    return true;
  }
  if (!ir_shape_same_dims(a, b)) return false;
  for (int k = 0; k < a->rank; k++)
    if (minor(a, k) != minor(b, k)) return false;
  return true;
}

/* IsIntermediate (ir_emission_utils.cc): an op of 1 to `allowed` operands that moves no element:
 * elementwise (a copy only when it keeps the shape and layout), a bitcast, a reshape or transpose
 * that is a bitcast. */
static bool intermediate(const IrInstr *x, int allowed) {
  if (x->noperands == 0 || x->noperands > allowed) return false;
  if (ir_op_is_elementwise(x->op)) {
    if (x->op == IR_OP_COPY) return equal_ignoring_type(&x->shape, &x->operands[0]->shape);
    return true;
  }
  switch (x->op) {
  case IR_OP_BITCAST: return true;
  case IR_OP_RESHAPE: return same_physical_order(&x->operands[0]->shape, &x->shape);
  case IR_OP_TRANSPOSE: return transpose_is_bitcast(x);
  default: return false;
  }
}

/* TransposeDescription::IsEquivalent: the same dimensions, permutation and element width. XLA
 * describes transposes as TransposeDimensionGrouper left them; fxplain, which has no such pass,
 * compares them normalized the same way (a [20,2,2,5] transpose by {1,2,3,0} is a 20x20 one). */
static bool transposes_equivalent(const IrInstr *a, const IrInstr *b) {
  int64_t da[IR_MAX_RANK], db[IR_MAX_RANK];
  int pa[IR_MAX_RANK], pb[IR_MAX_RANK];
  int na = fusion_normalized_transpose(a, da, pa), nb = fusion_normalized_transpose(b, db, pb);
  if (na != nb || emitter_bits(a->shape.type) != emitter_bits(b->shape.type)) return false;
  for (int k = 0; k < na; k++)
    if (da[k] != db[k] || pa[k] != pb[k]) return false;
  return true;
}

/* FusionHeroesAreCompatible's check_path_of_intermediate_ops: from the fused parameter to the
 * root only through intermediate ops, so a tiled transpose stays tiled. */
static bool intermediate_path(const IrInstr *param) {
  if (!param || param->nusers != 1) return false;
  const IrInstr *x = param->users[0];
  while (x->nusers > 0) {
    if (!intermediate(x, 1)) return false;
    x = x->users[0];
  }
  return true;
}

static int operand_number(const IrInstr *user, const IrInstr *op) {
  for (int k = 0; k < user->noperands; k++)
    if (user->operands[k] == op) return k;
  return -1;
}

bool fusion_heroes_compatible(const IrInstr *h1, const IrInstr *h2, FusionVerdict *v) {
  bool r1 = fusion_contiguous_reduce(h1), r2 = fusion_contiguous_reduce(h2);
  bool t1 = fusion_tiled_transpose(h1), t2 = fusion_tiled_transpose(h2);
  bool n1 = h1->op == IR_OP_TRANSPOSE && !t1, n2 = h2->op == IR_OP_TRANSPOSE && !t2;
  if (r1 && r2) {
    const char *d1 = ir_attr_text(h1, "dimensions"), *d2 = ir_attr_text(h2, "dimensions");
    if (!equal_ignoring_type(&h1->operands[0]->shape, &h2->operands[0]->shape) ||
        !equal_ignoring_type(&h1->shape, &h2->shape) || !d1 || !d2 || strcmp(d1, d2) != 0)
      return fusion_refuse(v, FR_SHAPE_MISMATCH, "%s and %s are tiled reductions with different shapes", h1->name,
                           h2->name);
  } else if (t1 && t2 && !transposes_equivalent(h1, h2)) {
    return fusion_refuse(v, FR_SHAPE_MISMATCH, "%s and %s are tiled transposes with different shapes", h1->name,
                         h2->name);
  } else if (((t1 || r1) && n2) || (n1 && (t2 || r2))) {
    return fusion_refuse(v, FR_SHAPE_MISMATCH,
                         "%s and %s: a nested transpose reads in another pattern than an unnested hero; XLA does not "
                         "multi-output fuse them",
                         h1->name, h2->name);
  } else if ((t1 && r2) || (r1 && t2)) {
    return fusion_refuse(v, FR_SHAPE_MISMATCH, "%s and %s: XLA does not multi-output fuse a transpose and a reduction",
                         h1->name, h2->name);
  }
  if (t1 || t2) {
    const IrInstr *f1 = h1->parent ? h1->parent->fusion_instr : NULL, *f2 = h2->parent ? h2->parent->fusion_instr : NULL;
    if (f1 && f2) {
      const IrInstr *user = NULL, *param = NULL;
      if (t1 && operand_number(f2, f1) >= 0) user = f2, param = ir_fused_computation(f2)->params[operand_number(f2, f1)];
      else if (t2 && operand_number(f1, f2) >= 0) user = f1, param = ir_fused_computation(f1)->params[operand_number(f1, f2)];
      if (user && !intermediate_path(param))
        return fusion_refuse(v, FR_SHAPE_MISMATCH,
                             "%s reads the tiled transpose's result through an op that moves elements: the tiled "
                             "transpose would become untiled",
                             user->name);
    }
  }
  return true;
}

/* GetRealHeroForMultiOutputFusion: an instruction itself; of a fusion the hero of its root when it
 * is a reduction or tiled transpose, else the root; of a multi-output fusion the first such hero
 * among its outputs, else its first output. */
static const IrInstr *real_hero(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc || !fc->root) return i;
  const IrInstr *r = fc->root;
  if (r->op != IR_OP_TUPLE) {
    const IrInstr *h = fusion_hero(r);
    return fusion_contiguous_reduce(h) || fusion_tiled_transpose(h) ? h : r;
  }
  for (int k = 0; k < r->noperands; k++) {
    const IrInstr *h = fusion_hero(r->operands[k]);
    if (fusion_contiguous_reduce(h) || fusion_tiled_transpose(h)) return h;
  }
  return r->noperands ? r->operands[0] : r;
}

/* The shape a hero's loop iterates over: a contiguous reduction's or tiled transpose's input. */
static const IrShape *loop_shape(const IrInstr *h) {
  const IrInstr *hero = h->parent && h->parent->fusion_instr ? fusion_hero(h) : h;
  if (fusion_contiguous_reduce(h) || fusion_tiled_transpose(hero)) return &hero->operands[0]->shape;
  return &h->shape;
}

bool fusion_mof_shapes_compatible(const IrInstr *a, const IrInstr *b, FusionVerdict *v) {
  const IrInstr *ha = real_hero(a), *hb = real_hero(b);
  if (!fusion_heroes_compatible(ha, hb, v)) return false;
  const IrShape *la = loop_shape(ha), *lb = loop_shape(hb);
  if (equal_ignoring_type(la, lb)) return true;
  /* Unequal shapes are accepted when one is a bitcast of the other (IsReshapeOrTransposeBitcast). */
  if (ir_shape_is_array(la) && ir_shape_is_array(lb) && same_physical_order(la, lb)) return true;
  char fa[128], fb[128];
  bool layouts = !ir_shape_default_layout(la) || !ir_shape_default_layout(lb);
  ir_shape_format(la, layouts, fa, sizeof fa);
  ir_shape_format(lb, layouts, fb, sizeof fb);
  return fusion_refuse(v, FR_SHAPE_MISMATCH,
                       "%s iterates over %s and %s over %s: different loop shapes cannot share one kernel", a->name, fa,
                       b->name, fb);
}

static bool custom_fusion(const IrInstr *i) {
  const char *k = i->op == IR_OP_FUSION ? ir_fusion_kind(i) : NULL;
  return k && strcmp(k, "kCustom") == 0;
}

static bool fusible(const IrInstr *i, const PassSettings *s) {
  return !fusion_op_never_fuses(i->op) && !fusion_is_library_call(i, s);
}

static bool is_loop_fusion(const IrInstr *i) {
  const char *k = i->op == IR_OP_FUSION ? ir_fusion_kind(i) : NULL;
  return k && strcmp(k, "kLoop") == 0;
}

/* The roots' heroes of a fusion (GetFusionRoots, FindNonTrivialHero). */
static bool any_root_hero(const IrInstr *i, bool (*pred)(const IrInstr *)) {
  IrComputation *fc = ir_fused_computation(i);
  const IrInstr *roots[128];
  int n = fc ? fusion_roots(fc, roots, 128) : 0;
  for (int k = 0; k < n; k++)
    if (pred(fusion_hero(roots[k]))) return true;
  return false;
}

/* IsInputFusibleReduction, IsInputFusibleTranspose, IsInputFusibleScatter, IsInputFusible. */
static bool input_fusible_reduction(const IrInstr *i) {
  return i->op == IR_OP_FUSION ? any_root_hero(i, fusion_contiguous_reduce) : fusion_contiguous_reduce(i);
}
static bool input_fusible_transpose(const IrInstr *i) {
  if (i->op == IR_OP_BITCAST || custom_fusion(i)) return false;
  return i->op == IR_OP_FUSION ? any_root_hero(i, fusion_tiled_transpose) : fusion_tiled_transpose(i);
}
static bool input_fusible_scatter(const IrInstr *i) {
  if (i->op == IR_OP_SCATTER) return true;
  const char *k = i->op == IR_OP_FUSION ? ir_fusion_kind(i) : NULL;
  return k && strcmp(k, "kInput") == 0 && fusion_fused_root(i)->op == IR_OP_SCATTER;
}
bool fusion_input_fusible(const IrInstr *i, const PassSettings *s) {
  return fusible(i, s) && (input_fusible_reduction(i) || input_fusible_scatter(i) || input_fusible_transpose(i));
}

/* IsFusibleAsMultiOutputFusionRoot as jaxlib 0.10.2 has it: XLA's later sources also admit a
 * concatenate fusion (IsConcatenateFusion), which the XLA of jaxlib 0.10.2 does not: it leaves
 * sibling concatenate fusions apart on the corpus (tests/xla: nv_maxtext's rotary embeddings). */
bool fusion_nestable_variadic_reduction(const IrInstr *i) {
  if (i->shape.type != IR_TUPLE) return false;
  if (i->op == IR_OP_REDUCE) return !fusion_contiguous_reduce(i);
  return is_loop_fusion(i) && fusion_fused_root(i)->op == IR_OP_REDUCE;
}

bool fusion_mof_root(const IrInstr *i, const PassSettings *s) {
  if (!fusible(i, s) || custom_fusion(i)) return false;
  return input_fusible_reduction(i) || input_fusible_transpose(i) || is_loop_fusion(i) ||
         (i->op != IR_OP_FUSION && ir_op_is_elementwise(i->op));
}

/* FollowTupleIndirection: through a tuple at index *idx (-1: the whole value) and back through
 * get-tuple-elements, to the op that defines the value. */
static const IrInstr *follow_tuple(const IrInstr *x, int *idx) {
  if (x->op == IR_OP_TUPLE && *idx >= 0 && *idx < x->noperands) {
    x = x->operands[*idx];
    *idx = -1;
  }
  int64_t k;
  while (x->op == IR_OP_GET_TUPLE_ELEMENT && x->noperands == 1 && *idx < 0 && ir_attr_int(x, "index", &k)) {
    *idx = (int)k;
    x = x->operands[0];
    if (x->op == IR_OP_TUPLE && k >= 0 && k < x->noperands) {
      x = x->operands[k];
      *idx = -1;
    }
  }
  return x;
}

/* The operand an in-place op x writes its output `idx` into (GetInPlaceInputOutputPairs of a
 * dynamic-update-slice: operand 0; of a scatter of n operands: operand idx, or 0 when n is 1),
 * or NULL. */
static const IrInstr *in_place_operand(const IrInstr *x, int idx) {
  if (x->op == IR_OP_DYNAMIC_UPDATE_SLICE && idx < 0 && x->noperands > 0) return x->operands[0];
  if (x->op == IR_OP_SCATTER) {
    int n = (x->noperands - 1) / 2;
    if (n == 1 && idx < 0) return x->operands[0];
    if (n > 1 && idx >= 0 && idx < n) return x->operands[idx];
  }
  return NULL;
}

/* GetInPlaceInputOutputPairs is not empty: an in-place op, or a fusion one of whose outputs is
 * written by an in-place op straight into a fused parameter (through tuples, get-tuple-elements
 * and one bitcast: GetFusionInstructionInPlaceInputOutputPairs). A chain of in-place ops whose
 * first link reads the parameter does not count, as in XLA: only the output's own op is asked. */
static bool in_place(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc) return in_place_operand(i, i->shape.type == IR_TUPLE ? 0 : -1) != NULL;
  if (!fc->root) return false;
  int nout = i->shape.type == IR_TUPLE ? i->shape.ntuple : 1;
  for (int k = 0; k < nout; k++) {
    int idx = i->shape.type == IR_TUPLE ? k : -1;
    const IrInstr *src = follow_tuple(fc->root, &idx);
    const IrInstr *in = in_place_operand(src, idx);
    if (!in) continue;
    int in_idx = -1;
    in = follow_tuple(in, &in_idx);
    if (in->op == IR_OP_BITCAST && in->noperands == 1) in = in->operands[0];
    if (in->op == IR_OP_PARAMETER) return true;
  }
  return false;
}

/* IsLoopFusibleAsProducer with IsUniversallyLoopFusible. */
static bool loop_fusible_as_producer(const IrInstr *p, const PassSettings *s) {
  if (!fusible(p, s)) return false;
  if (p->op != IR_OP_FUSION && ir_op_is_elementwise(p->op) && p->noperands > 0 && p->op != IR_OP_COPY) return true;
  switch (p->op) {
  case IR_OP_IOTA:
  case IR_OP_CONSTANT: return true;
  case IR_OP_REDUCE: return p->shape.type != IR_TUPLE;
  case IR_OP_COPY: return !fusion_tiled_transpose(p);
  case IR_OP_FUSION: return is_loop_fusion(p);
  case IR_OP_BITCAST: return fusion_keeps_bitwidth(p);
  case IR_OP_BROADCAST:
  case IR_OP_CONCATENATE:
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_DYNAMIC_UPDATE_SLICE:
  case IR_OP_GATHER:
  case IR_OP_PAD:
  case IR_OP_REDUCE_WINDOW:
  case IR_OP_RESHAPE:
  case IR_OP_REVERSE:
  case IR_OP_SLICE:
  case IR_OP_TRANSPOSE: return true;
  default: return false;
  }
}

bool fusion_producer_mof_fusible(const IrInstr *p, const PassSettings *s, FusionVerdict *v) {
  IrComputation *fc = ir_fused_computation(p);
  if (fc && fc->root && fc->root->op == IR_OP_TUPLE)
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a multi-output fusion (XLA: producer is a multi-output fusion)", p->name);
  if (in_place(p))
    return fusion_refuse(v, FR_IN_PLACE, "%s updates a buffer in place (XLA: in-place operations are present)", p->name);
  if (!loop_fusible_as_producer(p, s))
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s (%s) is not loop-fusible as a producer", p->name, ir_op_name(p->op));
  if (fusion_physically_transposing(p))
    return fusion_refuse(v, FR_LAYOUT, "%s moves elements in memory (XLA: producer is physically transposing)", p->name);
  return true;
}

const char *fusion_choose_kind(const IrInstr *p, const IrInstr *c, const PassSettings *s) {
  return fusion_input_fusible(c, s) || fusion_input_fusible(p, s) ? "kInput" : "kLoop";
}


bool fusion_keeps_bitwidth(const IrInstr *i) {
  for (int k = 0; k < i->noperands; k++)
    if (bit_width(i->operands[k]->shape.type) != bit_width(i->shape.type)) return false;
  return true;
}

/* GetFusionRootsRec. */
static void roots_rec(const IrInstr *r, const IrInstr **out, int max, int *n) {
  if (r->op == IR_OP_GET_TUPLE_ELEMENT && r->noperands == 1 && r->operands[0]->op == IR_OP_TUPLE) {
    int64_t idx = 0;
    if (ir_attr_int(r, "index", &idx) && idx >= 0 && idx < r->operands[0]->noperands)
      roots_rec(r->operands[0]->operands[idx], out, max, n);
  } else if (r->op == IR_OP_GET_TUPLE_ELEMENT && r->noperands == 1) {
    if (*n < max) out[(*n)++] = r->operands[0];
  } else if (r->op == IR_OP_TUPLE) {
    for (int k = 0; k < r->noperands; k++) roots_rec(r->operands[k], out, max, n);
  } else if (*n < max) {
    out[(*n)++] = r;
  }
}

int fusion_roots(const IrComputation *c, const IrInstr **out, int max) {
  int n = 0;
  if (c && c->root) roots_rec(c->root, out, max, &n);
  return n;
}

bool fusion_consumer_only_non_root_user(const IrInstr *i, const IrInstr *consumer) {
  for (int u = 0; u < i->nusers; u++) {
    const IrInstr *x = i->users[u];
    if (x->op == IR_OP_GET_TUPLE_ELEMENT || x->op == IR_OP_BITCAST) {
      if (!fusion_consumer_only_non_root_user(x, consumer)) return false;
    } else if (x != consumer && !(x->parent && x->parent->root == x)) {
      return false;
    }
  }
  return true;
}

/* IsStreamAnnotatedComputation: a call carrying the frontend attribute _xla_stream_annotation. */
static bool stream_annotated_call(const IrInstr *i) {
  const char *fa = i->op == IR_OP_CALL ? ir_attr_text(i, "frontend_attributes") : NULL;
  return fa && strstr(fa, "_xla_stream_annotation") != NULL;
}

int fusion_fusible_computations(const IrModule *m, IrComputation **out, int max) {
  int cap = m->ncomps + 1;
  IrComputation **all = fx_malloc(sizeof(IrComputation *) * (size_t)cap);
  char *not_to_fuse = fx_calloc((size_t)m->next_id + 1, 1);
  if (!all || !not_to_fuse) {
    fx_free(all);
    fx_free(not_to_fuse);
    return 0;
  }
  int n = ir_module_postorder(m, all, cap);
  if (n > cap) n = cap;
  /* Don't fuse within computations an op other than control flow calls. */
  for (int j = 0; j < n; j++)
    for (int q = 0; q < all[j]->ninstrs; q++) {
      const IrInstr *i = all[j]->instrs[q];
      if (i->dead || i->op == IR_OP_WHILE || i->op == IR_OP_CONDITIONAL || i->op == IR_OP_FUSION ||
          stream_annotated_call(i))
        continue;
      IrComputation *called[64];
      int nc = ir_called_computations(i, called, 64);
      for (int z = 0; z < nc && z < 64; z++)
        if (called[z]->id >= 0 && called[z]->id <= m->next_id) not_to_fuse[called[z]->id] = 1;
    }
  int count = 0;
  for (int k = 0; k < n; k++) {
    if (all[k]->fusion_instr || not_to_fuse[all[k]->id]) continue;
    if (count < max) out[count] = all[k];
    count++;
  }
  fx_free(all);
  fx_free(not_to_fuse);
  return count < max ? count : max;
}

static int64_t perf_drop_walk(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  int n = fc ? fc->ninstrs : 1;
  for (int k = 0; k < n; k++) {
    const IrInstr *x = fc ? fc->instrs[k] : i;
    switch (x->op) {
    case IR_OP_REDUCE_WINDOW: { /* one thread handles a whole window: kMaxReduceWindowSize 8 */
      IrWindow w;
      char why[128];
      if (!ir_attr_window(x, -1, &w, why, sizeof why)) break;
      int64_t size = 1;
      for (int d = 0; d < w.rank; d++) size *= w.size[d];
      if (size > 8) return true;
      break;
    }
    case IR_OP_SORT:
    case IR_OP_DOT: return true;
    case IR_OP_CONCATENATE: /* kMaxConcatArgumentsForUnrolling */
      if (x->noperands > 10) return true;
      break;
    case IR_OP_REDUCE:
      if (x->shape.type == IR_TUPLE && x->shape.ntuple > 1) return true;
      break;
    default: break;
    }
  }
  return false;
}

bool fusion_may_cause_perf_drop_if_unrolled(const IrInstr *i) {
  return perf_cache_fact(i, PERF_FACT_PERF_DROP_IF_UNROLLED, perf_drop_walk) != 0;
}

/* ---------- GetDescriptionForTiledTransposeEmitter and GetSharedMemoryUsage ---------- */


/* CanEmitPackedTranspose: a normalized transpose (no two adjacent dimensions stay adjacent) of
 * elements narrower than a shared-memory bank whose canonical [T2, A, T1, B] form
 * (GetTransposeSpec) fills enough rows and columns of the packed tile
 * (GetPackedTransposeTileSizes). */
static bool can_emit_packed_transpose(const IrInstr *t, const int64_t *perm, int r) {
  for (int k = 0; k + 1 < r; k++)
    if (perm[k] + 1 == perm[k + 1]) return false;
  int64_t cperm[IR_MAX_RANK + 2], cout[IR_MAX_RANK + 2];
  int n = r;
  for (int k = 0; k < r; k++) cperm[k] = perm[k], cout[k] = t->shape.dims[k];
  if (cperm[n - 1] != n - 1) { /* the last dimension moves: a size-1 B dimension after it */
    cperm[n] = r;
    cout[n++] = 1;
  }
  int t1 = -1;
  for (int k = n - 1; k >= 0; k--)
    if (cperm[k] != k) {
      t1 = k;
      break;
    }
  if (t1 < 0 || n < 3) return false;
  if (cperm[n - 3] != n - 3) { /* a size-1 A dimension at T1 */
    for (int k = n; k > t1; k--) cout[k] = cout[k - 1];
    cout[t1] = 1;
    for (int k = 0; k < n; k++)
      if (cperm[k] > n - 3) cperm[k]++;
    for (int k = n; k > t1; k--) cperm[k] = cperm[k - 1];
    cperm[t1] = t1;
    n++;
  }
  int64_t cinv[IR_MAX_RANK + 2], cin[IR_MAX_RANK + 2];
  for (int k = 0; k < n; k++) cinv[cperm[k]] = k;
  for (int k = 0; k < n; k++) cin[k] = cout[cinv[k]];
  int64_t dim_a = cin[n - 3], dim_b = cin[n - 1], dim_t1 = cin[n - 2], dim_t2 = cin[cperm[n - 2]];
  int bits = emitter_bits(t->operands[0]->shape.type);
  if (bits <= 0 || bits >= 32) return false; /* kBankBitwidth */
  int64_t vec = 32 / bits, shmem_dim = 32 * vec;
  int64_t tile_t1 = dim_t1 < shmem_dim ? dim_t1 : shmem_dim;
  int64_t tile_a = dim_a < shmem_dim / tile_t1 ? dim_a : shmem_dim / tile_t1;
  int64_t tile_t2 = dim_t2 < shmem_dim ? dim_t2 : shmem_dim;
  int64_t rows = tile_t2, cols = tile_a * tile_t1;
  if (cols < 10 * vec || rows < 10 * vec) return false;
  return dim_b == 1 && rows % vec == 0 && cols % vec == 0 && dim_t2 % tile_t2 % vec == 0;
}

int64_t fusion_transpose_shmem(const IrInstr *t) {
  if (t->op != IR_OP_TRANSPOSE || t->noperands != 1) return 0;
  int64_t perm[IR_MAX_RANK];
  int r = t->shape.rank;
  if (r < 2 || ir_attr_dims(t, "dimensions", perm, IR_MAX_RANK) != r) return 0;
  const int64_t *dims = t->shape.dims, *in = t->operands[0]->shape.dims;
  int64_t bytes = ir_type_bytes(t->shape.type);
  if (can_emit_packed_transpose(t, perm, r)) return 32 * 4 * 32 * (int64_t)(32 / emitter_bits(t->shape.type));
  if (perm[r - 1] == r - 1) { /* the minor dimension stays: at most 8 bytes of it (kMaxBytesInMostMinorDimension) */
    int64_t omm = in[r - 2], m = omm < dims[r - 2] ? omm : dims[r - 2];
    if (bytes * dims[r - 1] <= 8 && bytes * dims[r - 1] * m >= 16) return 32 * 33 * bytes * dims[r - 1];
    return 0;
  }
  int64_t omm = in[r - 1], last = dims[r - 1];
  /* kMinDimensionToTransposeTiled, kMinDimensionToTransposeTiled2, kMinTotalDimensionsToTransposeTiled */
  if ((omm >= 16 && last >= 16) || (omm >= 8 && last >= 8 && omm * last >= 64 * 128)) return 32 * 33 * bytes;
  return 0;
}

/* ReductionDimensions.is_row_reduction: the reduced dimensions include the most minor one of
 * size > 1 (layout order). */
static bool row_reduction(const IrInstr *r) {
  const IrShape *in = &r->operands[0]->shape;
  int64_t dims[IR_MAX_RANK];
  int nd = ir_attr_dims(r, "dimensions", dims, IR_MAX_RANK);
  for (int k = 0; k < in->rank; k++) {
    int d = minor(in, k);
    if (in->dims[d] == 1) continue;
    for (int j = 0; j < nd; j++)
      if (dims[j] == d) return true;
    return false;
  }
  return true;
}

static int64_t shared_memory_walk(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (fc) {
    int64_t sum = 0;
    for (int k = 0; k < fc->ninstrs; k++) sum += fusion_shared_memory(fc->instrs[k]);
    return sum;
  }
  if (i->op == IR_OP_REDUCE && fusion_contiguous_reduce(i)) {
    /* one shared-memory buffer per input of a variadic reduction */
    int64_t bytes = 0;
    for (int k = 0; k < i->noperands / 2; k++) bytes += ir_type_bytes(i->operands[k]->shape.type);
    return row_reduction(i) ? 32 * bytes : 32 * (4 * 32 + 1) * bytes; /* kMaxVectorSize 4 */
  }
  return fusion_transpose_shmem(i);
}

/* FusionInfoCache::GetSharedMemoryUsage: a fusion's sum is kept while the cache is open. */
int64_t fusion_shared_memory(const IrInstr *i) {
  return i->op == IR_OP_FUSION ? perf_cache_fact(i, PERF_FACT_SHARED_MEMORY, shared_memory_walk) : shared_memory_walk(i);
}

static int64_t unnested_reductions_walk(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc) return i->op == IR_OP_REDUCE && fusion_contiguous_reduce(i);
  int sum = 0;
  for (int k = 0; k < fc->ninstrs; k++) sum += fusion_unnested_reductions(fc->instrs[k]);
  return sum;
}

/* FusionInfoCache::GetNumUnnestedReductions: a fusion's count is kept while the cache is open. */
int fusion_unnested_reductions(const IrInstr *i) {
  return (int)(i->op == IR_OP_FUSION ? perf_cache_fact(i, PERF_FACT_UNNESTED_REDUCTIONS, unnested_reductions_walk)
                                     : unnested_reductions_walk(i));
}

/* ---------- ComputeLoopFusionConfig ---------- */

/* The instructions of i's body (i itself when it is no fusion) and of p's, for the predicates
 * below: any matches. */
static bool any_in(const IrInstr *i, const IrInstr *p, bool (*pred)(const IrInstr *, int64_t), int64_t arg) {
  const IrInstr *both[2] = {i, p};
  for (int s2 = 0; s2 < 2; s2++) {
    if (!both[s2]) continue;
    IrComputation *fc = ir_fused_computation(both[s2]);
    int n = fc ? fc->ninstrs : 1;
    for (int k = 0; k < n; k++)
      if (pred(fc ? fc->instrs[k] : both[s2], arg)) return true;
  }
  return false;
}

static bool is_pad(const IrInstr *x, int64_t unused) { return (void)unused, x->op == IR_OP_PAD; }
static bool is_reduce(const IrInstr *x, int64_t unused) { return (void)unused, x->op == IR_OP_REDUCE; }

/* ContainsTransposeWithSmallMostMinorDim: a transpose whose most minor dimension, normalized
 * (GetNormalizedLogicalTransposeShape), is narrower than the unroll factor. */
static bool small_minor_transpose(const IrInstr *x, int64_t unroll) {
  if (x->op != IR_OP_TRANSPOSE) return false;
  int64_t dims[IR_MAX_RANK];
  int perm[IR_MAX_RANK];
  int n = fusion_normalized_transpose(x, dims, perm);
  return (n > 0 ? dims[n - 1] : x->shape.rank > 0 ? x->shape.dims[x->shape.rank - 1] : 1) < unroll;
}

/* Whether any instruction of x's body (x itself when it is no fusion) may be slower unrolled,
 * each asked as fusion_may_cause_perf_drop_if_unrolled (a nested fusion for its own body). */
static int64_t perf_drop_in_walk(const IrInstr *x) {
  IrComputation *fc = ir_fused_computation(x);
  if (!fc) return fusion_may_cause_perf_drop_if_unrolled(x);
  for (int k = 0; k < fc->ninstrs; k++)
    if (fusion_may_cause_perf_drop_if_unrolled(fc->instrs[k])) return 1;
  return 0;
}

/* The same, kept per fusion while the cache is open: every candidate pair's launch asks it of
 * both sides. */
static bool perf_drop_in(const IrInstr *x) {
  return x && (x->op == IR_OP_FUSION ? perf_cache_fact(x, PERF_FACT_PERF_DROP_IN_BODY, perf_drop_in_walk)
                                     : perf_drop_in_walk(x)) != 0;
}

/* The outputs of i (its fused roots, or itself). */
static int outputs_of(const IrInstr *i, const IrInstr **out, int max) {
  IrComputation *fc = ir_fused_computation(i);
  if (fc) return fusion_roots(fc, out, max);
  out[0] = i;
  return 1;
}

/* MaxUnrollFactor: 4, or on Blackwell (cuda_version: 12090 for CUDA 12.9, 0 unknown) up to a
 * 128-bit (256-bit from CUDA 12.9) vector of the widest element for a loop, transpose or
 * concatenate kernel of one output and no reduce whose narrowest output is narrower than a
 * quarter of that vector; 8 at most with a pad, halved while a transpose's minor dimension is
 * narrower, and then at least 8. */
static int max_unroll_factor(const DeviceProfile *d, int cuda_version, const IrInstr *i, const IrInstr *p) {
  bool blackwell = d && strncmp(d->arch, "sm_10", 5) == 0;
  if (!blackwell) return 4;
  FusionEmitter e = fusion_emitter_kind(i);
  if (e != FUSION_EMITTER_LOOP && e != FUSION_EMITTER_TRANSPOSE && e != FUSION_EMITTER_CONCATENATE) return 4;
  int vector_bits = cuda_version >= 12090 ? 256 : 128;
  const IrInstr *outs[64];
  int nout = outputs_of(i, outs, 64);
  int smallest = 1 << 30, widest = 8;
  for (int k = 0; k < nout; k++) {
    int b = emitter_bits(outs[k]->shape.type);
    smallest = b < smallest ? b : smallest;
    widest = b > widest ? b : widest;
  }
  if (nout > 1 || smallest >= vector_bits / 4 || any_in(i, p, is_reduce, 0)) return 4;
  IrComputation *fc = ir_fused_computation(i);
  int nin = fc ? fc->nparams : i->noperands;
  for (int k = 0; k < nin; k++) { /* sub-byte types are not unrolled further: at least 8 bits */
    int b = emitter_bits(fc ? fc->params[k]->shape.type : i->operands[k]->shape.type);
    widest = b > widest ? b : widest;
  }
  int unroll = vector_bits / widest;
  if (unroll > 32) unroll = 32; /* xla_gpu_experimental_max_unroll_factor */
  int pow2 = 1;
  while (pow2 * 2 <= unroll) pow2 *= 2;
  unroll = pow2;
  if (any_in(i, p, is_pad, 0) && unroll > 8) unroll = 8;
  while (unroll > 4 && any_in(i, p, small_minor_transpose, unroll)) unroll /= 2;
  return unroll > 8 ? unroll : 8;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int fusion_loop_unroll(const DeviceProfile *d, int cuda_version, const IrInstr *i, const IrInstr *p, int64_t elements) {
  int unroll = 1;
  int64_t threads = d && d->is_gpu ? (int64_t)d->max_threads_per_sm * d->sm_count : 0;
  if (threads > 0 && elements >= threads && !perf_drop_in(i) && !perf_drop_in(p))
    unroll = (int)gcd64(elements, max_unroll_factor(d, cuda_version, i, p));
  /* a byte holding several outputs is written by one thread */
  const IrInstr *outs[64];
  int nout = outputs_of(i, outs, 64), smallest = 1 << 30;
  for (int k = 0; k < nout; k++) {
    int b = emitter_bits(outs[k]->shape.type);
    smallest = b > 0 && b < smallest ? b : smallest;
  }
  int bytes = smallest < 8 ? (8 + smallest - 1) / smallest : 1;
  return unroll > bytes ? unroll : bytes;
}
