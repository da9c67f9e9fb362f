/* variants.h — the variants of a case study: a table of recorded stages, each with the program it
 * came from, the pipeline, device and settings it was made with, and the kernel plan's figures
 * per loop step. `variant NAME` records the engine's current stage here; `variants` prints the
 * table (format: explain_show_variants); `variants --run` (the shell, with runtime/) measures the
 * recorded stages. The table outlives a change of input: a case study compares several programs. */
#ifndef FXPLAIN_VARIANTS_H
#define FXPLAIN_VARIANTS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "format.h"
#include "json.h"

#define EXPLAIN_VARIANTS_MAX 64
#define EXPLAIN_VARIANT_LABEL_MAX 40

typedef struct {
  char label[EXPLAIN_VARIANT_LABEL_MAX + 1];
  double paper;        /* the ratio it was recorded with (`--paper`), 0 when none */
  IrModule *stage;     /* clone of the recorded stage: what `variants --run` executes */
  IrModule *input;     /* clone of stage 0, the program as loaded: what --check interprets */
  int stage_no;
  char pass[48];       /* the pass that produced the stage ("input" for stage 0) */
  char pipeline[32];
  DeviceProfile device;
  PassSettings settings;
  int64_t steps;       /* iterations of the program's loop (1 without a loop) */
  /* The kernel plan of the stage on `device`, per execution of the module. */
  int kernels;
  int64_t launches, bytes;
  double est_us;
  bool trip_counts_known;
  int64_t kernel_launches, kernel_bytes; /* what a run launches and moves by the plan (plan_kernel_run) */
} ExplainVariant;

typedef struct ExplainVariants {
  ExplainVariant rows[EXPLAIN_VARIANTS_MAX];
  int n;
} ExplainVariants;

/* Frees the table and every row's modules; NULL is fine. */
void explain_variants_free(ExplainVariants *t);
/* Records the engine's current stage as the row `label` (replacing a row of that name; the table is
 * made on first use): clones of the stage and of stage 0, the pipeline, device and settings, and
 * the stage's plan per loop step. *slot receives the row's index. False with err filled when the
 * table is full, memory runs out or the plan cannot be built. */
bool explain_variants_record(ExplainVariants **table, ExplainEngine *e, const char *label, double paper, int *slot,
                             bool *replaced, FxError *err);
/* The knobs that differ from the defaults, in `set` spelling: "classic, dup_limit 3, unroll 10". */
void explain_variant_settings_summary(const ExplainVariant *v, char *buf, size_t n);
/* "settings": {...} and "paper": X|null, as members of the object being written. */
void explain_variant_settings_json(JsonWriter *w, const ExplainVariant *v);
void explain_variant_paper_json(JsonWriter *w, const ExplainVariant *v);
/* "1.87x", or "-" without a paper ratio. */
void explain_variant_paper_text(char *buf, size_t n, double paper);
/* What `variant NAME` prints: the row's launches, KiB and time per step. */
void explain_show_variant_recorded(const ExplainOut *o, const ExplainVariant *v, int slot, bool replaced);
/* The table with the plan's figures per step (`variants`). */
void explain_show_variants(const ExplainOut *o, const ExplainVariants *t);

/* ---------- `variants --run`: what was measured (the shell measures, with runtime/) ---------- */

#define EXPLAIN_RUN_RULES_MAX 16
/* How the rows were run: the backend, repeats, seed, --check, and the --uniform rules. */
typedef struct {
  const char *backend;
  int repeat;
  uint64_t seed;
  bool check;
  int nrules;
  const char *pattern[EXPLAIN_RUN_RULES_MAX];
  double lo[EXPLAIN_RUN_RULES_MAX], hi[EXPLAIN_RUN_RULES_MAX];
} ExplainRunSpec;
/* What one row's run measured. */
typedef struct {
  int64_t launches, bytes;
  double median_ns;
  double *times_ns; /* every repeat, in run order */
  bool checked, agrees;
  double worst;     /* the worst element's error (--check) */
  char differs[600];
} ExplainMeasured;
/* Text, as the rows come: the header, one row (base_ns: the first row's time), the closing line. */
void explain_show_run_header(const ExplainOut *o, const ExplainRunSpec *spec, int n);
void explain_show_run_row(const ExplainOut *o, const ExplainRunSpec *spec, const ExplainVariant *v,
                          const ExplainMeasured *m, double base_ns);
void explain_show_run_footer(const ExplainOut *o, const ExplainVariants *t);
/* JSON: the whole run as one object. */
void explain_show_run_json(const ExplainOut *o, const ExplainRunSpec *spec, const ExplainVariants *t,
                           const ExplainMeasured *ms);

#endif
