/* pass_while_simplifier.c — XLA's WhileLoopSimplifier, the parts that matter before fusion:
 *
 *  - a loop that runs zero times (known_trip_count 0 in its backend_config, or a counter that
 *    starts at or past its limit) is replaced by its initial value;
 *  - dead carried values are removed: element j of the loop's tuple goes when the condition does
 *    not read it, no other element's next value depends on it, nothing in the body with a side
 *    effect depends on it, and nothing after the loop reads it.
 *
 * Removing element j edits the loop in place: the body's and condition's parameters and the
 * body's root lose element j, get-tuple-element indices above j shift down, the initial tuple
 * loses operand j, and so does the while's shape. Only loops whose body and condition are not
 * shared with another caller are edited. Each removal is reported:
 * "removed element 2 (f32[4]) of while.7: nothing reads it". */
#include <inttypes.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* ---------- trip count ---------- */

/* The trip count when it is known: backend_config's known_trip_count, or the fori_loop pattern
 * (condition counter < N on a counter starting from a constant). Returns -1 when unknown. */
static int64_t trip_count(const IrInstr *w) {
  const char *cfg = ir_attr_text(w, "backend_config");
  if (cfg) {
    const char *p = strstr(cfg, "\"known_trip_count\"");
    if (p && (p = strstr(p, "\"n\""))) {
      p += 3;
      while (*p == ':' || *p == ' ' || *p == '"') p++;
      char *end;
      long long v = strtoll(p, &end, 10);
      if (end != p) return v;
    }
  }
  IrComputation *cond = ir_attr_comp(w, "condition");
  if (!cond || !cond->root || cond->root->op != IR_OP_COMPARE || cond->root->noperands != 2) return -1;
  const char *dir = ir_compare_direction(cond->root);
  IrInstr *g = cond->root->operands[0], *lim = cond->root->operands[1];
  if (!dir || strcmp(dir, "LT") != 0 || !g || !lim || g->op != IR_OP_GET_TUPLE_ELEMENT || lim->op != IR_OP_CONSTANT) return -1;
  if (g->operands[0]->op != IR_OP_PARAMETER) return -1;
  int64_t idx;
  double n;
  if (!ir_attr_int(g, "index", &idx) || !simp_splat_value(lim, &n)) return -1;
  IrInstr *init = w->operands[0];
  if (!init || init->op != IR_OP_TUPLE || idx < 0 || idx >= init->noperands) return -1;
  double start;
  if (!simp_splat_value(init->operands[idx], &start)) return -1;
  /* Only the zero-trip case is decided from the pattern (it needs no knowledge of the body). */
  return start >= n ? 0 : -1;
}

/* ---------- dead elements ---------- */

/* True when every user of param is a get-tuple-element; collects, per element, whether it is
 * read (a get-tuple-element nothing uses is not a read). */
static bool element_reads(const IrInstr *param, bool *read, int n) {
  for (int u = 0; u < param->nusers; u++) {
    const IrInstr *g = param->users[u];
    int64_t idx;
    if (g->op != IR_OP_GET_TUPLE_ELEMENT || !ir_attr_int(g, "index", &idx) || idx < 0 || idx >= n) return false;
    if (g->nusers > 0 || g == g->parent->root) read[idx] = true;
  }
  return true;
}

/* Removes the unused get-tuple-elements of element j among v's users. */
static void drop_unused_reads(IrInstr *v, int64_t j) {
  for (int u = v->nusers - 1; u >= 0; u--) {
    IrInstr *g = v->users[u];
    int64_t idx;
    if (g->op == IR_OP_GET_TUPLE_ELEMENT && ir_attr_int(g, "index", &idx) && idx == j && g->nusers == 0 &&
        g != g->parent->root)
      ir_instr_remove(g);
  }
}

/* Which carried elements each instruction of the body depends on: one bit per element, a row of
 * words per position in c (a get-tuple-element of the parameter carries its element's bit, any
 * other instruction the union of its operands'): one walk for all elements instead of one walk
 * of the body per element. Returns NULL when out of memory. */
static uint64_t *element_deps(const IrComputation *c, const IrInstr *param, int n, int *words) {
  int w = (n + 63) / 64;
  *words = w;
  uint64_t *bits = fx_calloc((size_t)c->ninstrs * (size_t)w + 1, sizeof(uint64_t));
  if (!bits) return NULL;
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = (void *)(intptr_t)(k + 1);
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *i = c->instrs[k];
    uint64_t *row = bits + (size_t)k * (size_t)w;
    if (i->op == IR_OP_GET_TUPLE_ELEMENT && i->operands[0] == param) {
      int64_t idx;
      if (ir_attr_int(i, "index", &idx) && idx >= 0 && idx < n) row[idx / 64] |= 1ull << (idx % 64);
      continue;
    }
    for (int o = 0; o < i->noperands; o++) {
      const IrInstr *op = i->operands[o];
      if (!op || op->parent != c) continue;
      intptr_t pos = (intptr_t)op->aux - 1;
      if (pos < 0 || pos >= c->ninstrs) continue;
      const uint64_t *from = bits + (size_t)pos * (size_t)w;
      for (int q = 0; q < w; q++) row[q] |= from[q];
    }
  }
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = NULL;
  return bits;
}

static bool has_bit(const uint64_t *bits, int words, int pos, int64_t j) {
  return (bits[(size_t)pos * (size_t)words + (size_t)(j / 64)] >> (j % 64)) & 1u;
}

/* Whether the root's operand j (in c) depends on element j. */
static bool root_operand_depends(const IrComputation *c, const uint64_t *bits, int words, int64_t j) {
  const IrInstr *o = c->root->operands[j];
  if (!o || o->parent != c) return false;
  int pos = ir_computation_index(c, o);
  return pos >= 0 && has_bit(bits, words, pos, j);
}

/* Marks (in mark[], indexed by position in c) everything that depends on the parameter's
 * element j. Returns false when a dependent other than the root has side effects. */
static bool dependents(const IrComputation *c, const uint64_t *bits, int words, int64_t j, char *mark) {
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    mark[k] = has_bit(bits, words, k, j);
    if (mark[k] && i != c->root && !simp_is_pure(i)) return false;
  }
  return true;
}

/* feeds[j]: how many operands of the body's root depend on element j (each operand slot once). */
static int *root_feeds(const IrComputation *c, const uint64_t *bits, int words, int n) {
  int *feeds = fx_calloc((size_t)n + 1, sizeof(int));
  if (!feeds) return NULL;
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = (void *)(intptr_t)(k + 1);
  for (int k = 0; k < c->root->noperands; k++) {
    const IrInstr *o = c->root->operands[k];
    intptr_t pos = o && o->parent == c ? (intptr_t)o->aux - 1 : -1;
    if (pos < 0 || pos >= c->ninstrs) continue;
    for (int j = 0; j < n; j++)
      if (has_bit(bits, words, (int)pos, j)) feeds[j]++;
  }
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = NULL;
  return feeds;
}

static IrShape tuple_without(Arena *a, const IrShape *t, int j, bool *ok) {
  IrShape s;
  memset(&s, 0, sizeof s);
  s.type = IR_TUPLE;
  s.ntuple = t->ntuple - 1;
  *ok = true;
  if (s.ntuple == 0) return s;
  s.tuple = arena_alloc(a, sizeof(IrShape) * (size_t)s.ntuple);
  if (!s.tuple) {
    *ok = false;
    return s;
  }
  for (int k = 0, w = 0; k < t->ntuple; k++)
    if (k != j) ir_shape_copy(a, &s.tuple[w++], &t->tuple[k]);
  return s;
}

/* Shifts get-tuple-element indices above j down by one among v's users. */
static void shift_gtes(IrInstr *v, int64_t j) {
  for (int u = 0; u < v->nusers; u++) {
    IrInstr *g = v->users[u];
    int64_t idx;
    if (g->op != IR_OP_GET_TUPLE_ELEMENT || !ir_attr_int(g, "index", &idx) || idx <= j) continue;
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, idx - 1);
    ir_attr_set_text(g, "index", buf);
  }
}

/* Tries to remove one dead element of w. Returns 1 when removed, 0 when none, -1 on error. */
static int remove_dead_element(IrModule *m, IrInstr *w, PassContext *cx, const int *callers) {
  IrComputation *body = ir_attr_comp(w, "body"), *cond = ir_attr_comp(w, "condition");
  IrInstr *init = w->operands[0];
  if (!body || !cond || !init || body == cond || w->shape.type != IR_TUPLE) return 0;
  int n = w->shape.ntuple;
  if (n < 2 || body->nparams != 1 || cond->nparams != 1 || !body->root || body->root->op != IR_OP_TUPLE ||
      body->root->noperands != n)
    return 0;
  if (w == w->parent->root || callers[body->id] != 1 || callers[cond->id] != 1) return 0;
  /* The initial value must be a tuple only this loop uses (as fori_loop and scan build it), so
   * dropping an element never adds instructions. */
  if (init->op != IR_OP_TUPLE || init->nusers != 1 || init == init->parent->root || init->noperands != n) return 0;
  /* The while's own users must all be get-tuple-elements. */
  bool *used_after = fx_calloc((size_t)n, sizeof(bool)), *cond_reads = fx_calloc((size_t)n, sizeof(bool)),
       *body_reads = fx_calloc((size_t)n, sizeof(bool));
  char *mark = fx_calloc((size_t)body->ninstrs + 1, 1);
  uint64_t *bits = NULL;
  int *feeds = NULL;
  int result = 0;
  if (!used_after || !cond_reads || !body_reads || !mark) {
    result = -1;
    goto out;
  }
  if (!element_reads(w, used_after, n) || !element_reads(cond->params[0], cond_reads, n) ||
      !element_reads(body->params[0], body_reads, n))
    goto out;
  int words = 0;
  bits = element_deps(body, body->params[0], n, &words);
  feeds = bits ? root_feeds(body, bits, words, n) : NULL;
  if (!feeds) {
    result = -1;
    goto out;
  }
  for (int j = n - 1; j >= 0; j--) {
    if (used_after[j] || cond_reads[j]) continue;
    /* No other element's next value may depend on element j: of the root's operands, at most
       operand j itself does. */
    int own = feeds[j] > 0 && root_operand_depends(body, bits, words, j);
    if (feeds[j] - own > 0 || !dependents(body, bits, words, j, mark)) continue;
    /* Element j is dead: edit the loop. Collect what depends on it first (positions move as
     * instructions go). */
    IrInstr **deps = fx_calloc((size_t)body->ninstrs + 1, sizeof(IrInstr *));
    if (!deps) {
      result = -1;
      goto out;
    }
    int ndeps = 0;
    for (int q = 0; q < body->ninstrs; q++)
      if (mark[q] && body->instrs[q] != body->root) deps[ndeps++] = body->instrs[q];
    char shape[128];
    ir_shape_format(&w->shape.tuple[j], false, shape, sizeof shape);
    bool ok1, ok2;
    IrShape ns = tuple_without(&m->arena, &w->shape, j, &ok1);
    IrShape ns2 = tuple_without(&m->arena, &w->shape, j, &ok2);
    if (!ok1 || !ok2) {
      fx_free(deps);
      result = -1;
      goto out;
    }
    IrInstr *broot = body->root;
    IrInstr *dead_next = broot->operands[j];
    simp_remove_operand(broot, j);
    broot->shape = ns2;
    /* Everything that depended on element j fed only the removed root operand: remove it, users
     * before operands, then whatever else the removed operand leaves unused. */
    for (int q = ndeps - 1; q >= 0; q--)
      if (!deps[q]->dead && deps[q]->nusers == 0) ir_instr_remove(deps[q]);
    fx_free(deps);
    if (!dead_next->dead) simp_drop_dead(dead_next);
    IrInstr *bp = body->params[0];
    drop_unused_reads(bp, j);
    shift_gtes(bp, j);
    bp->shape = ns;
    IrInstr *cp = cond->params[0];
    drop_unused_reads(cp, j);
    shift_gtes(cp, j);
    ir_shape_copy(&m->arena, &cp->shape, &ns);
    IrInstr *gone = init->operands[j];
    simp_remove_operand(init, j);
    ir_shape_copy(&m->arena, &init->shape, &ns);
    simp_drop_dead(gone);
    drop_unused_reads(w, j);
    shift_gtes(w, j);
    ir_shape_copy(&m->arena, &w->shape, &ns);
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "remove", .producer = w->name, .accepted = true};
    pass_metric(&d, "element", j);
    pass_emit(cx->sink, &d, "removed element %d (%s) of %s: neither the condition, the other carried values nor the code after the loop read it",
              j, shape, w->name);
    result = 1;
    break;
  }
out:
  fx_free(used_after);
  fx_free(cond_reads);
  fx_free(body_reads);
  fx_free(mark);
  fx_free(bits);
  fx_free(feeds);
  return result;
}


static bool run_while_simplifier(IrModule *m, PassContext *cx, bool *changed) {
  int edits = 0;
  int *callers = simp_count_callers(m);
  if (!callers) return fx_error_set(cx->err, NULL, 0, 0, "while-loop-simplifier: out of memory");
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    for (int k = 0; k < comp->ninstrs; k++) {
      IrInstr *w = comp->instrs[k];
      if (w->dead || w->op != IR_OP_WHILE || w->noperands != 1 || !w->operands[0]) continue;
      if (trip_count(w) == 0 && ir_shape_equal(&w->shape, &w->operands[0]->shape)) {
        IrInstr *init = w->operands[0];
        PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "remove", .producer = w->name,
                          .result = init->name, .accepted = true};
        pass_metric(&d, "trip_count", 0);
        pass_emit(cx->sink, &d, "replaced %s by its initial value %s: the loop runs zero times", w->name, init->name);
        int n0 = comp->ninstrs;
        ir_replace_all_uses(w, init);
        /* The while goes even with its side effects: a loop that never runs has none. */
        ir_set_operand(w, 0, NULL);
        ir_instr_remove(w);
        for (int a = 0; a < w->nattrs; a++)
          if (w->attrs[a].kind == IR_ATTR_COMP)
            for (int q = 0; q < w->attrs[a].ncomps; q++)
              if (w->attrs[a].comps[q]) callers[w->attrs[a].comps[q]->id]--;
        edits++;
        k -= n0 - comp->ninstrs;
        if (k < -1) k = -1;
        continue;
      }
      for (int guard = 0; guard < 1024; guard++) {
        int r = remove_dead_element(m, w, cx, callers);
        if (r < 0) {
          fx_free(callers);
          return fx_error_set(cx->err, NULL, 0, 0, "while-loop-simplifier: out of memory");
        }
        if (r == 0) break;
        edits++;
      }
    }
  }
  fx_free(callers);
  if (edits) ir_module_remove_unreachable(m);
  *changed = edits > 0;
  return true;
}

const Pass pass_while_simplifier = {"while-loop-simplifier",
                                    "removes dead carried values of while loops and loops that run zero times",
                                    run_while_simplifier};
