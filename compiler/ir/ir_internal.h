/* ir_internal.h — what ir.c shares with ir_clone.c and verify.c and nothing else: the
 * reference-counted arenas behind snapshot sharing (ir_module_snapshot), and the name index. */
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

/* The name index of d, a copy of m made by ir_clone.c (d's by_id already filled), as
 * ir_module_reindex_from(d, m, share_names) would build it: m's table as it is (its values are
 * ids, the same in both), with its keys copied into d's arena unless share_names. */
bool ir_module_copy_names(IrModule *d, const IrModule *m, bool share_names);

/* Whether the name index proves every listed instruction's name distinct and non-empty without
 * reading a name: each listed instruction (once) is filed under its own name string, pointer for
 * pointer, and found by its id; no name filed is empty. The index keeps one slot per distinct
 * name and one id per slot, so distinct instructions found so have distinct names.
 * seen: scratch of nseen (m->next_id + 1) pointers. When not, *missing is the first listed
 * instruction not found so (listed twice, or renamed behind ir.c's back), NULL when a filed name
 * is empty; the verifier then compares the names themselves. */
bool ir_module_names_indexed(const IrModule *m, const char **seen, size_t nseen, const IrInstr **missing);

#endif
