/* cmd_fusion.c — the fusion commands of the shell: the device profile, the policy knobs of the
 * fusion rules, `unfuse`, and `compare-decisions`.
 *
 *   set device NAME            show device
 *   set dup_limit N            users a concatenate-like producer may have and still fuse (XLA: 1)
 *   set max_duplication N      emitted copies of a producer before code_duplication (15)
 *   set operand_budget N       operands + outputs per fusion (64 in 2021, 96 today)
 *   set expensive OP on|off|default
 *   set pass NAME on|off       switch a pass off (its stage repeats the previous one)
 *   set library dot|conv|rng on|off
 *   set unroll N               while-loop-unroll factor (1 = off)
 *   show settings              every knob, the expensive-op overrides, the register check
 *   unfuse                     inline an optimized XLA dump's fusions back
 *   compare-decisions [SETTING VALUE]
 *
 * Every `set` drops the stages computed with the old value (the next `step` recomputes them) and
 * remembers the old settings, so `compare-decisions` with no argument shows what the last change
 * changed: it runs the whole pipeline twice, on scratch copies, and prints the decisions that
 * differ and the kernels before and after. */
#include <stdlib.h>
#include <string.h>

#include "../compiler/fusion_build.h"
#include "../compiler/fusion_rules.h"
#include "../compiler/plan.h"
#include "../explain/compare.h"
#include "../explain/format.h"
#include "args.h"
#include "../explain/json.h"
#include "session.h"

#define fail(s, err, ...) repl_arg_error(s, err, 0, __VA_ARGS__)

/* The settings and device before the last `set`, for compare-decisions. */
static PassSettings prev_settings;
static DeviceProfile prev_device;
static bool have_prev;
static char last_change[160];

static void remember(Session *s, const char *what) {
  prev_settings = s->eng.settings;
  prev_device = s->eng.device;
  have_prev = true;
  snprintf(last_change, sizeof last_change, "%s", what);
}

/* After a change: the stages computed with the old value go. */
static void changed(Session *s, const char *what, const char *old, const char *now) {
  if (s->eng.nstages > 1) explain_engine_truncate(&s->eng, 1);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "setting", what);
    json_kv_str(&w, "old", old);
    json_kv_str(&w, "new", now);
    json_object_end(&w);
    fputc('\n', s->out);
  } else {
    fprintf(s->out, "%s: %s -> %s%s\n", what, old, now,
            s->eng.nstages >= 1 ? " (the next step recomputes the stages)" : "");
  }
}

static bool parse_int(Session *s, const char *what, const char *v, int lo, int hi, int *out, FxError *err) {
  char *end;
  long x = strtol(v, &end, 10);
  char buf[80];
  if (!*v || *end || x < lo || x > hi)
    return repl_arg_error(s, err, 1, "%s wants a whole number from %d to %d, not '%s'", what, lo, hi,
                 fx_printable(buf, sizeof buf, v));
  *out = (int)x;
  return true;
}

static bool parse_onoff(Session *s, const char *v, bool *out, FxError *err) {
  char buf[80];
  if (strcmp(v, "on") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0) *out = true;
  else if (strcmp(v, "off") == 0 || strcmp(v, "false") == 0 || strcmp(v, "0") == 0) *out = false;
  else return repl_arg_error(s, err, 2, "expected on or off, not '%s'", fx_printable(buf, sizeof buf, v));
  return true;
}

static bool want_args(Session *s, int argc, char **argv, int n, FxError *err) {
  return repl_check_argc(s, argc, argv, n, n, err);
}

/* ---------- device ---------- */

static bool cmd_set_device(Session *s, int argc, char **argv, FxError *err) {
  if (!want_args(s, argc, argv, 1, err)) return false;
  const DeviceProfile *d = device_lookup(argv[1]);
  if (!d) {
    char names[256] = "";
    for (int k = 0; k < device_count(); k++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", device_at(k)->name);
    char buf[80];
    return repl_arg_error(s, err, 1, "no device profile named '%s' (profiles: %s)", fx_printable(buf, sizeof buf, argv[1]), names);
  }
  char old[64];
  snprintf(old, sizeof old, "%s", s->eng.device.name[0] ? s->eng.device.name : "(none)");
  remember(s, "device");
  s->eng.device = *d;
  changed(s, "device", old, d->name);
  return true;
}

static bool cmd_show_device(Session *s, int argc, char **argv, FxError *err) {
  (void)argv;
  if (!want_args(s, argc, argv, 0, err)) return false;
  ExplainOut out = {s->out, s->json, 0};
  explain_show_device(&out, s->eng.device.name[0] ? &s->eng.device : device_default());
  return true;
}

/* ---------- integer knobs ---------- */

static bool set_int_knob(Session *s, int argc, char **argv, const char *what, int *field, int lo, int hi,
                         FxError *err) {
  if (!want_args(s, argc, argv, 1, err)) return false;
  int v = 0;
  if (!parse_int(s, what, argv[1], lo, hi, &v, err)) return false;
  char old[24], now[24];
  snprintf(old, sizeof old, "%d", *field);
  snprintf(now, sizeof now, "%d", v);
  remember(s, what);
  *field = v;
  changed(s, what, old, now);
  return true;
}

static bool cmd_set_dup_limit(Session *s, int argc, char **argv, FxError *err) {
  return set_int_knob(s, argc, argv, "dup_limit", &s->eng.settings.concat_user_limit, 1, 1000000, err);
}
static bool cmd_set_max_duplication(Session *s, int argc, char **argv, FxError *err) {
  return set_int_knob(s, argc, argv, "max_duplication", &s->eng.settings.max_duplication, 1, 1000000, err);
}
static bool cmd_set_operand_budget(Session *s, int argc, char **argv, FxError *err) {
  return set_int_knob(s, argc, argv, "operand_budget", &s->eng.settings.operand_budget, 2, 1000000, err);
}
static bool cmd_set_unroll(Session *s, int argc, char **argv, FxError *err) {
  return set_int_knob(s, argc, argv, "unroll", &s->eng.settings.unroll, 1, 1000, err);
}

/* ---------- expensive ops, passes, libraries ---------- */

static bool cmd_set_expensive(Session *s, int argc, char **argv, FxError *err) {
  if (!want_args(s, argc, argv, 2, err)) return false;
  IrOpcode op;
  if (!ir_op_lookup(argv[1], strlen(argv[1]), &op))
    return repl_arg_error(s, err, 1, "unknown op '%.60s' (ops use HLO spelling: exponential, log, divide, ...)", argv[1]);
  signed char v;
  if (strcmp(argv[2], "default") == 0) v = 0;
  else {
    bool on;
    if (!parse_onoff(s, argv[2], &on, err)) return false;
    v = on ? 1 : -1;
  }
  char what[96], old[24], now[24];
  snprintf(what, sizeof what, "expensive %s", ir_op_name(op));
  signed char cur = s->eng.settings.expensive_override[op];
  snprintf(old, sizeof old, "%s", cur == 0 ? "default" : cur > 0 ? "on" : "off");
  snprintf(now, sizeof now, "%s", v == 0 ? "default" : v > 0 ? "on" : "off");
  remember(s, what);
  s->eng.settings.expensive_override[op] = v;
  changed(s, what, old, now);
  return true;
}

/* Rewrites the disabled_passes list with `name` in or out. */
static bool set_disabled(PassSettings *ps, const char *name, bool off) {
  char out[sizeof ps->disabled_passes] = "";
  const char *p = ps->disabled_passes;
  size_t n = strlen(name);
  while (*p) {
    size_t len = strcspn(p, ",");
    if (!(len == n && strncmp(p, name, n) == 0) && len > 0)
      snprintf(out + strlen(out), sizeof out - strlen(out), "%s%.*s", out[0] ? "," : "", (int)len, p);
    p += len;
    if (*p == ',') p++;
  }
  if (off) {
    if (strlen(out) + n + 2 >= sizeof out) return false;
    snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? "," : "", name);
  }
  memcpy(ps->disabled_passes, out, sizeof out);
  return true;
}

static bool cmd_set_pass(Session *s, int argc, char **argv, FxError *err) {
  if (!want_args(s, argc, argv, 2, err)) return false;
  const Pass *p = pass_lookup(argv[1]);
  if (!p) {
    char names[600] = "";
    for (int k = 0; k < pass_count(); k++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", pass_at(k)->name);
    return repl_arg_error(s, err, 1, "no pass named '%.60s' (passes: %s)", argv[1], names);
  }
  bool on;
  if (!parse_onoff(s, argv[2], &on, err)) return false;
  bool was_off = pass_settings_is_disabled(&s->eng.settings, p->name);
  char what[96];
  snprintf(what, sizeof what, "pass %s", p->name);
  remember(s, what);
  if (!set_disabled(&s->eng.settings, p->name, !on)) return fail(s, err, "too many passes switched off");
  changed(s, what, was_off ? "off" : "on", on ? "on" : "off");
  return true;
}

static bool cmd_set_library(Session *s, int argc, char **argv, FxError *err) {
  if (!want_args(s, argc, argv, 2, err)) return false;
  bool *field = NULL;
  if (strcmp(argv[1], "dot") == 0) field = &s->eng.settings.dot_is_library;
  else if (strcmp(argv[1], "conv") == 0 || strcmp(argv[1], "convolution") == 0) field = &s->eng.settings.conv_is_library;
  else if (strcmp(argv[1], "rng") == 0) field = &s->eng.settings.rng_is_library;
  else return repl_arg_error(s, err, 1, "library calls are dot, conv and rng, not '%.40s'", argv[1]);
  bool on;
  if (!parse_onoff(s, argv[2], &on, err)) return false;
  char what[64];
  snprintf(what, sizeof what, "library %s", argv[1]);
  remember(s, what);
  bool old = *field;
  *field = on;
  changed(s, what, old ? "on" : "off", on ? "on" : "off");
  return true;
}

/* ---------- show settings ---------- */

static bool cmd_show_settings(Session *s, int argc, char **argv, FxError *err) {
  if (argc > 1) {
    const ReplCommand *show = repl_command_lookup("show");
    char buf[80];
    return repl_arg_error(s, err, 1, "unexpected argument '%s'; usage: %s", fx_printable(buf, sizeof buf, argv[1]),
                 show && show->usage ? show->usage : "show settings");
  }
  ExplainOut out = {s->out, s->json, 0};
  explain_show_settings(&out, &s->eng);
  return true;
}

/* ---------- unfuse ---------- */

static bool cmd_unfuse(Session *s, int argc, char **argv, FxError *err) {
  (void)argv;
  if (!want_args(s, argc, argv, 0, err)) return false;
  if (!repl_need_input(s, err)) return false;
  int n, kernels_before, kernels_after;
  if (!explain_engine_unfuse(&s->eng, &n, &kernels_before, &kernels_after, err)) return false;
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_int(&w, "unfused", n);
    json_kv_int(&w, "kernels_before", kernels_before);
    json_kv_int(&w, "kernels_after", kernels_after);
    json_object_end(&w);
    fputc('\n', s->out);
  } else if (n == 0) {
    fprintf(s->out, "no fusions to unfuse: the module is already as it was before fusion\n");
  } else {
    fprintf(s->out, "unfused %d fusion%s: %d kernels (XLA's) -> %d kernels; step through the pipeline to compare our "
            "decisions with XLA's\n", n, n == 1 ? "" : "s", kernels_before, kernels_after);
  }
  return true;
}

/* ---------- compare-decisions ---------- */

static bool cmd_compare_decisions(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  bool all = argc > 1 && strcmp(argv[argc - 1], "--all") == 0;
  if (all) argc--;
  if (argc != 1 && argc < 3)
    return fail(s, err, "usage: compare-decisions [SETTING VALUE...]  (no argument: the last `set` change)");
  PassSettings before = s->eng.settings, after = s->eng.settings;
  DeviceProfile dbefore = s->eng.device.name[0] ? s->eng.device : *device_default(), dafter = dbefore;
  char what[200];
  if (argc == 1) {
    if (!have_prev) return fail(s, err, "no setting has changed yet: `set` one, or name it: compare-decisions dup_limit 3");
    before = prev_settings;
    dbefore = prev_device.name[0] ? prev_device : *device_default();
    snprintf(what, sizeof what, "%s", last_change);
  } else {
    /* Apply SETTING VALUE on a scratch session state, through the same set commands. */
    Session tmp = *s;
    FILE *sink = fopen("/dev/null", "w");
    if (!sink) return fail(s, err, "cannot open /dev/null");
    tmp.out = sink;
    tmp.json = false;
    tmp.eng.nstages = 0; /* so the set commands drop nothing */
    char name[128];
    snprintf(name, sizeof name, "set-%.100s", argv[1]);
    const ReplCommand *c = repl_command_lookup(name);
    PassSettings keep_prev = prev_settings;
    DeviceProfile keep_dev = prev_device;
    bool keep_have = have_prev;
    char keep_last[sizeof last_change];
    memcpy(keep_last, last_change, sizeof keep_last);
    bool ok = c != NULL && c->run(&tmp, argc - 1, argv + 1, err);
    fclose(sink);
    prev_settings = keep_prev;
    prev_device = keep_dev;
    have_prev = keep_have;
    memcpy(last_change, keep_last, sizeof keep_last);
    if (!c) return fail(s, err, "unknown setting '%.60s'", argv[1]);
    if (!ok) return false;
    after = tmp.eng.settings;
    dafter = tmp.eng.device.name[0] ? tmp.eng.device : *device_default();
    snprintf(what, sizeof what, "%s", argv[1]);
    for (int k = 2; k < argc; k++) snprintf(what + strlen(what), sizeof what - strlen(what), " %s", argv[k]);
  }
  ExplainComparison c;
  if (!explain_compare_settings(&s->eng, &before, &dbefore, &after, &dafter, all, &c, err)) return false;
  ExplainOut o = {s->out, s->json, 0};
  explain_show_comparison(&o, &c, what);
  explain_comparison_free(&c);
  return true;
}

const ReplCommand repl_cmds_fusion[] = {
    {"set-device", "set device rtx2080ti|a100|h100|host", NULL,
     "set device NAME\n  Choose the device profile the fusion rules and the cost model read: rtx2080ti (the paper's\n"
     "  card, the default), a100, h100, host. `show device` lists its figures.",
     cmd_set_device},
    {"show-device", "show device", NULL, "show device\n  The current device profile's figures.", cmd_show_device},
    {"set-dup_limit", "set dup_limit N", NULL,
     "set dup_limit N\n  How many users a concatenate (or pad, dot, dynamic-update-slice, reduce) may have and\n"
     "  still be fused into them. XLA's rule allows 1; the paper raised it to 3 for CartPole.",
     cmd_set_dup_limit},
    {"set-max_duplication", "set max_duplication N", NULL,
     "set max_duplication N\n  How many times a fused producer may be emitted inside one kernel (XLA: 15).",
     cmd_set_max_duplication},
    {"set-operand_budget", "set operand_budget N", NULL,
     "set operand_budget N\n  Operands plus outputs one fusion may have (XLA: 64 in 2021, 96 since 2024).",
     cmd_set_operand_budget},
    {"set-expensive", "set expensive OP on|off|default", NULL,
     "set expensive OP on|off|default\n  Mark an op expensive (never duplicated, never recomputed per reuse) or cheap,\n"
     "  or go back to XLA's table. OP uses HLO spelling: exponential, log, divide, power, ...",
     cmd_set_expensive},
    {"set-pass", "set pass NAME on|off", NULL,
     "set pass NAME on|off\n  Switch one pass off (its stage repeats the previous one) or back on.", cmd_set_pass},
    {"set-library", "set library dot|conv|rng on|off", NULL,
     "set library dot|conv|rng on|off\n  Whether dot (cuBLAS), convolution (cuDNN) and rng (cuRAND) run as opaque\n"
     "  library kernels (on, XLA's GPU behaviour) or as fusible loops (off).",
     cmd_set_library},
    {"set-unroll", "set unroll N", NULL,
     "set unroll N\n  Unroll counted loops N times (while-loop-unroll): the body runs N times per iteration,\n"
     "  so its kernels fuse across steps and launch N times less often. 1 turns it off.",
     cmd_set_unroll},
    {"show-settings", "show settings", NULL, "show settings\n  Every fusion knob and its value.", cmd_show_settings},
    {"unfuse", "unfuse", "inline the fusions of an optimized XLA dump back, to compare with our passes",
     "unfuse\n  When the loaded module already holds fusions (an optimized XLA dump), `kernels` shows XLA's\n"
     "  kernels; `unfuse` inlines them back into plain instructions and makes that the input, so the\n"
     "  pipeline can run on it and our decisions can be compared with XLA's.",
     cmd_unfuse},
    {"compare-decisions", "compare-decisions [SETTING VALUE...] [--all]",
     "the fusion decisions a setting changes, and the kernels before and after",
     "compare-decisions [SETTING VALUE...]\n  Runs the whole pipeline twice on the input: with the settings before the last\n"
     "  `set` and with the current ones (or with the current ones and SETTING VALUE applied, e.g.\n"
     "  `compare-decisions dup_limit 3`), and prints every decision whose verdict or reason differs,\n"
     "  then the kernel counts. Decisions made in one run only are counted; --all lists them too.\n"
     "  The session's stages are not touched.",
     cmd_compare_decisions},
    {0},
};
