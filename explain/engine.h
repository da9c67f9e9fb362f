/* engine.h — the front door of fxplain's engine: one session's stages, the pipeline run and its
 * decision log, a kernel plan per stage, and the answers to `why`, all as data. No printing, no
 * terminal, no command words: the shell (repl/), the HTML report and the tests' own front end
 * (tests/engine/front_end.c) drive the same functions and format what they return (text and
 * JSON: explain.h's printers and json.h).
 *
 * Flow: a front end makes an engine (explain_engine_init), gives it an input module
 * (explain_engine_set_input: stage 0), picks a pipeline and device, and asks for stages
 * (explain_engine_ensure runs the pipeline's passes up to a stage, filing every decision in the
 * engine's log). Stage k (k >= 1) is the module after the pipeline's pass k-1; a pass that changed
 * nothing shares the previous snapshot. Moving `cur` between stages never re-runs a pass. A change
 * of pipeline or setting drops the stages after the input (explain_engine_truncate).
 *
 * The struct is public so a front end can read its fields (stages, cur, device, settings); it
 * changes them through these functions, except for device and settings, which it may set directly
 * and then truncate (kernel plans follow the device by themselves). */
#ifndef FXPLAIN_ENGINE_H
#define FXPLAIN_ENGINE_H

#include <stdbool.h>

#include "../compiler/hlo/hlo.h"
#include "../compiler/plan/plan.h"
#include "../compiler/ir/ir.h"
#include "../compiler/passes/passes.h"
#include "explain.h"

struct XlaDump; /* xla_dump.h */

typedef struct {
  IrModule *module; /* the snapshot after this stage's pass (stage 0: as loaded) */
  const char *pass; /* the pass that produced it ("input" for stage 0) */
  bool changed;
  /* True when the pass changed nothing and `module` is the previous stage's snapshot, shared to
   * save memory: it is freed only by the stage that does not share it. */
  bool shared;
  /* The stage's kernel plan, built on first request for `plan_device` (explain_engine_kernels),
   * its buffers assigned on the first explain_engine_plan. */
  KernelPlan *plan;
  DeviceProfile plan_device;
} ExplainStage;

typedef struct ExplainEngine {
  /* stages[0] is the input; cur is the one shown. Stages after cur are kept until the pipeline or
   * a setting changes, so going back then forward again is free. */
  ExplainStage *stages;
  int nstages, stages_cap;
  int cur;
  const Pipeline *pipeline;
  int next_pass; /* index into pipeline->passes of the pass that would produce stage nstages */
  ExplainLog *log;
  DeviceProfile device;
  PassSettings settings;
  /* The XLA dump the input came from: its snapshots are the stages of its `xla` pipeline. NULL for
   * any other input; dropped with the input. */
  struct XlaDump *xla;
  /* Non-zero asks a running pipeline to stop between passes (Ctrl-C); may be NULL. */
  volatile int *interrupted;
  /* The settings and device before the last explain_engine_set, and what it changed, for
   * compare-decisions with no argument. */
  PassSettings prev_settings;
  DeviceProfile prev_device;
  bool have_prev;
  char last_change[160];
  /* The .fx definitions typed or read so far (definitions.c; NULL: none), whether they changed
   * since stage 0 was built from them, and the set stage 0 was last built from. */
  struct FxState *fx;
  bool fx_dirty;
  const void *fx_built;
  /* The last HLO file loaded: XLA's proto dump beside it, whose instruction ids it was given
   * (hlo_proto_apply_sibling_ids; ids.path empty when there was none). */
  HloProtoIds ids;
} ExplainEngine;

/* ---------- life, input, stages ---------- */

/* An engine with the defaults: nothing loaded, device_default(), pass_settings_default(), the
 * classic pipeline, an empty log. False when memory runs out (e is then empty and needs no fini). */
bool explain_engine_init(ExplainEngine *e);
/* Frees every stage, plan, the log and the dump. */
void explain_engine_fini(ExplainEngine *e);
/* Back to the default device, settings and pipeline (the stages are left to the caller). */
void explain_engine_defaults(ExplainEngine *e);
/* Replaces the input with m (takes ownership; NULL: nothing loaded): stage 0 = m, later stages and
 * the dump dropped (the dump's `xla` pipeline gives way to the one chosen before it). */
void explain_engine_set_input(ExplainEngine *e, IrModule *m);
/* Loads a file as the input: an HLO module (first word HloModule, or named *.hlo) or a program of
 * .fx statements (no shell commands). False with a located err when it cannot be read or built. */
bool explain_engine_load_file(ExplainEngine *e, const char *path, FxError *err);
/* Whether m holds a value of a type fxplain computes no value of (ir_type_is_uncomputed: s1, u1,
 * s2, u2, f4e2m1fn) or a gather that no backend computes (ir_gather_uncomputed); then
 * `why` names the first such instruction and why, for the front end's refusal to run or emit it. */
bool explain_module_uncomputed(const IrModule *m, char *why, size_t n);
/* Makes the HLO text read from `path` the input; the .fx definitions typed before are dropped
 * (they belonged to the module it replaces). When XLA's proto dump of the same module lies beside
 * it (STEM.hlo.pb, --xla_dump_hlo_as_proto), the module takes XLA's instruction ids from it
 * (e->ids says so). False with a located err when it does not parse or the proto cannot be read. */
bool explain_engine_load_hlo(ExplainEngine *e, const char *path, const char *text, size_t len, FxError *err);
/* Whether a file is HLO: its text's first word (after blank lines and // comments) is HloModule,
 * or its name ends in .hlo. */
bool explain_is_hlo(const char *path, const char *text, size_t len);
/* The module name for .fx definitions read from `source` (a path, or "<repl>"-style names for
 * none): the file name without its extension, or "repl", made an HLO name
 * ([A-Za-z_][A-Za-z0-9_-]*) so that `save` then `load` reads it back: other bytes become '_' and
 * a leading digit gets a '_' before it ("model copy.fx" -> model_copy, "2layer.fx" -> _2layer,
 * "net(1).fx" -> net_1_). */
void explain_fx_module_name(const char *source, char *buf, size_t n);
/* Makes m0 (XLA's module before optimizations) the input and d the dump it came from (takes both):
 * d's snapshots become the stages of the `xla` pipeline, which is chosen; the pipeline chosen
 * before comes back when another input replaces the dump. */
void explain_engine_set_dump(ExplainEngine *e, IrModule *m0, struct XlaDump *d);
/* Inlines the fusions of the input (an optimized XLA dump) back into plain instructions and, when
 * there were any, makes that the input. *n: how many; the kernels of the input before and after.
 * False with err filled when memory runs out or a plan cannot be built (the input is unchanged). */
bool explain_engine_unfuse(ExplainEngine *e, int *n, int *kernels_before, int *kernels_after, FxError *err);
/* Drops stages >= keep (never the input) and their decisions. */
void explain_engine_truncate(ExplainEngine *e, int keep);
/* True when an input is loaded. */
bool explain_engine_loaded(const ExplainEngine *e);
/* What every command that needs a module says when none is loaded. */
#define EXPLAIN_NOTHING_LOADED "nothing is loaded: load a module (load FILE.hlo) or define one first"
/* The module at stage k (NULL when there is no such stage); explain_engine_module(e, e->cur) is
 * the current one. */
IrModule *explain_engine_module(const ExplainEngine *e, int k);
/* Writes stage k's module as HLO text to path (save.c): through a temporary file renamed over it,
 * following a symbolic link, refusing what is not a regular file. False with err filled (not
 * located: the message names the file). */
bool explain_engine_save(const ExplainEngine *e, int k, const char *path, FxError *err);
/* The pass that made stage k ("input" for stage 0). */
const char *explain_engine_stage_pass(const ExplainEngine *e, int k);

/* ---------- pipeline ---------- */

/* The chosen pipeline (classic when none was chosen). */
const Pipeline *explain_engine_pipeline(ExplainEngine *e);
/* A pipeline by name: the built-in ones, and `xla` when the input came from an XLA dump. */
const Pipeline *explain_engine_find_pipeline(const ExplainEngine *e, const char *name);
/* Chooses pl; when it differs, the stages after the input go and stage 0 becomes current. */
void explain_engine_set_pipeline(ExplainEngine *e, const Pipeline *pl);
/* The last stage the pipeline makes (its number of passes). */
int explain_engine_last_stage(ExplainEngine *e);
/* The first stage after `from` made by the pass `name`; -1 when none. */
int explain_engine_stage_of_pass(ExplainEngine *e, const char *name, int from);
/* Runs the pass that makes stage nstages, filing its decisions. False with err filled: the
 * pipeline is finished, interrupted, the pass failed, or memory ran out (the stages are as they
 * were). */
bool explain_engine_run_next(ExplainEngine *e, FxError *err);
/* Runs the passes up to stage `target` (the ones not run yet). */
bool explain_engine_ensure(ExplainEngine *e, int target, FxError *err);
/* What stage k's pass did, in a few words: "14 fused, 3 rejected", "switched off", for stage 0
 * "N instructions". */
void explain_engine_stage_summary(const ExplainEngine *e, int k, char *buf, size_t n);
/* What a stage word names: a stage number, or a pass name meaning its first stage. False with
 * `why` filled ("no stage 99: the classic pipeline has stages 0 to 17", ...). */
bool explain_engine_stage_word(ExplainEngine *e, const char *w, int *out, char *why, size_t n);
/* Where `step [N | PASS | all]` (w NULL: one stage) goes from the current stage; *clamped when a
 * count ran past the last stage (which is then the target). False with `why` filled. */
bool explain_engine_step_target(ExplainEngine *e, const char *w, int *target, bool *clamped, char *why, size_t n);
/* Where `back [N]` (w NULL: one stage) goes from the current stage; *clamped when N ran past
 * stage 0 (which is then the target). False with `why` filled (not a count of 1 or more). */
bool explain_engine_back_target(ExplainEngine *e, const char *w, int *target, bool *clamped, char *why, size_t n);
/* A stage already computed, by number or by the name of the pass that made it (render --stage).
 * False with `why` filled. */
bool explain_engine_computed_stage(ExplainEngine *e, const char *w, int *out, char *why, size_t n);
/* The latest stage <= upto whose module has an instruction `name`; -1 when none. */
int explain_engine_stage_with(const ExplainEngine *e, const char *name, int upto);

/* ---------- .fx definitions (definitions.c) ---------- */

/* Feeds one .fx statement or block, found at `line` (column col0) of `source`, to the definitions;
 * src_line is the whole source line, for the error's caret when col0 > 1. */
bool explain_engine_fx_feed(ExplainEngine *e, const char *text, const char *source, int line, int col0,
                            const char *src_line, FxError *err);
/* Builds stage 0 from the definitions when they changed since the last build (the module is named
 * after `source`). *dropped: how many computed stages went because edited definitions replaced
 * stage 0 (0 for a first build), *was: the stage current before. False with err filled: the
 * session keeps its old module. */
bool explain_engine_fx_sync(ExplainEngine *e, const char *source, int *dropped, int *was, FxError *err);
/* Forgets the definitions (another input replaced the module they built, or a reset). */
void explain_engine_fx_clear(ExplainEngine *e);
/* A script's own definitions: push saves the current ones and starts empty; pop either brings
 * them back (restore: the script failed before its definitions became the module) or frees them. */
typedef struct {
  struct FxState *fx;
  bool dirty;
  const void *built;
} ExplainFxSaved;
void explain_engine_fx_push(ExplainEngine *e, ExplainFxSaved *saved);
void explain_engine_fx_pop(ExplainEngine *e, ExplainFxSaved *saved, bool restore);

/* ---------- settings (settings.c) ---------- */

/* One setting's change, in words: what ("dup_limit", "expensive exponential", "pass cse",
 * "library dot", "device") and its old and new value ("1" -> "3", "on" -> "off"). */
typedef struct {
  char what[96], old[64], now[64];
} ExplainSettingChange;

/* How many values setting `name` takes after its name (device 1, dup_limit 1, expensive 2, ...);
 * -1 when the engine has no such setting. */
int explain_setting_words(const char *name);
/* Applies `NAME VALUE...` (w[0] is the name, followed by explain_setting_words(NAME) values) to
 * ps and dev. False with err filled (no location) and *bad the index in w of the word at fault;
 * ps and dev are then unchanged. */
bool explain_setting_apply(PassSettings *ps, DeviceProfile *dev, char **w, ExplainSettingChange *ch, int *bad,
                           FxError *err);
/* The same on the engine's settings; on success the previous ones are remembered (prev_settings,
 * prev_device, last_change) and the stages after the input dropped. */
bool explain_engine_set(ExplainEngine *e, char **w, ExplainSettingChange *ch, int *bad, FxError *err);

/* ---------- kernel plans and decisions ---------- */

/* Stage k's kernel plan on the engine's device, built once and kept with the stage (the engine
 * owns it: do not free). NULL with err filled when it cannot be built. */
const KernelPlan *explain_engine_plan(ExplainEngine *e, int k, FxError *err);
/* The same plan, its buffers perhaps not assigned yet (buffers_assigned): for what reads only its
 * kernels and totals (`step`'s kernel count, `passes`), which then need no buffer assignment. */
const KernelPlan *explain_engine_kernels(ExplainEngine *e, int k, FxError *err);
/* The number every front end shows for a record (`decisions`, `why`, `render --decision N`). */
int explain_engine_number(const ExplainEngine *e, const ExplainRecord *r);
/* Bytes held by the distinct snapshots of the stages; *distinct receives their count. */
size_t explain_engine_snapshot_bytes(const ExplainEngine *e, int *distinct, size_t *with_indexes);

/* ---------- why ---------- */

/* `why NAME` at the current stage. */
typedef struct {
  const char *name;
  const IrInstr *instr;           /* the instruction at the current stage; NULL when not there */
  const PlanKernel *kernel;       /* the kernel it runs in (NULL: none) */
  int last_seen;                  /* not there: the latest stage <= cur that has it, else -1 */
  int first_later;                /* not there and never before: the first later stage run that has it */
  const IrInstr *became;          /* not there: what the passes that removed it made of it, or NULL */
  const PlanKernel *became_kernel;/* the kernel `became` runs in */
  const ExplainRecord **decisions;/* every decision naming it, stage then emission order */
  int n;
} ExplainWhyOne;

/* `why A B` at the current stage. */
typedef struct {
  const ExplainRecord **decisions; /* every decision between the two, stage then emission order */
  int n;
  const ExplainRecord *final;      /* the pair's outcome: its last decision (the others were superseded) */
  bool have_split;                 /* split was worked out (both are at some stage of the view) */
  bool apart;                      /* split says they are in kernels apart (a path or siblings) */
  ExplainSplit *split;
  ExplainStageView *view;          /* the current stage through its plan and the log */
  char relation[768];              /* how the pair stands, one sentence (the split's, or, when no
                                      decision names them, why none does) */
} ExplainWhyPair;

/* Fills out; false with err filled when memory runs out or a plan cannot be built. A name at no
 * stage: false with *unknown = 1 and err untouched (the front end says where). Free with
 * explain_why_one_free. */
bool explain_engine_why_one(ExplainEngine *e, const char *name, ExplainWhyOne *out, int *unknown, FxError *err);
void explain_why_one_free(ExplainWhyOne *w);
/* The same for a pair: *unknown = 1 or 2 names the one at no stage. */
bool explain_engine_why_pair(ExplainEngine *e, const char *a, const char *b, ExplainWhyPair *out, int *unknown,
                             FxError *err);
void explain_why_pair_free(ExplainWhyPair *w);
/* The spelling JSON uses for a split kind: "same", "same_kernel", "no_kernel", "other_computation",
 * "path", "siblings". */
const char *explain_split_kind_name(ExplainSplitKind k);

#endif
