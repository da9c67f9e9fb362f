/* fuzz_fx.c — libFuzzer target: the .fx parser and lowering.
 *
 * The input is fed as one chunk and then line by line (as typed at the prompt); either way a
 * failure must carry a located error, the state must stay usable, and a module built from it
 * must pass the verifier. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/fx/fx.h"
#include "../../compiler/ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_build(FxState *st) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = fx_build_module(st, "fuzz", &err);
  if (!m) return;
  FxError verr;
  fx_error_clear(&verr);
  if (!ir_verify(m, &verr)) abort(); /* the lowering must only build valid modules */
  ir_module_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  FxState *st = fx_state_new();
  if (!st) {
    free(text);
    return 0;
  }
  FxError err;
  fx_error_clear(&err);
  if (!fx_feed(st, text, "fuzz.fx", 1, &err) && !err.set) abort();
  check_build(st);
  fx_state_free(st);

  /* Line by line, with blocks gathered while fx_needs_more says they are open. */
  st = fx_state_new();
  if (st) {
    char *chunk = text;
    int line = 1, chunk_line = 1;
    for (char *p = text;; p++) {
      if (*p == '\n' || *p == 0) {
        char save = *p;
        *p = 0;
        if (!fx_needs_more(chunk) || save == 0) {
          fx_error_clear(&err);
          if (!fx_feed(st, chunk, "<repl>", chunk_line, &err) && !err.set) abort();
          chunk = p + 1;
          chunk_line = line + 1;
        } else {
          *p = '\n';
        }
        if (save == 0) break;
        if (*p == 0) *p = save;
        line++;
      }
    }
    check_build(st);
    fx_state_free(st);
  }
  free(text);
  return 0;
}
