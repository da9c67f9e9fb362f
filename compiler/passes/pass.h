/* pass.h — passes, pipelines, the decision record and the sink passes report to.
 *
 * A pass is a small function over the module. It says whether it changed anything and reports
 * every decision it makes (every fusion candidate it evaluates, every rewrite) as a PassDecision
 * to the sink it is handed. explain/ owns the store behind the sink; compiler/ only defines the
 * record, so the compiler depends on nothing of ours. */
#ifndef FXPLAIN_PASS_H
#define FXPLAIN_PASS_H

#include "../plan/plan.h"
#include "../ir/ir.h"

/* ---------- decisions ---------- */

#define PASS_MAX_METRICS 12

typedef struct {
  const char *key; /* e.g. "users", "limit", "bytes_ratio", "us_fused" */
  double value;
} PassMetric;

typedef struct {
  int stage;             /* filled by the pipeline: the stage this pass produces */
  const char *pass;      /* "instruction-fusion", "algsimp", ... */
  const char *action;    /* "fuse", "duplicate", "merge", "multi-output", "sibling", "horizontal",
                            "rewrite", "remove", "inline", "rename", "fold", "unroll" */
  const char *producer;  /* instruction name, or NULL */
  const char *consumer;  /* instruction name, or NULL (or a group: "a,b,c") */
  bool accepted;
  const char *reason;    /* a code from the vocabulary (reasons.def); NULL for plain rewrites */
  const char *detail;    /* one sentence with the numbers behind it */
  const char *suggestion;/* what the user could change, or NULL */
  const char *result;    /* the instruction the decision produced (e.g. "fusion.3"), or NULL */
  int nmetrics;
  PassMetric metrics[PASS_MAX_METRICS];
} PassDecision;

/* Strings in a PassDecision need only live for the emit call: the sink copies what it keeps. */
typedef struct {
  void (*emit)(void *ctx, const PassDecision *d);
  void *ctx;
} DecisionSink;

/* Formats a decision's detail with printf and emits it. `d` is filled by the caller except detail. */
void pass_emit(DecisionSink *sink, PassDecision *d, const char *detail_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds a metric (ignored past PASS_MAX_METRICS). */
void pass_metric(PassDecision *d, const char *key, double value);

/* ---------- settings: the policy knobs of `set` ---------- */

typedef struct {
  int concat_user_limit;     /* users a cache-invalidating producer (concatenate, pad, ...) may have
                                and still be fused: XLA 1, the paper's patch 3 */
  int max_duplication;       /* emitted copies of a producer before code_duplication: 15 */
  int operand_budget;        /* operands + outputs per fusion: 64 (classic, 2021) / 96 (today) */
  int unroll;                /* while-loop-unroll factor; 1 = off */
  bool dot_is_library;       /* dot -> cuBLAS / BLAS: opaque kernel */
  bool conv_is_library;      /* convolution -> cuDNN */
  bool rng_is_library;       /* rng -> cuRAND */
  signed char expensive_override[IR_OP_COUNT]; /* 0 = table, +1 = expensive, -1 = cheap */
  char disabled_passes[512]; /* comma-separated pass names switched off */
} PassSettings;

void pass_settings_default(PassSettings *s);
bool pass_settings_is_disabled(const PassSettings *s, const char *pass);

/* ---------- passes and pipelines ---------- */

typedef struct {
  DecisionSink *sink;
  const DeviceProfile *device;
  const PassSettings *settings;
  int stage;        /* the stage this pass run will produce */
  const char *pass; /* the running pass's name */
  FxError *err;
  /* Non-zero asks the pass to stop between two of its steps (Ctrl-C); NULL: never. A pass that
   * sees it may stop anywhere between steps and return true: pass_run_stage then drops its work,
   * so an interrupted pass makes no stage and an uninterrupted one decides exactly as before. */
  volatile int *interrupted;
  /* Set by a rewrite that changes floating-point rounding on purpose, as XLA's does (a sum of n
   * equal values becomes one multiply by n): the stage computes the same values in another order,
   * not bit for bit the same numbers. The pass leaves it set; whoever runs the pass clears it. */
  bool reassociated;
} PassContext;

/* Whether the pass should stop between steps (cx->interrupted set). */
static inline bool pass_interrupted(const PassContext *cx) { return cx->interrupted && *cx->interrupted; }

typedef bool (*PassFn)(IrModule *m, PassContext *cx, bool *changed);

typedef struct {
  const char *name;        /* XLA's spelling where one exists */
  const char *description; /* one line for `help` and `passes` */
  PassFn run;
} Pass;

/* Every pass fxplain knows, looked up by name. */
const Pass *pass_lookup(const char *name);
int pass_count(void);
const Pass *pass_at(int i);
/* Whether the pass may drop a rounding step (excess precision, as XLA allows by default): its
 * stage computes at least the precision of the one before, not bit for bit the same numbers. */
bool pass_excess_precision(const Pass *p);

typedef struct {
  const char *name;        /* "classic", "priority" */
  const char *description;
  int npasses;
  const Pass *const *passes;
} Pipeline;

const Pipeline *pipeline_lookup(const char *name);
int pipeline_count(void);
const Pipeline *pipeline_at(int i);

/* Runs pass p on a copy of `in` (the caller fills cx: sink, device, settings, stage, err). On
 * success *changed says whether the pass changed anything and *out is the new snapshot, owned by
 * the caller, or NULL when nothing changed (the stage then shares `in`, so unchanged stages cost
 * no memory). Every new snapshot must pass the verifier: a pass that leaves an invalid module is
 * an error naming the pass. Returns false and fills cx->err; `in` is never modified. */
/* When cx->interrupted is set (before or while the pass runs) its work is dropped and the
 * error says "interrupted" and names the pass. */
bool pass_run_stage(const Pass *p, const IrModule *in, PassContext *cx, IrModule **out, bool *changed);

#endif
