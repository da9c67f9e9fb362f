/* definitions.c — the .fx definitions of a session: statements typed at the prompt or read from a
 * script accumulate in the engine (an FxState, compiler/fx/fx.h) and become stage 0 when a command
 * needs the module (explain_engine_fx_sync). Editing them after stages were computed rebuilds
 * stage 0 and drops those stages; a script starts a fresh set and the old one comes back when the
 * script fails before its own became the module. */
#include <string.h>

#include "../compiler/fx/fx.h"
#include "engine.h"

bool explain_engine_fx_feed(ExplainEngine *e, const char *text, const char *source, int line, int col0,
                            const char *src_line, FxError *err) {
  if (!e->fx) {
    e->fx = fx_state_new();
    if (!e->fx) return fx_error_set(err, source, line, col0, "out of memory");
  }
  /* A statement inside a longer line (a `-e` piece) is padded so the columns fx reports are right. */
  char *padded = NULL;
  if (col0 > 1) {
    size_t n = strlen(text);
    padded = fx_malloc((size_t)col0 + n);
    if (!padded) return fx_error_set(err, source, line, col0, "out of memory");
    memset(padded, ' ', (size_t)col0 - 1);
    memcpy(padded + col0 - 1, text, n + 1);
  }
  bool ok = fx_feed(e->fx, padded ? padded : text, source, line, err);
  fx_free(padded);
  if (ok) {
    e->fx_dirty = true;
    return true;
  }
  if (!err->set) fx_error_set(err, source, line, col0, "invalid .fx statement");
  if (padded && src_line && err->line == line) fx_error_set_source(err, src_line, 1);
  return false;
}

bool explain_engine_fx_sync(ExplainEngine *e, const char *source, int *dropped, int *was, FxError *err) {
  *dropped = 0;
  *was = e->cur;
  if (!e->fx_dirty || !e->fx) return true;
  char name[128];
  explain_fx_module_name(source, name, sizeof name);
  IrModule *m = fx_build_module(e->fx, name, err);
  if (!m) {
    if (!err->set) fx_error_set(err, NULL, 0, 0, "could not build the module from the .fx definitions");
    return false;
  }
  /* Rebuilding from edited definitions replaces stage 0: the stages computed from the old go. */
  if (e->fx_built == e->fx) *dropped = e->nstages - 1;
  explain_engine_set_input(e, m);
  e->fx_dirty = false;
  e->fx_built = e->fx;
  return true;
}

void explain_engine_fx_clear(ExplainEngine *e) {
  if (e->fx) fx_state_free(e->fx);
  e->fx = NULL;
  e->fx_built = NULL;
  e->fx_dirty = false;
}

void explain_engine_fx_push(ExplainEngine *e, ExplainFxSaved *saved) {
  *saved = (ExplainFxSaved){e->fx, e->fx_dirty, e->fx_built};
  e->fx = NULL;
  e->fx_dirty = false;
  e->fx_built = NULL; /* the script's definitions are new: building them is a load, not an edit */
}

void explain_engine_fx_pop(ExplainEngine *e, ExplainFxSaved *saved, bool restore) {
  if (restore) {
    if (e->fx && e->fx != saved->fx) fx_state_free(e->fx);
    e->fx = saved->fx;
    e->fx_dirty = saved->dirty;
    e->fx_built = saved->built;
  } else if (saved->fx && saved->fx != e->fx) {
    fx_state_free(saved->fx);
  }
  memset(saved, 0, sizeof *saved);
}
