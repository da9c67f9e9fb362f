/* replay.c — replays XLA's own priority-fusion decision log (its FusionProcessDump) on fxplain's
 * IR and asks fxplain's priority-fusion about every step XLA took, at the moment XLA took it:
 *
 *   - update_priority {producer, us_fused, us_unfused}: fxplain's cost model for the same producer
 *     against the same users; agreement when both times are within 10% of XLA's, and "exact" when
 *     both are XLA's to the quarter nanosecond (XLA's absl::Duration; the log keeps floats);
 *   - producer_ineligible {producer, reason}: fxplain must find the producer ineligible too; XLA's
 *     reason and fxplain's reason code are tallied side by side;
 *   - fusion {fusion_name, producer, consumer}: applied to the IR (the new fusion takes XLA's name),
 *     so the next steps see the module XLA saw. Where a new producer is dequeued, fxplain must find
 *     it eligible too (it fuses only into all its users, as XLA), and fxplain's own choice (the
 *     highest (priority, id) among eligible producers) is compared with XLA's (modules of at most
 *     3000 instructions: the check evaluates every producer).
 *
 * Usage: replay [--device NAME] [--quiet] [--reasons] [--floor-times F] [--floor-exact F]
 *               [--floor-ineligible F] [--floor-fusible F] [--floor-order F] [--show NAME]
 *               [--estimates PRE_FUSION.hlo]
 *               [--sequence] PRE_FUSION.hlo DUMP.txt [PRE DUMP ...]
 * Prints one line per module and the totals; the reason table with --reasons. Exit 0; 1 when the
 * share of agreeing steps falls below a floor; 2 on bad input. XLA logs an update of a producer
 * already in its queue as a change in time (incremental); those are counted, not compared.
 *
 * --sequence instead runs fxplain's own priority-fusion on each module and walks its fusions beside
 * XLA's log, producer by producer (with all the consumers it went into, fusions' names matched as
 * both make them), and prints how many of XLA's fusions come in XLA's order before the first
 * producer that differs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/fusion/fusion.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"

typedef struct {
  long updates, updates_close, updates_exact, ineligible, ineligible_agree, fusions, fusions_applied, dequeues, dequeues_agree,
      fusible, fusible_agree,
      unknown, incremental;
} Tally;

typedef struct {
  char xla[200];
  char ours[40];
  long n;
} ReasonPair;

/* The pre-fusion module, with XLA's instruction ids when its proto dump lies beside it
 * (PRE.pb: scripts/xla_reference.py writes NAME.pre_fusion.hlo.pb), as fxplain's load does. */
static IrModule *load_pre(const char *pre, FxError *err) {
  HloProtoIds ids;
  return hlo_load_file_with_ids(pre, &ids, err);
}

static ReasonPair reasons[256];
static int nreasons;

static void tally_reason(const char *xla, const char *ours) {
  for (int k = 0; k < nreasons; k++)
    if (strcmp(reasons[k].xla, xla) == 0 && strcmp(reasons[k].ours, ours) == 0) {
      reasons[k].n++;
      return;
    }
  if (nreasons < 256) {
    snprintf(reasons[nreasons].xla, sizeof reasons[nreasons].xla, "%s", xla);
    snprintf(reasons[nreasons].ours, sizeof reasons[nreasons].ours, "%s", ours);
    reasons[nreasons++].n = 1;
  }
}

static void quiet_emit(void *ctx, const PassDecision *d) {
  (void)ctx;
  (void)d;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 20, n = 0;
  char *b = malloc(cap);
  size_t r;
  while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
    n += r;
    if (n + 1 == cap) {
      char *nb = realloc(b, cap *= 2);
      if (!nb) {
        free(b);
        b = NULL;
      }
      b = nb;
    }
  }
  fclose(f);
  if (b) b[n] = 0;
  *len = n;
  return b;
}

/* The quoted value of `key: "..."` on this line, into out. */
static bool quoted(const char *line, const char *key, char *out, size_t n) {
  const char *k = strstr(line, key);
  if (!k) return false;
  const char *q = strchr(k + strlen(key), '"');
  if (!q) return false;
  const char *e = strchr(q + 1, '"');
  if (!e) return false;
  size_t l = (size_t)(e - q - 1);
  if (l >= n) l = n - 1;
  memcpy(out, q + 1, l);
  out[l] = 0;
  return true;
}

/* fxplain's next producer: what its queue would dequeue now. */
static IrInstr *our_choice(PassContext *cx, IrModule *m, const char *comp_of) {
  IrInstr *best = NULL;
  double bestp = -1;
  IrComputation *c = NULL;
  IrInstr *ref = ir_module_find_instr(m, comp_of);
  if (ref) c = ref->parent;
  if (!c) return NULL;
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *p = c->instrs[k];
    if (p->dead || p->nusers == 0 || p->op == IR_OP_PARAMETER || p->op == IR_OP_TUPLE ||
        p->op == IR_OP_GET_TUPLE_ELEMENT || p->op == IR_OP_CONSTANT)
      continue;
    if (!fusion_xla_fusible(p, cx->settings) && !fusion_is_generic_triton(p)) continue;
    double prio;
    PriorityJudgement j;
    /* A bitcast comes first (the highest priority) when it can fuse; one that cannot was
     * dequeued and dropped at once, which XLA's log does not record. */
    if (!priority_fusion_judge(cx, p, &j) || !j.eligible) continue;
    if (p->op == IR_OP_BITCAST) {
      prio = INFINITY;
    } else {
      prio = priority_fusion_priority(j.us_unfused, j.us_fused);
      if (prio < 0) continue;
    }
    if (!best || prio > bestp || (prio == bestp && p->id > best->id)) {
      best = p;
      bestp = prio;
    }
  }
  return best;
}

/* --show NAME: the producer and its users as HLO, with fused computations, where its times differ. */
static const char *show;

static void show_instr(const IrInstr *i) {
  char buf[4096];
  hlo_format_instr(i, buf, sizeof buf);
  printf("      %s\n", buf);
  IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  for (int k = 0; fc && k < fc->ninstrs; k++) {
    hlo_format_instr(fc->instrs[k], buf, sizeof buf);
    printf("          %s\n", buf);
  }
}

static const DeviceProfile *show_dev;

static void show_estimate(const IrInstr *i) {
  PerfEstimate e;
  perf_estimate(show_dev, i, &e);
  printf("      estimate of %s: flops %.0f, read %.0f B, written %.0f B, %lld blocks; read %.4f, write %.4f, compute "
         "%.4f, total %.4f us\n",
         i->name, e.flops, e.bytes_read, e.bytes_written, (long long)e.blocks, e.read_us, e.write_us, e.compute_us,
         e.exec_us);
}

static void show_pair(const IrInstr *p) {
  show_instr(p);
  for (int u = 0; u < p->nusers; u++) show_instr(p->users[u]);
  show_estimate(p);
  for (int u = 0; u < p->nusers; u++) {
    show_estimate(p->users[u]);
    printf("      fused with %s: %.4f us, %d operands and outputs\n", p->users[u]->name,
           perf_fused_exec_us(show_dev, p, p->users[u]), fusion_operands_and_outputs(p, p->users[u], false));
  }
}

/* --estimates PRE_FUSION.hlo: the cost model's estimate of every entry instruction as one kernel
 * (EstimateRunTimeForInstruction), one line each: name flops bytes_read bytes_written blocks
 * read_us write_us compute_us exec_us. */
static int estimates(const char *pre, const DeviceProfile *dev) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = load_pre(pre, &err);
  if (!m) {
    fx_error_print(stderr, &err);
    return 2;
  }
  IrComputation *e = m->entry;
  for (int k = 0; e && k < e->ninstrs; k++) {
    PerfEstimate est;
    perf_estimate(dev, e->instrs[k], &est);
    printf("%s %.0f %.0f %.0f %lld %.6f %.6f %.6f %.6f\n", e->instrs[k]->name, est.flops, est.bytes_read,
           est.bytes_written, (long long)est.blocks, est.read_us, est.write_us, est.compute_us, est.exec_us);
  }
  ir_module_free(m);
  return 0;
}

/* The same time to the tick: XLA's log keeps its times as floats (FusionProcessDumpProto), so a
 * long time matches when it rounds to the same float. */
static bool same_time(double ours, double xla) {
  return fabs(ours - xla) < 0.000126 || (float)ours == (float)xla;
}

/* ---------- --sequence: fxplain's own priority-fusion against XLA's order of fusions ---------- */

typedef struct {
  char producer[256], consumer[256], result[256];
} Step;

typedef struct {
  Step *v;
  int n, cap;
} Steps;

static void steps_add(Steps *s, const char *p, const char *c, const char *r) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->v = realloc(s->v, sizeof(Step) * (size_t)s->cap);
    if (!s->v) {
      fprintf(stderr, "replay: out of memory\n");
      exit(2);
    }
  }
  Step *x = &s->v[s->n++];
  snprintf(x->producer, sizeof x->producer, "%s", p ? p : "");
  snprintf(x->consumer, sizeof x->consumer, "%s", c ? c : "");
  snprintf(x->result, sizeof x->result, "%s", r ? r : "");
}

/* Names: fxplain's fusions are named by fxplain, XLA's by XLA; a name is mapped when both make
 * their fusion from the same producer and consumer. */
typedef struct {
  char xla[256], ours[256];
} NamePair;

static NamePair *names;
static int nnames, capnames;

static const char *mapped(const char *xla) {
  for (int k = nnames - 1; k >= 0; k--)
    if (strcmp(names[k].xla, xla) == 0) return names[k].ours;
  return xla;
}

/* The XLA name of one of fxplain's fusions (itself when not mapped). */
static const char *xla_name(const char *ours) {
  for (int k = nnames - 1; k >= 0; k--)
    if (strcmp(names[k].ours, ours) == 0) return names[k].xla;
  return ours;
}

static void map_name(const char *xla, const char *ours) {
  if (strcmp(mapped(xla), ours) == 0) return;
  if (nnames == capnames) {
    capnames = capnames ? 2 * capnames : 256;
    names = realloc(names, sizeof(NamePair) * (size_t)capnames);
    if (!names) exit(2);
  }
  snprintf(names[nnames].xla, sizeof names[nnames].xla, "%s", xla);
  snprintf(names[nnames].ours, sizeof names[nnames].ours, "%s", ours);
  nnames++;
}

typedef struct {
  Steps *steps;
  IrModule *m;   /* the module as it was before the pass: which fusion names already existed */
  char (*made)[256];
  int nmade, capmade;
} SeqSink;

static bool seq_known(SeqSink *s, const char *name) {
  if (ir_module_find_instr(s->m, name)) return true;
  for (int k = 0; k < s->nmade; k++)
    if (strcmp(s->made[k], name) == 0) return true;
  return false;
}

/* fxplain's accepted fusions: the consumer before the step is the fusion that took the producer
 * when that fusion existed already, else the instruction the fusion was made around. */
static void seq_emit(void *ctx, const PassDecision *d) {
  SeqSink *s = ctx;
  if (!d->accepted || !d->result || (strcmp(d->action, "fuse") != 0 && strcmp(d->action, "duplicate") != 0)) return;
  bool existed = seq_known(s, d->result);
  steps_add(s->steps, d->producer, existed ? d->result : d->consumer, d->result);
  if (!existed) {
    if (s->nmade == s->capmade) {
      s->capmade = s->capmade ? 2 * s->capmade : 256;
      s->made = realloc(s->made, sizeof *s->made * (size_t)s->capmade);
      if (!s->made) exit(2);
    }
    snprintf(s->made[s->nmade++], 256, "%s", d->result);
  }
}

/* XLA's fusion steps, in its order. */
static void xla_steps(char *text, Steps *out) {
  char kind[32] = "", producer[256] = "", consumer[256] = "", fname[256] = "";
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    const char *s = line;
    while (*s == ' ') s++;
    if (strncmp(s, "fusion {", 8) == 0) {
      snprintf(kind, sizeof kind, "fusion");
      producer[0] = consumer[0] = fname[0] = 0;
    } else if (strchr(s, '{') && strncmp(s, "fusion_steps", 12) != 0) {
      kind[0] = 0;
    } else if (kind[0] && strncmp(s, "producer_name:", 14) == 0) {
      quoted(s, "producer_name:", producer, sizeof producer);
    } else if (kind[0] && strncmp(s, "consumer_name:", 14) == 0) {
      quoted(s, "consumer_name:", consumer, sizeof consumer);
    } else if (kind[0] && strncmp(s, "fusion_name:", 12) == 0) {
      quoted(s, "fusion_name:", fname, sizeof fname);
    } else if (kind[0] && strcmp(s, "}") == 0) {
      steps_add(out, producer, consumer, fname);
      kind[0] = 0;
    }
  }
}

/* Runs fxplain's priority-fusion on PRE and walks its fusions beside XLA's, one producer (with
 * all the consumers it went into) at a time, until the first producer that differs. Adds the
 * steps that agree and the total to *same and *total; prints the first difference. */
static bool sequence(const char *pre, const char *dump, const DeviceProfile *dev, bool quiet, long *same, long *total) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = load_pre(pre, &err), *before = load_pre(pre, &err);
  size_t len;
  char *text = read_all(dump, &len);
  if (!m || !before || !text) {
    if (err.set) fx_error_print(stderr, &err);
    else fprintf(stderr, "replay: cannot read %s\n", dump);
    free(text);
    if (m) ir_module_free(m);
    if (before) ir_module_free(before);
    return false;
  }
  Steps xs = {0}, os = {0};
  xla_steps(text, &xs);
  free(text);
  SeqSink ss = {&os, before, NULL, 0, 0};
  DecisionSink sink = {seq_emit, &ss};
  PassSettings st;
  pass_settings_default(&st);
  PassContext cx = {&sink, dev, &st, 1, "priority-fusion", &err, NULL, false};
  bool changed = false;
  if (!pass_priority_fusion.run(m, &cx, &changed)) {
    fx_error_print(stderr, &err);
    return false;
  }
  nnames = 0;
  int i = 0, j = 0;
  const char *base = strrchr(pre, '/');
  base = base ? base + 1 : pre;
  while (i < xs.n && j < os.n) {
    /* One producer's batch on each side. */
    int ie = i, je = j;
    while (ie < xs.n && strcmp(xs.v[ie].producer, xs.v[i].producer) == 0) ie++;
    while (je < os.n && strcmp(os.v[je].producer, os.v[j].producer) == 0) je++;
    bool ok = strcmp(mapped(xs.v[i].producer), os.v[j].producer) == 0 && ie - i == je - j;
    for (int a = i; ok && a < ie; a++) {
      bool found = false;
      for (int b = j; b < je && !found; b++)
        if (strcmp(mapped(xs.v[a].consumer), os.v[b].consumer) == 0) {
          found = true;
          map_name(xs.v[a].result, os.v[b].result);
        }
      ok = found;
    }
    if (!ok) {
      if (!quiet)
        printf("  sequence %s: step %d: XLA fuses %s into %s (%d consumer%s), fxplain %s (XLA's %s) into %s (%d)\n",
               base, i + 1, xs.v[i].producer, xs.v[i].consumer, ie - i, ie - i == 1 ? "" : "s", os.v[j].producer,
               xla_name(os.v[j].producer), os.v[j].consumer, je - j);
      break;
    }
    i = ie;
    j = je;
  }
  printf("%-52s fusions in XLA's order: %d of %d%s\n", base, i, xs.n, i == xs.n && os.n == xs.n ? " (all)" : "");
  *same += i;
  *total += xs.n;
  free(xs.v);
  free(os.v);
  free(ss.made);
  ir_module_free(m);
  ir_module_free(before);
  return true;
}

static bool close_to(double ours, double xla) {
  double d = fabs(ours - xla), s = fabs(xla) > 1e-9 ? fabs(xla) : 1e-9;
  return d / s <= 0.10;
}

static bool replay(const char *pre, const char *dump, const DeviceProfile *dev, bool quiet, Tally *t) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = load_pre(pre, &err);
  if (!m) {
    fx_error_print(stderr, &err);
    return false;
  }
  size_t len;
  char *text = read_all(dump, &len);
  if (!text) {
    fprintf(stderr, "replay: cannot read %s\n", dump);
    ir_module_free(m);
    return false;
  }
  PassSettings st;
  pass_settings_default(&st);
  DecisionSink sink = {quiet_emit, NULL};
  PassContext cx = {&sink, dev, &st, 1, "priority-fusion", &err, NULL, false};
  bool check_order = ir_module_instr_count(m) <= 3000;
  /* Which producers sit in XLA's queue, by XLA's own log; fusions made during the replay get new
   * ids, so the table grows with the module. */
  int nqueued = 4 * (m->next_id + 1) + 1024;
  bool *queued = calloc((size_t)nqueued, sizeof(bool));
  char kind[32] = "", producer[256] = "", consumer[256] = "", fname[256] = "", reason[200] = "", last_producer[256] = "";
  double us_fused = NAN, us_unfused = NAN;
  int nconsumers = 0;
  char cnames[64][128];
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    const char *s = line;
    while (*s == ' ') s++;
    if (strncmp(s, "update_priority {", 17) == 0 || strncmp(s, "producer_ineligible {", 21) == 0 ||
        strncmp(s, "fusion {", 8) == 0) {
      snprintf(kind, sizeof kind, "%.*s", (int)(strchr(s, ' ') - s), s);
      producer[0] = consumer[0] = fname[0] = reason[0] = 0;
      us_fused = us_unfused = NAN;
      nconsumers = 0;
      continue;
    }
    if (!kind[0]) continue;
    if (strncmp(s, "producer_name:", 14) == 0) quoted(s, "producer_name:", producer, sizeof producer);
    else if (strncmp(s, "consumer_names:", 15) == 0) {
      if (nconsumers < 64) quoted(s, "consumer_names:", cnames[nconsumers], sizeof cnames[0]);
      nconsumers++;
    }
    else if (strncmp(s, "consumer_name:", 14) == 0) quoted(s, "consumer_name:", consumer, sizeof consumer);
    else if (strncmp(s, "fusion_name:", 12) == 0) quoted(s, "fusion_name:", fname, sizeof fname);
    else if (strncmp(s, "reason:", 7) == 0) quoted(s, "reason:", reason, sizeof reason);
    else if (strncmp(s, "us_fused:", 9) == 0) us_fused = atof(s + 9);
    else if (strncmp(s, "us_unfused:", 11) == 0) us_unfused = atof(s + 11);
    else if (strcmp(s, "}") == 0) {
      IrInstr *p = producer[0] ? ir_module_find_instr(m, producer) : NULL;
      if (!p) {
        t->unknown++;
        kind[0] = 0;
        continue;
      }
      PriorityJudgement j;
      int non_bitcast = 0;
      for (int u = 0; u < p->nusers; u++) non_bitcast += p->users[u]->op != IR_OP_BITCAST;
      if (p->id >= nqueued) { /* fusions made during the replay get new ids */
        int grown = 2 * p->id + 1024;
        bool *q = realloc(queued, (size_t)grown * sizeof(bool));
        if (q) {
          memset(q + nqueued, 0, (size_t)(grown - nqueued) * sizeof(bool));
          queued = q;
          nqueued = grown;
        }
      }
      bool was_queued = p->id < nqueued && queued[p->id];
      /* REPLAY_USERS=1 prints each producer whose users fxplain holds in another order than the
       * consumers XLA's update lists (producer->users(), the order multi-output fusion's siblings
       * and a producer's consumers are walked in). */
      if (getenv("REPLAY_USERS") && strcmp(kind, "update_priority") == 0 && nconsumers == p->nusers && nconsumers <= 64) {
        bool same = true;
        for (int u = 0; u < p->nusers && same; u++) same = strcmp(p->users[u]->name, cnames[u]) == 0;
        if (!same) {
          printf("  users  %s: XLA", producer);
          for (int u = 0; u < nconsumers; u++) printf(" %s", cnames[u]);
          printf("; fxplain");
          for (int u = 0; u < p->nusers; u++) printf(" %s", p->users[u]->name);
          printf("\n");
        }
      }
      if (strcmp(kind, "update_priority") == 0 && !isnan(us_fused) && (nconsumers < non_bitcast || was_queued)) {
        /* An incremental update: a producer already in XLA's queue gets only the change in time
         * from its changed consumers added to its old priority, and that change is what it logs. */
        t->incremental++;
        if (p->id < nqueued) queued[p->id] = us_unfused - us_fused >= 0 || queued[p->id];
      } else if (strcmp(kind, "update_priority") == 0 && !isnan(us_fused)) {
        t->updates++;
        if (p->id < nqueued) queued[p->id] = us_unfused - us_fused >= 0;
        bool judged = priority_fusion_judge(&cx, p, &j);
        if (show && strcmp(show, producer) == 0) {
          printf("  update %-28s XLA %.4f/%.4f us, fxplain %.4f/%.4f us (fused/unfused)\n", producer, us_fused,
                 us_unfused, j.us_fused, j.us_unfused);
          show_pair(p);
        }
        if (judged && same_time(j.us_fused, us_fused) && same_time(j.us_unfused, us_unfused)) t->updates_exact++;
        else if (getenv("REPLAY_INEXACT"))
          printf("  inexact %-28s XLA %.5f/%.5f us, fxplain %.5f/%.5f us (fused/unfused)\n", producer, us_fused,
                 us_unfused, j.us_fused, j.us_unfused);
        if (judged && close_to(j.us_fused, us_fused) && close_to(j.us_unfused, us_unfused))
          t->updates_close++;
        else if (!quiet) {
          printf("  time   %-28s XLA %.3f/%.3f us, fxplain %.3f/%.3f us (fused/unfused)\n", producer, us_fused,
                 us_unfused, j.us_fused, j.us_unfused);
          if (show && strcmp(show, producer) == 0) show_pair(p);
        }
      } else if (strcmp(kind, "producer_ineligible") == 0) {
        t->ineligible++;
        if (p->id < nqueued) queued[p->id] = false;
        bool ok = priority_fusion_judge(&cx, p, &j);
        bool agree = ok && !j.eligible;
        /* "No users" is XLA's way of saying there is nothing to fuse: fxplain agrees when p has none. */
        if (ok && p->nusers == 0) agree = true;
        t->ineligible_agree += agree;
        tally_reason(reason, agree ? (j.reason ? j.reason : "no users") : "(eligible)");
        if (!agree && !quiet) {
          printf("  elig   %-28s XLA: %s; fxplain finds it eligible\n", producer, reason);
          if (show && strcmp(show, producer) == 0) show_pair(p);
        }
      } else if (strcmp(kind, "fusion") == 0) {
        IrInstr *c = ir_module_find_instr(m, consumer);
        t->fusions++;
        if (check_order && strcmp(producer, last_producer) != 0) {
          t->dequeues++;
          IrInstr *mine = our_choice(&cx, m, producer);
          /* Bitcasts all have infinite priority; XLA breaks their ties by its internal ids, which the
           * log does not record. */
          if (mine == p || (mine && mine->op == IR_OP_BITCAST && p->op == IR_OP_BITCAST)) t->dequeues_agree++;
          else if (!quiet) {
            PriorityJudgement jm;
            PriorityJudgement jx;
            bool have_x = priority_fusion_judge(&cx, p, &jx);
            if (mine && priority_fusion_judge(&cx, mine, &jm))
              printf("  order  XLA fuses %s (%.4f/%.4f) next, fxplain would take %s (%.4f/%.4f us fused/unfused)\n",
                     producer, have_x ? jx.us_fused : NAN, have_x ? jx.us_unfused : NAN, mine->name, jm.us_fused,
                     jm.us_unfused);
            else
              printf("  order  XLA fuses %s next, fxplain would take %s\n", producer, mine ? mine->name : "nothing");
          }
        }
        if (strcmp(producer, last_producer) != 0 && p->op != IR_OP_BITCAST) {
          /* XLA fuses a producer only when every non-bitcast user can take it: fxplain must find
           * it eligible too. */
          PriorityJudgement jf;
          t->fusible++;
          if (priority_fusion_judge(&cx, p, &jf) && jf.eligible) t->fusible_agree++;
          else if (!quiet) {
            printf("  fuse   %-28s XLA fuses it into %s; fxplain refuses: %s (%s)\n", producer, consumer,
                   jf.reason ? jf.reason : "?", jf.detail);
            if (show && strcmp(show, producer) == 0) show_pair(p);
          }
        }
        snprintf(last_producer, sizeof last_producer, "%s", producer);
        if (p->id < nqueued) queued[p->id] = false; /* dequeued */
        if (c) {
          char tconfig[512] = "";
          if (fusion_is_generic_triton(p) || fusion_is_generic_triton(c)) {
            TritonTiling tt;
            if (fusion_triton_tiling(dev, p, c, NULL, &tt) == 1) fusion_triton_config_text(&tt, tconfig, sizeof tconfig);
          }
          IrInstr *f = fusion_fuse(c, p);
          if (f && tconfig[0]) ir_attr_set_text(f, "backend_config", tconfig);
          if (f) {
            t->fusions_applied++;
            if (fname[0] && strcmp(f->name, fname) != 0) ir_instr_rename(f, fname);
          }
        }
      }
      kind[0] = 0;
    }
  }
  free(text);
  free(queued);
  ir_module_free(m);
  return true;
}

static void line(const char *name, const Tally *t) {
  printf("%-52s exact %ld, times %ld/%ld (%.0f%%, %ld incremental)  ineligible %ld/%ld  fusible %ld/%ld  order %ld/%ld  fusions "
         "%ld/%ld%s\n",
         name, t->updates_exact, t->updates_close, t->updates, t->updates ? 100.0 * t->updates_close / t->updates : 100.0, t->incremental,
         t->ineligible_agree, t->ineligible, t->fusible_agree, t->fusible, t->dequeues_agree, t->dequeues,
         t->fusions_applied, t->fusions,
         t->unknown ? " (steps naming unknown instructions skipped)" : "");
}

int main(int argc, char **argv) {
  const DeviceProfile *dev = device_lookup("h100");
  show_dev = dev;
  bool quiet = false, show_reasons = false, seq = false;
  double floor_times = -1, floor_inel = -1, floor_fusible = -1, floor_exact = -1, floor_order = -1;
  Tally total = {0};
  int k = 1, failures = 0;
  for (; k < argc && argv[k][0] == '-'; k++) {
    if (strcmp(argv[k], "--device") == 0 && k + 1 < argc) show_dev = dev = device_lookup(argv[++k]);
    else if (strcmp(argv[k], "--quiet") == 0) quiet = true;
    else if (strcmp(argv[k], "--show") == 0 && k + 1 < argc) show = argv[++k];
    else if (strcmp(argv[k], "--estimates") == 0 && k + 1 < argc) return estimates(argv[k + 1], dev);
    else if (strcmp(argv[k], "--reasons") == 0) show_reasons = true;
    else if (strcmp(argv[k], "--sequence") == 0) seq = true;
    else if (strcmp(argv[k], "--floor-times") == 0 && k + 1 < argc) floor_times = atof(argv[++k]);
    else if (strcmp(argv[k], "--floor-ineligible") == 0 && k + 1 < argc) floor_inel = atof(argv[++k]);
    else if (strcmp(argv[k], "--floor-fusible") == 0 && k + 1 < argc) floor_fusible = atof(argv[++k]);
    else if (strcmp(argv[k], "--floor-exact") == 0 && k + 1 < argc) floor_exact = atof(argv[++k]);
    else if (strcmp(argv[k], "--floor-order") == 0 && k + 1 < argc) floor_order = atof(argv[++k]);
  }
  if (!dev || (argc - k) < 2 || (argc - k) % 2) {
    fprintf(stderr, "usage: replay [--device NAME] [--quiet] [--reasons] PRE_FUSION.hlo DUMP.txt ...\n");
    return 2;
  }
  if (seq) {
    long same = 0, total = 0;
    for (; k + 1 < argc; k += 2)
      if (!sequence(argv[k], argv[k + 1], dev, quiet, &same, &total)) failures++;
    printf("%-52s fusions in XLA's order: %ld of %ld (%.1f%%)\n", "total", same, total,
           total ? 100.0 * same / total : 100.0);
    free(names);
    return failures ? 2 : 0;
  }
  for (; k + 1 < argc; k += 2) {
    Tally t = {0};
    const char *base = strrchr(argv[k], '/');
    if (!replay(argv[k], argv[k + 1], dev, quiet, &t)) {
      failures++;
      continue;
    }
    line(base ? base + 1 : argv[k], &t);
    total.updates += t.updates, total.updates_close += t.updates_close, total.updates_exact += t.updates_exact, total.ineligible += t.ineligible;
    total.ineligible_agree += t.ineligible_agree, total.fusions += t.fusions, total.fusions_applied += t.fusions_applied;
    total.dequeues += t.dequeues, total.dequeues_agree += t.dequeues_agree, total.unknown += t.unknown;
    total.incremental += t.incremental, total.fusible += t.fusible, total.fusible_agree += t.fusible_agree;
  }
  line("total", &total);
  if (show_reasons) {
    printf("\nXLA's reason -> fxplain's reason code (count):\n");
    for (int r = 0; r < nreasons; r++) printf("  %6ld  %-75s -> %s\n", reasons[r].n, reasons[r].xla, reasons[r].ours);
  }
  if (failures) return 2;
  double times = total.updates ? (double)total.updates_close / total.updates : 1;
  double inel = total.ineligible ? (double)total.ineligible_agree / total.ineligible : 1;
  double fus = total.fusible ? (double)total.fusible_agree / total.fusible : 1;
  double exact = total.updates ? (double)total.updates_exact / total.updates : 1;
  double order = total.dequeues ? (double)total.dequeues_agree / total.dequeues : 1;
  if ((floor_times >= 0 && times + 5e-4 < floor_times) || (floor_inel >= 0 && inel + 5e-4 < floor_inel) ||
      (floor_fusible >= 0 && fus + 5e-4 < floor_fusible) || (floor_exact >= 0 && exact + 5e-4 < floor_exact) ||
      (floor_order >= 0 && order + 5e-4 < floor_order)) {
    printf("replay: agreement fell below the floor (times %.3f, floor %.3f; exact %.3f, floor %.3f; ineligible %.3f, "
           "floor %.3f; fusible %.3f, floor %.3f; next producer %.3f, floor %.3f)\n",
           times, floor_times, exact, floor_exact, inel, floor_inel, fus, floor_fusible, order, floor_order);
    return 1;
  }
  return 0;
}
