/* session.c — the session's life: creation with the defaults, stages, and freeing.
 *
 * A session owns its stage snapshots (stages[i].module), the .fx lowering state, and the decision
 * log. Stage 0 is the input (a loaded HLO module or the module built from .fx definitions); the
 * pipeline commands append stages after it. */
#include <string.h>

#include "../compiler/arena.h"
#include "pending.h"
#include "repl.h"

volatile int repl_interrupted;

static void set_defaults(Session *s) {
  s->device = *device_default();
  pass_settings_default(&s->settings);
  s->pipeline = pipeline_lookup("classic");
}

Session *session_new(FILE *out, FILE *err) {
  Session *s = fx_calloc(1, sizeof *s);
  if (!s) return NULL;
  /* Room for stage 0 up front, so session_set_input never has to fail. */
  s->stages_cap = 16;
  s->stages = fx_calloc((size_t)s->stages_cap, sizeof *s->stages);
  if (!s->stages) {
    fx_free(s);
    return NULL;
  }
  s->out = out;
  s->err = err;
  s->interrupted = &repl_interrupted;
  s->input_name = "<repl>";
  set_defaults(s);
  return s;
}

void session_free(Session *s) {
  if (!s) return;
  for (int i = 0; i < s->nstages; i++) ir_module_free(s->stages[i].module);
  fx_free(s->stages);
  if (s->fx_state && fx_state_free) fx_state_free(s->fx_state);
  fx_free(s);
}

IrModule *session_module(Session *s) {
  if (!s || s->nstages == 0 || s->cur < 0 || s->cur >= s->nstages) return NULL;
  return s->stages[s->cur].module;
}

void session_truncate(Session *s, int keep) {
  if (keep < 1) keep = 1; /* the input stays */
  for (int i = keep; i < s->nstages; i++) {
    ir_module_free(s->stages[i].module);
    s->stages[i].module = NULL;
  }
  if (s->nstages > keep) s->nstages = keep;
  if (s->cur >= s->nstages) s->cur = s->nstages > 0 ? s->nstages - 1 : 0;
  /* Stage k (k >= 1) is produced by pipeline pass k-1. */
  s->next_pass = s->nstages > 0 ? s->nstages - 1 : 0;
}

void session_set_input(Session *s, IrModule *m) {
  for (int i = 0; i < s->nstages; i++) ir_module_free(s->stages[i].module);
  s->nstages = 0;
  s->cur = 0;
  s->next_pass = 0;
  if (!m) return;
  s->stages[0] = (Stage){.module = m, .pass = "input", .changed = false};
  s->nstages = 1;
}

void session_reset(Session *s) {
  session_set_input(s, NULL);
  if (s->fx_state && fx_state_free) fx_state_free(s->fx_state);
  s->fx_state = NULL;
  s->fx_dirty = false;
  set_defaults(s);
}
