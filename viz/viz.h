/* viz.h — pictures of a stage: the IR drawn as a Graphviz graph, the terminal view, the HTML report.
 *
 * Flow: a stage's module (and the decisions recorded so far) → viz_graph_build() picks what to
 * draw (one computation; a --focus neighbourhood; fusions collapsed to one node or drawn as
 * clusters; refused candidates as dashed red edges) and builds a libcgraph graph → a VizRenderer
 * (one Graphviz GVC_t, kept for the whole session) lays it out and renders svg, png or pdf; dot
 * text needs no layout. The layout engine is chosen per picture: dot (layered, top to bottom) while
 * dot can place it in about a second, else sfdp (Graphviz's multilevel force-directed layout for
 * large graphs), and the picture's stats say which and why. viz_text_graph() prints the compact terminal picture, and
 * viz_report_write() the self-contained HTML walkthrough of every stage.
 *
 * For a front end, viz_engine_render, viz_engine_text_graph and viz_engine_report_file draw the
 * engine's stages (engine_render.c: what to draw, the file name, the figures and decisions behind
 * it) and viz_show_* print what was drawn (format_viz.c).
 *
 * viz reads the IR and plain decision records (compiler/passes/pass.h's PassDecision); it never changes
 * the module. */
#ifndef FXPLAIN_VIZ_H
#define FXPLAIN_VIZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../compiler/ir/ir.h"
#include "../explain/engine.h"
#include "../compiler/passes/passes.h"

typedef enum { VIZ_SVG, VIZ_PNG, VIZ_PDF, VIZ_DOT } VizFormat;

/* "svg", "png", "pdf", "dot" → format; false when unknown. */
bool viz_format_lookup(const char *name, VizFormat *out);
const char *viz_format_name(VizFormat f);

/* The Graphviz layout engine: AUTO picks dot or sfdp by the size of the picture (VizGraphStats
 * says which it took and why). */
typedef enum { VIZ_LAYOUT_AUTO, VIZ_LAYOUT_DOT, VIZ_LAYOUT_SFDP } VizLayout;

/* "auto", "dot", "sfdp" → layout; false when unknown. */
bool viz_layout_lookup(const char *name, VizLayout *out);
const char *viz_layout_name(VizLayout l);

/* AUTO takes sfdp for a picture of more nodes than this, or when dot's estimated work (nodes plus
 * the rank-crossing segments of long edges, each a virtual node dot must place) is above
 * VIZ_DOT_MAX_WORK: measured in bench/viz_render.md, dot needs seconds beyond these. */
#define VIZ_DOT_MAX_NODES 1500
#define VIZ_DOT_MAX_WORK 20000
/* Below AUTO's choice of engine, the style of a dot picture by the same estimate (labels as
 * nodes double the ranks every edge crosses): edge labels drawn as nodes of their own while the
 * work with them is at most VIZ_LABEL_MAX_WORK; beside their edges (xlabel), with network
 * simplex held to about VIZ_NS_BUDGET node visits, while the work without them is at most
 * VIZ_XLABEL_MAX_WORK; past it, still beside their edges, with dot held to the plain style's few
 * iterations (nothing is left out). Measured in bench/viz_render.md: past these,
 * each style takes dot more than about a second. */
#define VIZ_LABEL_MAX_WORK 2000
#define VIZ_XLABEL_MAX_WORK 10000
#define VIZ_NS_BUDGET 3000000

/* Decisions to draw: every decision recorded up to the drawn stage (any order; for each
 * producer/consumer pair the last one counts, so a candidate refused by one pass and accepted by a
 * later one is not drawn as refused). */
typedef struct {
  const PassDecision *items;
  int count;
} VizDecisions;

typedef struct {
  const char *computation; /* NULL: the entry; else any computation's name (a loop body, a
                              fused computation) */
  const char *focus;       /* NULL: everything; else an instruction (or fusion) name */
  int depth;               /* neighbourhood radius around focus (default 2 when <= 0) */
  bool collapse;           /* each fusion as one node instead of a cluster of its members */
  bool legend;             /* draw the legend */
  const char *title;       /* a line above the picture (stage, pass, numbers), or NULL */
  VizDecisions decisions;  /* refused candidates become dashed red edges */
  /* One decision drawn on its own (render --decision N): producer, consumer, their
   * neighbourhood (depth), the verdict and reason with its numbers. decision_number is the
   * number shown in its title ("decision #N"). Overrides focus. */
  const PassDecision *decision;
  int decision_number;
  /* Pictures with more nodes than this switch to a faster, plainer drawing (no edge labels,
   * straight edges) so that they still lay out in seconds; 0 picks the default (600). */
  int plain_above;
  VizLayout layout; /* AUTO (default): dot, or sfdp for large pictures */
} VizOptions;

void viz_options_default(VizOptions *o);

/* A built graph: the libcgraph graph plus what it holds. */
typedef struct VizGraph VizGraph;

typedef struct {
  int nodes;            /* instruction (or collapsed fusion) nodes drawn */
  int clusters;         /* fusion clusters drawn */
  int memory_edges;     /* values written to memory: they cross a kernel boundary */
  int register_edges;   /* values that stay in registers inside a fusion */
  int refused_edges;    /* refused fusion candidates drawn */
  int refused_hidden;   /* refused candidates left out of a large picture (dot would take
                           minutes routing thousands of them) */
  int hidden;           /* instructions of the computation left out by --focus */
  int total;            /* instructions the computation has (fused bodies counted) */
  bool plain;           /* the faster, plainer drawing was used */
  bool xlabels;         /* edge labels drawn beside their edges, not as nodes of their own */
  bool quick;           /* laid out with the plain style's few iterations, labels kept */
  VizLayout layout;     /* the engine that lays it out: VIZ_LAYOUT_DOT or VIZ_LAYOUT_SFDP */
  bool layout_chosen;   /* AUTO chose it (rather than the caller) */
  long long dot_work;   /* dot's estimated work: nodes + rank-crossing edge segments */
  int unconnected;      /* nodes without any drawn edge, left out of an sfdp picture (a grid of
                           hundreds of unused parameters would dwarf the graph) */
  /* Why this engine, in words: "6,675 nodes (dot: up to 1,500)", "dot would place about 92,000
   * edge segments (up to 20,000)"; "" when nothing was chosen (small, or the caller said). */
  char layout_reason[96];
} VizGraphStats;

/* Builds the picture of m (one stage) with options o. Returns NULL and fills err when the
 * computation, the focus or the decision's instructions are not found. The caller owns the
 * graph: viz_graph_free(). */
VizGraph *viz_graph_build(const IrModule *m, const VizOptions *o, FxError *err);
void viz_graph_free(VizGraph *g);
const VizGraphStats *viz_graph_stats(const VizGraph *g);

/* The renderer: one Graphviz context (GVC_t) for the whole session (the process: every renderer
 * shares the one context, which lives until exit). */
typedef struct VizRenderer VizRenderer;

VizRenderer *viz_renderer_new(FxError *err);
void viz_renderer_free(VizRenderer *r);

/* With the layout forced to dot, pictures of more nodes than this are not laid out (dot would
 * take minutes; AUTO takes sfdp for them). DOT text is always written. */
#define VIZ_MAX_LAYOUT_NODES 4000

/* Lays out g with its engine (stats.layout; not for VIZ_DOT) and renders it. On success *data is an fx_malloc'd
 * buffer of *len bytes (NUL-terminated for text formats) the caller frees with fx_free. */
bool viz_render(VizRenderer *r, VizGraph *g, VizFormat f, char **data, size_t *len, FxError *err);
/* viz_render that Ctrl-C can stop: with `interrupted` (set by the SIGINT handler) the layout runs
 * in a child process, which is killed within a tenth of a second of *interrupted becoming
 * non-zero (Graphviz's layout itself cannot be stopped); false with "interrupted" then.
 * interrupted NULL: viz_render. */
bool viz_render_interruptible(VizRenderer *r, VizGraph *g, VizFormat f, char **data, size_t *len,
                              volatile int *interrupted, FxError *err);
/* Same, written to path. */
bool viz_render_file(VizRenderer *r, VizGraph *g, VizFormat f, const char *path, FxError *err);

/* Many pictures at once (render_batch.c): each item's graph rendered in format f into its data
 * (fx_malloc'd, NUL-terminated, len bytes; the caller frees them). A picture identical to an
 * earlier one is a copy of its bytes; one that differs from an earlier one only in tooltips is
 * rendered from that one's layout (the same bytes as its own layout would give); the layouts left
 * are shared among `workers` child processes, which Ctrl-C (*interrupted) kills within a tenth of
 * a second. The graphs are left as they were. False with err filled (and no data kept) when a picture fails, or with
 * "interrupted". */
typedef struct {
  VizGraph *graph; /* the picture to render */
  char *data;      /* what it became */
  size_t len;
} VizBatchItem;

/* Processes laying out at once, at most (one per core by default). */
#define VIZ_MAX_WORKERS 8

typedef struct {
  int workers;               /* 0: one per core, at most VIZ_MAX_WORKERS; with 1 and no
                                `interrupted`, everything is done in this process */
  volatile int *interrupted; /* NULL: nothing stops it */
  /* Called as each picture is done: its item, how many are done, of how many; NULL: none. */
  void (*progress)(void *ctx, int item, int done, int total);
  void *progress_ctx;
} VizBatchOptions;

typedef struct {
  int pictures; /* rendered, copies included */
  int layouts;  /* laid out: the others shared a layout or were copies */
  int copies;   /* identical to an earlier picture */
  int workers;  /* child processes that laid them out (0: this process) */
} VizBatchStats;

bool viz_render_batch(VizRenderer *r, VizBatchItem *items, int n, VizFormat f, const VizBatchOptions *o,
                      VizBatchStats *stats, FxError *err);

/* A stage drawn by JAX name scope (render --group scope, viz/scope.c): one node per scope of the
 * entry's instructions (from XLA's metadata op_name, its first `depth` levels; 0: all), in boxes
 * of their parent scopes, with edges counting the values and bytes flowing between scopes. */
VizGraph *viz_scope_graph_build(const IrModule *m, int depth, const char *title, FxError *err);

/* ---------- the terminal picture (`show graph`) ---------- */

/* Per-kernel numbers the caller may supply (from the kernel plan); NULL prints the structure
 * only. Looked up by kernel name. */
typedef struct {
  const char *name;
  int64_t bytes_read, bytes_written;
  int64_t launches;
  double est_us;
} VizKernelNumbers;

typedef struct {
  const VizKernelNumbers *items;
  int count;
  /* Optional: the words that tag a value crossing from kernel instruction `from` to kernel
   * instruction `to` ("#13 reduce_epilogue": the decision that kept it in memory), written into
   * buf, and that decision's number in *decision (-1 when the words name none); false when there
   * is nothing to say. */
  bool (*edge_tag)(void *ctx, const IrInstr *from, const IrInstr *to, char *buf, size_t n, int *decision);
  void *edge_ctx;
} VizNumbers;

/* Prints computation `comp` (NULL: the entry) of m as kernels, their members, and the values
 * crossing between kernels, within `width` columns (0: 100). Returns false (err filled) when the
 * computation does not exist. */
bool viz_text_graph(FILE *out, const IrModule *m, const char *comp, const VizNumbers *numbers,
                    int width, FxError *err);
/* The same as one JSON object (`show graph` with --json): every kernel, not the first 400. */
bool viz_json_graph(FILE *out, const IrModule *m, const char *comp, const VizNumbers *numbers, FxError *err);

/* What the pictures and text call a kernel: a fusion, a library call, an unfused compute op.
 * Parameters, constants, tuples, get-tuple-element and bitcasts launch nothing; while, call and
 * conditional are loop control run by the host. */
/* The kernel plan's kinds (kernels.def), and VIZ_K_NONE for an instruction that launches nothing. */
typedef enum { VIZ_K_LOOP, VIZ_K_INPUT, VIZ_K_OUTPUT, VIZ_K_LIBRARY, VIZ_K_CONTROL, VIZ_K_NONE } VizKernelKind;
VizKernelKind viz_kernel_kind(const IrInstr *i);
const char *viz_kernel_kind_name(VizKernelKind k); /* "loop", "input", ... ; "" for none */
/* The library a library call goes to: "cuBLAS", "cuDNN", "cuRAND", the custom-call target
 * (copied into buf, quotes removed), ... */
const char *viz_library_name(const IrInstr *i, char *buf, size_t n);

/* ---------- the HTML walkthrough (`report FILE.html`) ---------- */

/* One of XLA's priority-fusion steps (its FusionProcessDump) with fxplain's verdict on the same
 * pair, for the report's step-by-step view. Strings are borrowed. */
typedef struct {
  int step;               /* XLA's step number (from 1); 0: a producer XLA left unfused */
  int number;             /* the decision number of XLA's record (as `decisions`), 0 when none */
  const char *kind;       /* "fusion", "producer_ineligible", "update_priority", "left_unfused" */
  const char *producer, *consumer, *fusion;
  const char *xla_reason; /* XLA's own words (ineligible), or NULL */
  bool has_times;
  double us_fused, us_unfused; /* XLA's cost model: the step's (priority) or the producer's last */
  bool compared;          /* fxplain's own run was at hand */
  const char *own_verdict;/* "fuses", "refuses", NULL: no decision on the pair */
  const char *own_reason, *own_detail;
  bool own_has_times;
  double own_us_fused, own_us_unfused;
  bool disagree;
  /* The names the user's JAX program gave producer and consumer (op_name), "" when unknown. */
  char producer_jax[96], consumer_jax[96];
  /* The instructions of the module priority-fusion received that producer and (the first)
   * consumer stand for (xla_fusion_log_root: a fusion XLA made earlier, its root), drawn in the
   * step's picture; NULL when not in it. */
  const char *producer_root, *consumer_root;
} VizXlaStep;

typedef struct {
  const IrModule *module; /* the stage's snapshot */
  const char *pass;       /* the pass that produced it ("input" for stage 0) */
  bool changed;
  const char *summary;    /* one line on what the pass did, or NULL */
  const char *changes;    /* what the pass changed (lines of text), or NULL */
  bool have_numbers;      /* the kernel plan's numbers below are filled */
  int64_t kernels;        /* kernel launches per execution */
  int64_t nkernels;       /* kernels (each counted once, however often a loop launches it) */
  int first_number;       /* the number `decisions` gives the stage's first decision (numbering is
                             global, as in the shell and `render --decision N`); 0: from 1 */
  int64_t bytes;          /* bytes read + written per execution */
  double est_us;          /* estimated time per execution */
  VizDecisions decisions; /* the decisions this stage's pass made */
  /* XLA's priority-fusion stage with its decision log loaded: every step in XLA's order, stepped
   * through on the page; NULL otherwise. */
  const VizXlaStep *xla_steps;
  int nxla_steps;
} VizStage;

typedef struct {
  const char *title;     /* the page title, e.g. the module or script name */
  const char *pipeline;  /* the pipeline's name */
  const char *device;    /* the device profile's name */
  /* Stages with more instructions than this are drawn collapsed; 0 picks 400. Stages whose
   * collapsed picture would still exceed plain_above nodes are drawn in the plain style. */
  int collapse_above;
  /* Set (by Ctrl-C) while writing: the report stops between pictures with "interrupted". */
  volatile int *interrupted;
  /* Called as the drawing goes on (the first stage whose pictures are not all drawn yet, of total),
   * e.g. for a progress line; NULL: none. */
  void (*progress)(void *ctx, int done, int total);
  void *progress_ctx;
  int workers; /* processes laying out the pictures at once (VizBatchOptions); 0: one per core */
} VizReportOptions;

/* Writes one self-contained HTML page (inline SVG, CSS and a little JS; nothing fetched) with a
 * summary table, then one section per stage: picture, changes, filterable decisions, numbers,
 * keyboard navigation. Decisions refused in earlier stages are drawn from `all` (every decision of
 * every stage). Returns false with err filled on failure. */
bool viz_report_write(FILE *out, VizRenderer *r, const VizStage *stages, int nstages,
                      const VizDecisions *all, const VizReportOptions *o, FxError *err);

/* ---------- the engine's stages (engine_report.c) ---------- */

/* Every decision recorded for stages 1..upto, in `decisions` order, as PassDecision records
 * (strings stay owned by the log). *out is fx_malloc'd; returns the count or -1. */
int viz_engine_decisions(const ExplainEngine *e, int upto, PassDecision **out);
/* The HTML walkthrough (viz_report_write) of every stage the engine has run: plan figures, the
 * pass's summary, what changed, the decisions (*ndecisions receives their count). Stops with
 * "interrupted" between stages when *interrupted is set; progress as in VizReportOptions. */
bool viz_engine_report(FILE *out, VizRenderer *r, ExplainEngine *e, volatile int *interrupted,
                       void (*progress)(void *ctx, int done, int total), void *progress_ctx, int *ndecisions,
                       FxError *err);

/* ---------- the engine's stages drawn for a front end (engine_render.c, format_viz.c) ---------- */

/* What a failed picture was about, so that a front end can point at the word at fault: nothing
 * (err is complete), the command, the file, the computation, the focus, the decision. */
typedef enum { VIZ_AT_NONE, VIZ_AT_COMMAND, VIZ_AT_FILE, VIZ_AT_COMPUTATION, VIZ_AT_FOCUS, VIZ_AT_DECISION } VizAt;

/* `render`: what to draw and where. */
typedef struct {
  int stage;               /* a stage the engine has run */
  VizFormat format;
  const char *file;        /* "-": the picture is returned in data; NULL: MODULE.stageN[.COMPUTATION]
                              [.FOCUS][.collapsed].FORMAT (MODULE.decisionN... for a decision) in
                              $FXPLAIN_OUT_DIR, else the current directory */
  const char *computation; /* NULL: the entry, or, for a decision, the computation its producer is in */
  const char *focus;
  int depth;
  bool collapse;
  VizLayout layout;
  int decision;            /* > 0: decision N alone, drawn on the stage its pass looked at */
  /* The front end's Graphviz context, asked for once the picture is built (not for VIZ_DOT):
   * making it sets Graphviz's defaults, which DOT text written later then shows. */
  VizRenderer *(*renderer)(FxError *err);
  volatile int *interrupted;
} VizRenderRequest;

typedef struct {
  char shown[600];          /* the file as the user is told it */
  char path[1200];          /* where it was written */
  bool to_stdout;           /* file "-": data (fx_malloc'd, len bytes) holds the picture */
  char *data;
  size_t len;
  int stage;                /* the stage drawn */
  const char *computation;  /* the computation drawn, NULL: the entry (named entry, may be NULL) */
  const char *entry;
  int decision_stage;       /* a decision: its stage, pass and verdict */
  const char *decision_pass;
  bool decision_accepted;
  VizGraphStats stats;
} VizRendered;

/* Draws rq. False with err filled and *at saying what it was about. */
bool viz_engine_render(ExplainEngine *e, const VizRenderRequest *rq, VizRendered *out, VizAt *at, FxError *err);
/* The current stage by JAX name scope (`render --group scope`), to be written in format f to
 * file (NULL: MODULE.stageN.scopes.FORMAT as above). Drawn with fewer levels than depth (0: all)
 * when dot would take minutes over more than 100 scopes (not for VIZ_DOT, which has them all). */
typedef struct {
  char path[4200];
  int depth;         /* the levels asked for (0: all) */
  int full;          /* scopes at that depth */
  int used;          /* the levels drawn */
  int nodes, edges;  /* scopes drawn and the flows between them */
} VizScopePicture;
VizGraph *viz_engine_scope_graph(ExplainEngine *e, int depth, VizFormat f, const char *file, VizScopePicture *out,
                                 FxError *err);
/* `report FILE.html` (viz_engine_report written to path). */
typedef struct {
  int stages, decisions;
  size_t bytes;
} VizReportWritten;
bool viz_engine_report_file(const char *path, VizRenderer *r, ExplainEngine *e, volatile int *interrupted,
                            void (*progress)(void *ctx, int done, int total), void *progress_ctx, VizReportWritten *out,
                            VizAt *at, FxError *err);
/* `show graph [COMP]`: viz_text_graph of the current stage with its plan's figures, each value
 * crossing kernels tagged with the decision that kept it in memory ("#13 reduce_epilogue"). */
bool viz_engine_text_graph(FILE *out, ExplainEngine *e, const char *comp, bool json, VizAt *at, FxError *err);

/* What they did, printed as text or JSON (format_viz.c). */
struct ExplainOut;
void viz_show_rendered(const struct ExplainOut *o, ExplainEngine *e, const VizRenderRequest *rq, const VizRendered *r);
/* Before the scope picture is laid out: that it has fewer levels than asked (text only). */
void viz_show_scope_levels(const struct ExplainOut *o, const VizScopePicture *sp);
void viz_show_scope_written(const struct ExplainOut *o, ExplainEngine *e, const VizScopePicture *sp);
void viz_show_report_written(const struct ExplainOut *o, ExplainEngine *e, const char *path, const VizReportWritten *rw);

#endif
