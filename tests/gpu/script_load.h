/* script_load.h — how the GPU tests read their inputs: an HLO module, or a .fx teaching script's
 * module (its shell commands blanked, `let steps = N` replaced by steps when steps > 0). Shared by
 * nvrtc_kernels (which runs everywhere, so the loading is tested without a GPU too) and gpu_run. */
#ifndef FXPLAIN_TESTS_GPU_SCRIPT_LOAD_H
#define FXPLAIN_TESTS_GPU_SCRIPT_LOAD_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../../compiler/fx/fx.h"
#include "../../compiler/hlo/hlo.h"
#include "../../repl/repl.h"

/* A .fx teaching script's module (with `let steps = N` replaced by steps when steps > 0). */
static IrModule *load_fx_file(const char *path, int steps, bool *skipped, FxError *err) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fx_error_set(err, path, 0, 0, "cannot open");
    return NULL;
  }
  static char buf[1 << 16], tail[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *s = steps > 0 ? strstr(buf, "let steps = ") : NULL;
  if (s) {
    char *e = strchr(s, '\n');
    snprintf(tail, sizeof tail, "%s", e ? e : "");
    snprintf(s, sizeof buf - (size_t)(s - buf), "let steps = %d%s", steps, tail);
  }
  /* Walkthrough scripts mix shell commands (echo, step, render, ...) with the .fx definitions:
   * keep the definitions, blanking command lines so that line numbers stay right. */
  bool defines = false;
  for (char *line = buf; line && *line;) {
    char *end = strchr(line, '\n');
    if (repl_line_command(line)) {
      for (char *c = line; c < (end ? end : line + strlen(line)); c++) *c = ' ';
    } else {
      const char *c = line;
      while (*c == ' ' || *c == '\t') c++;
      if (*c && *c != '\n' && *c != '#') defines = true;
    }
    line = end ? end + 1 : NULL;
  }
  if (!defines) { /* a walkthrough that loads other scripts: those are compiled on their own */
    *skipped = true;
    return NULL;
  }
  FxState *st = fx_state_new();
  IrModule *m = NULL;
  if (st && fx_feed(st, buf, path, 1, err)) m = fx_build_module(st, "script", err);
  fx_state_free(st);
  return m;
}

static IrModule *load_any(const char *path, int steps, bool *skipped, FxError *err) {
  size_t l = strlen(path);
  *skipped = false;
  if (l > 3 && strcmp(path + l - 3, ".fx") == 0) return load_fx_file(path, steps, skipped, err);
  return hlo_load_file(path, err);
}

#endif
