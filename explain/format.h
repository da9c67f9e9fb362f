/* format.h — the engine's answers printed, as text or as JSON (one value per call, through the
 * one writer, json.h): what every front end shows for a stage, a move, the pipeline, the passes, a
 * diff, `why`, the decision log, the kernels and the stats. The functions ask the engine
 * (engine.h) for the data and print it; they never change the session, except that a plan asked
 * for is kept with its stage. */
#ifndef FXPLAIN_FORMAT_H
#define FXPLAIN_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "../compiler/plan/plan.h"
#include "compare.h"
#include "engine.h"
#include "json.h"

/* Where and how to print. */
typedef struct ExplainOut {
  FILE *out;
  bool json;
  int width; /* text: wrap long sentences between words at this many columns (0: never) */
} ExplainOut;

/* "stage 3  dce: 5 removed → 12 kernels"; in JSON an object, written into `into` when given. */
bool explain_show_move(const ExplainOut *o, ExplainEngine *e, int stage, JsonWriter *into, FxError *err);
/* The chosen pipeline, its passes (which have run, which are switched off) and where we are. */
void explain_show_pipeline(const ExplainOut *o, ExplainEngine *e);
/* The current stage: its pass, instructions, kernels and the next pass. */
bool explain_show_stage(const ExplainOut *o, ExplainEngine *e, FxError *err);
/* One row per stage (only the changed ones when only_changed): instructions, kernels, launches,
 * bytes, estimated time. */
bool explain_show_passes(const ExplainOut *o, ExplainEngine *e, bool only_changed, FxError *err);
/* What changed between stages a and b (both run). */
bool explain_show_diff(const ExplainOut *o, ExplainEngine *e, int a, int b, FxError *err);
/* `why NAME` and `why A B` at the current stage. A name at no stage: false with *unknown = 1 (or
 * 2, the pair's second) and err untouched, for the front end to place. */
bool explain_show_why_one(const ExplainOut *o, ExplainEngine *e, const char *name, int *unknown, FxError *err);
bool explain_show_why_pair(const ExplainOut *o, ExplainEngine *e, const char *a, const char *b, int *unknown,
                           FxError *err);
/* The decisions the filter selects, each with its number. */
bool explain_show_decisions(const ExplainOut *o, ExplainEngine *e, const ExplainFilter *filter, FxError *err);
/* The current stage's kernel plan (or, with buffers, the buffers crossing kernel boundaries). */
bool explain_show_kernels(const ExplainOut *o, ExplainEngine *e, bool buffers, FxError *err);
/* The current stage in numbers. */
bool explain_show_stats(const ExplainOut *o, ExplainEngine *e, FxError *err);
/* The fusion knobs as members of the object being written: "dup_limit", "max_duplication",
 * "operand_budget", "unroll" and "library": {"dot", "conv", "rng"} (`show settings`, `show`). */
void explain_settings_json(JsonWriter *w, const PassSettings *ps);
/* `show device`: a device profile's figures. */
void explain_show_device(const ExplainOut *o, const DeviceProfile *d);
/* `show settings`: the pipeline, device and every fusion knob. */
void explain_show_settings(const ExplainOut *o, ExplainEngine *e);
/* `set` alone: every setting by the name `set` takes, with its value (the engine's, then the run
 * limit max_memory, which the front end reads from the runtime), and the names that can be set. */
/* After `run`: the kernel plan's launches, bytes and estimated time for the stage that ran, on the
 * device profile, to compare with what was measured (text only; nothing when the plan failed). */
void explain_show_plan_line(const ExplainOut *o, ExplainEngine *e, int stage);
void explain_show_all_settings(const ExplainOut *o, ExplainEngine *e, unsigned long long max_memory,
                               const char *const *settable, int nsettable);
/* `set NAME VALUE`: "dup_limit: 1 -> 3", with a word that the next step recomputes the stages when
 * have_stages; in JSON {"setting", "old", "new"}. */
void explain_show_setting_change(const ExplainOut *o, const ExplainSettingChange *ch, bool have_stages);
/* `show hlo`: the current stage as HLO text (in JSON with its module, stage and pass). */
bool explain_show_hlo(const ExplainOut *o, const ExplainEngine *e, FxError *err);
/* What `load` loaded: module, file, computations, instructions. */
/* Opens the JSON answer of a load, {"loaded":{"module":NAME, ...: the caller writes the rest of
 * what it loaded and closes both objects (explain_show_loaded, explain_show_xla_loaded). */
void explain_json_loaded_begin(JsonWriter *w, FILE *f, const char *module);
/* ids (may be NULL): XLA's proto dump found beside the file, and whether its ids were taken. */
void explain_show_loaded(const ExplainOut *o, const IrModule *m, const char *path, const HloProtoIds *ids);
/* `save FILE`: the stage, pass and module written to path. */
void explain_show_saved(const ExplainOut *o, const ExplainEngine *e, const char *path);
/* `unfuse`: how many fusions were inlined and the kernels before and after. */
void explain_show_unfused(const ExplainOut *o, int n, int kernels_before, int kernels_after);
/* compare-decisions: the decisions that change with `what` (a setting and its value), and the
 * kernels and launches before and after. */
bool explain_show_comparison(const ExplainOut *o, const ExplainComparison *c, const char *what);

/* `kernels --source` (one: the one kernel asked for, as text) and `kernels --resources`: a
 * backend's report on the stage's kernels (format_kernels.c). */
void explain_show_kernel_source(const ExplainOut *o, const KernelReport *r, bool one);
void explain_show_kernel_resources(const ExplainOut *o, const KernelReport *r);

#endif
