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

/* The name index of d, a copy of m made by ir_clone.c (imap: m's instruction id -> its copy in d,
 * nmap entries), as ir_module_reindex_from(d, m, share_names) would build it, but by copying m's
 * table slot for slot instead of hashing every name again (a stage snapshot of 100,000
 * instructions spent most of its time there). Checks that m's index names every live instruction
 * of m by its own name and falls back to the full reindex otherwise. */
bool ir_module_copy_names(IrModule *d, const IrModule *m, IrInstr *const *imap, size_t nmap, bool share_names);

#endif
