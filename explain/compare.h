/* compare.h — what a change of setting (or device) does to the fusion decisions: the engine runs
 * the whole pipeline twice on the input, on scratch copies, once per side, and lists the decisions
 * whose verdict or reason differ, with the kernels and launches before and after. The session's
 * stages and log are not touched. Behind `compare-decisions`; printed by format.h. */
#ifndef FXPLAIN_COMPARE_H
#define FXPLAIN_COMPARE_H

#include <stdbool.h>

#include "engine.h"

/* The last word about one producer/consumer pair in one run (a later evaluation of the same pair
 * supersedes an earlier one). */
typedef struct {
  char key[400]; /* "pass | action | producer -> consumer" */
  char verdict[24];
  char reason[32];
  char detail[600];
} ExplainKeyedDecision;

/* One decision that differs: before or after is NULL when only the other run made it. */
typedef struct {
  const char *key;
  const ExplainKeyedDecision *before, *after;
} ExplainDecisionChange;

typedef struct {
  ExplainKeyedDecision *before, *after;
  int nbefore, nafter;
  int kernels_before, kernels_after;
  long long launches_before, launches_after;
  ExplainDecisionChange *changes; /* first those of the first run, then those only the second made */
  int nchanges;
  int one_run_only; /* decisions made in one run only and not listed (all was false) */
} ExplainComparison;

/* Runs the engine's pipeline on its input with (before, dbefore) and with (after, dafter). With
 * all, decisions made in one run only are listed too; otherwise they are only counted. False with
 * err filled when a pass fails or memory runs out. Free with explain_comparison_free. */
bool explain_compare_settings(ExplainEngine *e, const PassSettings *before, const DeviceProfile *dbefore,
                              const PassSettings *after, const DeviceProfile *dafter, bool all, ExplainComparison *out,
                              FxError *err);
void explain_comparison_free(ExplainComparison *c);

/* The two sides `compare-decisions` compares. */
typedef struct {
  PassSettings before, after;
  DeviceProfile dbefore, dafter;
  char what[200]; /* the change in words: "dup_limit 3" */
} ExplainCompareSides;

/* compare-decisions' sides: with n == 0 the engine's last change (the settings before it against
 * the current ones); otherwise w[0..n) is `SETTING VALUE...` applied to a copy of the current
 * settings (n must be 1 + explain_setting_words(SETTING)). False with err filled (no location)
 * and *bad the index in w of the word at fault (-1: the command as a whole). */
bool explain_compare_sides(const ExplainEngine *e, char **w, int n, ExplainCompareSides *out, int *bad, FxError *err);

#endif
