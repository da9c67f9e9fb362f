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
 * The engine checks and applies each value (explain/settings.c), drops the stages computed with
 * the old one (the next `step` recomputes them) and remembers the old settings, so
 * `compare-decisions` with no argument shows what the last change changed: the engine runs the
 * whole pipeline twice, on scratch copies (explain/compare.h), and the decisions that differ and
 * the kernels before and after are printed. */
#include <stdlib.h>
#include <string.h>

#include "../compiler/fusion/fusion.h"
#include "../compiler/plan/plan.h"
#include "../explain/compare.h"
#include "../explain/format.h"
#include "args.h"
#include "../explain/json.h"
#include "session.h"

#define fail(s, err, ...) repl_arg_error(s, err, 0, __VA_ARGS__)

/* set device|dup_limit|max_duplication|operand_budget|unroll|expensive|pass|library ...: the
 * engine checks and applies the value (explain/settings.c); the stages made with the old one go. */
static bool cmd_set_knob(Session *s, int argc, char **argv, FxError *err) {
  const char *name = argv[0] + strlen("set-");
  int n = explain_setting_words(name);
  if (!repl_check_argc(s, argc, argv, n, n, err)) return false;
  argv[0] = (char *)name;
  ExplainSettingChange ch;
  int bad;
  FxError e = {0};
  bool ok = explain_engine_set(&s->eng, argv, &ch, &bad, &e);
  argv[0] = (char *)name - strlen("set-");
  if (!ok) return repl_error_at(s, err, bad, &e);
  ExplainOut out = repl_out(s);
  explain_show_setting_change(&out, &ch, s->eng.nstages >= 1);
  return true;
}

static bool cmd_show_device(Session *s, int argc, char **argv, FxError *err) {
  (void)argv;
  if (!repl_check_argc(s, argc, argv, 0, 0, err)) return false;
  ExplainOut out = repl_out(s);
  explain_show_device(&out, s->eng.device.name[0] ? &s->eng.device : device_default());
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
  ExplainOut out = repl_out(s);
  explain_show_settings(&out, &s->eng);
  return true;
}

/* ---------- unfuse ---------- */

static bool cmd_unfuse(Session *s, int argc, char **argv, FxError *err) {
  (void)argv;
  if (!repl_check_argc(s, argc, argv, 0, 0, err)) return false;
  if (!repl_need_input(s, err)) return false;
  int n, kernels_before, kernels_after;
  if (!explain_engine_unfuse(&s->eng, &n, &kernels_before, &kernels_after, err)) return false;
  ExplainOut out = repl_out(s);
  explain_show_unfused(&out, n, kernels_before, kernels_after);
  return true;
}

/* ---------- compare-decisions ---------- */

static bool cmd_compare_decisions(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  bool all = argc > 1 && strcmp(argv[argc - 1], "--all") == 0;
  if (all) argc--;
  if (argc != 1 && argc < 3)
    return fail(s, err, "usage: compare-decisions [SETTING VALUE...]  (no argument: the last `set` change)");
  char **words = argv + 1;
  if (argc > 1) {
    /* SETTING VALUE applied to a copy of the current settings */
    int n = explain_setting_words(argv[1]);
    char name[128];
    snprintf(name, sizeof name, "set-%.100s", argv[1]);
    if (n < 0 && repl_command_lookup(name))
      return repl_arg_error(s, err, 1, "'%.60s' changes no fusion decision; compare-decisions takes the fusion settings "
                            "(device, dup_limit, max_duplication, operand_budget, unroll, expensive, pass, library)", argv[1]);
    if (n < 0) return repl_arg_error(s, err, 1, "unknown setting '%.60s'", argv[1]);
    if (argc > 64) argc = 64;
    char *setting = argv[1];
    argv[1] = name; /* its usage, in the count's error */
    bool counted = repl_check_argc(s, argc - 1, argv + 1, n, n, err);
    argv[1] = setting;
    if (!counted) return false;
  }
  ExplainCompareSides sides;
  int bad;
  FxError e = {0};
  if (!explain_compare_sides(&s->eng, words, argc - 1, &sides, &bad, &e)) return repl_error_at(s, err, bad + 1, &e);
  ExplainComparison c;
  if (!explain_compare_settings(&s->eng, &sides.before, &sides.dbefore, &sides.after, &sides.dafter, all, &c, err))
    return false;
  ExplainOut o = repl_out(s);
  explain_show_comparison(&o, &c, sides.what);
  explain_comparison_free(&c);
  return true;
}

const ReplCommand repl_cmds_fusion[] = {
    {"set-device", "set device rtx2080ti|a100|h100|host", NULL,
     "set device NAME\n  Choose the device profile the fusion rules and the cost model read: rtx2080ti (the paper's\n"
     "  card, the default), a100, h100, host. `show device` lists its figures.",
     cmd_set_knob},
    {"show-device", "show device", NULL, "show device\n  The current device profile's figures.", cmd_show_device},
    {"set-dup_limit", "set dup_limit N", NULL,
     "set dup_limit N\n  How many users a concatenate (or pad, dot, dynamic-update-slice, reduce) may have and\n"
     "  still be fused into them. XLA's rule allows 1; the paper raised it to 3 for CartPole.",
     cmd_set_knob},
    {"set-max_duplication", "set max_duplication N", NULL,
     "set max_duplication N\n  How many times a fused producer may be emitted inside one kernel (XLA: 15).",
     cmd_set_knob},
    {"set-operand_budget", "set operand_budget N", NULL,
     "set operand_budget N\n  Operands plus outputs one fusion may have (XLA: 64 in 2021, 96 since 2024).",
     cmd_set_knob},
    {"set-expensive", "set expensive OP on|off|default", NULL,
     "set expensive OP on|off|default\n  Mark an op expensive (never duplicated, never recomputed per reuse) or cheap,\n"
     "  or go back to XLA's table. OP uses HLO spelling: exponential, log, divide, power, ...",
     cmd_set_knob},
    {"set-pass", "set pass NAME on|off", NULL,
     "set pass NAME on|off\n  Switch one pass off (its stage repeats the previous one) or back on.", cmd_set_knob},
    {"set-library", "set library dot|conv|rng on|off", NULL,
     "set library dot|conv|rng on|off\n  Whether dot (cuBLAS), convolution (cuDNN) and rng (cuRAND) run as opaque\n"
     "  library kernels (on, XLA's GPU behaviour) or as fusible loops (off).",
     cmd_set_knob},
    {"set-unroll", "set unroll N", NULL,
     "set unroll N\n  Unroll counted loops N times (while-loop-unroll): the body runs N times per iteration,\n"
     "  so its kernels fuse across steps and launch N times less often. 1 turns it off.",
     cmd_set_knob},
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
