/* fx_lower.c — lowering .fx statements to the IR, and the FxState API the shell calls.
 *
 * Flow: fx_feed parses a chunk, then lowers every chunk the state holds plus the new one into a
 * scratch module; only if that succeeds is the chunk kept, so a bad line leaves the state as it
 * was. fx_build_module lowers everything again into the module it returns. Lowering is cheap
 * (a CartPole script is a few hundred instructions), and re-lowering keeps the state trivially
 * consistent: it is just the accepted text.
 *
 * This file holds the statements (let, param, const, def, loop, out, assignment), the loop and
 * function lowering, and capture of outer values into loop bodies. Expressions and builtin
 * operations are in fx_ops.c. */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "fx_lower.h"
#include "../ir/ir.h"

typedef struct Lowering Lowering;
static void lowering_free(Lowering *w);

struct FxState {
  FxChunk **chunks;
  int nchunks, cap;
  /* The lowering of chunks[0..nchunks) kept between fx_feed calls, so that checking a new
     statement lowers only that statement (re-lowering everything before it made a script of N
     statements take quadratic time). NULL until the next feed rebuilds it (after an error). */
  Lowering *check;
};

/* ---------- small helpers ---------- */

bool fx_oom(FxLower *L) { return fx_err_at(L->err, L->pos, "out of memory"); }

const char *fx_shape_str(const IrShape *s, char *buf, size_t n) {
  ir_shape_format(s, false, buf, n);
  return buf;
}

/* True when every array a shape needs was allocated (copies fail silently when memory runs out). */
static bool shape_ok(const IrShape *s) {
  if (s->type == IR_TUPLE) {
    if (s->ntuple > 0 && !s->tuple) return false;
    for (int k = 0; k < s->ntuple; k++)
      if (!shape_ok(&s->tuple[k])) return false;
    return true;
  }
  return s->rank == 0 || (s->dims && (!s->has_layout || s->minor_to_major));
}

IrShape fx_shape(FxLower *L, IrType t, int rank, const int64_t *dims) {
  IrShape s = ir_shape_array(&L->m->arena, t, rank, dims);
  if (!shape_ok(&s)) {
    fx_oom(L);
    return ir_shape_scalar(t);
  }
  return s;
}

bool fx_copy_shape(FxLower *L, IrShape *dst, const IrShape *src) {
  ir_shape_copy(&L->m->arena, dst, src);
  return shape_ok(dst) || fx_oom(L);
}

IrInstr *fx_emit(FxLower *L, IrOpcode op, const IrShape *shape, IrInstr *const *ops, int n, const char *name) {
  /* After an error nothing more is built: the shape we were handed may be a stand-in. */
  if (L->err->set) return NULL;
  IrInstr *i = ir_instr_new(L->frame->comp, op, shape, ops, n, name);
  if (!i || !shape_ok(&i->shape)) {
    fx_oom(L);
    return NULL;
  }
  i->loc.file = L->loc_file;
  i->loc.line = L->pos.line;
  i->loc.col = L->pos.col;
  return i;
}

IrInstr *fx_emit_gte(FxLower *L, const IrShape *shape, IrInstr *tuple, int index, const char *name) {
  IrInstr *g = fx_emit(L, IR_OP_GET_TUPLE_ELEMENT, shape, &tuple, 1, name);
  if (g) ir_attr_set_int(g, "index", index);
  return g;
}

const char *fx_unique_comp_name(IrModule *m, const char *base) {
  if (!ir_module_find_computation(m, base)) return arena_strdup(&m->arena, base);
  for (int k = 1;; k++) {
    char buf[256];
    snprintf(buf, sizeof buf, "%.200s.%d", base, k);
    if (!ir_module_find_computation(m, buf)) return arena_strdup(&m->arena, buf);
  }
}

static IrComputation *new_comp(FxLower *L, const char *base) {
  const char *name = fx_unique_comp_name(L->m, base);
  IrComputation *c = name ? ir_computation_new(L->m, name) : NULL;
  if (!c) {
    fx_oom(L);
    return NULL;
  }
  c->has_signature = true;
  c->loc.file = L->loc_file;
  c->loc.line = L->pos.line;
  c->loc.col = L->pos.col;
  return c;
}

static IrInstr *new_param(FxLower *L, IrComputation *c, const IrShape *shape, const char *name) {
  FxFrame *saved = L->frame;
  FxFrame tmp = {0};
  tmp.comp = c;
  L->frame = &tmp;
  IrInstr *p = fx_emit(L, IR_OP_PARAMETER, shape, NULL, 0, name);
  L->frame = saved;
  if (!p) return NULL;
  p->param_number = c->nparams;
  int cap = c->nparams;
  if (arena_grow(&L->m->arena, (void **)&c->params, &cap, c->nparams + 1, sizeof(IrInstr *))) {
    fx_oom(L);
    return NULL;
  }
  c->params[c->nparams++] = p;
  return p;
}

/* ---------- capture: values a loop body reads from outside ---------- */

static IrInstr *capture(FxLower *L, FxFrame *f, IrInstr *v) {
  if (v->parent == f->comp) return v;
  if (!f->parent) {
    fx_err_at(L->err, L->pos, "internal error: '%s' is not visible here", v->name);
    return NULL;
  }
  IrInstr *outer = capture(L, f->parent, v);
  if (!outer) return NULL;
  for (int k = 0; k < f->ncap; k++)
    if (f->cap_outer[k] == outer) return f->cap_inner[k];
  Arena *a = &L->m->arena;
  int cap1 = f->cap_cap, cap2 = f->cap_cap;
  if (arena_grow(a, (void **)&f->cap_outer, &cap1, f->ncap + 1, sizeof(IrInstr *)) ||
      arena_grow(a, (void **)&f->cap_inner, &cap2, f->ncap + 1, sizeof(IrInstr *))) {
    fx_oom(L);
    return NULL;
  }
  f->cap_cap = cap1 < cap2 ? cap1 : cap2;
  FxFrame *saved = L->frame;
  L->frame = f;
  IrInstr *g = fx_emit_gte(L, &outer->shape, f->param, f->nslots + f->ncap, outer->name);
  L->frame = saved;
  if (!g) return NULL;
  f->cap_outer[f->ncap] = outer;
  f->cap_inner[f->ncap] = g;
  f->ncap++;
  return g;
}

IrInstr *fx_use(FxLower *L, IrInstr *v) { return v ? capture(L, L->frame, v) : NULL; }

/* ---------- bindings ---------- */

static const char *kind_word(FxBindKind k) {
  switch (k) {
  case B_LET: return "a let";
  case B_CONST: return "a const";
  case B_PARAM: return "a param";
  case B_VAR: return "a variable";
  case B_CARRY: return "a loop carry";
  case B_DEF: return "a function";
  case B_INDEX: return "a loop index";
  }
  return "a name";
}

/* Index of the visible binding of name, or -1. */
static int find_binding(FxLower *L, const char *name) {
  for (int k = L->nbinds - 1; k >= 0; k--) {
    FxBinding *b = &L->binds[k];
    if (strcmp(b->name, name) != 0) continue;
    if (k < L->barrier && !(b->kind == B_LET || b->kind == B_CONST || b->kind == B_DEF)) return -2 - k;
    return k;
  }
  return -1;
}

const FxBinding *fx_lookup(FxLower *L, const char *name, FxPos pos) {
  int k = find_binding(L, name);
  if (k <= -2) {
    fx_err_at(L->err, pos, "'%s' is defined outside this function; pass it as an argument", name);
    return NULL;
  }
  return k >= 0 ? &L->binds[k] : NULL;
}

static bool push_binding(FxLower *L, const char *name, FxBindKind kind, FxPos pos, const FxValue *v, const FxStmt *def) {
  if (L->nbinds == L->binds_cap) {
    int nc = L->binds_cap ? L->binds_cap * 2 : 32;
    FxBinding *nb = fx_realloc(L->binds, sizeof(FxBinding) * (size_t)nc);
    if (!nb) return fx_oom(L);
    L->binds = nb;
    L->binds_cap = nc;
  }
  FxBinding *b = &L->binds[L->nbinds++];
  memset(b, 0, sizeof *b);
  b->name = name;
  b->kind = kind;
  b->pos = pos;
  if (v) b->v = *v;
  b->def = def;
  return true;
}

/* Defines a let/const/param/def name: it must not exist yet. */
static bool define(FxLower *L, const char *name, FxBindKind kind, FxPos pos, const FxValue *v, const FxStmt *def) {
  if (fx_is_builtin(name) && kind == B_DEF)
    return fx_err_at(L->err, pos, "'%s' is a builtin function and cannot be redefined", name);
  for (int k = L->nbinds - 1; k >= 0; k--) {
    FxBinding *b = &L->binds[k];
    if (strcmp(b->name, name) != 0) continue;
    if (k < L->barrier && !(b->kind == B_LET || b->kind == B_CONST || b->kind == B_DEF)) break;
    return fx_err_at(L->err, pos, "'%s' is already defined (%s, at line %d)", name, kind_word(b->kind), b->pos.line);
  }
  return push_binding(L, name, kind, pos, v, def);
}

/* Assigns a variable: rebinding a variable or carry of this frame, else a new variable. */
static bool assign(FxLower *L, const char *name, FxPos pos, const FxValue *v) {
  int k = find_binding(L, name);
  if (k >= 0) {
    FxBinding *b = &L->binds[k];
    if (b->kind != B_VAR && b->kind != B_CARRY)
      return fx_err_at(L->err, pos, "cannot assign to '%s': it is %s (line %d)", name, kind_word(b->kind), b->pos.line);
    if (k < L->frame_start)
      return fx_err_at(L->err, pos, "cannot assign to '%s' inside the loop: it is defined outside; carry it: loop N carry (%s = %s) { ... }",
                       name, name, name);
    b->v = *v;
    b->pos = pos;
    return true;
  }
  return push_binding(L, name, B_VAR, pos, v, NULL);
}

/* ---------- statements ---------- */

typedef struct {
  IrInstr **outs;
  int nouts;
  FxValue last; /* the last value assigned at top level */
  bool have_last;
  bool have_out;
} Results;

static bool lower_block(FxLower *L, FxStmt **stmts, int n, Results *res, bool top);

static bool lower_loop(FxLower *L, const FxStmt *s) {
  int64_t trips;
  if (!fx_eval_int(L, s->value, "the loop count", &trips)) return false;
  if (trips < 0) return fx_err_at(L->err, s->value->pos, "the loop count must be >= 0, got %" PRId64, trips);
  if (trips > INT32_MAX) return fx_err_at(L->err, s->value->pos, "the loop count %" PRId64 " does not fit in s32", trips);
  int nc = s->nnames;
  IrInstr **init = fx_calloc((size_t)nc + 1, sizeof(IrInstr *));
  if (!init) return fx_oom(L);
  bool ok = false;
  FxFrame body = {0};
  IrComputation *bc = NULL, *cc = NULL;
  int saved_nbinds = L->nbinds, saved_start = L->frame_start, saved_nbinds_index = 0;
  FxFrame *outer = L->frame;
  /* Initial values, evaluated outside the loop. */
  for (int k = 0; k < nc; k++) {
    FxValue v;
    if (!fx_eval(L, s->values[k], NULL, &v)) goto done;
    if (v.kind != V_TENSOR && v.kind != V_SCALAR) {
      fx_err_at(L->err, s->values[k]->pos, "the initial value of '%s' must be an array or a number", s->names[k]);
      goto done;
    }
    if (!(init[k] = fx_tensor(L, &v, IR_INVALID, NULL))) goto done;
    if (init[k]->shape.type == IR_TUPLE) {
      fx_err_at(L->err, s->values[k]->pos, "a loop cannot carry a tuple");
      goto done;
    }
  }
  IrShape s32 = ir_shape_scalar(IR_S32);
  if (!(bc = new_comp(L, "loop_body")) || !(cc = new_comp(L, "loop_cond"))) goto done;
  body.comp = bc;
  body.parent = outer;
  body.nslots = 1 + nc;
  IrShape placeholder;
  memset(&placeholder, 0, sizeof placeholder);
  placeholder.type = IR_TUPLE;
  if (!(body.param = new_param(L, bc, &placeholder, "carry"))) goto done;
  L->frame = &body;
  L->frame_start = L->nbinds;
  IrInstr *counter = fx_emit(L, IR_OP_GET_TUPLE_ELEMENT, &s32, &body.param, 1, "counter");
  if (!counter) goto done;
  ir_attr_set_text(counter, "index", "0");
  if (s->index_name) {
    FxValue iv = {0};
    iv.kind = V_TENSOR;
    iv.t = counter;
    if (!push_binding(L, s->index_name, B_INDEX, s->index_pos, &iv, NULL)) goto done;
    saved_nbinds_index = 1;
  }
  for (int k = 0; k < nc; k++) {
    IrInstr *g = fx_emit_gte(L, &init[k]->shape, body.param, k + 1, s->names[k]);
    if (!g) goto done;
    FxValue v = {0};
    v.kind = V_TENSOR;
    v.t = g;
    if (!push_binding(L, s->names[k], B_CARRY, s->name_pos[k], &v, NULL)) goto done;
  }
  if (!lower_block(L, s->body, s->nbody, NULL, false)) goto done;
  L->pos = s->pos;
  /* The body's results: counter + 1, each carry, then the captured values unchanged. */
  {
    IrInstr *one = fx_const(L, IR_S32, 1, NULL);
    if (!one) goto done;
    IrInstr *ops2[2] = {counter, one};
    IrInstr *next = fx_emit(L, IR_OP_ADD, &s32, ops2, 2, NULL);
    if (!next) goto done;
    IrInstr **res = fx_calloc((size_t)(1 + nc), sizeof(IrInstr *));
    if (!res) {
      fx_oom(L);
      goto done;
    }
    res[0] = next;
    bool rok = true;
    for (int k = 0; k < nc && rok; k++) {
      FxBinding *b = &L->binds[saved_nbinds + saved_nbinds_index + k];
      IrInstr *r;
      if (b->v.kind == V_SCALAR) {
        r = fx_tensor(L, &b->v, init[k]->shape.type, NULL);
        if (r) r = fx_broadcast_to(L, r, init[k]->shape.rank, init[k]->shape.dims, NULL);
      } else if (b->v.kind == V_TENSOR) {
        r = fx_use(L, b->v.t);
      } else {
        fx_err_at(L->err, b->pos, "'%s' must stay an array inside the loop", s->names[k]);
        r = NULL;
      }
      if (!r) {
        rok = false;
        break;
      }
      if (!ir_shape_equal(&r->shape, &init[k]->shape)) {
        char a[128], c2[128];
        fx_err_at(L->err, b->pos, "loop carry '%s' changes from %s to %s inside the loop", s->names[k],
                  fx_shape_str(&init[k]->shape, a, sizeof a), fx_shape_str(&r->shape, c2, sizeof c2));
        rok = false;
        break;
      }
      res[1 + k] = r;
    }
    if (!rok) {
      fx_free(res);
      goto done;
    }
    int total = 1 + nc + body.ncap;
    IrInstr **elems = fx_calloc((size_t)total, sizeof(IrInstr *));
    IrShape tshape;
    memset(&tshape, 0, sizeof tshape);
    tshape.type = IR_TUPLE;
    tshape.ntuple = total;
    tshape.tuple = arena_alloc(&L->m->arena, sizeof(IrShape) * (size_t)total);
    if (!elems || !tshape.tuple) {
      fx_free(res);
      fx_free(elems);
      fx_oom(L);
      goto done;
    }
    for (int k = 0; k < 1 + nc; k++) elems[k] = res[k];
    for (int k = 0; k < body.ncap; k++) elems[1 + nc + k] = body.cap_inner[k];
    bool sok = true;
    for (int k = 0; k < total && sok; k++) sok = fx_copy_shape(L, &tshape.tuple[k], &elems[k]->shape);
    if (!sok) {
      fx_free(elems);
      goto done;
    }
    fx_free(res);
    IrInstr *root = fx_emit(L, IR_OP_TUPLE, &tshape, elems, total, NULL);
    if (!root) {
      fx_free(elems);
      goto done;
    }
    ir_set_root(bc, root);
    if (!fx_copy_shape(L, &body.param->shape, &tshape)) {
      fx_free(elems);
      goto done;
    }
    /* Condition: counter < trips. */
    FxFrame cf = {0};
    cf.comp = cc;
    IrInstr *cp = new_param(L, cc, &tshape, "carry");
    L->frame = &cf;
    IrInstr *cn = cp ? fx_emit(L, IR_OP_GET_TUPLE_ELEMENT, &s32, &cp, 1, "counter") : NULL;
    IrInstr *lim = cn ? fx_const(L, IR_S32, (double)trips, NULL) : NULL;
    IrShape pr = ir_shape_scalar(IR_PRED);
    IrInstr *cmpops[2] = {cn, lim};
    IrInstr *lt = lim ? fx_emit(L, IR_OP_COMPARE, &pr, cmpops, 2, NULL) : NULL;
    if (!lt) {
      fx_free(elems);
      goto done;
    }
    ir_attr_set_text(cn, "index", "0");
    ir_attr_set_text(lt, "direction", "LT");
    ir_set_root(cc, lt);
    /* Outside: the initial tuple, the while, and the carries' new values. */
    L->frame = outer;
    L->nbinds = saved_nbinds;
    L->frame_start = saved_start;
    IrInstr *zero = fx_const(L, IR_S32, 0, NULL);
    if (!zero) {
      fx_free(elems);
      goto done;
    }
    elems[0] = zero;
    for (int k = 0; k < nc; k++) elems[1 + k] = fx_use(L, init[k]);
    for (int k = 0; k < body.ncap; k++) elems[1 + nc + k] = body.cap_outer[k];
    IrInstr *tup = fx_emit(L, IR_OP_TUPLE, &tshape, elems, total, NULL);
    fx_free(elems);
    if (!tup) goto done;
    IrInstr *w = fx_emit(L, IR_OP_WHILE, &tshape, &tup, 1, NULL);
    if (!w) goto done;
    ir_attr_set_comp(w, "condition", cc);
    ir_attr_set_comp(w, "body", bc);
    char cfg[96];
    snprintf(cfg, sizeof cfg, "{\"known_trip_count\":{\"n\":\"%" PRId64 "\"}}", trips);
    ir_attr_set_text(w, "backend_config", cfg);
    for (int k = 0; k < nc; k++) {
      IrInstr *g = fx_emit_gte(L, &init[k]->shape, w, k + 1, s->names[k]);
      if (!g) goto done;
      FxValue v = {0};
      v.kind = V_TENSOR;
      v.t = g;
      if (!assign(L, s->names[k], s->name_pos[k], &v)) goto done;
    }
  }
  ok = true;
done:
  L->frame = outer;
  if (!ok) {
    L->nbinds = saved_nbinds;
    L->frame_start = saved_start;
  }
  fx_free(init);
  return ok;
}

/* Lowers a call of a user function: one computation per argument signature. */
bool fx_call_def(FxLower *L, const FxStmt *def, FxValue *args, int nargs, FxPos pos, const char *hint, FxValue *out) {
  const char *fname = def->names[0];
  if (nargs != def->nparams)
    return fx_err_at(L->err, pos, "%s() takes %d argument%s, got %d", fname, def->nparams, def->nparams == 1 ? "" : "s", nargs);
  IrInstr **ops = fx_calloc((size_t)(nargs ? nargs : 1), sizeof(IrInstr *));
  if (!ops) return fx_oom(L);
  bool ok = false;
  for (int k = 0; k < nargs; k++) {
    if (args[k].kind != V_TENSOR && args[k].kind != V_SCALAR) {
      fx_err_at(L->err, args[k].pos, "argument %d of %s() must be an array or a number", k + 1, fname);
      goto out;
    }
    if (!(ops[k] = fx_tensor(L, &args[k], IR_INVALID, NULL))) goto out;
  }
  FxInstance *inst = NULL;
  for (int i = 0; i < L->ninsts && !inst; i++) {
    FxInstance *c = &L->insts[i];
    if (c->def != def) continue;
    bool same = true;
    for (int k = 0; k < nargs && same; k++) same = ir_shape_equal(&c->args[k], &ops[k]->shape);
    if (same) inst = c;
  }
  if (inst && inst->in_progress) {
    fx_err_at(L->err, pos, "%s() calls itself; recursion is not supported", fname);
    goto out;
  }
  if (!inst) {
    for (int i = 0; i < L->ninsts; i++)
      if (L->insts[i].def == def && L->insts[i].in_progress) {
        fx_err_at(L->err, pos, "%s() calls itself; recursion is not supported", fname);
        goto out;
      }
    if (arena_grow(&L->m->arena, (void **)&L->insts, &L->insts_cap, L->ninsts + 1, sizeof(FxInstance))) {
      fx_oom(L);
      goto out;
    }
    int idx = L->ninsts++;
    inst = &L->insts[idx];
    memset(inst, 0, sizeof *inst);
    inst->def = def;
    inst->nargs = nargs;
    inst->args = arena_alloc(&L->m->arena, sizeof(IrShape) * (size_t)(nargs ? nargs : 1));
    if (!inst->args) {
      fx_oom(L);
      goto out;
    }
    for (int k = 0; k < nargs; k++)
      if (!fx_copy_shape(L, &inst->args[k], &ops[k]->shape)) goto out;
    inst->in_progress = true;
    FxPos saved_pos = L->pos;
    L->pos = def->pos;
    IrComputation *fc = new_comp(L, fname);
    if (!fc) goto out;
    FxFrame fr = {0};
    fr.comp = fc;
    FxFrame *saved_frame = L->frame;
    int saved_nbinds = L->nbinds, saved_start = L->frame_start, saved_barrier = L->barrier;
    bool saved_in_fn = L->in_function;
    const char *const *saved_multi = L->multi_names;
    int saved_nmulti = L->nmulti_names;
    L->multi_names = NULL;
    L->nmulti_names = 0;
    L->barrier = L->frame_start = L->nbinds;
    L->in_function = true;
    bool fok = true;
    for (int k = 0; k < nargs && fok; k++) {
      IrInstr *p = new_param(L, fc, &ops[k]->shape, def->params[k]);
      FxValue v = {0};
      v.kind = V_TENSOR;
      v.t = p;
      fok = p && push_binding(L, def->params[k], B_VAR, def->param_pos[k], &v, NULL);
    }
    L->frame = &fr;
    const FxStmt *ret = def->nbody > 0 ? def->body[def->nbody - 1] : NULL;
    if (fok && (!ret || ret->kind != S_RETURN)) {
      const FxStmt *early = NULL;
      for (int k = 0; k < def->nbody && !early; k++)
        if (def->body[k]->kind == S_RETURN) early = def->body[k];
      if (early) fx_err_at(L->err, early->pos, "return must be the last statement of function '%s'", fname);
      else fx_err_at(L->err, ret ? ret->pos : def->pos, "function '%s' must end with a return statement", fname);
      fok = false;
    }
    if (fok) fok = lower_block(L, def->body, def->nbody - 1, NULL, false);
    if (fok) {
      L->pos = ret->pos;
      int nr = ret->nvalues;
      IrInstr **rv = fx_calloc((size_t)nr, sizeof(IrInstr *));
      if (!rv) fok = fx_oom(L);
      for (int k = 0; fok && k < nr; k++) {
        FxValue v;
        fok = fx_eval(L, ret->values[k], NULL, &v);
        if (fok && v.kind != V_TENSOR && v.kind != V_SCALAR)
          fok = fx_err_at(L->err, ret->values[k]->pos, "a function can only return arrays or numbers");
        if (fok) fok = (rv[k] = fx_tensor(L, &v, IR_INVALID, NULL)) != NULL;
      }
      if (fok) {
        IrInstr *root = rv[0];
        if (nr > 1) {
          IrShape ts;
          memset(&ts, 0, sizeof ts);
          ts.type = IR_TUPLE;
          ts.ntuple = nr;
          ts.tuple = arena_alloc(&L->m->arena, sizeof(IrShape) * (size_t)nr);
          if (!ts.tuple) {
            fok = fx_oom(L);
          } else {
            for (int k = 0; k < nr && fok; k++) fok = fx_copy_shape(L, &ts.tuple[k], &rv[k]->shape);
            root = fok ? fx_emit(L, IR_OP_TUPLE, &ts, rv, nr, NULL) : NULL;
            fok = root != NULL;
          }
        }
        if (fok) {
          ir_set_root(fc, root);
          inst->comp = fc;
          inst->nresults = nr;
        }
      }
      fx_free(rv);
    }
    L->frame = saved_frame;
    L->nbinds = saved_nbinds;
    L->frame_start = saved_start;
    L->barrier = saved_barrier;
    L->in_function = saved_in_fn;
    L->multi_names = saved_multi;
    L->nmulti_names = saved_nmulti;
    L->pos = saved_pos;
    /* Re-find: the instance array may have moved while lowering nested calls. */
    inst = &L->insts[idx];
    inst->in_progress = false;
    if (!fok) goto out;
  }
  {
    IrInstr *call = fx_emit(L, IR_OP_CALL, &inst->comp->root->shape, ops, nargs, inst->nresults == 1 ? hint : NULL);
    if (!call) goto out;
    ir_attr_set_comp(call, "to_apply", inst->comp);
    memset(out, 0, sizeof *out);
    out->pos = pos;
    if (inst->nresults == 1) {
      out->kind = V_TENSOR;
      out->t = call;
    } else {
      out->kind = V_MULTI;
      out->nitems = inst->nresults;
      out->items = arena_alloc(&L->m->arena, sizeof(FxValue) * (size_t)inst->nresults);
      if (!out->items) {
        fx_oom(L);
        goto out;
      }
      for (int k = 0; k < inst->nresults; k++) {
        const char *nm = k < L->nmulti_names ? L->multi_names[k] : NULL;
        IrInstr *g = fx_emit_gte(L, &call->shape.tuple[k], call, k, nm);
        if (!g) goto out;
        out->items[k].kind = V_TENSOR;
        out->items[k].pos = pos;
        out->items[k].t = g;
      }
    }
  }
  ok = true;
out:
  fx_free(ops);
  return ok;
}

static bool lower_stmt(FxLower *L, const FxStmt *s, Results *res, bool top) {
  L->pos = s->pos;
  switch (s->kind) {
  case S_LET: {
    FxValue v;
    if (!fx_eval(L, s->value, NULL, &v)) return false;
    if (v.kind != V_SCALAR || v.st != IR_INVALID || !v.is_int)
      return fx_err_at(L->err, s->value->pos, "let needs a compile-time integer (use const for other numbers)");
    return define(L, s->names[0], B_LET, s->name_pos[0], &v, NULL);
  }
  case S_CONST: {
    FxValue v;
    if (!fx_eval(L, s->value, NULL, &v)) return false;
    if (v.kind != V_SCALAR)
      return fx_err_at(L->err, s->value->pos, "const needs a compile-time number (literals, lets and consts)");
    IrType t = s->type ? s->type->type : (v.st == IR_PRED ? IR_PRED : IR_F32);
    if (v.st != IR_INVALID && v.st != t) {
      return fx_err_at(L->err, s->value->pos, "const '%s' is %s but its value is %s", s->names[0], ir_type_name(t), ir_type_name(v.st));
    }
    if ((ir_type_is_int(t) || t == IR_PRED) && v.st == IR_INVALID && !v.is_int)
      return fx_err_at(L->err, s->value->pos, "const '%s' is %s but its value %g is not an integer", s->names[0], ir_type_name(t), v.f);
    if (t == IR_PRED && v.st != IR_PRED)
      return fx_err_at(L->err, s->value->pos, "a pred const needs true or false");
    if (ir_type_is_complex(t)) return fx_err_at(L->err, s->type->pos, "complex constants are not supported");
    v.st = t;
    if (ir_type_is_int(t) || t == IR_PRED) v.f = (double)v.i;
    v.is_int = ir_type_is_int(t) || t == IR_PRED;
    v.cname = s->names[0];
    return define(L, s->names[0], B_CONST, s->name_pos[0], &v, NULL);
  }
  case S_PARAM: {
    if (!top) return fx_err_at(L->err, s->pos, "param is only allowed at the top level");
    FxValue tv;
    if (!fx_eval(L, s->type, NULL, &tv)) return false;
    if (!tv.has_dims) tv.rank = 0;
    if (find_binding(L, s->names[0]) >= 0) {
      const FxBinding *b = &L->binds[find_binding(L, s->names[0])];
      return fx_err_at(L->err, s->name_pos[0], "'%s' is already defined (%s, at line %d)", s->names[0], kind_word(b->kind), b->pos.line);
    }
    IrShape sh = tv.rank ? fx_shape(L, tv.ty, tv.rank, tv.dims) : ir_shape_scalar(tv.ty);
    IrInstr *p = new_param(L, L->frame->comp, &sh, s->names[0]);
    if (!p) return false;
    FxValue v = {0};
    v.kind = V_TENSOR;
    v.t = p;
    return define(L, s->names[0], B_PARAM, s->name_pos[0], &v, NULL);
  }
  case S_DEF:
    if (!top) return fx_err_at(L->err, s->pos, "def is only allowed at the top level");
    return define(L, s->names[0], B_DEF, s->name_pos[0], NULL, s);
  case S_LOOP:
    return lower_loop(L, s);
  case S_OUT: {
    if (!top) return fx_err_at(L->err, s->pos, "out is only allowed at the top level");
    IrInstr **outs = arena_alloc(&L->m->arena, sizeof(IrInstr *) * (size_t)s->nvalues);
    if (!outs) return fx_oom(L);
    for (int k = 0; k < s->nvalues; k++) {
      FxValue v;
      if (!fx_eval(L, s->values[k], NULL, &v)) return false;
      if (v.kind != V_TENSOR && v.kind != V_SCALAR)
        return fx_err_at(L->err, s->values[k]->pos, "out takes arrays or numbers");
      if (!(outs[k] = fx_tensor(L, &v, IR_INVALID, NULL))) return false;
    }
    res->outs = outs;
    res->nouts = s->nvalues;
    res->have_out = true;
    return true;
  }
  case S_RETURN:
    return fx_err_at(L->err, s->pos, L->in_function ? "return must be the last statement of the function" : "return outside a function");
  case S_ASSIGN: {
    FxValue v;
    L->multi_names = s->names;
    L->nmulti_names = s->nnames;
    bool ok = fx_eval(L, s->value, s->nnames == 1 ? s->names[0] : NULL, &v);
    L->multi_names = NULL;
    L->nmulti_names = 0;
    if (!ok) return false;
    if (s->nnames == 1) {
      if (v.kind == V_MULTI)
        return fx_err_at(L->err, s->value->pos, "this call returns %d values; assign each: a, b = ...", v.nitems);
      if (v.kind != V_TENSOR && v.kind != V_SCALAR)
        return fx_err_at(L->err, s->value->pos, "only arrays and numbers can be assigned");
      if (!assign(L, s->names[0], s->name_pos[0], &v)) return false;
      if (top && res) {
        res->last = v;
        res->have_last = true;
      }
      return true;
    }
    if (v.kind != V_MULTI)
      return fx_err_at(L->err, s->value->pos, "%d names are assigned but the value is a single array", s->nnames);
    if (v.nitems != s->nnames)
      return fx_err_at(L->err, s->value->pos, "%d names are assigned but the call returns %d values", s->nnames, v.nitems);
    for (int k = 0; k < s->nnames; k++)
      if (!assign(L, s->names[k], s->name_pos[k], &v.items[k])) return false;
    if (top && res) {
      res->last = v.items[s->nnames - 1];
      res->have_last = true;
    }
    return true;
  }
  }
  return true;
}

static bool lower_block(FxLower *L, FxStmt **stmts, int n, Results *res, bool top) {
  for (int k = 0; k < n; k++)
    if (!lower_stmt(L, stmts[k], res, top)) return false;
  return true;
}

/* ---------- the state ---------- */

static void chunk_free(FxChunk *ch) {
  if (!ch) return;
  arena_free(&ch->arena);
  fx_free(ch);
}

FxState *fx_state_new(void) { return fx_calloc(1, sizeof(FxState)); }

void fx_state_free(FxState *st) {
  if (!st) return;
  lowering_free(st->check);
  for (int k = 0; k < st->nchunks; k++) chunk_free(st->chunks[k]);
  fx_free(st->chunks);
  fx_free(st);
}

int fx_state_statements(const FxState *st) {
  int n = 0;
  for (int k = 0; st && k < st->nchunks; k++) n += st->chunks[k]->nstmts;
  return n;
}

/* Orders computations as XLA prints them: callees before callers, the entry last. */
static bool order_comps(IrModule *m) {
  IrComputation **post = fx_malloc(sizeof(IrComputation *) * (size_t)(m->ncomps + 1));
  if (!post) return false;
  int n = ir_module_postorder(m, post, m->ncomps + 1);
  if (n <= 0 || n > m->ncomps) {
    fx_free(post);
    return false;
  }
  /* Computations no longer reached (functions never called) drop out, and out of the name index. */
  for (int k = 0; k < m->ncomps; k++) {
    bool kept = false;
    for (int j = 0; j < n && !kept; j++) kept = post[j] == m->comps[k];
    if (!kept) ir_module_forget_computation(m, m->comps[k]);
  }
  memcpy(m->comps, post, sizeof(IrComputation *) * (size_t)n);
  m->ncomps = n;
  fx_free(post);
  return true;
}

/* ---------- a lowering in progress ----------
 *
 * One module being built from chunks in order: fx_build_module lowers every chunk and finishes
 * (root, computation order, verification); fx_feed keeps one open (FxState.check) and lowers each
 * new chunk onto it, so a statement is checked in time proportional to itself. */
struct Lowering {
  IrModule *m;
  FxLower L;
  FxFrame top;
  Results res;
  const char *last_file;
  int nchunks; /* chunks lowered so far */
};

static void lowering_free(Lowering *w) {
  if (!w) return;
  fx_free(w->L.binds);
  ir_module_free(w->m);
  fx_free(w);
}

static Lowering *lowering_new(const char *name, FxError *err) {
  Lowering *w = fx_calloc(1, sizeof *w);
  IrModule *m = w ? ir_module_new(name ? name : "fx") : NULL;
  IrComputation *entry = m ? ir_computation_new(m, "main") : NULL;
  if (!entry) {
    if (m) ir_module_free(m);
    fx_free(w);
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  w->m = m;
  w->L.m = m;
  w->L.err = err;
  w->top.comp = entry;
  w->L.frame = &w->top; /* w is on the heap: the frame stays put between chunks */
  entry->is_entry = true;
  entry->has_signature = true;
  m->entry = entry;
  return w;
}

/* Lowers one more chunk; false with err filled (w is then unusable: partly lowered). */
static bool lowering_add(Lowering *w, FxChunk *ch, FxError *err) {
  w->L.err = err;
  if (!w->last_file || strcmp(w->last_file, ch->filename) != 0) {
    w->L.loc_file = arena_strdup(&w->m->arena, ch->filename);
    w->last_file = ch->filename;
  }
  if (w->nchunks++ == 0) w->m->source_file = w->L.loc_file;
  return lower_block(&w->L, ch->stmts, ch->nstmts, &w->res, true);
}

/* Gives the module its root (the outs, or the last value), orders and verifies it; frees w and
 * returns the module, or NULL with err filled. */
static IrModule *lowering_finish(Lowering *w, FxError *err) {
  IrModule *m = w->m;
  FxLower *L = &w->L;
  Results *res = &w->res;
  IrComputation *entry = m->entry;
  L->err = err;
  bool ok = true;
  if (res->have_out) {
    IrShape ts;
    memset(&ts, 0, sizeof ts);
    ts.type = IR_TUPLE;
    ts.ntuple = res->nouts;
    ts.tuple = arena_alloc(&m->arena, sizeof(IrShape) * (size_t)res->nouts);
    ok = ts.tuple != NULL;
    for (int k = 0; ok && k < res->nouts; k++) ok = fx_copy_shape(L, &ts.tuple[k], &res->outs[k]->shape);
    IrInstr *root = ok ? fx_emit(L, IR_OP_TUPLE, &ts, res->outs, res->nouts, NULL) : NULL;
    if (root) {
      root->loc = res->outs[res->nouts - 1]->loc;
      ir_set_root(entry, root);
    }
    ok = root != NULL;
    if (!ok) fx_error_set(err, NULL, 0, 0, "out of memory");
  } else if (res->have_last) {
    IrInstr *root = fx_tensor(L, &res->last, IR_INVALID, NULL);
    if (root) ir_set_root(entry, root);
    ok = root != NULL;
  } else {
    fx_error_set(err, NULL, 0, 0, "nothing to build: the .fx input computes no value (assign one, or list results with out)");
    ok = false;
  }
  if (ok) ok = order_comps(m);
  /* A lowering that ran out of memory half-way can leave a module missing an attribute; the
   * verifier catches it, and any other inconsistency, before anyone sees the module. */
  if (ok && !ir_verify(m, err)) ok = false;
  if (!ok && !err->set) fx_error_set(err, NULL, 0, 0, "out of memory");
  w->m = ok ? NULL : m; /* kept by the caller, or freed with w */
  lowering_free(w);
  return ok ? m : NULL;
}

bool fx_feed(FxState *st, const char *text, const char *filename, int first_line, FxError *err) {
  FxChunk *ch = fx_calloc(1, sizeof *ch);
  if (!ch) return fx_error_set(err, filename, 0, 0, "out of memory");
  arena_init(&ch->arena);
  ch->text = arena_strdup(&ch->arena, text ? text : "");
  ch->filename = arena_strdup(&ch->arena, filename ? filename : "<input>");
  ch->first_line = first_line > 0 ? first_line : 1;
  if (!ch->text || !ch->filename) {
    chunk_free(ch);
    return fx_error_set(err, filename, 0, 0, "out of memory");
  }
  if (!fx_lex(ch, err) || !fx_parse(ch, err)) {
    chunk_free(ch);
    return false;
  }
  if (st->nchunks == st->cap) {
    int nc = st->cap ? st->cap * 2 : 8;
    FxChunk **n = fx_realloc(st->chunks, sizeof(FxChunk *) * (size_t)nc);
    if (!n) {
      chunk_free(ch);
      return fx_error_set(err, filename, 0, 0, "out of memory");
    }
    st->chunks = n;
    st->cap = nc;
  }
  /* (Re)build the kept lowering of the accepted chunks when an error discarded it. */
  bool ok = true;
  if (!st->check) {
    st->check = lowering_new("check", err);
    ok = st->check != NULL;
    for (int k = 0; ok && k < st->nchunks; k++) ok = lowering_add(st->check, st->chunks[k], err);
  }
  if (ok) ok = lowering_add(st->check, ch, err);
  if (!ok) {
    /* partly lowered: discarded, and rebuilt from the accepted chunks at the next feed */
    lowering_free(st->check);
    st->check = NULL;
    chunk_free(ch);
    return false;
  }
  st->chunks[st->nchunks++] = ch;
  return true;
}

IrModule *fx_build_module(FxState *st, const char *module_name, FxError *err) {
  if (!st) {
    fx_error_set(err, NULL, 0, 0, "nothing to build");
    return NULL;
  }
  Lowering *w = lowering_new(module_name, err);
  bool ok = w != NULL;
  for (int k = 0; ok && k < st->nchunks; k++) ok = lowering_add(w, st->chunks[k], err);
  if (!ok) {
    if (!err->set) fx_error_set(err, NULL, 0, 0, "out of memory");
    lowering_free(w);
    return NULL;
  }
  return lowering_finish(w, err);
}
