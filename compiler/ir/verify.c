/* verify.c — checks that a module is sound: run after every parse and every pass.
 *
 * Structure first (one entry, unique names, parents, roots, parameters, operand/user links in
 * both directions, topological order, arity, called computations present and acyclic), then every
 * instruction's declared shape against ir_infer_shape (shape_infer.c), which also checks called
 * computations' signatures.  The first problem found is reported at the instruction's place. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "verify.h"
#include "ir_internal.h"

static const char *file_of(const IrModule *m, const IrLoc *l) { return l->file ? l->file : m->source_file; }

static bool verr(const IrModule *m, const IrLoc *l, FxError *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool verr(const IrModule *m, const IrLoc *l, FxError *err, const char *fmt, ...) {
  char msg[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  static const IrLoc none = {NULL, 0, 0};
  if (!l) l = &none;
  return fx_error_set(err, file_of(m, l), l->line, l->col, "%s", msg);
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Name -> instruction set for the uniqueness check. Each slot keeps its name's hash, so a probe
 * past another name reads the slot array only, not the instruction and its name elsewhere in
 * memory (the misses dominated verifying a 100,000-instruction module). */
typedef struct {
  const IrInstr **slots;
  uint64_t *hashes;
  size_t cap;
} NameSet;

static const IrInstr *nameset_add(NameSet *s, const IrInstr *i) {
  uint64_t h = hash_str(i->name);
  size_t k = h & (s->cap - 1);
  while (s->slots[k]) {
    if (s->hashes[k] == h && strcmp(s->slots[k]->name, i->name) == 0) return s->slots[k];
    k = (k + 1) & (s->cap - 1);
  }
  s->slots[k] = i;
  s->hashes[k] = h;
  return NULL;
}

/* A while loop's backend_config may state its trip count ({"known_trip_count":{"n":"N"}}); the
   plan multiplies launches and bytes by it, so it must be a plain integer in [0, 2^62], which
   leaves room for the arithmetic on it (99999999999999999999999 was read as INT64_MAX). */
static bool check_trip_count(const IrModule *m, const IrInstr *i, FxError *err) {
  const char *bc = ir_attr_text(i, "backend_config");
  const char *p = bc ? strstr(bc, "known_trip_count") : NULL;
  if (!p || !(p = strstr(p, "\"n\""))) return true;
  p += 3;
  while (*p == ' ' || *p == ':' || *p == '"') p++;
  const char *q = p;
  uint64_t n = 0;
  bool big = false;
  for (; *q >= '0' && *q <= '9'; q++) {
    n = n * 10 + (uint64_t)(*q - '0');
    if (n > (1ull << 62)) big = true, n = 1ull << 62;
  }
  if (q == p || (*q != '"' && *q != '}' && *q != ',' && *q != ' '))
    return verr(m, &i->loc, err, "'%%%s': known_trip_count must be a non-negative integer", i->name);
  if (big) return verr(m, &i->loc, err, "'%%%s': known_trip_count %.*s is too large (the limit is 2^62)", i->name, (int)(q - p > 40 ? 40 : q - p), p);
  return true;
}

/* Edges by instruction id: the instructions of list[start[id]..start[id+1]). */
typedef struct {
  int *start;
  const IrInstr **list;
} EdgeLists;

static void edges_free(EdgeLists *e) {
  fx_free(e->start);
  fx_free(e->list);
}

/* by_user: for each instruction u, the instructions that list u among their users; else for each
   v, the instructions that have v as an operand. Links to ids outside the module are skipped
   (the per-instruction checks report them). */
static bool edges_build(const IrModule *m, int npos, bool by_user, EdgeLists *e) {
  size_t n = 0;
  for (int k = 0; k < m->ncomps; k++)
    for (int j = 0; j < m->comps[k]->ninstrs; j++) n += (size_t)(by_user ? m->comps[k]->instrs[j]->nusers : m->comps[k]->instrs[j]->noperands);
  e->start = fx_calloc((size_t)npos + 2, sizeof(int));
  e->list = fx_malloc(sizeof(IrInstr *) * (n + 1));
  if (!e->start || !e->list) return false;
  for (int pass = 0; pass < 2; pass++) {
    for (int k = 0; k < m->ncomps; k++)
      for (int j = 0; j < m->comps[k]->ninstrs; j++) {
        const IrInstr *i = m->comps[k]->instrs[j];
        int cnt = by_user ? i->nusers : i->noperands;
        for (int q = 0; q < cnt; q++) {
          const IrInstr *o = by_user ? i->users[q] : i->operands[q];
          if (!o || o->id < 0 || o->id >= npos) continue;
          if (pass == 0) e->start[o->id + 2]++;
          else e->list[e->start[o->id + 1]++] = i;
        }
      }
    /* counts at [id+2] become starts at [id+1]; the fill then moves each to [id] */
    if (pass == 0)
      for (int k = 2; k < npos + 2; k++) e->start[k] += e->start[k - 1];
  }
  return true;
}

/* What the exact link check works with (see check_links_exact). */
typedef struct {
  EdgeLists claimed, used;
  int *claim_stamp, *use_stamp;
} LinkLists;

/* The fast link check's sums: every distinct (operand, user) pair hashed, as each side lists it. */
typedef struct {
  uint64_t by_operand, by_user;
  size_t n_operand, n_user;
  int *seen; /* by operand id: the last instruction with many operands that read it (made when first needed) */
} LinkSums;

static uint64_t link_hash(int producer, int user) {
  uint64_t x = ((uint64_t)(uint32_t)producer << 32 | (uint32_t)user) + 0x9e3779b97f4a7c15u; /* splitmix64 */
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

static bool check_links_and_ops(const IrModule *m, FxError *err, const int *pos, const int *comp_pos, int npos,
                                LinkLists *exact, LinkSums *sums);
static bool check_links_exact(const IrModule *m, FxError *err, const int *pos, const int *comp_pos, int npos);

static bool check_structure(const IrModule *m, FxError *err, int *pos, int npos) {
  if (!m->entry) return verr(m, NULL, err, "module '%s' has no ENTRY computation", m->name);
  int entries = 0;
  bool entry_listed = false;
  /* Computation names seen so far, hashed: every fusion has a body, and comparing each name with
   * all the earlier ones was quadratic in them. */
  size_t ccap = 16;
  while (ccap < (size_t)m->ncomps * 2) ccap *= 2;
  const char **cnames = fx_calloc(ccap, sizeof *cnames);
  uint64_t *chashes = fx_malloc(sizeof *chashes * ccap);
  if (!cnames || !chashes) {
    fx_free(cnames);
    fx_free(chashes);
    return verr(m, NULL, err, "out of memory verifying module '%s'", m->name);
  }
  for (int k = 0; k < m->ncomps; k++) {
    const IrComputation *c = m->comps[k];
    if (c->is_entry) entries++;
    if (c == m->entry) entry_listed = true;
    bool bad = c->is_entry && c != m->entry, dup = false;
    if (!bad) {
      uint64_t h = hash_str(c->name);
      size_t q = h & (ccap - 1);
      while (cnames[q] && !dup) {
        dup = chashes[q] == h && strcmp(cnames[q], c->name) == 0;
        q = (q + 1) & (ccap - 1);
      }
      if (!dup) {
        cnames[q] = c->name;
        chashes[q] = h;
      }
    }
    if (bad || dup) {
      fx_free(cnames);
      fx_free(chashes);
      if (bad) return verr(m, &c->loc, err, "computation '%%%s' is marked ENTRY but is not the module's entry", c->name);
      return verr(m, &c->loc, err, "duplicate computation name '%%%s'", c->name);
    }
  }
  fx_free(cnames);
  fx_free(chashes);
  if (!entry_listed) return verr(m, NULL, err, "the entry computation is not part of module '%s'", m->name);
  if (entries != 1) return verr(m, NULL, err, "module '%s' has %d ENTRY computations", m->name, entries);

  /* Names: the module's name index proves them distinct and non-empty without reading them (a
   * name lives wherever the stage that made it put it, so reading them all was a cache miss per
   * instruction and the verifier's largest cost after fusion). Where it cannot, each name is
   * hashed into a set of its own, and the first listed instruction at fault is reported. */
  const char **seen = fx_malloc(sizeof *seen * (size_t)npos);
  const IrInstr *unindexed = NULL;
  bool indexed = seen && ir_module_names_indexed(m, seen, (size_t)npos, &unindexed);
  fx_free(seen);
  NameSet ns = {NULL, NULL, 0};
  if (!indexed) {
    int total = ir_module_instr_count(m);
    size_t cap = 16;
    while (cap < (size_t)total * 2) cap *= 2;
    ns = (NameSet){fx_calloc(cap, sizeof(const IrInstr *)), fx_malloc(sizeof(uint64_t) * cap), cap};
    if (!ns.slots || !ns.hashes) {
      fx_free(ns.slots);
      fx_free(ns.hashes);
      return verr(m, NULL, err, "out of memory verifying module '%s'", m->name);
    }
  }
  bool ok = true;
  for (int k = 0; ok && k < m->ncomps; k++) {
    const IrComputation *c = m->comps[k];
    if (c->ninstrs == 0) {
      ok = verr(m, &c->loc, err, "computation '%%%s' has no instructions", c->name);
      break;
    }
    for (int j = 0; ok && j < c->ninstrs; j++) {
      const IrInstr *i = c->instrs[j];
      if (i->id < 0 || i->id >= npos) {
        ok = verr(m, &i->loc, err, "'%%%s' has an id outside the module", i->name);
        break;
      }
      pos[i->id] = j;
      if (!i->name || (!indexed && !i->name[0])) ok = verr(m, &i->loc, err, "an instruction in '%%%s' has no name", c->name);
      else if (i->parent != c) ok = verr(m, &i->loc, err, "'%%%s' is listed in '%%%s' but belongs to another computation", i->name, c->name);
      else if (i->dead) ok = verr(m, &i->loc, err, "'%%%s' was removed but is still listed in '%%%s'", i->name, c->name);
      if (!ok) break;
      const IrInstr *dup = indexed ? NULL : nameset_add(&ns, i);
      if (dup) ok = verr(m, &i->loc, err, "duplicate instruction name '%%%s' (also in '%%%s')", i->name, dup->parent->name);
    }
  }
  fx_free(ns.slots);
  fx_free(ns.hashes);
  if (!ok) return false;
  /* Distinct names, but one the module cannot find its instruction by (`why NAME` would not). */
  if (unindexed) return verr(m, &unindexed->loc, err, "'%%%s' cannot be found by its name in module '%s'", unindexed->name, m->name);

  /* Operand/user links in both directions. First in one linear pass that sums a hash of every
     (operand, user) pair as the operand lists give them and as the user lists give them: equal
     sums and counts mean the same links (a false match has odds of 2^-64). Anything found wrong,
     links or not, is then looked for again by the exact check, which reports the first fault in
     the module's order, as it always did. */
  int *comp_pos = fx_malloc(sizeof(int) * (size_t)npos); /* computation id -> index in m->comps */
  if (!comp_pos) return verr(m, NULL, err, "out of memory verifying module '%s'", m->name);
  for (int k = 0; k < npos; k++) comp_pos[k] = -1;
  for (int k = 0; k < m->ncomps; k++)
    if (m->comps[k]->id >= 0 && m->comps[k]->id < npos) comp_pos[m->comps[k]->id] = k;
  LinkSums sums = {0};
  FxError quiet;
  fx_error_clear(&quiet);
  ok = check_links_and_ops(m, &quiet, pos, comp_pos, npos, NULL, &sums) && sums.by_operand == sums.by_user &&
       sums.n_operand == sums.n_user;
  fx_free(sums.seen);
  if (!ok) ok = check_links_exact(m, err, pos, comp_pos, npos);
  fx_free(comp_pos);
  return ok;
}

/* The exact link check: two lists by instruction id, claimed[u] the instructions that list u as a
   user, used[v] the instructions that have v as an operand. Per instruction, each list is stamped
   with its id, so each edge is checked in constant time (a value with 100,000 users made the
   obvious scans quadratic). */
static bool check_links_exact(const IrModule *m, FxError *err, const int *pos, const int *comp_pos, int npos) {
  LinkLists l = {0};
  l.claim_stamp = fx_malloc(sizeof(int) * (size_t)npos);
  l.use_stamp = fx_malloc(sizeof(int) * (size_t)npos);
  bool ok = l.claim_stamp && l.use_stamp && edges_build(m, npos, true, &l.claimed) && edges_build(m, npos, false, &l.used);
  if (!ok) verr(m, NULL, err, "out of memory verifying module '%s'", m->name);
  if (ok) {
    for (int k = 0; k < npos; k++) l.claim_stamp[k] = l.use_stamp[k] = -1;
    ok = check_links_and_ops(m, err, pos, comp_pos, npos, &l, NULL);
  }
  edges_free(&l.claimed);
  edges_free(&l.used);
  fx_free(l.claim_stamp);
  fx_free(l.use_stamp);
  return ok;
}

/* The per-instruction checks of check_structure, links included (see there). */
static bool check_links_and_ops(const IrModule *m, FxError *err, const int *pos, const int *comp_pos, int npos,
                                LinkLists *exact, LinkSums *sums) {
  for (int k = 0; k < m->ncomps; k++) {
    const IrComputation *c = m->comps[k];
    if (!c->root) return verr(m, &c->loc, err, "computation '%%%s' has no ROOT", c->name);
    if (c->root->parent != c || pos[c->root->id] < 0 || c->instrs[pos[c->root->id]] != c->root)
      return verr(m, &c->loc, err, "the ROOT of '%%%s' is not one of its instructions", c->name);
    for (int p = 0; p < c->nparams; p++) {
      const IrInstr *pi = c->params[p];
      if (!pi) return verr(m, &c->loc, err, "computation '%%%s' has no parameter(%d)", c->name, p);
      if (pi->parent != c || pi->op != IR_OP_PARAMETER || pi->param_number != p)
        return verr(m, &pi->loc, err, "'%%%s' is listed as parameter %d of '%%%s' but is not its parameter(%d)", pi->name, p, c->name, p);
    }
    for (int j = 0; j < c->ninstrs; j++) {
      const IrInstr *i = c->instrs[j];
      if (i->op == IR_OP_PARAMETER && (i->param_number < 0 || i->param_number >= c->nparams || c->params[i->param_number] != i))
        return verr(m, &i->loc, err, "parameter '%%%s' (number %" PRId64 ") is not registered in '%%%s'", i->name, i->param_number, c->name);
      const IrOpInfo *info = ir_op_info(i->op);
      if (info->arity >= 0 && i->noperands != info->arity)
        return verr(m, &i->loc, err, "'%%%s': %s takes %d operand%s, not %d", i->name, info->spelling, info->arity, info->arity == 1 ? "" : "s",
                    i->noperands);
      if (i->op == IR_OP_CONSTANT && !i->literal) return verr(m, &i->loc, err, "'%%%s': constant without a value", i->name);
      if (i->op == IR_OP_WHILE && !check_trip_count(m, i, err)) return false;
      for (int o = 0; o < i->noperands; o++) {
        const IrInstr *op = i->operands[o];
        if (!op) return verr(m, &i->loc, err, "'%%%s': operand %d is missing", i->name, o);
        if (op->parent != c)
          return verr(m, &i->loc, err, "'%%%s': operand '%%%s' belongs to another computation", i->name, op->name);
        if (op->dead) return verr(m, &i->loc, err, "'%%%s': operand '%%%s' was removed", i->name, op->name);
        if (pos[op->id] < 0 || c->instrs[pos[op->id]] != op)
          return verr(m, &i->loc, err, "'%%%s': operand '%%%s' is not listed in '%%%s'", i->name, op->name, c->name);
        if (pos[op->id] >= j)
          return verr(m, &i->loc, err, "'%%%s' uses '%%%s' before its definition (instructions are not in topological order)", i->name,
                      op->name);
        if (!exact) {
          /* each distinct operand once, as its user list holds the user once */
          bool again = false;
          if (i->noperands <= 16) {
            for (int q = 0; q < o && !again; q++) again = i->operands[q] == op;
          } else {
            if (!sums->seen) {
              if (!(sums->seen = fx_malloc(sizeof(int) * (size_t)npos))) return false; /* the exact check says it */
              for (int q = 0; q < npos; q++) sums->seen[q] = -1;
            }
            again = sums->seen[op->id] == i->id;
            sums->seen[op->id] = i->id;
          }
          if (!again) {
            sums->by_operand += link_hash(op->id, i->id);
            sums->n_operand++;
          }
          continue;
        }
        if (o == 0)
          for (int q = exact->claimed.start[i->id]; q < exact->claimed.start[i->id + 1]; q++)
            exact->claim_stamp[exact->claimed.list[q]->id] = i->id;
        if (exact->claim_stamp[op->id] != i->id)
          return verr(m, &i->loc, err, "'%%%s' uses '%%%s' but is missing from its users", i->name, op->name);
      }
      if (exact)
        for (int q = exact->used.start[i->id]; q < exact->used.start[i->id + 1]; q++) exact->use_stamp[exact->used.list[q]->id] = i->id;
      for (int u = 0; u < i->nusers; u++) {
        const IrInstr *us = i->users[u];
        if (!us || us->id < 0 || us->id >= (int)m->next_id + 1 || (exact && exact->use_stamp[us->id] != i->id))
          return verr(m, &i->loc, err, "'%%%s' lists '%%%s' as a user, which does not use it", i->name, us ? us->name : "?");
        if (!exact) {
          sums->by_user += link_hash(i->id, us->id);
          sums->n_user++;
        }
      }
      for (int a = 0; a < i->nattrs; a++) {
        const IrAttr *at = &i->attrs[a];
        if (at->kind != IR_ATTR_COMP) continue;
        for (int q = 0; q < at->ncomps; q++) {
          const IrComputation *cc = at->comps[q];
          /* Listed: found by its id first (comp_pos), by a scan only when that misses. */
          int where = cc && cc->id >= 0 && cc->id < npos ? comp_pos[cc->id] : -1;
          bool listed = where >= 0 && where < m->ncomps && m->comps[where] == cc;
          for (int z = 0; cc && z < m->ncomps && !listed; z++) listed = m->comps[z] == cc;
          if (!listed) return verr(m, &i->loc, err, "'%%%s': %s names a computation that is not in the module", i->name, at->key);
          if (cc == m->entry) return verr(m, &i->loc, err, "'%%%s': %s calls the entry computation", i->name, at->key);
        }
      }
    }
  }
  return true;
}

/* The call graph must be acyclic (XLA has no recursion): iterative DFS over computations, with
 * each computation's callees (and the instruction calling each) gathered first. */
static bool check_call_cycles(const IrModule *m, FxError *err) {
  int n = m->ncomps, ncalls = 0;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < m->comps[k]->ninstrs; j++) ncalls += ir_called_computations(m->comps[k]->instrs[j], NULL, 0);
  int *idx = fx_malloc(sizeof(int) * ((size_t)m->next_id + 1));
  int *start = fx_calloc((size_t)n + 1, sizeof(int));
  int *callee = fx_malloc(sizeof(int) * ((size_t)ncalls + 1));
  const IrInstr **caller = fx_malloc(sizeof(IrInstr *) * ((size_t)ncalls + 1));
  char *state = fx_calloc((size_t)n + 1, 1);
  int *stk = fx_malloc(sizeof(int) * ((size_t)n + 1));
  int *cur = fx_calloc((size_t)n + 1, sizeof(int));
  bool ok = idx && start && callee && caller && state && stk && cur;
  if (!ok) verr(m, NULL, err, "out of memory verifying module '%s'", m->name);
  if (ok) {
    for (int k = 0; k <= m->next_id; k++) idx[k] = -1;
    for (int k = 0; k < n; k++)
      if (m->comps[k]->id >= 0 && m->comps[k]->id <= m->next_id) idx[m->comps[k]->id] = k;
    int e = 0;
    for (int k = 0; k < n; k++) {
      start[k] = e;
      for (int j = 0; j < m->comps[k]->ninstrs; j++) {
        const IrInstr *i = m->comps[k]->instrs[j];
        for (int a = 0; a < i->nattrs; a++) {
          if (i->attrs[a].kind != IR_ATTR_COMP) continue;
          for (int q = 0; q < i->attrs[a].ncomps; q++) {
            const IrComputation *cc = i->attrs[a].comps[q];
            int z = cc && cc->id >= 0 && cc->id <= m->next_id ? idx[cc->id] : -1;
            if (z < 0 || m->comps[z] != cc) continue; /* reported by the structure check */
            callee[e] = z;
            caller[e] = i;
            e++;
          }
        }
      }
    }
    start[n] = e;
  }
  for (int root = 0; ok && root < n; root++) {
    if (state[root]) continue;
    int sp = 0;
    stk[sp++] = root;
    state[root] = 1;
    cur[root] = start[root];
    while (ok && sp > 0) {
      int v = stk[sp - 1];
      if (cur[v] >= start[v + 1]) {
        state[v] = 2;
        sp--;
        continue;
      }
      int eidx = cur[v]++;
      int next = callee[eidx];
      if (state[next] == 1) {
        ok = verr(m, &caller[eidx]->loc, err, "'%%%s' calls '%%%s', which calls back into '%%%s' (recursion is not allowed)",
                  caller[eidx]->name, m->comps[next]->name, m->comps[v]->name);
        break;
      }
      if (state[next] == 0) {
        state[next] = 1;
        cur[next] = start[next];
        stk[sp++] = next;
      }
    }
  }
  fx_free(idx);
  fx_free(start);
  fx_free(callee);
  fx_free(caller);
  fx_free(state);
  fx_free(stk);
  fx_free(cur);
  return ok;
}

/* ShapeUtil::CompatibleIgnoringFpPrecision: equal but for floating-point element types. */
static bool equal_ignoring_fp(const IrShape *a, const IrShape *b) {
  if (a->type == IR_TUPLE || b->type == IR_TUPLE) {
    if (a->type != b->type || a->ntuple != b->ntuple) return false;
    for (int k = 0; k < a->ntuple; k++)
      if (!equal_ignoring_fp(&a->tuple[k], &b->tuple[k])) return false;
    return true;
  }
  if (a->type != b->type && !(ir_type_is_float(a->type) && ir_type_is_float(b->type))) return false;
  return ir_shape_same_dims(a, b);
}

static bool check_shapes(const IrModule *m, const IrVerifyOptions *opts, FxError *err) {
  Arena a;
  arena_init(&a);
  char b1[256], b2[256];
  bool ok = true;
  for (int k = 0; ok && k < m->ncomps; k++) {
    const IrComputation *c = m->comps[k];
    for (int j = 0; ok && j < c->ninstrs; j++) {
      const IrInstr *i = c->instrs[j];
      IrShape s;
      if (!ir_infer_shape(i, &s, &a, err)) {
        if (err && !err->set) verr(m, &i->loc, err, "'%%%s': shape inference failed", i->name);
        ok = false;
        break;
      }
      bool same = opts && opts->allow_mixed_precision ? equal_ignoring_fp(&s, &i->shape) : ir_shape_equal(&s, &i->shape);
      if (!same) {
        ir_shape_format(&i->shape, false, b1, sizeof b1);
        ir_shape_format(&s, false, b2, sizeof b2);
        char ops[300];
        size_t len = 0;
        ops[0] = 0;
        for (int o = 0; o < i->noperands && len < sizeof ops - 40; o++) {
          char sb[128];
          ir_shape_format(&i->operands[o]->shape, false, sb, sizeof sb);
          len += (size_t)snprintf(ops + len, sizeof ops - len, "%s%s", o ? ", " : "", sb);
        }
        ok = verr(m, &i->loc, err, "shape mismatch: '%%%s' is declared %s but %s(%s) gives %s", i->name, b1, ir_op_name(i->op), ops, b2);
      }
      /* Scratch shapes are small; recycle the arena now and then so huge modules stay lean. */
      if (a.total > (1u << 20)) {
        arena_free(&a);
        arena_init(&a);
      }
    }
  }
  arena_free(&a);
  return ok;
}

bool ir_verify(const IrModule *m, FxError *err) { return ir_verify_with(m, NULL, err); }

bool ir_verify_with(const IrModule *m, const IrVerifyOptions *opts, FxError *err) {
  if (!m) return fx_error_set(err, NULL, 0, 0, "no module");
  int npos = m->next_id + 1;
  int *pos = fx_malloc(sizeof(int) * (size_t)npos);
  if (!pos) return fx_error_set(err, m->source_file, 0, 0, "out of memory verifying module '%s'", m->name);
  for (int k = 0; k < npos; k++) pos[k] = -1;
  bool ok = check_structure(m, err, pos, npos) && check_call_cycles(m, err) && check_shapes(m, opts, err);
  fx_free(pos);
  return ok;
}
