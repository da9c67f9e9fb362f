/* explain_diff.c — what changed between two stages, instruction by instruction.
 *
 * Instructions are matched by name (names are stable across stages). An instruction of stage B
 * that stage A lacks was added; one of A that B lacks was removed — unless the decision log says
 * a pass folded it into something (then its entry names where it went), or B has it inside a
 * fusion (fused). One present in both with a different opcode, shape, operands or attributes
 * (metadata aside) was rewritten; one that moved from a computation into a fused body was
 * fused. */
#include <string.h>

#include "explain.h"

const char *explain_diff_kind_name(ExplainDiffKind k) {
  switch (k) {
  case DIFF_ADDED: return "added";
  case DIFF_REMOVED: return "removed";
  case DIFF_REWRITTEN: return "rewritten";
  case DIFF_FUSED: return "fused";
  }
  return "?";
}

static bool add_entry(ExplainDiff *d, ExplainDiffKind kind, const IrInstr *i, const char *comp, const char *into,
                      const char *detail) {
  if (arena_grow(&d->arena, (void **)&d->entries, &d->cap, d->n + 1, sizeof(ExplainDiffEntry))) return false;
  ExplainDiffEntry *e = &d->entries[d->n++];
  e->kind = kind;
  e->name = arena_strdup(&d->arena, i->name);
  e->op = ir_op_name(i->op);
  e->comp = arena_strdup(&d->arena, comp);
  e->into = into ? arena_strdup(&d->arena, into) : NULL;
  e->detail = detail ? arena_strdup(&d->arena, detail) : NULL;
  d->count[kind]++;
  return e->name && e->comp;
}

/* Where a fused body's instruction ended up: its fusion, and that fusion's own fusion when it was
 * nested. */
static const IrInstr *owning_fusion(const IrInstr *i) {
  const IrInstr *f = NULL;
  for (int depth = 0; i && i->parent && i->parent->fusion_instr && depth < 8; depth++) {
    f = i->parent->fusion_instr;
    i = f;
  }
  return f;
}

/* Where the log says `name` went: the result of an accepted decision of stages (a, b] naming it,
 * followed while that result is itself gone from B. */
static const char *where_went(const ExplainLog *log, int a, int b, const char *name, const IrModule *mb) {
  const char *cur = name;
  for (int hop = 0; hop < 8 && log; hop++) {
    const char *next = NULL;
    for (int st = a + 1; st <= b && !next; st++) {
      int n = explain_stage_count(log, st);
      for (int k = 0; k < n && !next; k++) {
        const ExplainRecord *r = explain_stage_record(log, st, k);
        if (r->accepted && r->result && strcmp(r->result, cur) != 0 && explain_record_names(r, cur)) next = r->result;
      }
    }
    if (!next) return cur == name ? NULL : cur;
    cur = next;
    if (ir_module_find_instr(mb, cur)) return cur;
  }
  return cur == name ? NULL : cur;
}

static void shape_text(const IrShape *s, char *buf, size_t n) { ir_shape_format(s, true, buf, n); }

static bool attr_equal(const IrAttr *x, const IrAttr *y) {
  if (x->kind != y->kind) return false;
  if (x->kind == IR_ATTR_TEXT) return strcmp(x->text ? x->text : "", y->text ? y->text : "") == 0;
  if (x->ncomps != y->ncomps) return false;
  for (int k = 0; k < x->ncomps; k++)
    if (strcmp(x->comps[k] ? x->comps[k]->name : "", y->comps[k] ? y->comps[k]->name : "") != 0)
      return false;
  return true;
}

/* A short description of how i (stage A) and j (stage B) differ; false when they do not. */
static bool describe_change(const IrInstr *i, const IrInstr *j, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
#define ADD(...) (len += (size_t)snprintf(buf + len, len < n ? n - len : 0, __VA_ARGS__))
  if (i->op != j->op) ADD("%s -> %s", ir_op_name(i->op), ir_op_name(j->op));
  char sa[256], sb[256];
  shape_text(&i->shape, sa, sizeof sa);
  shape_text(&j->shape, sb, sizeof sb);
  if (strcmp(sa, sb) != 0) ADD("%sshape %s -> %s", len ? "; " : "", sa, sb);
  bool ops_same = i->noperands == j->noperands;
  for (int k = 0; ops_same && k < i->noperands; k++) {
    const char *na = i->operands[k] ? i->operands[k]->name : "", *nb = j->operands[k] ? j->operands[k]->name : "";
    ops_same = strcmp(na, nb) == 0;
  }
  if (!ops_same) {
    ADD("%soperands (", len ? "; " : "");
    for (int k = 0; k < i->noperands && k < 8; k++) ADD("%s%s", k ? ", " : "", i->operands[k] ? i->operands[k]->name : "?");
    if (i->noperands > 8) ADD(", ...");
    ADD(") -> (");
    for (int k = 0; k < j->noperands && k < 8; k++) ADD("%s%s", k ? ", " : "", j->operands[k] ? j->operands[k]->name : "?");
    if (j->noperands > 8) ADD(", ...");
    ADD(")");
  }
  for (int k = 0; k < i->nattrs; k++) {
    const IrAttr *x = &i->attrs[k];
    if (strcmp(x->key, "metadata") == 0) continue;
    const IrAttr *y = ir_attr_get(j, x->key);
    if (!y) ADD("%s%s dropped", len ? "; " : "", x->key);
    else if (!attr_equal(x, y)) ADD("%s%s changed", len ? "; " : "", x->key);
  }
  for (int k = 0; k < j->nattrs; k++) {
    const IrAttr *y = &j->attrs[k];
    if (strcmp(y->key, "metadata") != 0 && !ir_attr_get(i, y->key)) ADD("%s%s added", len ? "; " : "", y->key);
  }
  if (i->op == IR_OP_CONSTANT && i->literal && j->literal && i->literal->text && j->literal->text &&
      strcmp(i->literal->text, j->literal->text) != 0)
    ADD("%svalue changed", len ? "; " : "");
#undef ADD
  if (len >= n && n > 4) memcpy(buf + n - 4, "...", 4);
  return len > 0;
}

ExplainDiff *explain_diff(const IrModule *a, const IrModule *b, const ExplainLog *log, int stage_a, int stage_b,
                          FxError *err) {
  ExplainDiff *d = fx_calloc(1, sizeof *d);
  if (!d) {
    fx_error_set(err, NULL, 0, 0, "diff: out of memory");
    return NULL;
  }
  arena_init(&d->arena);
  d->instrs_a = ir_module_instr_count(a);
  d->instrs_b = ir_module_instr_count(b);
  bool ok = true;
  char buf[768];
  if (a == b) return d; /* an unchanged stage shares its snapshot */
  /* Walk A: removed, fused, rewritten. */
  for (int c = 0; c < a->ncomps && ok; c++) {
    const IrComputation *ca = a->comps[c];
    for (int k = 0; k < ca->ninstrs && ok; k++) {
      const IrInstr *i = ca->instrs[k];
      const IrInstr *j = ir_module_find_instr(b, i->name);
      if (!j) {
        if (ca->fusion_instr) continue; /* a fused body went with its fusion */
        const char *to = where_went(log, stage_a, stage_b, i->name, b);
        const IrInstr *target = to ? ir_module_find_instr(b, to) : NULL;
        if (target && target->op == IR_OP_FUSION) ok = add_entry(d, DIFF_FUSED, i, ca->name, to, NULL);
        else ok = add_entry(d, DIFF_REMOVED, i, ca->name, to, NULL);
        continue;
      }
      const IrInstr *fa = owning_fusion(i), *fb = owning_fusion(j);
      if (fb && (!fa || strcmp(fa->name, fb->name) != 0)) {
        ok = add_entry(d, DIFF_FUSED, i, j->parent->name, fb->name, NULL);
        continue;
      }
      if (describe_change(i, j, buf, sizeof buf)) ok = add_entry(d, DIFF_REWRITTEN, j, j->parent->name, NULL, buf);
    }
  }
  /* Walk B: added (a new fused body's inner instructions belong to the new fusion). */
  for (int c = 0; c < b->ncomps && ok; c++) {
    const IrComputation *cb = b->comps[c];
    for (int k = 0; k < cb->ninstrs && ok; k++) {
      const IrInstr *j = cb->instrs[k];
      if (ir_module_find_instr(a, j->name)) continue;
      if (cb->fusion_instr) continue;
      const char *detail = NULL;
      if (j->op == IR_OP_FUSION) {
        const IrComputation *body = ir_fused_computation(j);
        int members = 0;
        for (int q = 0; body && q < body->ninstrs; q++)
          members += body->instrs[q]->op != IR_OP_PARAMETER && body->instrs[q]->op != IR_OP_TUPLE;
        const char *kind = ir_fusion_kind(j);
        snprintf(buf, sizeof buf, "%s fusion of %d instructions", kind ? kind : "loop", members);
        detail = buf;
      }
      ok = add_entry(d, DIFF_ADDED, j, cb->name, NULL, detail);
    }
  }
  if (!ok) {
    explain_diff_free(d);
    fx_error_set(err, NULL, 0, 0, "diff: out of memory");
    return NULL;
  }
  return d;
}

void explain_diff_free(ExplainDiff *d) {
  if (!d) return;
  arena_free(&d->arena);
  fx_free(d);
}
