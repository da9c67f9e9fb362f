/* mof_steps.h — the two steps both eras' multi_output_fusion share (pass_multi_output_fusion.c
 * for the 2021 rules, pass_mof_current.c for today's): FuseSiblings' pairwise merging of a
 * producer's users, and producer-consumer fusion into the preferred consumer
 * (SelectPreferredFusionCandidate). Which users are candidates, how a pair is judged and how a
 * kernel is named differ between the eras; the caller passes them in. Every pair judged is
 * reported as a "sibling" or "multi-output" decision. */
#ifndef FXPLAIN_MOF_STEPS_H
#define FXPLAIN_MOF_STEPS_H

#include <stdbool.h>
#include <stddef.h>

#include "fusion_rules.h"
#include "reachability.h"

/* Judges siblings a and b (both read parent); fills v with the verdict. */
typedef bool (*MofSiblingCheck)(Reach *r, const IrInstr *a, const IrInstr *b, const IrInstr *parent,
                                const PassContext *cx, FusionVerdict *v);
/* Judges fusing producer p into consumer c as a multi-output fusion; fills v with the verdict. */
typedef bool (*MofConsumerCheck)(Reach *r, const IrInstr *p, const IrInstr *c, const PassContext *cx,
                                 FusionVerdict *v);
/* Writes the name a sibling decision gives kernel x. */
typedef void (*MofLabel)(const IrInstr *x, char *buf, size_t n);

/* What one era's multi_output_fusion does at each step. */
typedef struct {
  /* The computations the pass visits. */
  int (*computations)(const IrModule *m, IrComputation **out, int max);
  /* A producer the pass passes over entirely, besides dead ones and constants (NULL: none). */
  bool (*skip)(const IrInstr *p);
  /* FuseSiblings among the users of p: returns the number of merges, sets *oom. */
  int (*siblings)(Reach *r, IrInstr *p, PassContext *cx, FusionPairSet *refused, bool *oom);
  /* The consumers of p (in c; out has room for all p's users) that may take it as a multi-output
   * fusion; 0 when p may not stay an output. */
  int (*consumers)(const IrInstr *p, const IrComputation *c, const PassSettings *s, IrInstr **out);
  MofConsumerCheck consumer_ok;
} MofEra;

/* DoMultiOutputFusion: in every computation, producers uses before defs; for each, the sibling
 * step, then the producer-consumer step (mof_fuse_into_preferred). Constants are never
 * multi-output fused. */
bool mof_run(IrModule *m, PassContext *cx, bool *changed, const MofEra *era);

/* FuseSiblings over the n users sib of parent (all of them, as XLA takes them): sorts them by
 * fusion_mof_priority (multi-output fusions, then fusions, then plain ops); each fusion then takes
 * every later sibling that ok accepts. With candidate (NULL: every sibling), a sibling it rejects
 * is passed over. Of the first MOF_PAIRS_REPORTED pairs judged, a refusal is reported once per
 * pair and reason (refused); the refusals past them (a value read by thousands of kernels has
 * millions of pairs) are reported together, one decision per reason naming the first pair and
 * counting the rest. Every merge is reported. Returns the number of merges; sets *oom when out
 * of memory. */
enum { MOF_PAIRS_REPORTED = 64 * 63 / 2 };
int mof_fuse_siblings(Reach *r, IrInstr *parent, IrInstr **sib, int n, PassContext *cx, FusionPairSet *refused,
                      bool *oom, bool (*candidate)(const IrInstr *, const PassSettings *), MofSiblingCheck ok,
                      MofLabel label);

/* Producer-consumer multi-output fusion of p: judges each of the n consumers with ok (a refusal
 * is reported), fuses p into the first of the highest fusion_mof_priority that took it
 * (SelectPreferredFusionCandidate: multi-output fusions, then fusions) and reports that. Returns
 * 1 when p was fused, 0 when no consumer took it, -1 when out of memory. */
int mof_fuse_into_preferred(Reach *r, IrInstr *p, IrInstr **cons, int n, PassContext *cx, MofConsumerCheck ok);

#endif
