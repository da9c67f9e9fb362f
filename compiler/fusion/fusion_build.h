/* fusion_build.h — making and unmaking fusion instructions: the graph edits the fusion passes share.
 *
 * A fusion is an instruction (opcode fusion, named like XLA's `fusion`, `fusion.1`, ...) whose
 * `calls` computation (`fused_computation`, `fused_computation.1`, ...) holds the fused body, with
 * one parameter per distinct operand and `kind` kLoop, kInput (a reduction or scatter root) or
 * kOutput. Fused instructions keep their names when they are moved into a body, so `why add.3`
 * still finds add.3 inside its fusion; a producer duplicated into several consumers is cloned as
 * `NAME.clone`. Multi-output fusions end in a tuple, and their users read get-tuple-elements.
 *
 * None of these functions re-sorts the caller's computation; passes call ir_computation_sort on
 * each computation they edited when they are done. */
#ifndef FXPLAIN_FUSION_BUILD_H
#define FXPLAIN_FUSION_BUILD_H

#include "../ir/ir.h"

/* Wraps one instruction into a new single-instruction fusion of the given kind (NULL: kInput for
 * a reduction or scatter, kLoop otherwise). Returns the fusion, or NULL on allocation failure. */
IrInstr *fusion_wrap(IrInstr *i, const char *kind);
/* Fuses producer into consumer (wrapping the consumer first when it is not a fusion). When the
 * producer has other users it is duplicated (cloned) into the body; otherwise it is moved and
 * disappears from its computation. A producer that is itself a fusion is inlined (fusion-merger).
 * Returns the consumer's fusion, or NULL on allocation failure. */
IrInstr *fusion_fuse(IrInstr *consumer, IrInstr *producer);
/* Multi-output producer–consumer fusion: fuses producer into consumer and keeps the producer's
 * value as an extra output that its other users read through get-tuple-element. */
IrInstr *fusion_fuse_multi_output(IrInstr *consumer, IrInstr *producer);
/* Sibling (and horizontal) fusion: b's body joins a's, both keep their outputs. a and b must be
 * independent. Returns the merged fusion (a's), or NULL. */
IrInstr *fusion_merge_siblings(IrInstr *a, IrInstr *b, const char *kind);
/* Merges multi-output fusion f into fusion g when every output of f is read (through
 * get-tuple-element) by g alone: f's body moves into g, nothing is written out. The caller checks
 * that condition. Returns g, or NULL on allocation failure. */
IrInstr *fusion_merge_outputs_into(IrInstr *g, IrInstr *f);
/* The same for one of several readers: f's body is cloned into g (moved when g is the last reader
 * and `last`); f goes once nothing reads it. */
IrInstr *fusion_merge_outputs(IrInstr *g, IrInstr *f, bool last);
/* Inlines a fusion back into its computation (its fused computation is dropped). Returns false
 * on allocation failure. */
bool fusion_unfuse(IrInstr *fusion);
/* Inlines every fusion in the module; returns the count. */
int fusion_unfuse_all(IrModule *m);
/* The instructions of a fused body that output values: the root, or each operand of a root tuple. */
int fusion_outputs(const IrInstr *fusion, IrInstr **out, int max);

#endif
