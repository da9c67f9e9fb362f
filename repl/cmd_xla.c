/* cmd_xla.c — the commands around XLA's own dumps (the engine is explain/xla_dump.h):
 *
 *   load DIR [--module NAME|ID]   an XLA dump folder: list its modules, load one; its per-pass
 *                                 snapshots become the stages of the pipeline `xla`
 *   load FILE.priority_fusion_dump.txt   XLA's fusion log alone (stage 1: its steps replayed)
 *   find FILE:LINE | LINE | SCOPE the instructions (and the kernels holding them) from a source line
 *                                 or a JAX name scope
 *   xla [--device h100|a100]      compile the loaded module with real XLA:GPU and load its dump
 *   compare-modules A B           two compilations (dump folders or HLO files): kernels and bytes
 *
 * And the hooks the other commands call: repl_xla_load (cmd_load), repl_xla_source_note (why).
 * Each parses its words, asks the engine (explain/engine_xla.c) and prints its answer
 * (explain/format_xla.c). */
#include <string.h>

#include "../compiler/fx/fx.h"
#include "../explain/format.h"
#include "../explain/xla_dump.h"
#include "args.h"
#include "repl.h"

/* ---------- load ---------- */

bool repl_xla_load(Session *s, int argc, char **argv, FxError *err, bool *handled) {
  *handled = false;
  if (argc < 2) return true;
  const char *path = argv[1];
  const char *which = NULL;
  XlaPathKind kind = xla_path_kind(path);
  bool want = kind != XLA_PATH_OTHER;
  for (int k = 2; k < argc; k++) want = want || strcmp(argv[k], "--module") == 0;
  if (!want) return true; /* a file: `load` itself */
  *handled = true;
  for (int k = 2; k < argc; k++) {
    if (strcmp(argv[k], "--module") == 0 && k + 1 < argc) which = argv[++k];
    else if (strcmp(argv[k], "--module") == 0) return repl_arg_error(s, err, k, "--module needs a module name or id");
    else return repl_arg_error(s, err, k, "unexpected argument '%s'; usage: load FILE | DIR [--module NAME|ID]", argv[k]);
  }
  char shown[200];
  fx_printable(shown, sizeof shown, path);
  if (which && kind != XLA_PATH_FOLDER)
    return repl_arg_error(s, err, 2, "--module is for a dump folder; '%s' is a file", shown);
  FxError e;
  fx_error_clear(&e);
  const DeviceProfile *switched;
  if (!explain_engine_load_xla(&s->eng, path, which, &switched, &e))
    return repl_error_at(s, err, which && strstr(e.msg, "no module") ? 3 : 1, &e);
  ExplainOut o = repl_out(s);
  explain_show_xla_loaded(&o, &s->eng, path, switched);
  return true;
}

void repl_xla_source_note(Session *s, const char *a, const char *b) {
  ExplainOut o = repl_out(s);
  explain_show_source_note(&o, &s->eng, a, b);
}

/* ---------- find ---------- */

static bool cmd_find(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 1, 1, err)) return false;
  XlaFind f;
  FxError e;
  fx_error_clear(&e);
  bool ok = explain_engine_find(&s->eng, argv[1], &f, &e);
  ExplainOut o = repl_out(s);
  if (ok) explain_show_find(&o, &f, argv[1]);
  xla_find_free(&f);
  return ok || repl_error_at(s, err, 0, &e);
}

/* ---------- xla: real XLA:GPU ---------- */

static bool cmd_xla(Session *s, int argc, char **argv, FxError *err) {
  const char *device = "h100";
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--device") == 0 && k + 1 < argc) {
      device = argv[++k];
      if (strcmp(device, "h100") != 0 && strcmp(device, "a100") != 0)
        return repl_arg_error(s, err, k, "XLA's target configs here are h100 and a100, not '%s'", device);
    } else {
      return repl_arg_error(s, err, k, "unknown option '%s' (usage: xla [--device h100|a100])", argv[k]);
    }
  }
  ExplainOut o = repl_out(s);
  XlaRun run;
  FxError e;
  fx_error_clear(&e);
  if (!xla_run_prepare(&s->eng, device, &run, &e)) return repl_error_at(s, err, 0, &e);
  explain_show_xla_compiling(&o, &run);
  if (!xla_run(&run, &e)) return repl_error_at(s, err, 0, &e);
  char *args[] = {"load", run.dump, NULL};
  bool handled;
  if (!repl_xla_load(s, 2, args, err, &handled)) return false;
  XlaSideBySide sbs;
  xla_dump_side_by_side(s->eng.xla, &s->eng.device, &s->eng.settings, &sbs);
  explain_show_xla_kernels(&o, &s->eng, &sbs);
  /* Where the two part: to XLA's priority-fusion, and the decisions fxplain disagrees with. */
  XlaVerdicts v;
  bool ok = explain_engine_xla_verdicts(&s->eng, &v, err);
  if (ok) explain_show_xla_verdicts(&o, &s->eng, &sbs, &v, &run);
  xla_side_by_side_free(&sbs);
  return ok;
}

/* ---------- compare-modules ---------- */

static bool cmd_compare_modules(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 2, 2, err)) return false;
  ExplainOut o = repl_out(s);
  FxError e;
  fx_error_clear(&e);
  int bad = 0;
  if (xla_compare_modules(&o, &s->eng.device, argv[1], argv[2], &bad, &e)) return true;
  return repl_error_at(s, err, bad, &e);
}

const ReplCommand repl_cmds_xla[] = {
    {"find", "find FILE:LINE | LINE | SCOPE", "the instructions and kernels that came from a source line or JAX scope",
     "Lists the current stage's instructions whose XLA metadata points at the place: FILE:LINE (FILE\n"
     "matched as the end of the path; a line inside an op's line range counts), a bare LINE, or a\n"
     "JAX name scope such as jit(step)/attention or attention. Each line gives the instruction, its\n"
     "opcode, the kernel that holds it and its source; the last line lists the kernels. Reads both\n"
     "metadata={source_file= source_line=} and today's stack_frame_id= with the module's tables.",
     cmd_find},
    {"xla", "xla [--device h100|a100]", "compile the loaded module with real XLA:GPU and load its dump",
     "Compiles stage 0 with real XLA:GPU, deviceless (scripts/xla_reference.py: needs pip's jax,\n"
     "jaxlib, jax-cuda13-plugin and jax-cuda13-pjrt 0.10.2; FXPLAIN_PYTHON names the python), then\n"
     "loads XLA's dump as the `xla` pipeline (XLA's fusion passes as stages, its priority-fusion log as\n"
     "decisions), and shows XLA's kernels beside fxplain's (priority-fusion and multi_output_fusion\n"
     "on the module XLA's priority-fusion received, matched by what they compute), then the decisions\n"
     "of XLA's where fxplain's verdict on the same pair differs.",
     cmd_xla},
    {"compare-modules", "compare-modules A B", "compare two compilations: kernels, bytes, time, memory, fusions only one has",
     "A and B are XLA dump folders (their final module) or HLO files. Prints each one's kernels,\n"
     "bytes moved, estimated time on the current device and memory for intermediate buffers (the\n"
     "kernel plan's buffer assignment; a line gives the ratio when it changed), then the fusions\n"
     "only one of them has, with the source line of each, and, for two dumps, the first fusion\n"
     "where XLA's priority-fusion logs part.",
     cmd_compare_modules},
    {0},
};
