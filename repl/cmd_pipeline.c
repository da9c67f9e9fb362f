/* cmd_pipeline.c — the pipeline commands: choosing a pipeline, moving through its stages, and
 * asking what each pass did.
 *
 *   pipeline [NAME]          show or choose the pipeline (choosing goes back to stage 0)
 *   passes [--changed]       the pipeline as a table of stages and their numbers
 *   step [N | PASS | all]    run (or revisit) the next stages
 *   back [N], goto STAGE     move through the stages already run (goto runs what is missing)
 *   stage                    where we are
 *   diff [A [B]]             what changed between two stages
 *   why NAME [NAME]          everything recorded about an instruction, or about a pair
 *   decisions [filters]      the decision log
 *   kernels                  the kernel plan of the current stage
 *   show stats               instructions, kernels, bytes and time of the current stage
 *
 * Stages: stage 0 is the input; stage k is the module after the pipeline's pass k-1. Each new
 * stage is a snapshot made by pass_run_stage (compiler/pass.c); a pass that changed nothing
 * shares the previous snapshot (Stage.shared). The decision log (explain/) keeps each stage's
 * records; moving back and forth never re-runs a pass, so every way of reaching a stage shows
 * the same contents. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../compiler/hlo.h"
#include "../compiler/plan.h"
#include "../explain/explain.h"
#include "args.h"
#include "../explain/json.h"
#include "repl.h"
#include "session.h"

/* ---------- errors and small helpers ---------- */

/* An error about the command as a whole: the shell places it at the command. */
static bool cmd_error(Session *s, FxError *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error about word argi of the command (argi == argc: just past its end). */
static bool arg_error(Session *s, FxError *err, int argi, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static bool cmd_error(Session *s, FxError *err, const char *fmt, ...) {
  (void)s;
  char msg[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fx_error_set(err, NULL, 0, 0, "%s", msg);
}

static bool arg_error(Session *s, FxError *err, int argi, const char *fmt, ...) {
  char msg[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return repl_arg_error(s, err, argi, "%s", msg);
}

static bool need_module(Session *s, FxError *err) {
  if (s->eng.nstages > 0 && s->eng.stages[0].module) return true;
  return cmd_error(s, err, "nothing is loaded: load a module (load FILE.hlo) or define one first");
}

static bool parse_count(const char *w, long long *out) {
  if (!w || !*w) return false;
  char *end;
  long long v = strtoll(w, &end, 10);
  if (*end || v < 0) return false;
  *out = v;
  return true;
}

static void fmt_bytes(double b, char *buf, size_t n) {
  if (b < 1024) snprintf(buf, n, "%.0f B", b);
  else if (b < 1024.0 * 1024) snprintf(buf, n, "%.1f KiB", b / 1024);
  else if (b < 1024.0 * 1024 * 1024) snprintf(buf, n, "%.1f MiB", b / (1024.0 * 1024));
  else snprintf(buf, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
}

static void fmt_time(double us, char *buf, size_t n) {
  if (us < 1000) snprintf(buf, n, "%.2f us", us);
  else if (us < 1e6) snprintf(buf, n, "%.2f ms", us / 1e3);
  else snprintf(buf, n, "%.2f s", us / 1e6);
}

/* The number `render --decision N` takes for a record: its place among every recorded decision,
 * in `decisions` order (stage, then the order the pass made them), from 1. */
static int decision_number(const Session *s, const ExplainRecord *r) { return explain_engine_number(&s->eng, r); }

/* A record as JSON, its decision number first. */
static void json_record(const Session *s, JsonWriter *w, const ExplainRecord *r) {
  explain_record_json(w, r, decision_number(s, r));
}

/* The terminal's width when the output goes to one (0 in batch, JSON or a pipe): long sentences
 * wrap between words there. */
static int term_width(const Session *s) {
  struct winsize ws;
  return s->interactive && !s->json && isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0
             ? ws.ws_col - 1 /* a full last column makes some terminals wrap again */
             : 0;
}

/* One sentence on its own line, wrapped between words on a terminal (continuations indented). */
static void out_line(const Session *s, const char *text) {
  explain_print_wrapped(s->out, text, term_width(s), 4);
  fputc('\n', s->out);
}

/* A record as text, its decision number first ("#12  stage 4  instruction-fusion ..."). */
static void print_record(const Session *s, const ExplainRecord *r) {
  fprintf(s->out, "#%d  ", decision_number(s, r));
  /* On a terminal the sentences wrap between words at its width, not mid-word. */
  explain_print_record_width(s->out, r, term_width(s));
}

/* ---------- stages ---------- */

/* "stage 3  dce: 5 removed → 12 kernels"; in JSON an object, written into `into` when given. */
static bool print_move(Session *s, int stage, JsonWriter *into, FxError *err) {
  const KernelPlan *p = explain_engine_plan(&s->eng, stage, err);
  if (!p) return false;
  const char *pass = explain_engine_stage_pass(&s->eng, stage);
  char what[256];
  explain_engine_stage_summary(&s->eng, stage, what, sizeof what);
  if (s->json) {
    JsonWriter own;
    JsonWriter *w = into;
    if (!w) {
      json_init(&own, s->out);
      w = &own;
    }
    json_object_begin(w);
    json_kv_int(w, "stage", stage);
    json_kv_str(w, "pass", pass);
    json_kv_bool(w, "changed", s->eng.stages[stage].changed);
    json_kv_str(w, "summary", what);
    json_kv_int(w, "kernels", p->ncompute);
    json_object_end(w);
  } else {
    fprintf(s->out, "stage %d  %s: %s \xe2\x86\x92 %d kernel%s\n", stage, pass, what, p->ncompute,
            p->ncompute == 1 ? "" : "s");
  }
  return true;
}

/* A stage number, or a pass name meaning its first stage. */
static bool parse_stage(Session *s, const char *w, int argi, int *out, FxError *err) {
  long long v;
  if (parse_count(w, &v)) {
    if (v > explain_engine_last_stage(&s->eng))
      return arg_error(s, err, argi, "no stage %lld: the %s pipeline has stages 0 to %d", v, explain_engine_pipeline(&s->eng)->name,
                       explain_engine_last_stage(&s->eng));
    *out = (int)v;
    return true;
  }
  int k = explain_engine_stage_of_pass(&s->eng, w, 0);
  if (k < 0) {
    if (pass_lookup(w))
      return arg_error(s, err, argi, "the %s pipeline does not run %s", explain_engine_pipeline(&s->eng)->name, w);
    return arg_error(s, err, argi, "expected a stage number or a pass name, got '%s'", w);
  }
  *out = k;
  return true;
}

/* ---------- pipeline, step, back, goto, stage ---------- */

static bool cmd_pipeline(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 0, 1, err)) return false;
  if (argc == 2) {
    const Pipeline *pl = explain_engine_find_pipeline(&s->eng, argv[1]);
    if (!pl) {
      char names[256] = "";
      for (int k = 0; k < pipeline_count(); k++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", pipeline_at(k)->name);
      return arg_error(s, err, 1, "no pipeline named '%s' (pipelines: %s)", argv[1], names);
    }
    explain_engine_set_pipeline(&s->eng, pl);
  }
  const Pipeline *pl = explain_engine_pipeline(&s->eng);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "pipeline", pl->name);
    json_kv_str(&w, "description", pl->description);
    json_kv_int(&w, "stage", s->eng.nstages > 0 ? s->eng.cur : 0);
    json_key(&w, "passes");
    json_array_begin(&w);
    for (int k = 0; k < pl->npasses; k++) json_str(&w, pl->passes[k]->name);
    json_array_end(&w);
    json_key(&w, "pipelines");
    json_array_begin(&w);
    for (int k = 0; k < pipeline_count(); k++) json_str(&w, pipeline_at(k)->name);
    json_array_end(&w);
    json_object_end(&w);
    return true;
  }
  fprintf(s->out, "pipeline %s: %s\n", pl->name, pl->description);
  int cur = s->eng.nstages > 0 ? s->eng.cur : -1;
  fprintf(s->out, "  %s 0  input\n", cur == 0 ? ">" : " ");
  for (int k = 1; k <= pl->npasses; k++) {
    const Pass *p = pl->passes[k - 1];
    fprintf(s->out, "  %s %-2d %-24s %s%s\n", cur == k ? ">" : " ", k, p->name,
            k < s->eng.nstages ? "run" : "-", pass_settings_is_disabled(&s->eng.settings, p->name) ? " (switched off)" : "");
  }
  fputs("pipelines:", s->out);
  for (int k = 0; k < pipeline_count(); k++) fprintf(s->out, " %s", pipeline_at(k)->name);
  fputc('\n', s->out);
  return true;
}

/* Moves to stage target one stage at a time, printing a line per stage (text) or an array of
 * moves (JSON). */
static bool step_to(Session *s, int target, FxError *err) {
  JsonWriter w;
  if (s->json) {
    json_init(&w, s->out);
    json_array_begin(&w);
  }
  bool ok = true;
  while (s->eng.cur < target) {
    if (!explain_engine_ensure(&s->eng, s->eng.cur + 1, err)) {
      ok = false;
      break;
    }
    s->eng.cur++;
    if (!print_move(s, s->eng.cur, s->json ? &w : NULL, err)) {
      ok = false;
      break;
    }
  }
  if (s->json) json_array_end(&w);
  return ok;
}

static bool cmd_step(Session *s, int argc, char **argv, FxError *err) {
  if (!need_module(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 1, err)) return false;
  int target = s->eng.cur + 1;
  if (argc == 2) {
    long long n;
    if (strcmp(argv[1], "all") == 0) {
      target = explain_engine_last_stage(&s->eng);
    } else if (parse_count(argv[1], &n)) {
      if (n == 0) return arg_error(s, err, 1, "step 0 does nothing: give a count of 1 or more");
      target = s->eng.cur + (int)(n < explain_engine_last_stage(&s->eng) ? n : explain_engine_last_stage(&s->eng));
    } else {
      target = explain_engine_stage_of_pass(&s->eng, argv[1], s->eng.cur);
      if (target < 0) {
        if (pass_lookup(argv[1]) && explain_engine_stage_of_pass(&s->eng, argv[1], 0) > 0)
          return arg_error(s, err, 1, "%s does not run after stage %d of the %s pipeline", argv[1], s->eng.cur,
                           explain_engine_pipeline(&s->eng)->name);
        if (pass_lookup(argv[1]))
          return arg_error(s, err, 1, "the %s pipeline does not run %s", explain_engine_pipeline(&s->eng)->name, argv[1]);
        return arg_error(s, err, 1, "expected a count, a pass name or 'all', got '%s'", argv[1]);
      }
    }
  }
  if (s->eng.cur >= explain_engine_last_stage(&s->eng))
    return cmd_error(s, err, "already at the last stage (%d) of the %s pipeline", s->eng.cur, explain_engine_pipeline(&s->eng)->name);
  bool clamped = target > explain_engine_last_stage(&s->eng) || (argc == 2 && strcmp(argv[1], "all") != 0 && parse_count(argv[1], &(long long){0}) &&
                                            atoll(argv[1]) > explain_engine_last_stage(&s->eng) - s->eng.cur);
  if (target > explain_engine_last_stage(&s->eng)) target = explain_engine_last_stage(&s->eng);
  int from = s->eng.cur;
  if (!step_to(s, target, err)) return false;
  /* A count past the end stops at the last stage, and says so (as back does at stage 0). */
  if (clamped && !s->json)
    fprintf(s->out, "(step %s: only %d stage%s after stage %d; stopped at the last stage, %d)\n", argv[1],
            explain_engine_last_stage(&s->eng) - from, explain_engine_last_stage(&s->eng) - from == 1 ? "" : "s", from, target);
  return true;
}

static bool cmd_back(Session *s, int argc, char **argv, FxError *err) {
  if (!need_module(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 1, err)) return false;
  long long n = 1;
  if (argc == 2 && (!parse_count(argv[1], &n) || n == 0))
    return arg_error(s, err, 1, "expected a count of 1 or more, got '%s'", argv[1]);
  if (s->eng.cur == 0) return cmd_error(s, err, "already at stage 0 (the input)");
  int from = s->eng.cur;
  s->eng.cur = n >= s->eng.cur ? 0 : s->eng.cur - (int)n;
  if (!print_move(s, s->eng.cur, NULL, err)) return false;
  /* A count past the input stops at stage 0, and says so (goto, an absolute stage, refuses one
   * that does not exist). */
  if (n > from && !s->json)
    fprintf(s->out, "(back %lld: only %d stage%s before stage %d; stopped at stage 0, the input)\n", n, from,
            from == 1 ? "" : "s", from);
  return true;
}

static bool cmd_goto(Session *s, int argc, char **argv, FxError *err) {
  if (!need_module(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 1, 1, err)) return false;
  int target;
  if (!parse_stage(s, argv[1], 1, &target, err)) return false;
  if (!explain_engine_ensure(&s->eng, target, err)) return false;
  s->eng.cur = target;
  return print_move(s, target, NULL, err);
}

static bool cmd_stage(Session *s, int argc, char **argv, FxError *err) {
  if (!need_module(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 0, err)) return false;
  const Pipeline *pl = explain_engine_pipeline(&s->eng);
  const KernelPlan *p = explain_engine_plan(&s->eng, s->eng.cur, err);
  if (!p) return false;
  const char *pass = explain_engine_stage_pass(&s->eng, s->eng.cur);
  const char *next = s->eng.cur < pl->npasses ? pl->passes[s->eng.cur]->name : NULL;
  int ninstr = ir_module_instr_count(s->eng.stages[s->eng.cur].module);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", s->eng.cur);
    json_kv_int(&w, "last", pl->npasses);
    json_kv_str(&w, "pipeline", pl->name);
    json_kv_str(&w, "pass", pass);
    json_kv_bool(&w, "changed", s->eng.stages[s->eng.cur].changed);
    json_kv_int(&w, "instructions", ninstr);
    json_kv_int(&w, "kernels", p->ncompute);
    json_kv_str(&w, "next", next);
    json_object_end(&w);
  } else {
    fprintf(s->out, "stage %d of %d (%s pipeline): %s%s; %d instructions, %d kernels\n", s->eng.cur, pl->npasses,
            pl->name, s->eng.cur == 0 ? "the input" : "after ", s->eng.cur == 0 ? "" : pass, ninstr, p->ncompute);
    if (next) fprintf(s->out, "next: %s\n", next);
    else fputs("the pipeline is finished\n", s->out);
  }
  return true;
}

/* ---------- passes ---------- */

static bool cmd_passes(Session *s, int argc, char **argv, FxError *err) {
  bool only_changed = false;
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--changed") == 0) only_changed = true;
    else return arg_error(s, err, k, "unknown option '%s' (usage: passes [--changed])", argv[k]);
  }
  if (!need_module(s, err)) return false;
  const Pipeline *pl = explain_engine_pipeline(&s->eng);
  JsonWriter w;
  if (s->json) {
    json_init(&w, s->out);
    json_array_begin(&w);
  } else {
    fprintf(s->out, "pipeline %s on %s\n", pl->name, s->eng.device.name);
    fprintf(s->out, "    %-5s %-24s %-7s %12s %8s %10s %11s %12s\n", "stage", "pass", "changed", "instructions",
            "kernels", "launches", "bytes", "est. time");
  }
  bool ok = true;
  for (int k = 0; k <= pl->npasses && ok; k++) {
    bool run = k < s->eng.nstages;
    bool changed = run && s->eng.stages[k].changed;
    if (only_changed && k > 0 && run && !changed) continue;
    const char *pass = k == 0 ? "input" : pl->passes[k - 1]->name;
    const KernelPlan *p = NULL;
    if (run) {
      p = explain_engine_plan(&s->eng, k, err);
      if (!p) {
        ok = false;
        break;
      }
    }
    int ninstr = run ? ir_module_instr_count(s->eng.stages[k].module) : 0;
    if (s->json) {
      json_object_begin(&w);
      json_kv_int(&w, "stage", k);
      json_kv_str(&w, "pass", pass);
      if (run) {
        json_kv_bool(&w, "changed", changed);
        json_kv_int(&w, "instructions", ninstr);
        json_kv_int(&w, "kernels", p->ncompute);
        json_kv_int(&w, "bytes", (long long)(p->bytes_read + p->bytes_written));
        json_kv_double(&w, "est_us", p->est_us);
      } else {
        json_kv_null(&w, "changed");
        json_kv_null(&w, "instructions");
        json_kv_null(&w, "kernels");
        json_kv_null(&w, "bytes");
        json_kv_null(&w, "est_us");
      }
      json_object_end(&w);
    } else if (run) {
      char b[32], t[32];
      fmt_bytes((double)(p->bytes_read + p->bytes_written), b, sizeof b);
      fmt_time(p->est_us, t, sizeof t);
      fprintf(s->out, "  %s %-5d %-24s %-7s %12d %8d %10lld %11s %12s\n", k == s->eng.cur ? ">" : " ", k, pass,
              k == 0 ? "" : (changed ? "yes" : "no"), ninstr, p->ncompute, (long long)p->launches, b, t);
    } else {
      fprintf(s->out, "    %-5d %-24s %-7s\n", k, pass, "not run");
    }
  }
  if (s->json) json_array_end(&w);
  return ok;
}

/* ---------- diff ---------- */

static bool stage_run(Session *s, const char *w, int argi, int *out, FxError *err) {
  if (!parse_stage(s, w, argi, out, err)) return false;
  if (*out >= s->eng.nstages)
    return arg_error(s, err, argi, "stage %d has not been run yet (step or goto %d first)", *out, *out);
  return true;
}

static void json_diff_list(JsonWriter *w, const ExplainDiff *d, ExplainDiffKind kind) {
  json_key(w, explain_diff_kind_name(kind));
  json_array_begin(w);
  for (int k = 0; k < d->n; k++) {
    const ExplainDiffEntry *e = &d->entries[k];
    if (e->kind != kind) continue;
    json_object_begin(w);
    json_kv_str(w, "name", e->name);
    json_kv_str(w, "op", e->op);
    json_kv_str(w, "computation", e->comp);
    if (kind == DIFF_FUSED || kind == DIFF_REMOVED) json_kv_str(w, "into", e->into);
    if (kind == DIFF_ADDED || kind == DIFF_REWRITTEN) json_kv_str(w, "detail", e->detail);
    json_object_end(w);
  }
  json_array_end(w);
}

static bool cmd_diff(Session *s, int argc, char **argv, FxError *err) {
  if (!need_module(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 2, err)) return false;
  int a, b;
  if (argc == 1) {
    if (s->eng.cur == 0) return cmd_error(s, err, "at stage 0 (the input) there is no pass to compare: step first, or diff A B");
    a = s->eng.cur - 1;
    b = s->eng.cur;
  } else if (argc == 2) {
    if (!stage_run(s, argv[1], 1, &a, err)) return false;
    b = s->eng.cur;
    if (a == b) {
      if (a == 0) return cmd_error(s, err, "stage 0 is the input: give two stages to compare");
      a = b - 1;
    }
  } else {
    if (!stage_run(s, argv[1], 1, &a, err) || !stage_run(s, argv[2], 2, &b, err)) return false;
  }
  int lo = a < b ? a : b, hi = a < b ? b : a;
  ExplainDiff *d = explain_diff(s->eng.stages[a].module, s->eng.stages[b].module, s->eng.log, lo, hi, err);
  if (!d) return false;
  const char *pa = a == 0 ? "input" : s->eng.stages[a].pass, *pb = b == 0 ? "input" : s->eng.stages[b].pass;
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_int(&w, "from", a);
    json_kv_int(&w, "to", b);
    json_kv_int(&w, "instructions_from", d->instrs_a);
    json_kv_int(&w, "instructions_to", d->instrs_b);
    json_diff_list(&w, d, DIFF_ADDED);
    json_diff_list(&w, d, DIFF_REMOVED);
    json_diff_list(&w, d, DIFF_REWRITTEN);
    json_diff_list(&w, d, DIFF_FUSED);
    json_object_end(&w);
  } else {
    fprintf(s->out, "diff stage %d (%s) -> stage %d (%s): %d -> %d instructions", a, pa, b, pb, d->instrs_a,
            d->instrs_b);
    if (d->n == 0) fputs("; no change\n", s->out);
    else {
      const char *sep = "; ";
      static const ExplainDiffKind order[] = {DIFF_FUSED, DIFF_ADDED, DIFF_REMOVED, DIFF_REWRITTEN};
      for (int k = 0; k < 4; k++)
        if (d->count[order[k]]) {
          fprintf(s->out, "%s%d %s", sep, d->count[order[k]], explain_diff_kind_name(order[k]));
          sep = ", ";
        }
      fputc('\n', s->out);
    }
    const int limit = 200;
    int shown = 0;
    for (int k = 0; k < d->n && shown < limit; k++, shown++) {
      const ExplainDiffEntry *e = &d->entries[k];
      fprintf(s->out, "  %-10s %-28s ", explain_diff_kind_name(e->kind), e->name);
      switch (e->kind) {
      case DIFF_FUSED: fprintf(s->out, "into %s\n", e->into); break;
      case DIFF_REMOVED:
        if (e->into) fprintf(s->out, "(%s in %s) replaced by %s\n", e->op, e->comp, e->into);
        else fprintf(s->out, "(%s in %s)\n", e->op, e->comp);
        break;
      case DIFF_ADDED:
        fprintf(s->out, "(%s in %s)%s%s\n", e->op, e->comp, e->detail ? " " : "", e->detail ? e->detail : "");
        break;
      case DIFF_REWRITTEN: fprintf(s->out, "%s\n", e->detail ? e->detail : ""); break;
      }
    }
    if (d->n > limit) fprintf(s->out, "  ... and %d more (diff --json lists them all)\n", d->n - limit);
  }
  explain_diff_free(d);
  return true;
}

/* ---------- why ---------- */

static bool unknown_name(Session *s, const char *name, int argi, FxError *err) {
  return arg_error(s, err, argi, "no instruction named '%s' at any stage", name);
}

static void print_decisions(Session *s, JsonWriter *w, const ExplainRecord **res, int n) {
  if (s->json) {
    json_key(w, "decisions");
    json_array_begin(w);
    for (int k = 0; k < n; k++) json_record(s, w, res[k]);
    json_array_end(w);
  } else {
    for (int k = 0; k < n; k++) print_record(s, res[k]);
  }
}

/* Text: each group of identical decisions (clones of one instruction, the same pair re-judged)
 * once, with the count and the numbers of the others. */
static void print_grouped(Session *s, const ExplainRecord **res, int n) {
  int *group = n ? fx_malloc(sizeof(int) * (size_t)n) : NULL;
  if (!group) {
    for (int k = 0; k < n; k++) print_record(s, res[k]);
    return;
  }
  explain_group_records(res, n, group);
  for (int k = 0; k < n; k++) {
    if (group[k] != k) continue;
    print_record(s, res[k]);
    int same = 0;
    for (int j = k + 1; j < n; j++) same += group[j] == k;
    if (!same) continue;
    fprintf(s->out, "    (and %d identical decision%s, for clones or re-runs:", same, same == 1 ? "" : "s");
    int shown = 0;
    for (int j = k + 1; j < n && shown < 12; j++)
      if (group[j] == k) fprintf(s->out, " #%d", decision_number(s, res[j])), shown++;
    fprintf(s->out, "%s)\n", same > shown ? " ..." : "");
  }
  fx_free(group);
}

static bool why_one(Session *s, const char *name, FxError *err) {
  ExplainWhyOne q;
  int unknown;
  if (!explain_engine_why_one(&s->eng, name, &q, &unknown, err)) {
    explain_why_one_free(&q);
    return unknown ? unknown_name(s, name, 1, err) : false;
  }
  const IrInstr *i = q.instr;
  const PlanKernel *kn = q.kernel;
  const ExplainRecord **res = q.decisions;
  int n = q.n, at = q.last_seen, later = q.first_later;
  const char *pass = explain_engine_stage_pass(&s->eng, s->eng.cur);
  char shape[256] = "";
  if (i) ir_shape_format(&i->shape, true, shape, sizeof shape);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "name", name);
    json_kv_int(&w, "stage", s->eng.cur);
    json_kv_bool(&w, "present", i != NULL);
    if (i) {
      json_kv_str(&w, "op", ir_op_name(i->op));
      json_kv_str(&w, "shape", shape);
      json_kv_str(&w, "computation", i->parent->name);
      json_key(&w, "kernel");
      if (kn) {
        json_object_begin(&w);
        json_kv_str(&w, "name", kn->name);
        json_kv_str(&w, "kind", plan_kernel_kind_name(kn->kind));
        json_kv_int(&w, "members", kn->nmembers);
        json_object_end(&w);
      } else {
        json_null(&w);
      }
    } else {
      json_kv_int(&w, "last_seen_stage", at >= 0 ? at : later);
      /* what the passes that removed it made of it, at this stage */
      if (q.became) json_kv_str(&w, "became", q.became->name);
      else json_kv_null(&w, "became");
    }
    print_decisions(s, &w, res, n);
    json_object_end(&w);
  } else if (i) {
    fprintf(s->out, "%s: %s %s in %s\n", name, ir_op_name(i->op), shape, i->parent->name);
    char lab[200];
    if (kn && kn->instr == i && kn->nmembers <= 1 && kn->kind == KERNEL_LIBRARY)
      fprintf(s->out, "  at stage %d (%s): its own library kernel, a %s\n", s->eng.cur, pass,
              explain_kernel_label(kn, lab, sizeof lab));
    else if (kn && kn->instr == i && kn->nmembers <= 1)
      fprintf(s->out, "  at stage %d (%s): its own %s kernel\n", s->eng.cur, pass, plan_kernel_kind_name(kn->kind));
    else if (kn && kn->kind == KERNEL_CONTROL)
      fprintf(s->out, "  at stage %d (%s): runs on the host; its loop control reads the condition back every iteration\n",
              s->eng.cur, pass);
    else if (kn)
      fprintf(s->out, "  at stage %d (%s): in kernel %s (%s, %d instructions)\n", s->eng.cur, pass, kn->name,
              plan_kernel_kind_name(kn->kind), kn->nmembers);
    else if (i->op == IR_OP_WHILE || i->op == IR_OP_CALL || i->op == IR_OP_CONDITIONAL)
      fprintf(s->out, "  at stage %d (%s): control flow; its computations' kernels run in its place\n", s->eng.cur, pass);
    else
      fprintf(s->out, "  at stage %d (%s): no kernel: %s\n", s->eng.cur, pass, explain_no_kernel_reason(i));
  } else if (at >= 0) {
    fprintf(s->out, "%s is not in stage %d (%s): last seen at stage %d (%s)", name, s->eng.cur, pass, at,
            explain_engine_stage_pass(&s->eng, at));
    /* "; it became fusion.2 (in kernel fusion.2)" when it can be followed */
    if (q.became) {
      fprintf(s->out, "; it became %s", q.became->name);
      if (q.became_kernel && q.became_kernel->instr != q.became) fprintf(s->out, " (in kernel %s)", q.became_kernel->name);
    }
    fputc('\n', s->out);
  } else {
    fprintf(s->out, "%s is not in stage %d (%s): it first appears at stage %d (%s)\n", name, s->eng.cur, pass, later,
            s->eng.stages[later].pass);
  }
  if (!s->json) {
    if (n == 0) fprintf(s->out, "  no decision names %s%s\n", name, s->eng.nstages > 1 ? "" : " (no pass has run yet)");
    else fprintf(s->out, "  %d decision%s naming %s:\n", n, n == 1 ? "" : "s", name);
    print_grouped(s, res, n);
  }
  explain_why_one_free(&q);
  return true;
}

/* One decision on a line: "#21 (stage 12 multi_output_fusion sibling s -> fusion.2, rejected [cycle])". */
static void print_record_brief(Session *s, const ExplainRecord *r) {
  fprintf(s->out, "#%d (stage %d %s %s", decision_number(s, r), r->stage, r->pass, r->action);
  if (r->producer && r->consumer) fprintf(s->out, " %s -> %s", r->producer, r->consumer);
  else if (r->producer || r->consumer) fprintf(s->out, " %s", r->producer ? r->producer : r->consumer);
  fprintf(s->out, ", %s", r->accepted ? "accepted" : "rejected");
  if (r->reason) fprintf(s->out, " [%s]", r->reason);
  fputc(')', s->out);
}

/* The boundary, its decision (or why there is none), and the other decisions between its two
 * kernels in one line each. */
static void print_boundary(Session *s, const ExplainStageView *v, const ExplainBoundary *bd) {
  char bytes[32];
  fmt_bytes((double)bd->bytes, bytes, sizeof bytes);
  char lf[400], lt[400], nf[200], nt[200];
  explain_kernel_label(bd->from, lf, sizeof lf);
  explain_kernel_label(bd->to, lt, sizeof lt);
  /* The names the user knows inside each kernel ("input fusion: mx"). */
  char labf[600], labt[600];
  const char *ln = explain_view_kernel_names(v, bd->from, nf, sizeof nf);
  snprintf(labf, sizeof labf, "%s%s%s", explain_kernel_label(bd->from, lf, sizeof lf), ln[0] ? ": " : "", ln);
  ln = explain_view_kernel_names(v, bd->to, nt, sizeof nt);
  snprintf(labt, sizeof labt, "%s%s%s", explain_kernel_label(bd->to, lt, sizeof lt), ln[0] ? ": " : "", ln);
  char line[2400];
  size_t len;
  if (bd->bytes > 0)
    len = (size_t)snprintf(line, sizeof line, "boundary %s (%s) -> %s (%s), %s written to memory and read back: ",
                           bd->from->name, labf, bd->to->name, labt, bytes);
  else len = (size_t)snprintf(line, sizeof line, "between %s (%s) and %s (%s): ", bd->from->name, labf, bd->to->name, labt);
  if (len >= sizeof line) len = sizeof line - 1;
  if (!bd->decision) {
    snprintf(line + len, sizeof line - len, "no decision: %s", bd->none);
    out_line(s, line);
    return;
  }
  len += (size_t)snprintf(line + len, sizeof line - len, "kept apart by decision #%d", decision_number(s, bd->decision));
  if (bd->same && len < sizeof line)
  {
    char times[32];
    if (bd->same == 1) snprintf(times, sizeof times, "once");
    else snprintf(times, sizeof times, "%d times", bd->same);
    snprintf(line + len, sizeof line - len, " (made again %s by later runs or for clones, last as #%d at stage %d)",
             times, decision_number(s, bd->latest), bd->latest->stage);
  }
  out_line(s, line);
  print_record(s, bd->decision);
  int others = bd->ndecisions - 1 - bd->same;
  if (others <= 0) return;
  /* The other kinds of decision between the two kernels, one line each (one per kind). */
  ExplainFilter f;
  explain_filter_init(&f);
  f.max_stage = s->eng.cur;
  const ExplainRecord **all;
  int n = explain_query(s->eng.log, &f, &all);
  const ExplainRecord *seen[4];
  int shown = 0;
  for (int k = n - 1; k >= 0 && shown < 4; k--) {
    const ExplainRecord *r = all[k];
    if (r == bd->decision || !explain_view_between(v, r, bd->from, bd->to)) continue;
    bool dup = explain_records_identical(r, bd->decision);
    for (int j = 0; j < shown && !dup; j++) dup = explain_records_identical(r, seen[j]);
    if (dup) continue;
    fputs(shown ? "\n                       " : "    also between them: ", s->out);
    print_record_brief(s, r);
    seen[shown++] = r;
  }
  if (shown) fputc('\n', s->out);
  fx_free(all);
}

static void json_boundary(Session *s, JsonWriter *w, const ExplainBoundary *bd) {
  json_object_begin(w);
  json_kv_str(w, "from", bd->from->name);
  json_kv_str(w, "to", bd->to->name);
  json_kv_int(w, "bytes", bd->bytes);
  if (bd->decision) {
    json_kv_int(w, "decision", decision_number(s, bd->decision));
    if (bd->decision->reason) json_kv_str(w, "reason", bd->decision->reason);
    else json_kv_null(w, "reason");
    json_kv_int(w, "identical", bd->same);
    json_kv_null(w, "none");
  } else {
    json_kv_null(w, "decision");
    json_kv_null(w, "reason");
    json_kv_int(w, "identical", 0);
    json_kv_str(w, "none", bd->none);
  }
  json_kv_int(w, "decisions", bd->ndecisions);
  json_object_end(w);
}

static bool why_pair(Session *s, const char *a, const char *b, FxError *err) {
  ExplainWhyPair q;
  int unknown;
  if (!explain_engine_why_pair(&s->eng, a, b, &q, &unknown, err))
    return unknown ? unknown_name(s, unknown == 1 ? a : b, unknown, err) : false;
  const ExplainRecord **res = q.decisions;
  int n = q.n;
  ExplainSplit *sp = q.split;
  ExplainStageView *v = q.view;
  bool have_split = q.have_split, split = q.apart;
  const char *rel = q.relation;
  const ExplainRecord *final = q.final;
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_key(&w, "names");
    json_array_begin(&w);
    json_str(&w, a);
    json_str(&w, b);
    json_array_end(&w);
    json_kv_int(&w, "stage", s->eng.cur);
    if (have_split) {
      json_kv_str(&w, "split", explain_split_kind_name(sp->kind));
      json_key(&w, "kernels");
      json_array_begin(&w);
      if (sp->ka) json_str(&w, sp->ka->name);
      else json_null(&w);
      if (sp->kb) json_str(&w, sp->kb->name);
      else json_null(&w);
      json_array_end(&w);
      json_key(&w, "boundaries");
      json_array_begin(&w);
      for (int k = 0; k < sp->nboundaries; k++) json_boundary(s, &w, &sp->boundaries[k]);
      json_array_end(&w);
      if (sp->joined) json_kv_int(&w, "joined", decision_number(s, sp->joined));
      else json_kv_null(&w, "joined");
    }
    print_decisions(s, &w, res, n);
    if (final) json_kv_int(&w, "final", decision_number(s, final));
    else json_kv_null(&w, "final");
    json_key(&w, "superseded");
    json_array_begin(&w);
    for (int k = 0; k + 1 < n; k++) json_int(&w, decision_number(s, res[k]));
    json_array_end(&w);
    if (n == 0 || split) json_kv_str(&w, "relation", rel);
    else json_kv_null(&w, "relation");
    json_object_end(&w);
  } else if (split && (sp->nboundaries > 0 || n == 0)) {
    const char *pass = explain_engine_stage_pass(&s->eng, s->eng.cur);
    char head[1200];
    snprintf(head, sizeof head, "%s and %s at stage %d (%s): %s", a, b, s->eng.cur, pass, rel);
    out_line(s, head);
    for (int k = 0; k < sp->nboundaries; k++) print_boundary(s, v, &sp->boundaries[k]);
    if (sp->total_boundaries > sp->nboundaries)
      fprintf(s->out, "... and %d more boundaries\n", sp->total_boundaries - sp->nboundaries);
    if (sp->kind == EXPLAIN_SPLIT_SIBLINGS && sp->nboundaries == 0)
      fprintf(s->out, "no decision between %s and %s: no pass took them as siblings up to stage %d\n",
              sp->ka->name, sp->kb->name, s->eng.cur);
  } else if (have_split && sp->kind == EXPLAIN_SPLIT_NONE && (n == 0 || !final->accepted)) {
    /* Together now, though no decision between the two names says so: the one that made their
     * kernel, then what was said about the pair before. */
    const char *pass = explain_engine_stage_pass(&s->eng, s->eng.cur);
    char head[1200];
    snprintf(head, sizeof head, "%s and %s at stage %d (%s): %s", a, b, s->eng.cur, pass, rel);
    out_line(s, head);
    if (sp->joined) {
      fprintf(s->out, "joined by decision #%d:\n", decision_number(s, sp->joined));
      print_record(s, sp->joined);
    }
    if (n > 0) {
      fprintf(s->out, "superseded: %d earlier decision%s between %s and %s:\n", n, n == 1 ? "" : "s", a, b);
      for (int k = 0; k < n; k++) print_record(s, res[k]);
    }
  } else if (n == 0) {
    char head[1200];
    snprintf(head, sizeof head, "no decision between %s and %s: %s", a, b, rel);
    out_line(s, head);
  } else {
    fprintf(s->out, "%d decision%s between %s and %s; the final outcome (stage %d, %s): %s\n", n, n == 1 ? "" : "s", a,
            b, final->stage, final->pass, final->accepted ? "accepted" : "rejected");
    print_record(s, final);
    if (n > 1) {
      fprintf(s->out, "superseded: %d earlier decision%s, replaced by #%d at stage %d (%s):\n", n - 1,
              n == 2 ? "" : "s", decision_number(s, final), final->stage, final->pass);
      for (int k = 0; k + 1 < n; k++) print_record(s, res[k]);
    }
  }
  explain_why_pair_free(&q);
  return true;
}

static bool cmd_why(Session *s, int argc, char **argv, FxError *err) {
  if (!need_module(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 1, 2, err)) return false;
  const char *a = argv[1][0] == '%' ? argv[1] + 1 : argv[1];
  const char *b = argc == 2 ? NULL : argv[2][0] == '%' ? argv[2] + 1 : argv[2];
  if (!(b ? why_pair(s, a, b, err) : why_one(s, a, err))) return false;
  repl_xla_source_note(s, a, b); /* where they came from in the user's program, when XLA said */
  return true;
}

/* ---------- decisions ---------- */

static bool cmd_decisions(Session *s, int argc, char **argv, FxError *err) {
  if (!need_module(s, err)) return false;
  ExplainFilter f;
  explain_filter_init(&f);
  f.max_stage = s->eng.nstages - 1;
  for (int k = 1; k < argc; k++) {
    const char *o = argv[k];
    if (strcmp(o, "--rejected") == 0) f.verdict = 0;
    else if (strcmp(o, "--accepted") == 0) f.verdict = 1;
    else if (strcmp(o, "--reason") == 0 || strcmp(o, "--pass") == 0 || strcmp(o, "--stage") == 0) {
      if (k + 1 >= argc) return arg_error(s, err, argc, "%s needs a value", o);
      const char *v = argv[++k];
      if (strcmp(o, "--reason") == 0) {
        if (!explain_reason_meaning(v)) {
          char codes[600] = "";
          for (int r = 0; r < explain_reason_count(); r++)
            snprintf(codes + strlen(codes), sizeof codes - strlen(codes), "%s%s", r ? ", " : "", explain_reason_code(r));
          return arg_error(s, err, k, "unknown reason code '%s' (codes: %s)", v, codes);
        }
        f.reason = v;
      } else if (strcmp(o, "--pass") == 0) {
        if (!pass_lookup(v)) return arg_error(s, err, k, "no pass named '%s'", v);
        f.pass = v;
      } else {
        int st;
        if (!parse_stage(s, v, k, &st, err)) return false;
        f.stage = st;
      }
    } else {
      return arg_error(s, err, k, "unknown option '%s' (usage: decisions [--rejected | --accepted] [--reason CODE] "
                       "[--pass NAME] [--stage S])", o);
    }
  }
  const ExplainRecord **res;
  int n = explain_query(s->eng.log, &f, &res);
  if (n < 0) return cmd_error(s, err, "out of memory");
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_array_begin(&w);
    for (int k = 0; k < n; k++) json_record(s, &w, res[k]);
    json_array_end(&w);
  } else {
    for (int k = 0; k < n; k++) print_record(s, res[k]);
    fprintf(s->out, "%d decision%s%s\n", n, n == 1 ? "" : "s", s->eng.nstages > 1 ? "" : " (no pass has run yet: step first)");
  }
  fx_free(res);
  return true;
}

/* ---------- kernels and stats ---------- */

static void shape_list(const IrShape *sh, char *buf, size_t n) {
  if (sh->type == IR_TUPLE) {
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < sh->ntuple && len < n; k++) {
      if (k) len += (size_t)snprintf(buf + len, n - len, ", ");
      if (len < n) len += (size_t)ir_shape_format(&sh->tuple[k], true, buf + len, n - len);
    }
  } else {
    ir_shape_format(sh, true, buf, n);
  }
}

/* "fusion.3" or "fusion.3.1" (element 1 of a multi-output kernel's tuple). */
static void buffer_name(const PlanBuffer *bf, char *buf, size_t n) {
  if (bf->output >= 0) snprintf(buf, n, "%s.%d", bf->producer->name, bf->output);
  else snprintf(buf, n, "%s", bf->producer->name);
}

/* Where buffer bf's live range ends: its last reader, or the caller for a live-out buffer. */
static const char *buffer_end(const PlanBuffer *bf) {
  if (bf->live_out) return "(live-out)";
  if (bf->last_use == bf->def) return "(never read)";
  if (bf->last_use >= bf->comp->ninstrs) return "(end)";
  return bf->comp->instrs[bf->last_use]->name;
}

/* The buffers that cross kernel boundaries, their live ranges and the memory each takes. */
static void print_buffers(Session *s, const KernelPlan *p) {
  char b1[32], b2[32], nm[256], prev[256];
  fprintf(s->out, "%-28s %10s  %-22s %-22s %5s  %s\n", "buffer", "size", "computation", "last read by", "slot",
          "memory");
  for (int q = 0; q < p->nbuffers; q++) {
    const PlanBuffer *bf = &p->buffers[q];
    buffer_name(bf, nm, sizeof nm);
    fmt_bytes((double)bf->bytes, b1, sizeof b1);
    fprintf(s->out, "%-28s %10s  %-22s %-22s %5d  ", nm, b1, bf->comp->name, buffer_end(bf), bf->slot);
    if (bf->live_out && bf->slot2 >= 0) {
      fprintf(s->out, "a loop's result: alternates with slot %d\n", bf->slot2);
    } else if (bf->live_out) {
      fputs("fresh (handed to the caller)\n", s->out);
    } else if (bf->reuses >= 0) {
      buffer_name(&p->buffers[bf->reuses], prev, sizeof prev);
      fmt_bytes((double)p->slot_bytes[bf->slot], b2, sizeof b2);
      fprintf(s->out, "reuses %s's %s\n", prev, b2);
    } else {
      fputs("new slot\n", s->out);
    }
  }
}

static void print_buffer_summary(Session *s, const KernelPlan *p) {
  char b1[32], b2[32];
  fmt_bytes((double)p->buffer_bytes, b1, sizeof b1);
  fmt_bytes((double)p->slot_total, b2, sizeof b2);
  int reused = 0;
  for (int q = 0; q < p->nbuffers; q++) reused += p->buffers[q].reuses >= 0;
  fprintf(s->out, "buffers: %d cross kernel boundaries, %d reuse dead memory; peak %s without reuse, %s with reuse "
                  "(%d slot%s)\n",
          p->nbuffers, reused, b1, b2, p->nslots, p->nslots == 1 ? "" : "s");
}

static bool cmd_kernels(Session *s, int argc, char **argv, FxError *err) {
  if (!need_module(s, err)) return false;
  /* kernels --source / --resources: the GPU views (cmd_gpu.c). */
  if (argc >= 2 && (strcmp(argv[1], "--source") == 0 || strcmp(argv[1], "--resources") == 0)) {
    const ReplCommand *v = repl_command_lookup(argv[1][2] == 's' ? "kernels-source" : "kernels-resources");
    if (v) return v->run(s, argc - 1, argv + 1, err);
  }
  bool buffers = argc >= 2 && strcmp(argv[1], "--buffers") == 0;
  if (!repl_check_argc(s, argc, argv, 0, buffers ? 1 : 0, err)) return false;
  const KernelPlan *p = explain_engine_plan(&s->eng, s->eng.cur, err);
  if (!p) return false;
  const char *pass = explain_engine_stage_pass(&s->eng, s->eng.cur);
  char buf[1024];
  if (buffers && s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", s->eng.cur);
    json_key(&w, "buffers");
    json_array_begin(&w);
    for (int q = 0; q < p->nbuffers; q++) {
      const PlanBuffer *bf = &p->buffers[q];
      json_object_begin(&w);
      buffer_name(bf, buf, sizeof buf);
      json_kv_str(&w, "name", buf);
      json_kv_str(&w, "computation", bf->comp->name);
      json_kv_int(&w, "bytes", (long long)bf->bytes);
      json_kv_str(&w, "last_read_by", bf->live_out || bf->last_use == bf->def || bf->last_use >= bf->comp->ninstrs
                                          ? NULL
                                          : bf->comp->instrs[bf->last_use]->name);
      json_kv_bool(&w, "live_out", bf->live_out);
      json_kv_int(&w, "slot", bf->slot);
      if (bf->slot2 >= 0) json_kv_int(&w, "alternates_with_slot", bf->slot2);
      else json_kv_null(&w, "alternates_with_slot");
      if (bf->reuses >= 0) {
        buffer_name(&p->buffers[bf->reuses], buf, sizeof buf);
        json_kv_str(&w, "reuses", buf);
      } else {
        json_kv_null(&w, "reuses");
      }
      json_object_end(&w);
    }
    json_array_end(&w);
    json_kv_int(&w, "buffer_bytes", (long long)p->buffer_bytes);
    json_kv_int(&w, "buffer_bytes_reused", (long long)p->slot_total);
    json_kv_int(&w, "slots", p->nslots);
    json_object_end(&w);
    return true;
  }
  if (buffers) {
    fprintf(s->out, "stage %d (%s): buffers that cross kernel boundaries, in order\n", s->eng.cur, pass);
    print_buffers(s, p);
    print_buffer_summary(s, p);
    return true;
  }
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", s->eng.cur);
    json_kv_str(&w, "device", s->eng.device.name);
    json_kv_int(&w, "launches", (long long)p->launches);
    json_kv_int(&w, "bytes_read", (long long)p->bytes_read);
    json_kv_int(&w, "bytes_written", (long long)p->bytes_written);
    json_kv_double(&w, "est_us", p->est_us);
    json_kv_bool(&w, "trip_counts_known", p->trip_counts_known);
    json_key(&w, "kernels");
    json_array_begin(&w);
    for (int k = 0; k < p->nkernels; k++) {
      const PlanKernel *kn = &p->kernels[k];
      json_object_begin(&w);
      json_kv_str(&w, "name", kn->name);
      json_kv_str(&w, "kind", plan_kernel_kind_name(kn->kind));
      json_kv_str(&w, "computation", kn->comp ? kn->comp->name : NULL);
      json_kv_int(&w, "launches", (long long)kn->launches);
      json_key(&w, "members");
      json_array_begin(&w);
      for (int j = 0; j < kn->nmembers; j++) json_str(&w, kn->members[j]->name);
      json_array_end(&w);
      json_key(&w, "inputs");
      json_array_begin(&w);
      for (int j = 0; j < kn->ninputs; j++) json_str(&w, kn->inputs[j]->name);
      json_array_end(&w);
      json_key(&w, "outputs");
      json_array_begin(&w);
      if (kn->kind != KERNEL_CONTROL) {
        if (kn->instr->shape.type == IR_TUPLE) {
          for (int j = 0; j < kn->instr->shape.ntuple; j++) {
            ir_shape_format(&kn->instr->shape.tuple[j], true, buf, sizeof buf);
            json_str(&w, buf);
          }
        } else {
          ir_shape_format(&kn->instr->shape, true, buf, sizeof buf);
          json_str(&w, buf);
        }
      }
      json_array_end(&w);
      json_kv_int(&w, "bytes_read", (long long)kn->bytes_read);
      json_kv_int(&w, "bytes_written", (long long)kn->bytes_written);
      json_kv_double(&w, "flops", kn->flops);
      json_kv_double(&w, "est_us", kn->est_us);
      json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    return true;
  }
  char b1[32], b2[32], t[32];
  fmt_bytes((double)p->bytes_read, b1, sizeof b1);
  fmt_bytes((double)p->bytes_written, b2, sizeof b2);
  fmt_time(p->est_us, t, sizeof t);
  char ctl[48] = "";
  if (p->nkernels > p->ncompute)
    snprintf(ctl, sizeof ctl, " (+%d control, launching nothing)", p->nkernels - p->ncompute);
  fprintf(s->out, "stage %d (%s) on %s: %d kernel%s%s, %lld launch%s per execution%s; %s read, %s written, %s\n",
          s->eng.cur, pass, s->eng.device.name, p->ncompute, p->ncompute == 1 ? "" : "s", ctl, (long long)p->launches,
          p->launches == 1 ? "" : "es", p->trip_counts_known ? "" : " (some trip counts unknown: counted once)", b1,
          b2, t);
  for (int k = 0; k < p->nkernels; k++) {
    const PlanKernel *kn = &p->kernels[k];
    fprintf(s->out, "%3d  %-28s %-8s x%-8lld in %s\n", k + 1, kn->name, plan_kernel_kind_name(kn->kind),
            (long long)kn->launches, kn->comp ? kn->comp->name : "?");
    if (kn->kind == KERNEL_CONTROL) {
      fprintf(s->out, "       %s\n", kn->instr->op == IR_OP_WHILE
                                          ? "loop control: the condition's result is read back to the host each iteration"
                                          : "branch control: the branch index is read back to the host");
      continue;
    }
    if (kn->nmembers > 1 || kn->instr->op == IR_OP_FUSION) {
      fputs("       members:", s->out);
      for (int j = 0; j < kn->nmembers && j < 12; j++) fprintf(s->out, "%s %s", j ? "," : "", kn->members[j]->name);
      if (kn->nmembers > 12) fprintf(s->out, ", ... (%d in all)", kn->nmembers);
      fputc('\n', s->out);
    }
    fputs("       inputs: ", s->out);
    if (kn->ninputs == 0) fputs(" none", s->out);
    for (int j = 0; j < kn->ninputs && j < 12; j++) fprintf(s->out, "%s %s", j ? "," : "", kn->inputs[j]->name);
    if (kn->ninputs > 12) fprintf(s->out, ", ... (%d in all)", kn->ninputs);
    shape_list(&kn->instr->shape, buf, sizeof buf);
    fmt_bytes((double)kn->bytes_read, b1, sizeof b1);
    fmt_bytes((double)kn->bytes_written, b2, sizeof b2);
    fmt_time(kn->est_us, t, sizeof t);
    fprintf(s->out, "\n       outputs: %s\n       bytes: %s read, %s written; %s per launch\n", buf, b1, b2, t);
  }
  return true;
}

static bool cmd_show_stats(Session *s, int argc, char **argv, FxError *err) {
  if (!need_module(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 0, err)) return false;
  IrModule *m = s->eng.stages[s->eng.cur].module;
  const KernelPlan *p = explain_engine_plan(&s->eng, s->eng.cur, err);
  if (!p) return false;
  int distinct;
  size_t mem = explain_engine_snapshot_bytes(&s->eng, &distinct);
  const char *pass = explain_engine_stage_pass(&s->eng, s->eng.cur);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", s->eng.cur);
    json_kv_str(&w, "pass", pass);
    json_kv_str(&w, "device", s->eng.device.name);
    json_kv_int(&w, "instructions", ir_module_instr_count(m));
    json_kv_int(&w, "computations", m->ncomps);
    json_kv_int(&w, "kernels", p->ncompute);
    json_kv_int(&w, "launches", (long long)p->launches);
    json_kv_bool(&w, "trip_counts_known", p->trip_counts_known);
    json_kv_int(&w, "bytes_read", (long long)p->bytes_read);
    json_kv_int(&w, "bytes_written", (long long)p->bytes_written);
    json_kv_double(&w, "est_us", p->est_us);
    json_kv_int(&w, "stages", s->eng.nstages);
    json_kv_int(&w, "snapshots", distinct);
    json_kv_int(&w, "snapshot_bytes", (long long)mem);
    json_object_end(&w);
  } else {
    char b1[32], b2[32], b3[32], t[32];
    fmt_bytes((double)p->bytes_read, b1, sizeof b1);
    fmt_bytes((double)p->bytes_written, b2, sizeof b2);
    fmt_bytes((double)mem, b3, sizeof b3);
    fmt_time(p->est_us, t, sizeof t);
    fprintf(s->out, "stage %d (%s) on %s\n", s->eng.cur, pass, s->eng.device.name);
    fprintf(s->out, "  instructions    %d in %d computations\n", ir_module_instr_count(m), m->ncomps);
    fprintf(s->out, "  kernels         %d; %lld launches per execution (loops multiplied out%s)\n", p->ncompute,
            (long long)p->launches, p->trip_counts_known ? "" : "; some trip counts unknown, counted once");
    fprintf(s->out, "  bytes           %s read, %s written per execution\n", b1, b2);
    fprintf(s->out, "  estimated time  %s per execution\n", t);
    fprintf(s->out, "  snapshots       %d stage%s in %d snapshot%s, %s\n", s->eng.nstages, s->eng.nstages == 1 ? "" : "s",
            distinct, distinct == 1 ? "" : "s", b3);
  }
  return true;
}

const ReplCommand repl_cmds_pipeline[] = {
    {"pipeline", "pipeline [NAME]", "show or choose the pass pipeline (classic, priority)",
     "pipeline            shows the chosen pipeline, its passes and where we are.\n"
     "pipeline NAME       chooses a pipeline (classic: XLA's rule-based fusion as the paper describes it;\n"
     "                    priority: today's cost-model-driven fusion) and goes back to stage 0.",
     cmd_pipeline},
    {"passes", "passes [--changed]", "the pipeline's stages: changed?, instructions, kernels, bytes, time",
     "passes              one row per stage: the pass, whether it changed the module, instructions,\n"
     "                    kernels, launches per execution, bytes moved and estimated time on the\n"
     "                    device profile. Stages not run yet are listed as such.\n"
     "passes --changed    hides the passes that changed nothing.\n"
     "With --json: one object per stage {stage, pass, changed, instructions, kernels, bytes, est_us}.",
     cmd_passes},
    {"step", "step [N | PASS | all]", "run the next pass (or N, up to PASS, or all)",
     "step                runs the next pass and shows what it did:\n"
     "                    \"stage 4  instruction-fusion: 14 fused, 3 rejected -> 6 kernels\".\n"
     "step N              N passes; step PASS: up to the next stage made by PASS; step all: to the end.\n"
     "Stages already run (after back) are revisited, not run again.",
     cmd_step},
    {"back", "back [N]", "go back one stage (or N)", "back [N]            moves back N stages (default 1); nothing is lost.",
     cmd_back},
    {"goto", "goto STAGE", "go to a stage by number or pass name",
     "goto STAGE          moves to stage STAGE (a number, or a pass name for its first stage), running\n"
     "                    the passes up to it when they have not run yet.",
     cmd_goto},
    {"stage", "stage", "where we are in the pipeline",
     "stage               the current stage: its number, the pass that made it, its instructions and\n"
     "                    kernels, and the pass the next `step` runs.",
     cmd_stage},
    {"diff", "diff [A [B]]", "what changed between two stages",
     "diff                what the last pass changed (the previous stage against the current one).\n"
     "diff A              stage A against the current stage (A-1 against A when A is the current one).\n"
     "diff A B            stage A against stage B.\n"
     "Lists instructions fused (and into which fusion), added, removed and rewritten.",
     cmd_diff},
    {"why", "why NAME [NAME]", "why an instruction is where it is, or why two are in different kernels",
     "why NAME            where NAME is at the current stage (which kernel it runs in; a name a pass\n"
     "                    removed is followed to what it became) and every decision any pass made\n"
     "                    about it, with reason, numbers and suggestion; identical decisions (clones,\n"
     "                    re-runs) are listed once with their count.\n"
     "why A B             where A and B (instructions or kernels) are split at the current stage: every\n"
     "                    kernel boundary on the paths between their kernels, either direction, with\n"
     "                    the value written to memory there and the decision that kept it there\n"
     "                    (reason, numbers, suggestion; the other decisions between the two kernels\n"
     "                    one line each); or that they are independent siblings, already in one kernel\n"
     "                    (and the decision that joined them), or why no pass decided (none has run, a\n"
     "                    library kernel fusion never opens, loop control, a parameter, ...).\n"
     "Each decision is listed with its number #N: `render --decision N` draws it, and `show graph`\n"
     "tags each value crossing kernels with the #N that kept it in memory.",
     cmd_why},
    {"decisions", "decisions [--rejected | --accepted] [--reason CODE] [--pass NAME] [--stage S]",
     "the decision log, filtered",
     "decisions           every decision recorded for the stages run so far, each with its number #N\n"
     "                    (`render --decision N` draws it).\n"
     "  --rejected / --accepted   only one verdict\n"
     "  --reason CODE             only one reason code (not_fusible, code_duplication, ...)\n"
     "  --pass NAME               only one pass\n"
     "  --stage S                 only one stage (a number or a pass name)",
     cmd_decisions},
    {"kernels", "kernels [--buffers | --source [INSTRUCTION] | --resources]", "the kernel plan of the current stage",
     "kernels             each kernel of the current stage: kind (loop, input, output, library,\n"
     "                    control), launches per execution, member instructions, inputs, outputs,\n"
     "                    bytes read and written and estimated time per launch.\n"
     "kernels --buffers   the buffers that cross kernel boundaries: size, computation, last reader,\n"
     "                    the memory slot each is assigned and whose dead memory it reuses (a\n"
     "                    buffer whose last reader has run holds a later output of the same or\n"
     "                    smaller size); live-out buffers go to the caller and take fresh memory.\n"
     "kernels --source [INSTRUCTION]\n"
     "                    the kernels' CUDA C, as NVRTC compiles it (one kernel with INSTRUCTION).\n"
     "kernels --resources\n"
     "                    ptxas' figures per kernel: registers, spills, shared memory, stack,\n"
     "                    block size and occupancy on the device profile (no GPU needed).",
     cmd_kernels},
    {"show-stats", "show stats", NULL,
     "show stats\n  The current stage in numbers: instructions, kernels and launches, bytes read and written,\n"
     "  and the estimated time on the device profile.",
     cmd_show_stats},
    {0},
};
