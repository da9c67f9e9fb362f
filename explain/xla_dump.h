/* xla_dump.h — XLA's own dumps read in: a dump folder's modules, their per-pass snapshots as the
 * stages of a pipeline named `xla`, XLA's priority-fusion decision log (FusionProcessDump) as
 * decision records, and the source positions XLA keeps on every instruction; then the engine's
 * questions about them for every front end (engine_xla.c: load a dump as the input, find
 * instructions and kernels by source line or JAX scope, each kernel's source lines, compile with
 * real XLA through the Python driver) and their printers (format_xla.c).
 *
 * Flow: `load DIR` (explain_engine_load_xla) calls xla_dump_scan (which modules the folder holds), then xla_dump_select (one
 * module: its snapshots in XLA's order become the passes of xla_dump_pipeline). The engine asks
 * xla_dump_stage for stage k when it steps there (stage 0: the module before optimizations), and
 * for the priority-fusion stage xla_fusion_log_emit files XLA's decisions (and fxplain's own verdict
 * on each pair, when the engine ran fxplain's priority-fusion on the same input) in the explain log.
 *
 * The facts about the dumps (file names, the FusionProcessDump fields) are in the oracle README:
 *   module_NNNN.NAME.before_optimizations.txt, module_NNNN.NAME.NNNN.PIPELINE.after_PASS.before_NEXT.txt,
 *   module_NNNN.NAME.priority_fusion_dump.txt (fusion_steps { fusion | producer_ineligible |
 *   update_priority }, hlo_module_before_fusion, gpu_device_info). */
#ifndef FXPLAIN_XLA_DUMP_H
#define FXPLAIN_XLA_DUMP_H

#include <stdbool.h>

#include "../compiler/ir/ir.h"
#include "../compiler/passes/passes.h"
#include "../compiler/plan/plan.h"
#include "explain.h"

/* ---------- XLA's priority-fusion decision log ---------- */

typedef enum { XLA_STEP_FUSION, XLA_STEP_INELIGIBLE, XLA_STEP_PRIORITY } XlaStepKind;

typedef struct {
  XlaStepKind kind;
  int line;              /* where it starts in the file */
  const char *producer;
  const char *consumer;  /* fusion: the consumer; priority: the consumers joined by ',' */
  const char *fusion;    /* fusion: the fusion it made */
  const char *reason;    /* ineligible: XLA's text */
  double us_fused, us_unfused; /* priority: the cost model's times */
  bool has_times;
} XlaStep;

typedef struct {
  Arena arena;
  const char *path;
  XlaStep *steps;
  int nsteps, cap;
  int nfusions, nineligible, npriority;
  const char *module_text; /* hlo_module_before_fusion, unescaped; NULL when absent */
  const char *device;      /* gpu_device_info's name, when given */
} XlaFusionLog;

/* Reads a *.priority_fusion_dump.txt. NULL with err filled when it cannot be read or is
 * malformed (a truncated file, a step without its producer). Free with xla_fusion_log_free. */
XlaFusionLog *xla_fusion_log_load(const char *path, FxError *err);
void xla_fusion_log_free(XlaFusionLog *l);
/* Every name the log uses must be an instruction of m (the module priority-fusion received) or a
 * fusion an earlier step made: otherwise one error naming the first stranger. */
bool xla_fusion_log_check(const XlaFusionLog *l, const IrModule *m, FxError *err);
/* The instruction of m (the module priority-fusion received) that `name` stands for before step
 * `upto` of the log: name itself when m has it, else, for a fusion an earlier step made, the
 * instruction at its root (the consumer it was made from, followed back); NULL when neither.
 * Pictures draw a step's pair through it. The result points into the log or is name. */
const char *xla_fusion_log_root(const XlaFusionLog *l, const IrModule *m, int upto, const char *name);
/* fxplain's reason code for XLA's reason text (the vocabulary of compiler/fusion/reasons.def). */
const char *xla_reason_code(const char *xla_text);
/* Files XLA's decisions into sink (pass name `pass`): each fusion (accepted, with XLA's last
 * times for the producer), each ineligible producer (rejected, XLA's reason mapped onto a code,
 * XLA's text kept), each priority update (action "priority"), and each producer XLA left unfused
 * because its last update said fusing is slower (rejected, slower_if_fused). When own is given
 * (fxplain's priority-fusion run on the same input, its records in stage own_stage), each record
 * also carries fxplain's verdict on the same pair and says when the two disagree; *disagree gets
 * their count. With m (the module priority-fusion received), each detail ends with the source
 * lines of the producer and consumer ("[mlp.py:10 -> mlp.py:11]"). */
void xla_fusion_log_emit(const XlaFusionLog *l, DecisionSink *sink, const char *pass, const ExplainLog *own,
                         int own_stage, const IrModule *m, int *disagree);
/* fxplain's verdict beside one of XLA's steps. */
typedef struct {
  int step;                 /* index into the log's steps */
  bool left_unfused;        /* not a step: its producer, which XLA never fused, its last priority
                               update having said fusing is slower (step is that update) */
  const ExplainRecord *own; /* fxplain's decision on the same pair (or producer), or NULL */
  bool compared;            /* fxplain's own run was at hand */
  bool differ;              /* fxplain's verdict differs from XLA's: XLA fused a pair fxplain did not,
                               or refused one (a producer alone) that fxplain fused */
} XlaVerdict;

/* The pass name fxplain's own priority-fusion records carry in an `xla` pipeline's stage. */
#define XLA_OWN_PASS "fxplain-priority-fusion"

/* fxplain's verdict beside each of XLA's steps: one XlaVerdict per step, in order, then one per
 * producer XLA left unfused. own: fxplain's records in stage own_stage (only those of pass
 * own_pass when given: the session's log holds XLA's too); NULL: nothing to compare. Pairs are
 * matched by the original instructions each name holds (the two name their fusions differently),
 * with m the module priority-fusion received (fxplain names a fusion consumer by the instruction
 * of its body that reads the producer). *out is fx_malloc'd (the caller fx_frees it); returns the
 * count, -1 when out of memory. */
int xla_fusion_log_compare(const XlaFusionLog *l, const ExplainLog *own, int own_stage, const char *own_pass,
                           const IrModule *m, XlaVerdict **out);
/* Replays XLA's fusion steps on a copy of m (the module before fusion) with fxplain's fusion
 * builder: what priority-fusion produced, when only the log is at hand. NULL with err filled. */
IrModule *xla_fusion_log_replay(const XlaFusionLog *l, const IrModule *m, FxError *err);

/* ---------- a dump folder ---------- */

typedef struct {
  const char *file;     /* path */
  const char *pipeline; /* XLA's pipeline ("fusion") */
  const char *pass;     /* the pass it is after ("priority-fusion") */
  const char *next;     /* the pass that comes next */
  int seq;
} XlaSnapshot;

typedef struct {
  const char *id;       /* "0001" */
  const char *name;     /* "jit_step" */
  const char *before;   /* before_optimizations.txt, or NULL */
  const char *after;    /* *after_optimizations.txt (the final module), or NULL */
  const char *fusion_log; /* priority_fusion_dump.txt, or NULL */
  XlaSnapshot *snaps;   /* by seq */
  int nsnaps, snaps_cap;
  int ninstrs;          /* instructions of the first module text found, -1 unknown */
} XlaDumpModule;

typedef struct XlaDump {
  Arena arena;
  const char *dir;
  XlaDumpModule *mods;
  int nmods, mods_cap;
  int chosen; /* index into mods, -1 before xla_dump_select */
  /* The `xla` pipeline of the chosen module: one pass per snapshot. */
  Pass *passes;
  const Pass **pass_list;
  Pipeline pipeline;
  XlaFusionLog *log; /* the chosen module's decision log, when it has one and it loaded */
  bool log_only;     /* made by xla_dump_from_log: stage 1 is XLA's steps replayed */
  const Pipeline *prev_pipeline; /* the engine's pipeline before the dump was loaded */
} XlaDump;

/* Whether dir looks like an XLA dump folder (holds module_*.txt files). */
bool xla_dump_is_dump_dir(const char *dir);
/* Lists the modules of an XLA dump folder. NULL with err filled when it holds none. */
XlaDump *xla_dump_scan(const char *dir, FxError *err);
void xla_dump_free(XlaDump *d);
/* Chooses a module by name or id ("0001" or 1); which NULL: the only module, or the one with the
 * most snapshots. Builds the `xla` pipeline and reads the decision log (a log that fails to load
 * is an error). */
bool xla_dump_select(XlaDump *d, const char *which, FxError *err);
/* A dump of one module made from a priority_fusion_dump.txt alone: stage 0 is the module it holds
 * (hlo_module_before_fusion), stage 1 (priority-fusion) XLA's fusion steps replayed on it. */
XlaDump *xla_dump_from_log(const char *path, FxError *err);
/* The chosen module's pipeline named "xla"; its passes have no run function. */
const Pipeline *xla_dump_pipeline(const XlaDump *d);
/* Loads stage k of the chosen module (0: before optimizations, else snapshot k-1); prev is stage
 * k-1's module (a log-only dump replays XLA's steps on it). */
IrModule *xla_dump_stage(const XlaDump *d, int k, const IrModule *prev, FxError *err);
/* Stage k of the `xla` pipeline, made from stage k-1's module prev: XLA's snapshot (as
 * xla_dump_stage), with its decisions filed in sink. At priority-fusion, when the dump has XLA's
 * log: the log is checked against prev, fxplain's own priority-fusion runs on prev (device,
 * settings) and its records (pass "fxplain-priority-fusion") are filed first, then XLA's with
 * fxplain's verdict beside each (xla_fusion_log_emit). Any other stage gets one "snapshot" record
 * (instructions before and after). NULL with err filled. */
IrModule *xla_dump_next_stage(const XlaDump *d, int k, const IrModule *prev, const DeviceProfile *device,
                              const PassSettings *settings, DecisionSink *sink, FxError *err);
/* The stage whose pass is priority-fusion, or -1. */
int xla_dump_fusion_stage(const XlaDump *d);

/* ---------- XLA's kernels beside fxplain's (xla_compare.c) ---------- */

typedef struct {
  const char *xla;   /* XLA's kernel (an instruction of its module's entry) */
  const char *mine;  /* fxplain's kernel sharing the most original instructions, or NULL */
  int xla_n, mine_n; /* instructions each holds (compared by opcode and shape) */
  int common;
  bool same;         /* both hold exactly the same instructions */
} XlaKernelPair;

/* For each kernel of xla's entry (what launches: not parameters, constants, tuples, bitcasts),
 * fxplain's kernel in mine that holds the most of the same instructions (by opcode and shape:
 * XLA renames what it fuses). *out is
 * fx_malloc'd (the caller fx_frees it; names point into the modules); *nmine gets mine's kernel
 * count. Returns XLA's kernel count, or -1 when out of memory. */
int xla_kernels_match(const IrModule *xla, const IrModule *mine, XlaKernelPair **out, int *nmine);
/* XLA's kernels after its last dumped pass beside fxplain's priority pipeline from priority-fusion
 * on (priority-fusion, fusion-cse, fusion-dce, multi_output_fusion, fusion-cse, fusion-dce, as
 * XLA's fusion pipeline) run (on device and settings) on the very module XLA's priority-fusion
 * received, matched as xla_kernels_match does. nxla is -1 when the dump has no such stages or
 * memory runs out. The pairs' names point into the two modules it holds: free it with
 * xla_side_by_side_free. */
typedef struct {
  IrModule *xla, *mine;
  XlaKernelPair *pairs;
  int nxla, nmine;
} XlaSideBySide;
void xla_dump_side_by_side(XlaDump *d, const DeviceProfile *device, const PassSettings *settings, XlaSideBySide *out);
void xla_side_by_side_free(XlaSideBySide *sbs);
/* The decisions of stage `stage` where fxplain's verdict differs from XLA's recorded one (the
 * priority-fusion records that say DISAGREE): their count; the first max go into out. */
int xla_disagreements(const ExplainLog *log, int stage, const ExplainRecord **out, int max);
/* `compare-modules A B`: two compilations (dump folders: their final module and XLA's fusion log;
 * or HLO files), their kernels, bytes and estimated time on device, the fusions only one has, and
 * where the two fusion logs first part; printed to o. False with err filled (and *bad = 1 or 2,
 * the path at fault) when one cannot be read. */
struct ExplainOut;
bool xla_compare_modules(const struct ExplainOut *o, const DeviceProfile *device, const char *path_a,
                         const char *path_b, int *bad, FxError *err);

/* ---------- source positions ---------- */

typedef struct {
  const char *op_name; /* the JAX scope path, "jit(step)/attention/dot_general" */
  const char *file;
  const char *function;
  int line, end_line, col, end_col;
} XlaSource;

/* Where instruction i came from: metadata source_file/source_line, or stack_frame_id resolved
 * through the module's FileNames/FunctionNames/FileLocations/StackFrames tables (the innermost
 * frame). Strings are written into the caller's buffers; false when i carries no metadata. */
bool xla_source_of(const IrModule *m, const IrInstr *i, XlaSource *src, char *buf, size_t n);
/* The name the user's JAX program gave instruction i: its metadata op_name without the jit(...)
 * (or pjit(...)) wrappers it opens with ("jit(step)/attention/dot_general" ->
 * "attention/dot_general"); "" when i has no op_name. */
void xla_user_name(const IrInstr *i, char *buf, size_t n);
/* "file.py:12" (basename and line), or "" when unknown. */
void xla_source_short(const IrModule *m, const IrInstr *i, char *buf, size_t n);
/* Whether instruction i comes from `where`: FILE:LINE (FILE matched as a suffix of the path),
 * a bare LINE, or a JAX scope (a prefix, or a '/'-separated part, of op_name). */
bool xla_source_matches(const IrModule *m, const IrInstr *i, const char *where);

/* ---------- the engine's XLA questions (engine_xla.c) ---------- */

struct ExplainEngine;

/* What a path given to `load` is: XLA's dump folder, XLA's fusion log alone
 * (*.priority_fusion_dump.txt), or neither (a file `load` reads itself). */
typedef enum { XLA_PATH_OTHER, XLA_PATH_FOLDER, XLA_PATH_LOG } XlaPathKind;
XlaPathKind xla_path_kind(const char *path);
/* Loads XLA's output as the engine's input: a dump folder (module `which`, NULL: as
 * xla_dump_select chooses) or a fusion log alone. Stage 0 is XLA's module before optimizations and
 * the `xla` pipeline is chosen; when XLA's log names a GPU fxplain knows (H100, A100) other than the
 * engine's device, that device is taken and returned in *switched (else NULL). False with err
 * filled; the engine is then as it was. */
bool explain_engine_load_xla(struct ExplainEngine *e, const char *path, const char *which,
                             const DeviceProfile **switched, FxError *err);
/* Where instruction `name` (at the current stage, else in the input) came from, as xla_source_of
 * reads it with the current stage's tables; false when it is nowhere or carries no metadata. */
bool explain_engine_source_of(const struct ExplainEngine *e, const char *name, XlaSource *src, char *buf, size_t n);

/* `find WHERE`: the instructions of the current stage that come from WHERE (xla_source_matches). */
typedef struct {
  const IrInstr *instr;
  const IrComputation *comp;
  const IrInstr *kernel; /* the kernel holding it, NULL when that launches nothing at this stage */
  const char *source;    /* "file.py:12", NULL when unknown */
  const char *scope;     /* XLA's op_name, NULL when none */
} XlaFound;

typedef struct {
  Arena arena;
  int stage;
  XlaFound *found;
  int n;
  const IrInstr **kernels; /* the distinct kernels that launch, in the order first met */
  int nkernels;
  bool has_positions;      /* the module carries XLA's FileLocations table */
} XlaFind;

/* Fills out for the current stage; false with err filled when nothing is loaded or memory runs
 * out. Free with xla_find_free. */
bool explain_engine_find(struct ExplainEngine *e, const char *where, XlaFind *out, FxError *err);
void xla_find_free(XlaFind *f);

/* The distinct source lines ("file.py:12", at most XLA_KERNEL_SOURCES) each kernel of plan p of m
 * holds, for the kernels that have any. */
#define XLA_KERNEL_SOURCES 8
typedef struct {
  const char *kernel;
  char lines[XLA_KERNEL_SOURCES][64];
  int n;
} XlaKernelSources;
/* *out is fx_malloc'd (the caller fx_frees it); returns the count, -1 when out of memory. */
int xla_kernel_sources(const IrModule *m, const KernelPlan *p, XlaKernelSources **out);

/* `xla`: the loaded input compiled by real XLA:GPU through the Python driver
 * (scripts/xla_reference.py, or $FXPLAIN_XLA_REFERENCE; $FXPLAIN_PYTHON names the python). */
typedef struct {
  char dir[4096];  /* the temporary folder it works in */
  char dump[4160]; /* where XLA's dump appears */
  char cmd[16384];
  const char *python;
  const char *device;
  const IrModule *module; /* the input, written as dir/input.hlo */
} XlaRun;
/* Finds the driver, makes the folder and writes the input there. False with err filled. */
bool xla_run_prepare(const struct ExplainEngine *e, const char *device, XlaRun *run, FxError *err);
/* Runs the driver; false with err filled when jax is missing or XLA failed without a dump. */
bool xla_run(const XlaRun *run, FxError *err);

/* After `xla` loaded the dump: XLA's kernels beside fxplain's, then where the two part. */
typedef struct {
  int fusion_stage;               /* XLA's priority-fusion stage (now the current one), or -1 */
  int ndisagree;                  /* decisions there where fxplain's verdict differs */
  const ExplainRecord *first[5];  /* the first of them */
} XlaVerdicts;
/* Moves the engine to XLA's priority-fusion stage (running the stages up to it) and fills v.
 * False with err filled when a stage cannot be made. */
bool explain_engine_xla_verdicts(struct ExplainEngine *e, XlaVerdicts *v, FxError *err);

/* ---------- printed (format_xla.c) ---------- */

/* What `load` says of a dump it loaded from path (switched: the device taken, or NULL). */
void explain_show_xla_loaded(const struct ExplainOut *o, struct ExplainEngine *e, const char *path,
                             const DeviceProfile *switched);
/* "  source of NAME: file:line in function (scope)" for a and b (b may be NULL); text only. */
void explain_show_source_note(const struct ExplainOut *o, const struct ExplainEngine *e, const char *a, const char *b);
/* `find`'s answer. */
void explain_show_find(const struct ExplainOut *o, const XlaFind *f, const char *where);
/* After `show graph`: each kernel's source lines (text only; nothing when none has any). */
void explain_show_kernel_sources(const struct ExplainOut *o, const IrModule *m, const KernelPlan *p);
/* `xla`: the line before the driver runs, the kernels side by side, then the verdicts. */
void explain_show_xla_compiling(const struct ExplainOut *o, const XlaRun *run);
void explain_show_xla_kernels(const struct ExplainOut *o, struct ExplainEngine *e, const XlaSideBySide *sbs);
void explain_show_xla_verdicts(const struct ExplainOut *o, struct ExplainEngine *e, const XlaSideBySide *sbs,
                               const XlaVerdicts *v, const XlaRun *run);

#endif
