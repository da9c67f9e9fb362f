/* pass_slice_sinker.c — slice-sinker: the same elementwise operation on slices of one tensor
 * becomes the operation on the tensor, sliced afterwards (XLA's SliceSinker, in XLA:GPU's
 * simplification pipeline).
 *
 * For an elementwise operation whose operands are all slices taken at the same indices of
 * tensors of one shape, the group is every operation of the same opcode and element type whose
 * operand k is a slice of the same tensor as operand k here, all at the same indices. When the
 * group's results together have at least as many elements as the tensor (XLA's ShouldTransform:
 * never more elementwise work than before), one operation runs on the whole tensors and each
 * member becomes a slice of its result:
 *
 *   cos(slice(q, [0:1])), cos(slice(q, [1:2])), ..., cos(slice(q, [34:35]))
 *     ->  c = cos(q); slice(c, [0:1]), ..., slice(c, [34:35])
 *
 * JAX's per-element code (`jnp.cos(q[i])` for each i) becomes one operation over q, as XLA's
 * kernels compute it. Each group is reported: "cosine of 35 slices of q runs once on q (as
 * cosine.7) and each result is a slice of it". Runs in the priority pipeline only. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

static bool same_slice(const IrInstr *a, const IrInstr *b) {
  const char *x = ir_attr_text(a, "slice"), *y = ir_attr_text(b, "slice");
  return x && y && strcmp(x, y) == 0;
}

static bool is_slice(const IrInstr *i) { return i && i->op == IR_OP_SLICE && i->noperands == 1 && i->operands[0]; }

static bool is_elementwise(const IrInstr *i) {
  return ir_op_is_elementwise(i->op) && i->op != IR_OP_BITCAST_CONVERT && i->noperands > 0 && ir_shape_is_array(&i->shape);
}

/* IsElementwiseOperationOnSimilarSlices. */
static bool on_similar_slices(const IrInstr *i) {
  if (!is_elementwise(i)) return false;
  const IrInstr *s0 = i->operands[0];
  if (!is_slice(s0)) return false;
  for (int o = 1; o < i->noperands; o++) {
    const IrInstr *s = i->operands[o];
    if (!is_slice(s) || !ir_shape_same_dims(&s->operands[0]->shape, &s0->operands[0]->shape) || !same_slice(s, s0)) return false;
  }
  return true;
}

/* IsSimilarOperationOnSlices: c is like i (not yet rewritten: it has users). */
static bool similar(const IrInstr *i, const IrInstr *c) {
  if (c->dead || (c->nusers == 0 && !c->is_root) || c->op != i->op || c->shape.type != i->shape.type ||
      c->noperands != i->noperands)
    return false;
  const IrAttr *da = ir_attr_get(i, "direction"), *db = ir_attr_get(c, "direction");
  if ((da == NULL) != (db == NULL) || (da && strcmp(da->text ? da->text : "", db->text ? db->text : "") != 0)) return false;
  const IrInstr *s0 = c->operands[0];
  for (int o = 0; o < c->noperands; o++) {
    const IrInstr *s = c->operands[o];
    if (!is_slice(s) || s->operands[0] != i->operands[o]->operands[0] || !same_slice(s0, s)) return false;
  }
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  int groups = 0;
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    for (int k = 0; k < comp->ninstrs; k++) {
      IrInstr *i = comp->instrs[k];
      if (i->dead || (i->nusers == 0 && !i->is_root) || !on_similar_slices(i)) continue;
      /* The group: through the slices of the first operand's tensor. */
      IrInstr *src0 = i->operands[0]->operands[0];
      IrInstr **group = fx_malloc(sizeof(IrInstr *) * (size_t)(comp->ninstrs + 1));
      if (!group) return fx_error_set(cx->err, NULL, 0, 0, "slice-sinker: out of memory");
      int ng = 0;
      int64_t sum = 0;
      for (int u = 0; u < src0->nusers; u++) {
        IrInstr *sl = src0->users[u];
        if (!is_slice(sl)) continue;
        for (int v = 0; v < sl->nusers; v++) {
          IrInstr *cand = sl->users[v];
          bool seen = false;
          for (int g = 0; g < ng && !seen; g++) seen = group[g] == cand;
          if (!seen && cand->parent == comp && similar(i, cand)) {
            group[ng++] = cand;
            sum += ir_shape_elements(&cand->shape);
          }
        }
      }
      if (ng == 0 || sum < ir_shape_elements(&src0->shape)) {
        fx_free(group);
        continue;
      }
      /* One operation on the whole tensors, before the first member. */
      IrInstr *first = group[0];
      for (int g = 1; g < ng; g++)
        if (ir_computation_index(comp, group[g]) < ir_computation_index(comp, first)) first = group[g];
      IrInstr *srcs[IR_REMAP_SMALL];
      if (i->noperands > IR_REMAP_SMALL) {
        fx_free(group);
        continue;
      }
      for (int o = 0; o < i->noperands; o++) srcs[o] = i->operands[o]->operands[0];
      IrInstr *whole = ir_instr_copy(comp, i, srcs, i->name);
      if (!whole) {
        fx_free(group);
        return fx_error_set(cx->err, NULL, 0, 0, "slice-sinker: out of memory");
      }
      IrShape ws;
      if (!ir_shape_copy(&m->arena, &ws, &src0->shape)) {
        fx_free(group);
        return fx_error_set(cx->err, NULL, 0, 0, "slice-sinker: out of memory");
      }
      ws.type = i->shape.type;
      ir_shape_copy(&m->arena, &whole->shape, &ws);
      for (int g = 0; g < ng; g++) {
        IrInstr *mbr = group[g];
        IrInstr *sl = ir_instr_new_before(comp, mbr, IR_OP_SLICE, &mbr->shape, &whole, 1, mbr->operands[0]->name);
        if (!sl) {
          fx_free(group);
          return fx_error_set(cx->err, NULL, 0, 0, "slice-sinker: out of memory");
        }
        ir_attr_set_text(sl, "slice", ir_attr_text(mbr->operands[0], "slice"));
        simp_replace(mbr, sl);
      }
      ir_computation_sort(comp);
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = src0->name,
                        .result = whole->name, .accepted = true};
      pass_metric(&d, "operations", ng);
      pass_emit(cx->sink, &d, "%s of %d slice%s of %s runs once on %s (as %s) and each result is a slice of it",
                ir_op_name(i->op), ng, ng == 1 ? "" : "s", src0->name, src0->name, whole->name);
      groups++;
      fx_free(group);
      k = -1; /* the order changed: look again */
    }
  }
  *changed = groups > 0;
  return true;
}

const Pass pass_slice_sinker = {"slice-sinker",
                                "the same elementwise operation on slices of one tensor runs once on the tensor", run};
