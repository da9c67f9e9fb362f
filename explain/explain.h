/* explain.h — the decision log: every decision every pass made, kept per stage, and the queries
 * and formatting behind `why`, `decisions`, `diff` and their JSON.
 *
 * Flow: the engine (engine.h) owns one ExplainLog per session. Before running the pass that
 * produces stage N it calls explain_log_begin_stage(log, N, pass), which drops whatever stages N
 * and later recorded before (a re-run replaces them), and hands the pass explain_log_sink(log). The sink
 * copies each PassDecision (strings included) into the stage's own arena, so records outlive the
 * pass and survive `back`: moving between stages never touches the log. */
#ifndef FXPLAIN_EXPLAIN_H
#define FXPLAIN_EXPLAIN_H

#include <stdbool.h>
#include <stdio.h>

#include "../compiler/ir/ir.h"
#include "../compiler/passes/passes.h"
#include "../compiler/plan/plan.h"
#include "json.h"

/* One decision as stored: a PassDecision whose strings the log owns. */
typedef struct {
  int stage;
  int seq;                /* order within the stage */
  const char *pass;
  const char *action;
  const char *producer;   /* NULL when none */
  const char *consumer;   /* NULL when none; a group is "a,b,c" */
  bool accepted;
  const char *reason;     /* a code from the vocabulary, or NULL for plain rewrites */
  const char *detail;
  const char *suggestion; /* NULL when none */
  const char *result;     /* what the decision produced (e.g. "fusion.3"), or NULL */
  int nmetrics;
  PassMetric metrics[PASS_MAX_METRICS];
} ExplainRecord;

typedef struct ExplainLog ExplainLog;

/* A new, empty log; NULL when out of memory. The caller owns it: explain_log_free. */
ExplainLog *explain_log_new(void);
void explain_log_free(ExplainLog *log);
/* Starts recording stage `stage` (>= 1) produced by `pass`: drops records of stages >= stage.
 * Decisions emitted with stage <= 0 or pass NULL are filed under this stage and pass. */
bool explain_log_begin_stage(ExplainLog *log, int stage, const char *pass);
/* Drops the records of stages >= keep (a pipeline or setting change). */
void explain_log_truncate(ExplainLog *log, int keep);
/* The sink passes report to; valid as long as the log. */
DecisionSink explain_log_sink(ExplainLog *log);
/* True when copying a decision ran out of memory since the last begin_stage. */
bool explain_log_failed(const ExplainLog *log);

/* Highest stage with a slot (recorded or begun) + 1. */
int explain_log_nstages(const ExplainLog *log);
int explain_stage_count(const ExplainLog *log, int stage);
const ExplainRecord *explain_stage_record(const ExplainLog *log, int stage, int i);
int explain_log_total(const ExplainLog *log);
/* The memory the log holds: every stage's records and their strings (for `show stats`). */
size_t explain_log_bytes(const ExplainLog *log);

/* ---------- queries ---------- */

typedef struct {
  int verdict;        /* -1 any, 0 rejected, 1 accepted */
  const char *reason; /* NULL: any */
  const char *pass;   /* NULL: any */
  const char *action; /* NULL: any */
  int stage;          /* -1: any */
  int max_stage;      /* -1: no limit (e.g. the current stage) */
  const char *name;   /* NULL, or only records naming it (producer, consumer, group member, result) */
  const char *name2;  /* with name: only records between the two (producer and consumer, either way,
                         or both in one group) */
} ExplainFilter;

void explain_filter_init(ExplainFilter *f);
/* Matching records in stage then emission order. *out is fx_malloc'd (caller fx_frees it, also
 * when 0 are returned); returns the count, or -1 when out of memory. */
int explain_query(const ExplainLog *log, const ExplainFilter *f, const ExplainRecord ***out);
/* Does the record name the instruction (as producer, consumer, member of a group, or result)? */
bool explain_record_names(const ExplainRecord *r, const char *name);

/* What a stage's pass did in a few words, from its records: "14 fused, 3 rejected" or
 * "5 removed"; "no change" when it recorded nothing. */
void explain_stage_summary(const ExplainLog *log, int stage, char *buf, size_t n);
/* The same for the records of one pass only (a stage of the `xla` pipeline holds XLA's and
 * fxplain's). */
void explain_stage_summary_pass(const ExplainLog *log, int stage, const char *pass, char *buf, size_t n);

/* Why a pair of instructions has no decision between them, from the module: "never producer and
 * consumer: ...", "in different computations (a in body, b in main)", "already in the same kernel
 * fusion.3", ... Writes one sentence into buf. */
void explain_pair_relation(const IrModule *m, const KernelPlan *plan, const char *a, const char *b, char *buf,
                           size_t n);

/* The number a record has everywhere (`decisions`, `why`, `render --decision N`, the HTML report):
 * its place among every recorded decision, stage then emission order, from 1. */
int explain_record_number(const ExplainLog *log, const ExplainRecord *r);
/* The record numbered n (1-based, as explain_record_number); NULL when there is none. */
const ExplainRecord *explain_record_by_number(const ExplainLog *log, int n);

/* ---------- where two instructions are split (explain_why.c) ---------- */

/* What a kernel is, in words a user knows: "cuBLAS matmul", "cuDNN convolution", "cuRAND RNG",
 * "custom call TARGET", "loop fusion", "input fusion", "unfused reduce", ... Written into buf. */
const char *explain_kernel_label(const PlanKernel *k, char *buf, size_t n);
/* How XLA:GPU runs while loop k (its control entry) in words, into buf: "loop while.3: known trip
 * count 10000, run as a for loop (XLA:GPU runs the body 10000 times and never evaluates the
 * condition)", or, when the trip count is unknown, that the condition runs and its result is read
 * back to the host every iteration. Returns buf. */
const char *explain_loop_control(const PlanKernel *k, char *buf, size_t n);

/* A stage seen through its kernel plan and the decision log up to that stage: which kernel every
 * instruction runs in, which kernels feed which, and, for every record, the kernels the names it
 * mentions are in now (a name that a later rewrite or fusion replaced is followed to what it
 * became). Built once per question; borrows m, plan and log, which must outlive it. */
typedef struct ExplainStageView ExplainStageView;

/* NULL when out of memory. max_stage: the last stage whose records count (the current stage). */
ExplainStageView *explain_view_new(const ExplainLog *log, int max_stage, const IrModule *m, const KernelPlan *plan);
void explain_view_free(ExplainStageView *v);
/* The instruction `name` is at the stage: itself, or what the rewrites and fusions that removed it
 * made of it (followed through the log: "reshape.9 => m", "fusion.1 -> s => fusion.2"); NULL when
 * neither it nor anything it became is at the stage. */
const IrInstr *explain_view_follow(const ExplainStageView *v, const char *name);

/* One kernel boundary: `from` writes a value to memory that `to` reads back. */
typedef struct {
  const PlanKernel *from, *to;
  int64_t bytes;                  /* of the values crossing (each read value once) */
  const ExplainRecord *decision;  /* the decision that kept the value in memory: the last rejected
                                     fusion of (the instruction writing) from's value into to, else
                                     of a member of from into a member of to, else the last rejected
                                     decision naming both (sibling, multi-output), else the last
                                     decision naming both; of a group of identical ones (see same),
                                     the first made; NULL when no pass judged them */
  int same;                       /* other decisions between them identical to it (same pass, action,
                                     verdict, reason: clones, re-runs) */
  const ExplainRecord *latest;    /* the last of those identical decisions (decision itself when
                                     same == 0) */
  int ndecisions;                 /* every decision between the two kernels */
  char none[320];                 /* decision NULL: why no pass judged them, one sentence */
} ExplainBoundary;

/* The name the user knew i by, when a rewrite replaced that instruction by i ("mx" for the
 * reduce.14 that a reshape named mx became); NULL when none. */
const char *explain_view_origin(const ExplainStageView *v, const IrInstr *i);
/* The names a user knows among a kernel's instructions (.fx variables, and the names replaced
 * instructions had), "scores, p, w", at most four and "..."; "" when none. */
const char *explain_view_kernel_names(const ExplainStageView *v, const PlanKernel *k, char *buf, size_t n);
/* The kernel i runs in at the stage (a fusion's body: the fusion's kernel); NULL when none. */
const PlanKernel *explain_view_kernel(const ExplainStageView *v, const IrInstr *i);
/* Does the record name (members of) both kernels, now? */
bool explain_view_between(const ExplainStageView *v, const ExplainRecord *r, const PlanKernel *a, const PlanKernel *b);
/* The decision that kept from's value in memory for to (see ExplainBoundary). */
void explain_boundary(const ExplainStageView *v, const PlanKernel *from, const PlanKernel *to, ExplainBoundary *out);

typedef enum {
  EXPLAIN_SPLIT_SAME,        /* one instruction */
  EXPLAIN_SPLIT_NONE,        /* already in one kernel */
  EXPLAIN_SPLIT_NO_KERNEL,   /* one of them launches no kernel (parameter, constant, tuple, ...) */
  EXPLAIN_SPLIT_ELSEWHERE,   /* their kernels run in different computations */
  EXPLAIN_SPLIT_PATH,        /* one's kernel feeds the other's, across boundaries */
  EXPLAIN_SPLIT_SIBLINGS,    /* neither feeds the other (independent; maybe reading a common input) */
} ExplainSplitKind;

#define EXPLAIN_MAX_BOUNDARIES 16

/* Where two instructions (or kernels) are split at a stage. */
typedef struct {
  ExplainSplitKind kind;
  const IrInstr *a, *b;             /* the instructions asked about as they are at the stage (followed) */
  const PlanKernel *ka, *kb;        /* their kernels (NULL when none) */
  bool b_first;                     /* PATH: b's kernel feeds a's (the question's other direction) */
  ExplainBoundary boundaries[EXPLAIN_MAX_BOUNDARIES]; /* PATH: every boundary on the paths between
                                     the two kernels, in plan order; SIBLINGS: ka and kb themselves
                                     when a decision judged the pair */
  int nboundaries, total_boundaries;
  const ExplainRecord *joined;      /* NONE: the last accepted decision that made their kernel (its
                                     result is the kernel), or NULL */
  char common[160];                 /* SIBLINGS: the inputs both read, "x, fusion.1" ("" when none) */
  char sentence[512];               /* how the pair stands, one sentence */
} ExplainSplit;

/* Fills out for names a and b (followed to what they became); false with err filled when a name
 * is at no stage of the view (the caller says which). */
bool explain_split(const ExplainStageView *v, const char *a, const char *b, ExplainSplit *out, FxError *err);
/* Why an instruction launches no kernel of its own, in words ("a parameter: ..."). */
const char *explain_no_kernel_reason(const IrInstr *i);

/* Same pass, action, verdict and reason. */
bool explain_records_identical(const ExplainRecord *a, const ExplainRecord *b);
/* Groups repeated decisions: records with the same pass, action, verdict and reason whose
 * names differ only by clone suffixes (".clone", ".clone.89") are one group. group[k] receives the
 * index of the first record of k's group (group[k] == k for the first). Returns the number of
 * groups. */
int explain_group_records(const ExplainRecord *const *recs, int n, int *group);

/* ---------- reason vocabulary (compiler/fusion/reasons.def) ---------- */

int explain_reason_count(void);
const char *explain_reason_code(int i);
/* The one-line meaning of a code; NULL when the code is not in the vocabulary. */
const char *explain_reason_meaning(const char *code);

/* ---------- formatting ---------- */

/* Text: a head line "stage 4  instruction-fusion  fuse  a -> b  rejected [code]", then the detail,
 * metrics and suggestion indented below. */
void explain_print_record(FILE *f, const ExplainRecord *r);
/* The same, with the detail and suggestion wrapped between words to `width` columns (a
 * terminal's; 0: no wrapping). */
void explain_print_record_width(FILE *f, const ExplainRecord *r, int width);
/* text wrapped between words at width columns (continuation lines indented by indent), no final
 * newline; width 0: as it is. */
void explain_print_wrapped(FILE *f, const char *text, int width, int indent);
/* JSON through the one writer (json.h): {"number":N,"stage":N,"pass":...,"action":...,"producer":...,
 * "consumer":...,"verdict":"accepted|rejected","reason":...,"detail":...,"metrics":{...},
 * "suggestion":...}. "number" (the record's decision number) only when number > 0. Absent strings
 * are null. */
void explain_record_json(JsonWriter *w, const ExplainRecord *r, int number);
/* The same on its own, without a number, on one line with no newline. */
void explain_print_record_json(FILE *f, const ExplainRecord *r);

/* ---------- stage diffs ---------- */

typedef enum {
  DIFF_ADDED,     /* a new instruction (a new fusion among them) */
  DIFF_REMOVED,   /* gone, and not into a fusion */
  DIFF_REWRITTEN, /* same name, different opcode, operands, shape or attributes */
  DIFF_FUSED,     /* now inside a fusion */
} ExplainDiffKind;

const char *explain_diff_kind_name(ExplainDiffKind k); /* "added", "removed", "rewritten", "fused" */

typedef struct {
  ExplainDiffKind kind;
  const char *name;
  const char *op;     /* opcode spelling */
  const char *comp;   /* computation it is (added, rewritten, fused) or was (removed) in */
  const char *into;   /* DIFF_FUSED: the fusion; DIFF_REMOVED: what replaced it, when known; else NULL */
  const char *detail; /* what changed (DIFF_REWRITTEN), what a new fusion holds (DIFF_ADDED), or NULL */
} ExplainDiffEntry;

typedef struct {
  Arena arena;
  ExplainDiffEntry *entries;
  int n, cap;
  int count[4]; /* by kind */
  int instrs_a, instrs_b;
} ExplainDiff;

/* Compares two stages' modules by instruction name. When log is given, decisions of stages
 * (stage_a, stage_b] say where removed instructions went ("fused into fusion.3", "replaced by
 * multiply.4"). Returns NULL and fills err when out of memory. */
ExplainDiff *explain_diff(const IrModule *a, const IrModule *b, const ExplainLog *log, int stage_a, int stage_b,
                          FxError *err);
void explain_diff_free(ExplainDiff *d);

#endif
