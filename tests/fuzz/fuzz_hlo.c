/* fuzz_hlo.c — libFuzzer target: the HLO text parser and printer.
 *
 * Any byte string either fails with a located error or parses into a module that verifies
 * (or fails verification with an error) and prints to a fixed point: parse(print(m)) prints the
 * same text. Anything else — a crash, a leak, a sanitizer report, a non-fixed-point — is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/hlo/hlo.h"
#include "../../compiler/ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse((const char *)data, size, "fuzz.hlo", &err);
  if (!m) {
    if (!err.set) abort(); /* a failure must say why */
    return 0;
  }
  FxError verr;
  fx_error_clear(&verr);
  (void)ir_verify(m, &verr);
  char *a = hlo_print_string(m);
  if (a) {
    FxError e2;
    fx_error_clear(&e2);
    IrModule *m2 = hlo_parse(a, strlen(a), "fuzz-printed.hlo", &e2);
    if (!m2) abort(); /* printed text must parse back */
    char *b = hlo_print_string(m2);
    if (b && strcmp(a, b) != 0) abort(); /* and print identically */
    free(b);
    ir_module_free(m2);
  }
  free(a);
  ir_module_free(m);
  return 0;
}
