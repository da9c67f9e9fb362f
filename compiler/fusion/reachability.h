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

/* A search kept between queries that share one end (a consumer asked about each of its siblings
 * in turn, a producer about each operand of its consumer): a forward search from `anchor` along
 * users, or a backward one from it along operands. What it has reached stays marked; what it has
 * queued but not yet expanded waits, by level, for a query that needs it. */
typedef struct {
  const IrInstr *x;
  int32_t key; /* the level, as the heap orders it */
} ReachWaiting;

typedef struct {
  bool valid, forward;
  const IrInstr *anchor;
  uint32_t epoch;   /* the map's epoch it was started in: any reach_update ends it */
  uint32_t *seen;   /* reached, by instruction id, stamped with gen */
  uint32_t gen;
  const IrInstr **stack; /* reached, not yet expanded */
  size_t nstack;
  ReachWaiting *wait;    /* reached, level beyond the queries so far: a heap, nearest level first */
  size_t nwait;
} ReachSession;

/* Reachability among the siblings of one parent, for the pair checks of a sibling fusion (XLA
 * judges every pair of a value's readers, and a value may have thousands): the answers for every
 * pair come from one sweep over what the siblings reach (reach_siblings_begin) instead of a search
 * per pair, and a merge of two of them updates them exactly (reach_siblings_merged). */
enum { REACH_MAX_SIBLINGS = 1 << 14 };
typedef struct {
  bool active;
  uint32_t epoch; /* the map's epoch the answers hold for */
  int n, words;   /* siblings, and 64-bit words per row */
  const IrInstr **node; /* n: each sibling, NULL once merged into another */
  uint64_t *from;       /* n rows of `words`: bit i of row j, a path leads from node[i] to node[j] */
  uint64_t *to;         /* the same transposed: bit j of row i, a path leads from node[i] to node[j] */
} ReachSiblings;

/* An instruction the sweep covers: its level, and its place when it is one of the siblings. */
typedef struct {
  int32_t level;
  int sibling; /* index among the siblings, or -1 */
  const IrInstr *x;
} ReachSweepEntry;

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
  uint32_t epoch; /* counts reach_update calls: a kept search is valid only within one epoch */
  ReachSession fwd, bwd;
  const IrInstr *last_from; /* the last query's start */
  ReachSiblings sibs;
  int32_t *sib_index;     /* by id (cap entries): the place among the siblings, or -1 */
  int32_t *sweep_pos;     /* by id (cap entries): the place in the sweep, while one runs */
  ReachSweepEntry *sweep; /* the sweep's instructions (cap entries) */
} Reach;

/* Levels for every instruction of c. Never fails: out of memory, the map answers by full search. */
void reach_init(Reach *r, IrComputation *c);
void reach_free(Reach *r);

/* After a fusion: x (the fusion that was made or grew) gets its level from its operands, and its
 * users, new get-tuple-elements included, rise above it as far as needed. */
void reach_update(Reach *r, const IrInstr *x);

/* Whether a chain of users leads from `from` to `to` inside r's computation; with skip_direct,
 * not counting `to` as a direct user of `from` (another path must exist). Same answer as
 * fusion_path_exists(from, to, skip_direct). Queries that share an end with the one before (the
 * pair checks ask a sibling about every other sibling, both ways) continue one kept search instead
 * of starting again: along a long chain of blocks that search is the cost. */
bool reach_path(Reach *r, const IrInstr *from, const IrInstr *to, bool skip_direct);

/* Until reach_siblings_end, reach_path answers a query between two of sib[0..n) (at most
 * REACH_MAX_SIBLINGS, all in r's computation) from one sweep: every instruction a sibling reaches
 * below the highest sibling's level, in level order, learns which siblings reach it. Returns false
 * (queries then search as before) when the siblings do not qualify or memory runs out. */
bool reach_siblings_begin(Reach *r, IrInstr *const *sib, int n);
/* The siblings a path joins to sib[i] either way (bit j of conn, ceil(n/64) words), as the sweep
 * knows them after the merges it was told of; false when it cannot say (no sweep, or a change it
 * was not told of). */
bool reach_siblings_connections(const Reach *r, int i, uint64_t *conn);
/* After siblings a and b were merged into f and reach_update(r, f): f takes a's place, and a path
 * now leads from u to v when one did before, or when u reached a or b and a or b reached v (the
 * merged kernel joins the two paths). Any other change since the sweep ends the answers. */
void reach_siblings_merged(Reach *r, const IrInstr *a, const IrInstr *b, const IrInstr *f);
void reach_siblings_end(Reach *r);

#endif
