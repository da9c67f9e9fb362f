/* session.c — the session's life: creation with the defaults, stages, and freeing.
 *
 * A session owns its stage snapshots (stages[i].module), the .fx lowering state, and the decision
 * log. Stage 0 is the input (a loaded HLO module or the module built from .fx definitions); the
 * pipeline commands append stages after it. */
#include <string.h>

#include "../compiler/arena.h"
#include "../compiler/fx.h"
#include "../explain/explain.h"
#include "../explain/xla_dump.h"
#include "../runtime/backend.h"
#include "../runtime/runtime.h"
#include "repl.h"

volatile int repl_interrupted;

static void set_defaults(Session *s) {
  s->device = *device_default();
  pass_settings_default(&s->settings);
  s->pipeline = pipeline_lookup("classic");
  rt_default_max_memory(); /* `set max_memory`: the default, as a new session starts */
}

Session *session_new(FILE *out, FILE *err) {
  Session *s = fx_calloc(1, sizeof *s);
  if (!s) return NULL;
  /* Room for stage 0 up front, so session_set_input never has to fail. */
  s->stages_cap = 16;
  s->stages = fx_calloc((size_t)s->stages_cap, sizeof *s->stages);
  s->log = explain_log_new();
  if (!s->stages || !s->log) {
    fx_free(s->stages);
    if (s->log) explain_log_free(s->log);
    fx_free(s);
    return NULL;
  }
  s->out = out;
  s->err = err;
  s->interrupted = &repl_interrupted;
  rt_set_interrupt_flag(&repl_interrupted);
  s->input_name = "<repl>";
  set_defaults(s);
  return s;
}

/* Frees stage i's snapshot unless it is shared with the stage before it. */
static void drop_stage(Session *s, int i) {
  if (!s->stages[i].shared) ir_module_free(s->stages[i].module);
  s->stages[i] = (Stage){0};
}

void session_free(Session *s) {
  if (!s) return;
  for (int i = s->nstages - 1; i >= 0; i--) drop_stage(s, i);
  fx_free(s->stages);
  explain_log_free(s->log);
  if (s->fx_state) fx_state_free(s->fx_state);
  variants_free(s->variants);
  xla_dump_free(s->xla);
  fx_free(s);
}

IrModule *session_module(Session *s) {
  if (!s || s->nstages == 0 || s->cur < 0 || s->cur >= s->nstages) return NULL;
  return s->stages[s->cur].module;
}

void session_truncate(Session *s, int keep) {
  if (keep < 1) keep = 1; /* the input stays */
  for (int i = s->nstages - 1; i >= keep; i--) drop_stage(s, i);
  explain_log_truncate(s->log, keep);
  if (s->nstages > keep) s->nstages = keep;
  if (s->cur >= s->nstages) s->cur = s->nstages > 0 ? s->nstages - 1 : 0;
  /* Stage k (k >= 1) is produced by pipeline pass k-1. */
  s->next_pass = s->nstages > 0 ? s->nstages - 1 : 0;
}

void session_set_input(Session *s, IrModule *m) {
  for (int i = s->nstages - 1; i >= 0; i--) drop_stage(s, i);
  explain_log_truncate(s->log, 1);
  s->nstages = 0;
  s->cur = 0;
  s->next_pass = 0;
  if (s->xla) {
    /* The `xla` pipeline belongs to the dump: back to the pipeline chosen before it. */
    if (s->pipeline == xla_dump_pipeline(s->xla)) s->pipeline = s->xla->prev_pipeline;
    if (!s->pipeline) s->pipeline = pipeline_lookup("classic");
    xla_dump_free(s->xla);
    s->xla = NULL;
  }
  if (!m) return;
  s->stages[0] = (Stage){.module = m, .pass = "input", .changed = false};
  s->nstages = 1;
}

void session_reset(Session *s) {
  session_set_input(s, NULL);
  if (s->fx_state) fx_state_free(s->fx_state);
  s->fx_state = NULL;
  s->fx_built = NULL;
  s->fx_dirty = false;
  variants_free(s->variants);
  s->variants = NULL;
  set_defaults(s);
}
