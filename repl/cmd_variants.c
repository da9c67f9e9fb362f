/* cmd_variants.c — the variants of a case study: `variant` records a version of a program after
 * the pipeline, `variants` prints the table of what the kernel plan says, and `variants --run`
 * measures every recorded version on a backend.
 *
 * Where it sits: a walkthrough (scripts/cartpole_walkthrough.fx) loads each version of a program,
 * steps it through the pipeline, and records the result with `variant NAME [--paper X]`. A row
 * keeps a clone of the current stage and of the program as loaded (stage 0), the pipeline, device
 * and settings it was made with, and the kernel plan's figures (compiler/plan/plan.h) per loop step.
 * `variants --run` executes every recorded stage on a backend (runtime/backend.h) with the same
 * seeded inputs and prints what it measured: kernels launched, bytes moved, the median time, the
 * speedup over the first row, and the ratio the row was recorded with (the paper's). `--check`
 * compares every row's outputs with the reference interpreter running the program as loaded.
 *
 * The table and its rows are the engine's (explain/variants.h), and so are the printers of what
 * was measured; this file parses the commands and runs the measurements. The table is session state (Session.variants): it outlives `load`, since a
 * case study compares several programs, and `reset` or `variants --clear` empties it. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/ir/ir.h"
#include "../compiler/plan/plan.h"
#include "../runtime/backend.h"
#include "../runtime/cuda/cuda.h"
#include "args.h"
#include "../explain/json.h"
#include "../explain/variants.h"
#include "repl.h"


/* ---------- variant NAME [--paper X] ---------- */

static bool cmd_variant(Session *s, int argc, char **argv, FxError *err) {
  if (argc < 2) return repl_arg_error(s, err, argc, "usage: variant NAME [--paper X]  (records the current stage as a row of `variants`)");
  const char *label = argv[1];
  if (label[0] == '-') return repl_arg_error(s, err, 1, "the variant needs a name first: variant NAME [--paper X]");
  size_t len = strlen(label);
  if (len > EXPLAIN_VARIANT_LABEL_MAX) return repl_arg_error(s, err, 1, "a variant's name has at most %d characters (this one has %zu)", EXPLAIN_VARIANT_LABEL_MAX, len);
  for (const unsigned char *c = (const unsigned char *)label; *c; c++)
    if (*c < 0x21 || *c == 0x7f) return repl_arg_error(s, err, 1, "a variant's name has no blanks or control characters");
  double paper = 0;
  for (int k = 2; k < argc; k++) {
    if (strcmp(argv[k], "--paper") == 0) {
      if (k + 1 >= argc) return repl_arg_error(s, err, k, "--paper needs the paper's speedup, e.g. --paper 1.87");
      char *e;
      errno = 0;
      paper = strtod(argv[k + 1], &e);
      if (errno || *e || e == argv[k + 1] || !(paper > 0) || !isfinite(paper) || paper > 1e6)
        return repl_arg_error(s, err, k + 1, "--paper needs a positive number (the paper's speedup, e.g. 1.87)");
      k++;
    } else {
      char shown[64];
      return repl_arg_error(s, err, k, "unknown option '%s' (variant NAME [--paper X])", fx_printable(shown, sizeof shown, argv[k]));
    }
  }
  if (!repl_need_input(s, err)) return false;
  int slot;
  bool replaced;
  if (!explain_variants_record(&s->variants, &s->eng, label, paper, &slot, &replaced, err)) return false;
  ExplainOut o = repl_out(s);
  explain_show_variant_recorded(&o, &s->variants->rows[slot], slot, replaced);
  return true;
}

/* ---------- variants --run ---------- */

/* ---------- variants --run ---------- */

/* Runs v's stage `repeat` times on the backend (prepared for every row) and, with --check, the
 * interpreter on v's input. */
static bool measure(Session *s, RtStageRun *run, const ExplainVariant *v, RunArgs *o, ExplainMeasured *out, FxError *err) {
  const IrModule *m = v->stage;
  RtTensor **args = rt_inputs_make(m, NULL, 0, o->seed, o->uniform, o->nuniform, NULL, false, err);
  if (!args) return false;
  out->times_ns = fx_calloc((size_t)o->repeat, sizeof *out->times_ns);
  if (!out->times_ns) {
    rt_inputs_free(m, args);
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  RtOptions ro = {.seed = o->seed, .interrupted = s->interrupted};
  bool ok = rt_stage_run(o->backend, m, args, &ro, o->repeat, out->times_ns, run, err);
  if (ok) {
    out->median_ns = run->median_ns;
    out->launches = run->stats.counters.launches;
    out->bytes = run->stats.counters.bytes_read + run->stats.counters.bytes_written;
  }
  if (ok && o->check) {
    /* The oracle: the interpreter on the program as loaded (every pass's work undone), on the same
     * inputs. */
    RtCheck c;
    ok = rt_check_with_interp(v->input, m, args, run->result, &ro, &c, err);
    out->checked = ok;
    out->agrees = c.agrees;
    out->worst = c.worst;
    snprintf(out->differs, sizeof out->differs, "%s", c.differs);
  }
  rt_inputs_free(m, args);
  return ok;
}

static bool run_variants(Session *s, int argc, char **argv, FxError *err) {
  RunArgs o;
  if (!repl_run_args(s, argc, argv, true, &o, err)) return false;
  if (o.nuniform > EXPLAIN_RUN_RULES_MAX) return repl_arg_error(s, err, 0, "at most %d --uniform rules", EXPLAIN_RUN_RULES_MAX);
  ExplainVariants *t = s->variants;
  if (!t || t->n == 0)
    return repl_arg_error(s, err, 0, "no variants recorded: step a program through the pipeline and record it with `variant NAME` first");
  const IrModule **mods = fx_calloc((size_t)t->n, sizeof *mods);
  if (!mods) return repl_arg_error(s, err, 0, "out of memory");
  char why[400];
  for (int k = 0; k < t->n; k++)
    if (explain_module_uncomputed(mods[k] = t->rows[k].stage, why, sizeof why)) {
      fx_free(mods);
      return repl_arg_error(s, err, 0, "cannot run variant %s: %s", t->rows[k].label, why);
    }
  if (!repl_uniform_check(s, o.uniform, o.nuniform, mods, t->n, " of any variant", err)) {
    fx_free(mods);
    return false;
  }
  /* every variant's kernels compiled at once (the CPU backend caches them by their source) */
  RtStageRun run = {0};
  FxError berr = {0};
  if (!rt_stage_open(o.backend, mods, t->n, &run, &berr)) {
    fx_free(mods);
    bool missing = run.be == NULL;
    rt_stage_run_free(&run);
    if (missing) return repl_arg_error(s, err, 0, "%s", berr.msg);
    *err = berr;
    return false;
  }
  ExplainRunSpec spec = {run.backend->name, o.repeat, o.seed, o.check, o.nuniform, {0}, {0}, {0}};
  for (int r = 0; r < o.nuniform; r++) {
    spec.pattern[r] = o.uniform[r].pattern;
    spec.lo[r] = o.uniform[r].lo;
    spec.hi[r] = o.uniform[r].hi;
  }
  ExplainOut eo = repl_out(s);
  ExplainMeasured *ms = fx_calloc((size_t)t->n, sizeof *ms);
  bool ok = ms != NULL;
  if (!ok) fx_error_set(err, NULL, 0, 0, "out of memory");
  if (ok && !s->json) explain_show_run_header(&eo, &spec, t->n);
  int done = 0;
  for (int k = 0; ok && k < t->n; k++) {
    ok = measure(s, &run, &t->rows[k], &o, &ms[k], err);
    if (ok && s->interrupted && *s->interrupted) ok = fx_error_set(err, NULL, 0, 0, "interrupted: execution stopped by Ctrl-C");
    if (!ok) break;
    done++;
    if (!s->json) explain_show_run_row(&eo, &spec, &t->rows[k], &ms[k], ms[0].median_ns);
  }
  if (ok && s->json) explain_show_run_json(&eo, &spec, t, ms);
  if (ok && !s->json) explain_show_run_footer(&eo, t);
  /* A row that differs from the interpreter fails the command, after the whole table. */
  for (int k = 0; ok && o.check && k < done; k++)
    if (!ms[k].agrees)
      ok = fx_error_set(err, NULL, 0, 0, "check failed: variant %s: %s", t->rows[k].label, ms[k].differs);
  for (int k = 0; ms && k < t->n; k++) fx_free(ms[k].times_ns);
  fx_free(ms);
  fx_free(mods);
  rt_stage_run_free(&run);
  return ok;
}

static bool cmd_variants(Session *s, int argc, char **argv, FxError *err) {
  bool run = false, clear = false;
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--run") == 0) run = true;
    else if (strcmp(argv[k], "--clear") == 0) clear = true;
  }
  if (clear) {
    if (argc != 2) return repl_arg_error(s, err, argc > 2 ? 2 : 1, "--clear takes no other options");
    int n = s->variants ? s->variants->n : 0;
    explain_variants_free(s->variants);
    s->variants = NULL;
    if (s->json) json_print_kv_int(s->out, "cleared", n);
    else fprintf(s->out, "variants: %d row%s cleared\n", n, n == 1 ? "" : "s");
    return true;
  }
  if (run) return run_variants(s, argc, argv, err);
  if (argc > 1) {
    char shown[64];
    return repl_arg_error(s, err, 1, "unknown option '%s' (variants [--run [OPTIONS] | --clear])", fx_printable(shown, sizeof shown, argv[1]));
  }
  ExplainOut o = repl_out(s);
  explain_show_variants(&o, s->variants);
  return true;
}

const ReplCommand repl_cmds_variants[] = {
    {"variant", "variant NAME [--paper X]", "record the current stage as a row of the variants table",
     "variant NAME [--paper X]\n"
     "  Records the current stage (usually after `step all`) under NAME: a copy of the stage and of the\n"
     "  program as loaded, the pipeline, device and settings it was made with, and its kernel plan per\n"
     "  loop step (kernels, launches, bytes, estimated time; a step is one iteration of the program's\n"
     "  loop, so an unrolled loop still counts the program's steps). --paper X is the speedup a paper\n"
     "  reports for this version over its baseline, printed next to the measured one. Recording a NAME\n"
     "  again replaces its row. The table outlives `load` (a case study compares several programs);\n"
     "  `reset` or `variants --clear` empties it.",
     cmd_variant},
    {"variants", "variants [--run [RUN OPTIONS] | --clear]",
     "the recorded variants: the plan's figures, or run them all and measure",
     "variants\n"
     "  The rows `variant` recorded: kernels, launches, KiB and estimated time per loop step on the\n"
     "  device profile, the estimated speedup over the first row, the paper's ratio and the settings\n"
     "  that differ from the defaults.\n"
     "variants --run [--backend interp|cpu|gpu|auto] [--repeat N] [--seed N] [--check] [--uniform PATTERN=LO:HI ...]\n"
     "  Runs every recorded stage on the backend (auto: the GPU when there is one, else the CPU) and\n"
     "  prints, row by row, the kernels launched, the bytes moved, the time (median of --repeat runs,\n"
     "  default 1) and per loop step, the speedup over the first row and the paper's ratio. Every row\n"
     "  gets the same seeded inputs (--seed, default 0), made as `run` makes them: floats in [-1, 1),\n"
     "  integers in [0, 16). --uniform PATTERN=LO:HI draws the floats of the parameters whose name\n"
     "  matches PATTERN (a shell pattern: `actions`, `fresh*`, `*`; the first matching rule wins) from\n"
     "  [LO, HI) instead. --check also runs the reference interpreter on each program as loaded and\n"
     "  fails, after the table, when a row's outputs differ beyond the type's tolerance. Ctrl-C stops\n"
     "  the run; the table stays recorded.\n"
     "variants --clear\n"
     "  Empties the table.",
     cmd_variants},
    {0},
};
