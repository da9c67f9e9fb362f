/* explain.c — the decision log behind the DecisionSink, its queries and its formatting.
 *
 * Storage: one slot per stage, each with its own arena holding every string the stage's records
 * point to, and its array of records (grown with realloc: an array doubled inside the arena would
 * leave every smaller copy behind, half the log's memory on 100,000 instructions), so dropping a
 * stage (a re-run, a pipeline change) frees it whole and moving between stages (`back`, `goto`)
 * never touches the log. The few words that repeat in every record (pass, action, reason code,
 * metric names) are stored once per stage. */
#include "explain.h"

#include "../compiler/fusion/fusion.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  Arena arena;
  ExplainRecord *recs; /* fx_malloc'd */
  int n, cap;
  const char *pass;
  /* The repeated words kept once: an open-addressing set of arena strings. */
  const char **words;
  int nwords, words_cap;
} StageSlot;

struct ExplainLog {
  StageSlot *stages;
  int nstages, cap;
  int cur_stage;
  bool failed;
};

ExplainLog *explain_log_new(void) {
  ExplainLog *log = fx_calloc(1, sizeof *log);
  return log;
}

static void slot_clear(StageSlot *s) {
  arena_free(&s->arena);
  fx_free(s->recs);
  fx_free(s->words);
  memset(s, 0, sizeof *s);
}

static uint64_t word_hash(const char *w) {
  uint64_t h = 1469598103934665603ull;
  for (; *w; w++) h = (h ^ (unsigned char)*w) * 1099511628211ull;
  return h;
}

/* w kept once in the stage's arena (NULL for NULL; NULL also when memory runs out). */
static const char *slot_word(StageSlot *s, const char *w) {
  if (!w) return NULL;
  if ((s->nwords + 1) * 2 > s->words_cap) {
    int ncap = s->words_cap ? s->words_cap * 2 : 64;
    const char **grown = fx_calloc((size_t)ncap, sizeof *grown);
    if (!grown) return arena_strdup(&s->arena, w); /* not shared, still correct */
    for (int k = 0; k < s->words_cap; k++) {
      if (!s->words[k]) continue;
      size_t j = word_hash(s->words[k]) & (size_t)(ncap - 1);
      while (grown[j]) j = (j + 1) & (size_t)(ncap - 1);
      grown[j] = s->words[k];
    }
    fx_free(s->words);
    s->words = grown;
    s->words_cap = ncap;
  }
  size_t j = word_hash(w) & (size_t)(s->words_cap - 1);
  while (s->words[j]) {
    if (strcmp(s->words[j], w) == 0) return s->words[j];
    j = (j + 1) & (size_t)(s->words_cap - 1);
  }
  const char *kept = arena_strdup(&s->arena, w);
  if (kept) {
    s->words[j] = kept;
    s->nwords++;
  }
  return kept;
}

void explain_log_truncate(ExplainLog *log, int keep) {
  if (!log) return;
  if (keep < 0) keep = 0;
  for (int k = keep; k < log->nstages; k++) slot_clear(&log->stages[k]);
  if (log->nstages > keep) log->nstages = keep;
}

void explain_log_free(ExplainLog *log) {
  if (!log) return;
  explain_log_truncate(log, 0);
  fx_free(log->stages);
  fx_free(log);
}

static bool ensure_slot(ExplainLog *log, int stage) {
  if (stage < log->cap) {
    if (stage >= log->nstages) log->nstages = stage + 1;
    return true;
  }
  int ncap = log->cap ? log->cap : 16;
  while (ncap <= stage) ncap *= 2;
  StageSlot *grown = fx_realloc(log->stages, sizeof(StageSlot) * (size_t)ncap);
  if (!grown) return false;
  memset(grown + log->cap, 0, sizeof(StageSlot) * (size_t)(ncap - log->cap));
  log->stages = grown;
  log->cap = ncap;
  log->nstages = stage + 1;
  return true;
}

bool explain_log_begin_stage(ExplainLog *log, int stage, const char *pass) {
  if (!log || stage < 0) return false;
  explain_log_truncate(log, stage);
  log->failed = false;
  if (!ensure_slot(log, stage)) {
    log->failed = true;
    return false;
  }
  log->cur_stage = stage;
  StageSlot *s = &log->stages[stage];
  s->pass = arena_strdup(&s->arena, pass ? pass : "");
  return s->pass != NULL;
}

static void emit(void *ctx, const PassDecision *d) {
  ExplainLog *log = ctx;
  int stage = d->stage > 0 ? d->stage : log->cur_stage;
  if (!ensure_slot(log, stage)) {
    log->failed = true;
    return;
  }
  StageSlot *s = &log->stages[stage];
  Arena *a = &s->arena;
  if (s->n == s->cap) {
    int ncap = s->cap ? s->cap * 2 : 64;
    ExplainRecord *grown = fx_realloc(s->recs, sizeof(ExplainRecord) * (size_t)ncap);
    if (!grown) {
      log->failed = true;
      return;
    }
    s->recs = grown;
    s->cap = ncap;
  }
  ExplainRecord *r = &s->recs[s->n];
  memset(r, 0, sizeof *r);
  r->stage = stage;
  r->seq = s->n;
  r->pass = slot_word(s, d->pass ? d->pass : (s->pass ? s->pass : ""));
  r->action = slot_word(s, d->action ? d->action : "");
  r->producer = arena_strdup(a, d->producer);
  r->consumer = arena_strdup(a, d->consumer);
  r->accepted = d->accepted;
  r->reason = slot_word(s, d->reason);
  r->detail = arena_strdup(a, d->detail ? d->detail : "");
  r->suggestion = arena_strdup(a, d->suggestion);
  r->result = arena_strdup(a, d->result);
  int nm = d->nmetrics < PASS_MAX_METRICS ? d->nmetrics : PASS_MAX_METRICS;
  for (int k = 0; k < nm; k++) {
    r->metrics[k].key = slot_word(s, d->metrics[k].key ? d->metrics[k].key : "");
    r->metrics[k].value = d->metrics[k].value;
    if (!r->metrics[k].key) log->failed = true;
  }
  r->nmetrics = nm;
  if (!r->pass || !r->action || !r->detail || (d->producer && !r->producer) || (d->consumer && !r->consumer) ||
      (d->reason && !r->reason) || (d->suggestion && !r->suggestion) || (d->result && !r->result)) {
    log->failed = true;
    return;
  }
  s->n++;
}

DecisionSink explain_log_sink(ExplainLog *log) { return (DecisionSink){emit, log}; }
bool explain_log_failed(const ExplainLog *log) { return log && log->failed; }
int explain_log_nstages(const ExplainLog *log) { return log ? log->nstages : 0; }

int explain_stage_count(const ExplainLog *log, int stage) {
  return log && stage >= 0 && stage < log->nstages ? log->stages[stage].n : 0;
}

const ExplainRecord *explain_stage_record(const ExplainLog *log, int stage, int i) {
  if (!log || stage < 0 || stage >= log->nstages || i < 0 || i >= log->stages[stage].n) return NULL;
  return &log->stages[stage].recs[i];
}

size_t explain_log_bytes(const ExplainLog *log) {
  size_t n = 0;
  for (int k = 0; log && k < log->nstages; k++) {
    const StageSlot *s = &log->stages[k];
    n += sizeof *s + s->arena.total + sizeof(ExplainRecord) * (size_t)s->cap + sizeof(char *) * (size_t)s->words_cap;
  }
  return n;
}

int explain_log_total(const ExplainLog *log) {
  int n = 0;
  for (int k = 0; log && k < log->nstages; k++) n += log->stages[k].n;
  return n;
}

int explain_record_number(const ExplainLog *log, const ExplainRecord *r) {
  int n = 0;
  for (int st = 0; log && st < r->stage && st < log->nstages; st++) n += log->stages[st].n;
  return n + r->seq + 1;
}

const ExplainRecord *explain_record_by_number(const ExplainLog *log, int n) {
  for (int st = 0; log && n > 0 && st < log->nstages; st++) {
    if (n <= log->stages[st].n) return &log->stages[st].recs[n - 1];
    n -= log->stages[st].n;
  }
  return NULL;
}

/* ---------- queries ---------- */

void explain_filter_init(ExplainFilter *f) {
  memset(f, 0, sizeof *f);
  f->verdict = -1;
  f->stage = -1;
  f->max_stage = -1;
}

/* Is `name` one of the comma-separated names in list? */
static bool in_list(const char *list, const char *name) {
  if (!list || !name) return false;
  size_t n = strlen(name);
  const char *p = list;
  while (*p) {
    while (*p == ' ') p++;
    size_t len = strcspn(p, ",");
    size_t tl = len;
    while (tl > 0 && p[tl - 1] == ' ') tl--;
    if (tl == n && strncmp(p, name, n) == 0) return true;
    p += len;
    if (*p == ',') p++;
  }
  return false;
}

bool explain_record_names(const ExplainRecord *r, const char *name) {
  return in_list(r->producer, name) || in_list(r->consumer, name) || (r->result && strcmp(r->result, name) == 0);
}

/* Both named by the record: producer and consumer (either way), both in one group, or one of
 * them the result of a rewrite of the other. */
static bool between(const ExplainRecord *r, const char *a, const char *b) {
  return explain_record_names(r, a) && explain_record_names(r, b);
}

static bool matches(const ExplainRecord *r, const ExplainFilter *f) {
  if (f->verdict >= 0 && r->accepted != (f->verdict == 1)) return false;
  if (f->reason && (!r->reason || strcmp(r->reason, f->reason) != 0)) return false;
  if (f->pass && strcmp(r->pass, f->pass) != 0) return false;
  if (f->action && strcmp(r->action, f->action) != 0) return false;
  if (f->name && f->name2) return between(r, f->name, f->name2);
  if (f->name && !explain_record_names(r, f->name)) return false;
  return true;
}

int explain_query(const ExplainLog *log, const ExplainFilter *f, const ExplainRecord ***out) {
  *out = NULL;
  int cap = 0, n = 0;
  const ExplainRecord **res = NULL;
  for (int st = 0; log && st < log->nstages; st++) {
    if (f->stage >= 0 && st != f->stage) continue;
    if (f->max_stage >= 0 && st > f->max_stage) continue;
    const StageSlot *s = &log->stages[st];
    for (int k = 0; k < s->n; k++) {
      if (!matches(&s->recs[k], f)) continue;
      if (n >= cap) {
        int ncap = cap ? cap * 2 : 32;
        const ExplainRecord **g = fx_realloc(res, sizeof *g * (size_t)ncap);
        if (!g) {
          fx_free(res);
          return -1;
        }
        res = g;
        cap = ncap;
      }
      res[n++] = &s->recs[k];
    }
  }
  if (!res) res = fx_malloc(sizeof *res);
  if (!res) return -1;
  *out = res;
  return n;
}

/* Past participles for the summary line. */
static const char *done_word(const char *action) {
  static const struct {
    const char *action, *word;
  } words[] = {{"fuse", "fused"},          {"duplicate", "duplicated"}, {"merge", "merged"},
               {"multi-output", "multi-output fused"}, {"sibling", "sibling fused"},
               {"horizontal", "horizontally fused"}, {"rewrite", "rewritten"}, {"remove", "removed"},
               {"inline", "inlined"},      {"rename", "renamed"},       {"fold", "folded"},          {"unroll", "unrolled"},
               {"skip", "skipped"},         {"hoist", "hoisted"},         {"repeat", "more rounds"}};
  for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
    if (strcmp(words[k].action, action) == 0) return words[k].word;
  return NULL;
}

void explain_stage_summary(const ExplainLog *log, int stage, char *buf, size_t n) {
  explain_stage_summary_pass(log, stage, NULL, buf, n);
}

void explain_stage_summary_pass(const ExplainLog *log, int stage, const char *pass, char *buf, size_t n) {
  /* Accepted decisions by action, in order of first appearance; then all rejections. */
  const char *actions[16];
  int counts[16], nact = 0, rejected = 0;
  int total = explain_stage_count(log, stage);
  for (int k = 0; k < total; k++) {
    const ExplainRecord *r = explain_stage_record(log, stage, k);
    if (pass && strcmp(r->pass, pass) != 0) continue;
    if (!r->accepted) {
      rejected++;
      continue;
    }
    int j = 0;
    while (j < nact && strcmp(actions[j], r->action) != 0) j++;
    if (j == nact) {
      if (nact == 16) continue;
      actions[nact] = r->action;
      counts[nact++] = 0;
    }
    counts[j]++;
  }
  size_t len = 0;
  buf[0] = 0;
  for (int j = 0; j < nact && len < n; j++) {
    const char *w = done_word(actions[j]);
    len += (size_t)snprintf(buf + len, n - len, "%s%d %s", j ? ", " : "", counts[j], w ? w : actions[j]);
  }
  if (rejected && len < n) len += (size_t)snprintf(buf + len, n - len, "%s%d rejected", nact ? ", " : "", rejected);
  if (!nact && !rejected) snprintf(buf, n, "no change");
}

/* ---------- pair relations ---------- */

/* Does `to` depend on `from` (within one computation)? Iterative depth-first search. */
static bool depends(const IrInstr *to, const IrInstr *from) {
  const IrModule *m = to->parent->module;
  size_t n = (size_t)m->next_id + 1;
  char *seen = fx_calloc(n, 1);
  const IrInstr **stack = fx_malloc(sizeof *stack * n);
  bool found = false;
  if (seen && stack) {
    int sp = 0;
    stack[sp++] = to;
    while (sp > 0 && !found) {
      const IrInstr *i = stack[--sp];
      if (i == from) {
        found = true;
        break;
      }
      for (int k = 0; k < i->noperands; k++) {
        const IrInstr *o = i->operands[k];
        if (!o || o->parent != from->parent || o->id < 0 || (size_t)o->id >= n || seen[o->id]) continue;
        seen[o->id] = 1;
        stack[sp++] = o;
      }
    }
  }
  fx_free(seen);
  fx_free(stack);
  return found;
}

static const char *fusion_of(const IrInstr *i) {
  return i->parent && i->parent->fusion_instr ? i->parent->fusion_instr->name : NULL;
}

void explain_pair_relation(const IrModule *m, const KernelPlan *plan, const char *a, const char *b, char *buf,
                           size_t n) {
  const IrInstr *x = m ? ir_module_find_instr(m, a) : NULL, *y = m ? ir_module_find_instr(m, b) : NULL;
  if (!x || !y) {
    snprintf(buf, n, "%s is not in this stage", !x ? a : b);
    return;
  }
  if (x == y) {
    snprintf(buf, n, "%s and %s are the same instruction", a, b);
    return;
  }
  const PlanKernel *kx = plan_kernel_of(plan, x), *ky = plan_kernel_of(plan, y);
  if (kx && kx == ky) {
    snprintf(buf, n, "they are already in the same kernel %s", kx->name);
    return;
  }
  const char *fx_ = fusion_of(x), *fy = fusion_of(y);
  if (x->parent != y->parent && !fx_ && !fy) {
    snprintf(buf, n, "they are in different computations (%s in %s, %s in %s): fusion only joins instructions of "
             "one computation",
             a, x->parent->name, b, y->parent->name);
    return;
  }
  if (x->parent != y->parent) {
    snprintf(buf, n, "they are in different places (%s in %s, %s in %s)", a, fx_ ? fx_ : x->parent->name, b,
             fy ? fy : y->parent->name);
    return;
  }
  bool x_feeds_y = false, y_feeds_x = false;
  for (int k = 0; k < y->noperands; k++) x_feeds_y = x_feeds_y || y->operands[k] == x;
  for (int k = 0; k < x->noperands; k++) y_feeds_x = y_feeds_x || x->operands[k] == y;
  if (x_feeds_y || y_feeds_x) {
    snprintf(buf, n, "%s is an operand of %s, but no pass has evaluated the pair yet (no fusion pass has run up to "
             "this stage, or neither op kind can be fused)",
             x_feeds_y ? a : b, x_feeds_y ? b : a);
    return;
  }
  bool path_xy = depends(y, x);
  bool path_yx = !path_xy && depends(x, y);
  if (path_xy || path_yx) {
    snprintf(buf, n, "they were never producer and consumer: %s reaches %s only through other instructions",
             path_xy ? a : b, path_xy ? b : a);
    return;
  }
  bool shared = false;
  for (int k = 0; k < x->noperands && !shared; k++)
    for (int j = 0; j < y->noperands && !shared; j++) shared = x->operands[k] == y->operands[j];
  if (shared)
    snprintf(buf, n, "they were never producer and consumer: they are siblings (they read a common operand), which "
             "only multi-output fusion considers");
  else
    snprintf(buf, n, "they were never producer and consumer: neither depends on the other");
}

/* ---------- reasons ---------- */

int explain_reason_count(void) { return FUSION_REASON_COUNT; }
const char *explain_reason_code(int i) { return i >= 0 && i < FUSION_REASON_COUNT ? fusion_reasons[i].code : NULL; }

const char *explain_reason_meaning(const char *code) {
  for (int k = 0; code && k < FUSION_REASON_COUNT; k++)
    if (strcmp(fusion_reasons[k].code, code) == 0) return fusion_reasons[k].meaning;
  return NULL;
}

/* ---------- formatting ---------- */

static void text_num(FILE *f, double v) {
  if (v == floor(v) && fabs(v) < 9.0e15) fprintf(f, "%lld", (long long)v);
  else fprintf(f, "%.4g", v);
}

/* Prints text after `lead` (already counted in col), wrapping between words at width with
 * continuation lines indented by indent. */
static void wrapped(FILE *f, const char *text, int col, int width, int indent) {
  const char *p = text;
  while (*p) {
    size_t w = strcspn(p, " ");
    if (col > indent && col + 1 + (int)w > width) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    } else if (p != text) {
      fputc(' ', f);
      col++;
    }
    fwrite(p, 1, w, f);
    col += (int)w;
    p += w;
    while (*p == ' ') p++;
  }
}

void explain_print_record(FILE *f, const ExplainRecord *r) { explain_print_record_width(f, r, 0); }

void explain_print_wrapped(FILE *f, const char *text, int width, int indent) {
  if (width <= 20) fputs(text, f);
  else wrapped(f, text, 0, width, indent);
}

void explain_print_record_width(FILE *f, const ExplainRecord *r, int width) {
  fprintf(f, "stage %d  %s  %s", r->stage, r->pass, r->action);
  if (r->producer && r->consumer) fprintf(f, "  %s -> %s", r->producer, r->consumer);
  else if (r->producer) fprintf(f, "  %s", r->producer);
  else if (r->consumer) fprintf(f, "  %s", r->consumer);
  if (r->result) fprintf(f, " => %s", r->result);
  fprintf(f, "  %s", r->accepted ? "accepted" : "rejected");
  if (r->reason) fprintf(f, " [%s]", r->reason);
  fputc('\n', f);
  if (r->detail && r->detail[0] && width > 20) {
    fputs("    ", f);
    wrapped(f, r->detail, 4, width, 4);
    fputc('\n', f);
  } else if (r->detail && r->detail[0]) {
    fprintf(f, "    %s\n", r->detail);
  }
  if (r->nmetrics) {
    fputs("    metrics:", f);
    for (int k = 0; k < r->nmetrics; k++) {
      fprintf(f, " %s=", r->metrics[k].key);
      text_num(f, r->metrics[k].value);
    }
    fputc('\n', f);
  }
  if (r->suggestion && width > 20) {
    fputs("    suggestion: ", f);
    wrapped(f, r->suggestion, 16, width, 6);
    fputc('\n', f);
  } else if (r->suggestion) {
    fprintf(f, "    suggestion: %s\n", r->suggestion);
  }
}

void explain_record_json(JsonWriter *w, const ExplainRecord *r, int number) {
  json_object_begin(w);
  if (number > 0) json_kv_int(w, "number", number);
  json_kv_int(w, "stage", r->stage);
  json_kv_str(w, "pass", r->pass);
  json_kv_str(w, "action", r->action);
  json_kv_str(w, "producer", r->producer);
  json_kv_str(w, "consumer", r->consumer);
  json_kv_str(w, "verdict", r->accepted ? "accepted" : "rejected");
  json_kv_str(w, "reason", r->reason);
  json_kv_str(w, "detail", r->detail);
  json_key(w, "metrics");
  json_object_begin(w);
  for (int k = 0; k < r->nmetrics; k++) json_kv_double(w, r->metrics[k].key, r->metrics[k].value);
  json_object_end(w);
  json_kv_str(w, "suggestion", r->suggestion);
  json_object_end(w);
}

void explain_print_record_json(FILE *f, const ExplainRecord *r) {
  JsonWriter w;
  json_init(&w, f);
  w.no_newline = true;
  explain_record_json(&w, r, 0);
}
