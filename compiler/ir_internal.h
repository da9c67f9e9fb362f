/* ir_internal.h — what ir.c shares with ir_clone.c and nothing else: the reference-counted arenas
 * behind snapshot sharing (ir_module_snapshot). */
#ifndef FXPLAIN_IR_INTERNAL_H
#define FXPLAIN_IR_INTERNAL_H

#include "ir.h"

/* One more reference to m's arena for a snapshot that points into it (made on first use; m's own
 * reference is released by ir_module_free). NULL when memory runs out. */
struct IrLender *ir_module_lend(IrModule *m);
/* One more reference to an arena already lent. */
void ir_lender_retain(struct IrLender *l);
/* Drops one reference; the last frees the arena. NULL is ignored. */
void ir_lender_release(struct IrLender *l);

#endif
