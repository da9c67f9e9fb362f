/* reachability.h — "does a path lead from one instruction to another?" for the fusion passes that
 * ask it per candidate pair (multi_output_fusion, horizontal fusion), kept through their fusions.
 *
 * XLA builds an HloDfsReachability once per computation and updates it as it fuses; its query is a
 * search bounded by post-order indices. Here each instruction keeps a level: 0 for one without
 * operands in the computation, otherwise more than every operand's. Along any path the levels
 * rise, so the search from `from` never needs an instruction whose level is not below `to`'s; the
 * answer is the same as the unbounded search's (fusion_path_exists), only the ground covered
 * shrinks to the descendants of `from` below `to`. After a fusion the pass calls reach_update on
 * the instruction that gained operands or replaced others: its level is recomputed and raised
 * along its users as far as needed (levels only rise, which keeps every bound valid).
 *
 * Levels live in an fx_malloc'd array by instruction id. If an allocation fails the map falls back
 * to fusion_path_exists: slower, never wrong. FXPLAIN_REACH_CHECK=1 asks both for every query and
 * aborts on a difference (for tests). */
#ifndef FXPLAIN_REACHABILITY_H
#define FXPLAIN_REACHABILITY_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"

typedef struct {
  const IrInstr *x;
  int next; /* the next operand to look at */
} ReachFrame;

typedef struct {
  IrComputation *c;
  int32_t *level; /* by instruction id; -1 unknown */
  uint32_t *stamp; /* visit stamps of the search, by instruction id */
  const IrInstr **stack;
  size_t cap;   /* entries of level, stamp and stack */
  uint32_t gen; /* the current search's stamp */
  ReachFrame *work; /* worklist of the level computation and of reach_update */
  size_t nwork, work_cap;
  bool broken;  /* an allocation failed: every query goes to fusion_path_exists */
  bool check;   /* FXPLAIN_REACH_CHECK */
} Reach;

/* Levels for every instruction of c. Never fails: out of memory, the map answers by full search. */
void reach_init(Reach *r, IrComputation *c);
void reach_free(Reach *r);

/* After a fusion: x (the fusion that was made or grew) gets its level from its operands, and its
 * users, new get-tuple-elements included, rise above it as far as needed. */
void reach_update(Reach *r, const IrInstr *x);

/* Whether a chain of users leads from `from` to `to` inside r's computation; with skip_direct,
 * not counting `to` as a direct user of `from` (another path must exist). Same answer as
 * fusion_path_exists(from, to, skip_direct). */
bool reach_path(Reach *r, const IrInstr *from, const IrInstr *to, bool skip_direct);

#endif
