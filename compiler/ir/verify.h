/* verify.h — the IR verifier and shape inference.
 *
 * ir_verify is run after every parse (hlo_parse, the .fx lowering) and by the pipeline after
 * every pass: a module that verifies is structurally sound (links, order, arity, names), and every
 * instruction's shape is the one its operands and attributes give.  ir_infer_shape is the shape
 * rule for one instruction, shared with the lowering and the passes that build instructions.
 *
 * Errors name the offending instruction and its place (IrInstr.loc); the source line is left
 * empty (the parser fills it in when the module came from text). */
#ifndef FXPLAIN_VERIFY_H
#define FXPLAIN_VERIFY_H

#include <stdbool.h>

#include "ir.h"
#include "status.h"

/* Checks the whole module: one entry; unique computation and instruction names; each
 * computation's root, parameters, operand/user links and topological order; opcode arity;
 * called computations present, acyclic, with signatures matching their callers; and every
 * instruction's declared shape against ir_infer_shape.  Returns false with *err filled at the
 * first problem. */
bool ir_verify(const IrModule *m, FxError *err);

/* How strict ir_verify_with is. allow_mixed_precision: a declared shape may differ from the
 * inferred one in its floating-point element type (f16 for f32, ...), as XLA's verifier allows
 * with allow_mixed_precision (its test base turns it on: XLA's unit tests write such modules). */
typedef struct {
  bool allow_mixed_precision;
} IrVerifyOptions;
bool ir_verify_with(const IrModule *m, const IrVerifyOptions *opts, FxError *err);

/* Infers the shape of i from its operands' shapes and its attributes (called computations
 * included) into *out (arrays allocated in a).  For the few opcodes whose result cannot be
 * derived (custom-call, collectives, rng, the declared type of convert, the output dims of
 * broadcast/reshape/iota), the declared shape is taken after checking what can be checked.
 * Returns false with *err filled when the operands or attributes are inconsistent. */
bool ir_infer_shape(const IrInstr *i, IrShape *out, Arena *a, FxError *err);

#endif
