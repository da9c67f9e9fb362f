/* session.c — the shell's session: its engine (explain/engine.h: stages, pipeline, decision log,
 * device, settings) and what only the shell keeps (output streams, the .fx definitions typed at
 * the prompt, the variants table). */
#include <string.h>

#include "../compiler/ir/ir.h"
#include "../compiler/fx/fx.h"
#include "../runtime/backend.h"
#include "../runtime/runtime.h"
#include "../explain/variants.h"
#include "repl.h"

volatile int repl_interrupted;

Session *session_new(FILE *out, FILE *err) {
  Session *s = fx_calloc(1, sizeof *s);
  if (!s) return NULL;
  if (!explain_engine_init(&s->eng)) {
    fx_free(s);
    return NULL;
  }
  s->out = out;
  s->err = err;
  s->interrupted = &repl_interrupted;
  s->eng.interrupted = &repl_interrupted;
  rt_set_interrupt_flag(&repl_interrupted);
  s->input_name = "<repl>";
  rt_default_max_memory(); /* `set max_memory`: the default, as a new session starts */
  return s;
}

void session_free(Session *s) {
  if (!s) return;
  explain_engine_fini(&s->eng);
  explain_variants_free(s->variants);
  fx_free(s);
}

void session_reset(Session *s) {
  explain_engine_set_input(&s->eng, NULL);
  explain_engine_fx_clear(&s->eng);
  explain_variants_free(s->variants);
  s->variants = NULL;
  explain_engine_defaults(&s->eng);
  rt_default_max_memory();
}
