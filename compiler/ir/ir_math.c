/* ir_math.c — the elementwise ops that are one C math library function (math.def): their
 * function's name for the emitters and their value for the interpreter and constant folding. */
#include <math.h>

#include "ir.h"

const char *ir_math_function(IrOpcode op, bool single) {
  switch (op) {
#define MATH(OP, dfn, ffn) \
  case IR_OP_##OP: return single ? #ffn : #dfn;
#include "math.def"
#undef MATH
  default: return NULL;
  }
}

bool ir_math_eval(IrOpcode op, double x, bool single, double *out) {
  float f = (float)x;
  switch (op) {
#define MATH(OP, dfn, ffn)              \
  case IR_OP_##OP:                      \
    *out = single ? ffn(f) : dfn(x);    \
    return true;
#include "math.def"
#undef MATH
  default: return false;
  }
}
