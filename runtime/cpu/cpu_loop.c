/* cpu_loop.c — the CPU backend's compiled while loops.
 *
 * A while loop whose condition and body are nothing but generated kernels (and the free ops
 * around them: the state's get-tuple-elements, bitcasts, reshapes, constants, the body's root
 * tuple; and loops nested in the body, planned the same way) runs in one call instead of through
 * the interpreter's walker, as XLA:CPU runs a loop as compiled code: the walker costs ~0.5 us per
 * instruction, and a loop of tiny kernels (a scan step, a binary search) is all walker.
 *
 * The plan, made at prepare from the IR and the kernels alone, is a table of buffer pointers
 * ("cells") per loop. Cells 0..ne-1 point to the state elements' current buffers, ne..2ne-1 to
 * their other buffers. A body kernel whose output is root element e writes into e's other buffer
 * (nobody reads it during the iteration: the body's parameter is the current state); root elements
 * that are another element, a constant or a value used twice are copied there after the body;
 * then the two buffers of each changed element swap. Every other kernel output has a scratch
 * buffer of its own for the loop's lifetime, and a constant's cell points at its value. A kernel
 * that updates an element (a dynamic-update-slice or scatter into the state, emit_inplace) writes
 * into the element's current buffer when nothing after it reads the old value, and loop-invariant
 * kernels run once, before the first trip, as XLA hoists them.
 *
 * The driver: for each outermost planned loop, prepare writes into the kernels' C unit a function
 * that runs the whole nest. Per trip: the condition's kernels, the test, the body's kernels, called
 * directly, so that the C compiler inlines the small ones (a scalar kernel then costs a few
 * instructions instead of a call through a table of pointers; XLA:CPU compiles a loop and its
 * kernels into one function in the same way), the copies and the swaps. A loop whose trip count
 * is known (plan_while_for_loop) runs as XLA:GPU runs it, as a for loop: the body's kernels that
 * many times and never the condition's. A nested loop is inlined too, its state copied in from
 * the outer loop's cells and out again. Kernels large enough to be
 * worth the threads (a part of at least LOOP_LAUNCH_MIN elements) go through a callback to the
 * backend's launcher, which times them and splits them over the pool. Every 1024 trips (and at
 * the first) the driver asks whether Ctrl-C was pressed. A loop without a driver (one met only at
 * run time, or whose kernels are not all in the unit) is walked step by step by the backend from
 * the same plan.
 *
 * At a loop's first run its plan is materialized: the constants evaluated, one allocation for all
 * double buffers and scratch. The counters and the profile count every kernel launch as the host
 * would have made it, from how many trips and runs each loop of the nest made. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "../../compiler/plan/plan.h"

enum { LOOP_MAX_SCRATCH = 64 << 20, LOOP_MAX_CELLS = 1 << 16, LOOP_MAX_NEST = 4096 };
/* A kernel with a part of at least this many elements is launched by the backend (timed, and
 * split over the threads when large); smaller ones are called directly. */
enum { LOOP_LAUNCH_MIN = 1024 };

typedef struct CpuLoop CpuLoop;

typedef struct {
  CpuKernel *k;   /* a kernel, or */
  CpuLoop *inner; /* a loop nested in this one: its state copied in from cells, out to cells */
  int nb;         /* inputs then outputs */
  int *cells;     /* nb cell indices */
  bool inplace;   /* the kernel's in-place variant, updating its input's buffer (a state element) */
  bool *alias;    /* a nested loop's elements that it passes through: read in the outer cell */
  bool hoisted;   /* loop-invariant: run once before the first trip */
  int gid;        /* its number among the steps of its outermost loop's nest */
} LoopStep;

typedef void (*LoopLaunchFn)(void *ctx, int step, char *const *bufs);
typedef int (*LoopPollFn)(void *ctx);
/* A driver: tables[n] is loop n's cell table; counts[3n..3n+2] get loop n's trips, runs and
 * launches saved by hoisting (the trips after the first, per run). Returns 1 when poll said stop. */
typedef int (*LoopDriver)(char ***tables, int64_t *counts, void *ctx, LoopLaunchFn launch, LoopPollFn poll);

struct CpuLoop {
  const IrInstr *w;
  int ne;                 /* state elements */
  int64_t *ebytes;        /* per element */
  int ncells;
  char **cell;            /* the pointer table */
  int64_t *cbytes;        /* per cell: scratch bytes wanted (0: none) */
  LoopStep *cond, *body;
  int ncond, nbody;
  int cond_cell;          /* the condition's pred[] */
  bool for_loop;          /* the trip count is known (plan_while_for_loop): for_trips trips and the
                             condition never run, as XLA:GPU's ForThunk (today WhileThunk given the
                             trip count) and the kernel plan count it */
  int64_t for_trips;
  int *copy_from;         /* per element: a cell copied into its other buffer after the body, or -1 */
  bool *changes;          /* per element: swapped after the body */
  bool *passed;           /* per element: never written (the body passes it through): the outermost
                             loop reads it where the caller's state holds it, and returns that; a
                             nested loop reads it in the outer loop's cell, and its users there
                             read that cell (no copy in or out) */
  const IrInstr **consts; /* the constants, and their cells */
  int *const_cell;
  int nconsts;
  RtTensor **const_vals;  /* their values, held for the loop's lifetime (once materialized) */
  char *mem;              /* state double buffers and scratch, one allocation */
  bool ready;             /* materialized */
  int nid;                /* its number in its outermost loop's nest (0: the outermost) */
  /* the outermost loop of a nest: */
  int nloops, nsteps;
  CpuLoop **nest;         /* the loops, by nid */
  LoopStep **steps;       /* every step of the nest, by gid */
  char ***tables;         /* per loop: its cell table */
  int64_t *counts;        /* per loop: trips, runs, launches saved by hoisting */
  char sym[48];           /* its driver in the unit, or "" */
  LoopDriver fn;
  const IrComputation *body_comp; /* while planning */
  /* the entry computation as one call (see "the entry computation" below): */
  bool entry;
  int nparams;            /* cells 0..nparams-1: the parameters */
  int64_t *pbytes;        /* per parameter */
  int *out_cells;         /* the root's arrays (or the root) */
  int nout;
  CpuKernel **cell_k;     /* per cell: the kernel whose output it is (NULL: none), and which output; */
  int *cell_o;            /* an output the kernel plan gives a buffer slot is written there */
  bool *slotted;          /* per cell: in a slot (set at the first run) */
};

static char loop_none; /* the loops map's value for a loop that runs on the host */

static void loop_free(CpuLoop *l) {
  if (!l) return;
  for (int q = 0; q < l->ncond + l->nbody; q++) {
    LoopStep *st = q < l->ncond ? &l->cond[q] : &l->body[q - l->ncond];
    fx_free(st->cells);
    fx_free(st->alias);
    loop_free(st->inner);
  }
  fx_free(l->cond);
  fx_free(l->body);
  for (int q = 0; l->const_vals && q < l->nconsts; q++) rt_tensor_unref(l->const_vals[q]);
  fx_free(l->const_vals);
  fx_free(l->consts);
  fx_free(l->const_cell);
  fx_free(l->ebytes);
  fx_free(l->cell);
  fx_free(l->cbytes);
  fx_free(l->copy_from);
  fx_free(l->changes);
  fx_free(l->passed);
  fx_free(l->mem);
  fx_free(l->nest);
  fx_free(l->steps);
  fx_free(l->tables);
  fx_free(l->counts);
  fx_free(l->pbytes);
  fx_free(l->out_cells);
  fx_free(l->cell_k);
  fx_free(l->cell_o);
  fx_free(l->slotted);
  fx_free(l);
}

void cpu_loops_clear(CpuBackend *b) {
  for (size_t q = 0; q < b->loops.cap; q++)
    if (b->loops.keys[q] && b->loops.vals[q] != &loop_none) loop_free(b->loops.vals[q]);
  ptrmap_free(&b->loops);
}

/* ---------- planning ---------- */

typedef struct {
  CpuLoop *l;
  PtrMap cellof; /* IrInstr* -> cell + 1 (array values); a tuple result: its first output's cell + 1 */
  PtrMap nested; /* a nested while or a multi-output kernel (IrInstr*) -> its LoopStep */
  int capcells;
  bool entry;    /* planning an entry computation: its parameters are cells 0..nparams-1 */
} LoopBuild;

static int new_cell(LoopBuild *lb, int64_t bytes) {
  CpuLoop *l = lb->l;
  if (l->ncells >= LOOP_MAX_CELLS) return -1;
  if (l->ncells == lb->capcells) {
    int nc = lb->capcells ? lb->capcells * 2 : 64;
    int64_t *nb = fx_realloc(l->cbytes, sizeof *nb * (size_t)nc);
    if (nb) l->cbytes = nb;
    char **ncell = nb ? fx_realloc(l->cell, sizeof *ncell * (size_t)nc) : NULL;
    if (!ncell) return -1;
    l->cell = ncell;
    lb->capcells = nc;
  }
  l->cbytes[l->ncells] = bytes;
  l->cell[l->ncells] = NULL;
  return l->ncells++;
}

static CpuLoop *loop_plan(CpuBackend *b, const IrInstr *w);

static int cell_of(LoopBuild *lb, const IrInstr *i) { return (int)(uintptr_t)ptrmap_get(&lb->cellof, i) - 1; }
static bool set_cell(LoopBuild *lb, const IrInstr *i, int c) { return ptrmap_put(&lb->cellof, i, (void *)(uintptr_t)(c + 1)); }

static bool plain_array(const IrShape *s) {
  return s->type != IR_TUPLE && s->type != IR_TOKEN && !ir_type_is_complex(s->type) && ir_type_bytes(s->type) > 0;
}

static bool add_const(CpuLoop *l, const IrInstr *i, int cell) {
  const IrInstr **nc = fx_realloc(l->consts, sizeof *nc * (size_t)(l->nconsts + 1));
  if (nc) l->consts = nc;
  int *ncl = nc ? fx_realloc(l->const_cell, sizeof *ncl * (size_t)(l->nconsts + 1)) : NULL;
  if (!ncl) return false;
  l->const_cell = ncl;
  l->consts[l->nconsts] = i;
  l->const_cell[l->nconsts++] = cell;
  return true;
}

/* The steps of computation c (the condition or the body): false when an instruction is not one a
 * compiled loop runs. In the body, a kernel whose (array) output is the root's element e writes
 * into e's other buffer. */
static bool loop_steps(CpuBackend *b, LoopBuild *lb, const IrComputation *c, LoopStep **steps, int *nsteps) {
  CpuLoop *l = lb->l;
  *steps = fx_calloc((size_t)(c->ninstrs ? c->ninstrs : 1), sizeof **steps);
  if (!*steps) return false;
  const IrInstr *root = c->root;
  for (int q = 0; q < c->ninstrs; q++) {
    const IrInstr *i = c->instrs[q];
    switch (i->op) {
    case IR_OP_PARAMETER:
      if (lb->entry) {
        if (!plain_array(&i->shape) || i->param_number < 0 || i->param_number >= l->nparams) return false;
        if (!set_cell(lb, i, (int)i->param_number)) return false;
        continue;
      }
      if (i->param_number != 0) return false;
      continue;
    case IR_OP_GET_TUPLE_ELEMENT: {
      const IrInstr *t = i->operands[0];
      int64_t idx = -1;
      ir_attr_int(i, "index", &idx);
      if (!plain_array(&i->shape) || idx < 0) return false;
      if (t->op == IR_OP_PARAMETER) {
        if (idx >= l->ne) return false;
        if (!set_cell(lb, i, (int)idx)) return false;
      } else { /* of a multi-output kernel or of a nested loop: the cell of that output */
        const LoopStep *ns = ptrmap_get(&lb->nested, t);
        if (!ns || cell_of(lb, t) < 0 || t->shape.type != IR_TUPLE || idx >= t->shape.ntuple) return false;
        int cl;
        if (ns->inner) /* an element a nested loop passes through is where it came from */
          cl = ns->alias[idx] ? ns->cells[idx] : ns->cells[ns->inner->ne + idx];
        else
          cl = ns->cells[t->noperands + idx];
        if (!set_cell(lb, i, cl)) return false;
      }
      continue;
    }
    case IR_OP_BITCAST: case IR_OP_RESHAPE: {
      int src = cell_of(lb, i->operands[0]);
      if (src < 0 || !plain_array(&i->shape)) return false;
      if (!set_cell(lb, i, src)) return false;
      continue;
    }
    case IR_OP_CONSTANT: {
      if (!plain_array(&i->shape)) return false;
      int cl = new_cell(lb, 0);
      if (cl < 0 || !set_cell(lb, i, cl) || !add_const(l, i, cl)) return false;
      continue;
    }
    case IR_OP_TUPLE: /* the root, or a nested loop's initial state (any other use finds no cell) */
      continue;
    case IR_OP_WHILE: {
      const IrInstr *t = i->operands[0];
      if (t->op != IR_OP_TUPLE) return false;
      CpuLoop *inner = loop_plan(b, i);
      if (!inner) return false;
      LoopStep *st = &(*steps)[(*nsteps)++];
      st->inner = inner;
      st->nb = 2 * inner->ne;
      st->cells = fx_malloc(sizeof *st->cells * (size_t)st->nb);
      if (!st->cells || t->noperands != inner->ne) return false;
      for (int e = 0; e < inner->ne; e++)
        if ((st->cells[e] = cell_of(lb, t->operands[e])) < 0) return false;
      for (int e = 0; e < inner->ne; e++) {
        int cl = new_cell(lb, inner->ebytes[e]);
        if (cl < 0 || (e > 0 && cl != st->cells[inner->ne] + e)) return false;
        st->cells[inner->ne + e] = cl;
      }
      if (!set_cell(lb, i, st->cells[inner->ne])) return false;
      st->alias = fx_calloc((size_t)inner->ne, sizeof *st->alias);
      if (!st->alias || !ptrmap_put(&lb->nested, i, st)) return false;
      for (int e = 0; e < inner->ne; e++) st->alias[e] = inner->passed[e];
      continue;
    }
    default: break;
    }
    CpuKernel *k = cpu_kernel(b, i);
    if (!k || k->how != K_GENERATED) return false;
    int nout = i->shape.type == IR_TUPLE ? i->shape.ntuple : 1;
    LoopStep *st = &(*steps)[(*nsteps)++];
    st->k = k;
    st->nb = i->noperands + nout;
    st->cells = fx_malloc(sizeof *st->cells * (size_t)st->nb);
    if (!st->cells || st->nb > 2 * EMIT_MAX_BUFFERS) return false;
    for (int j = 0; j < i->noperands; j++)
      if ((st->cells[j] = cell_of(lb, i->operands[j])) < 0) return false;
    for (int o = 0; o < nout; o++) {
      const IrShape *os = i->shape.type == IR_TUPLE ? &i->shape.tuple[o] : &i->shape;
      if (!plain_array(os)) return false;
      int cl = -1;
      /* the body's root takes this output (the kernel's array, or a get-tuple-element of one of
         its outputs: a multi-output kernel computing several state elements, as CartPole's four
         arrays) as element e: write it into e's other buffer, not into scratch copied there */
      if (root->op == IR_OP_TUPLE && c == l->body_comp)
        for (int e = 0; e < root->noperands && e < l->ne && cl < 0; e++) {
          const IrInstr *r = root->operands[e];
          int64_t ri = -1;
          bool takes = i->shape.type != IR_TUPLE
                           ? r == i
                           : r->op == IR_OP_GET_TUPLE_ELEMENT && r->operands[0] == i &&
                                 ir_attr_int(r, "index", &ri) && ri == o;
          if (takes && l->copy_from[e] == -2) {
            cl = l->ne + e;
            l->copy_from[e] = -1;
            l->changes[e] = true;
          }
        }
      if (cl < 0) cl = new_cell(lb, ir_shape_bytes(os));
      if (cl < 0) return false;
      st->cells[i->noperands + o] = cl;
    }
    if (!set_cell(lb, i, st->cells[i->noperands])) return false;
    if (i->shape.type == IR_TUPLE && !ptrmap_put(&lb->nested, i, st)) return false;
  }
  return true;
}

/* The plan of while loop w, or NULL when it runs on the host (the reason is not kept: the host's
 * way is always right). */
static CpuLoop *loop_plan(CpuBackend *b, const IrInstr *w) {
  const IrComputation *cond = ir_attr_comp(w, "condition"), *body = ir_attr_comp(w, "body");
  const IrShape *ss = &w->shape;
  if (!cond || !body || w->noperands != 1 || ss->type != IR_TUPLE || ss->ntuple < 1 || !body->root ||
      body->root->op != IR_OP_TUPLE || body->root->noperands != ss->ntuple || !cond->root)
    return NULL;
  for (int e = 0; e < ss->ntuple; e++)
    if (!plain_array(&ss->tuple[e])) return NULL;
  CpuLoop *l = fx_calloc(1, sizeof *l);
  LoopBuild lb = {.l = l};
  bool ok = l != NULL;
  int ne = ss->ntuple;
  if (ok) {
    l->w = w;
    l->ne = ne;
    l->for_loop = plan_while_for_loop(w, &l->for_trips);
    l->body_comp = body;
    l->ebytes = fx_calloc((size_t)ne, sizeof *l->ebytes);
    l->copy_from = fx_malloc(sizeof *l->copy_from * (size_t)ne);
    l->changes = fx_calloc((size_t)ne, sizeof *l->changes);
    ok = l->ebytes && l->copy_from && l->changes;
  }
  for (int e = 0; ok && e < 2 * ne; e++) ok = new_cell(&lb, 0) == e;
  for (int e = 0; ok && e < ne; e++) {
    l->ebytes[e] = ir_shape_bytes(&ss->tuple[e]);
    l->copy_from[e] = -2; /* not decided */
  }
  if (ok) ok = loop_steps(b, &lb, cond, &l->cond, &l->ncond);
  if (ok) {
    l->cond_cell = cell_of(&lb, cond->root);
    ok = l->cond_cell >= 0 && cond->root->shape.type == IR_PRED && ir_shape_elements(&cond->root->shape) == 1;
  }
  /* a new map for the body: its parameter is a different instruction, its values its own */
  ptrmap_free(&lb.cellof);
  if (ok) ok = loop_steps(b, &lb, body, &l->body, &l->nbody);
  for (int e = 0; ok && e < ne; e++) {
    if (l->copy_from[e] != -2) continue; /* written directly */
    const IrInstr *r = body->root->operands[e];
    int c = cell_of(&lb, r);
    if (c < 0) ok = false;
    else if (c == e) l->copy_from[e] = -1; /* unchanged */
    else {
      l->copy_from[e] = c;
      l->changes[e] = true;
    }
  }
  /* In place: a body kernel with an in-place variant whose output is the next value of element e
     and whose updated input is e's current value updates e's buffer, when nothing after it reads
     e's current value (later steps, the root's copies): a dynamic-update-slice or scatter into
     the loop state then writes its slice, not the whole buffer, and e's buffers do not swap. */
  for (int q = 0; ok && q < l->nbody; q++) {
    LoopStep *st = &l->body[q];
    if (!st->k || st->k->ip_input < 0 || st->nb != st->k->instr->noperands + 1) continue;
    int nin = st->k->instr->noperands, oc = st->cells[nin], e = st->cells[st->k->ip_input];
    if (e < 0 || e >= ne || oc != ne + e) continue;
    bool read = false;
    for (int r = q + 1; r < l->nbody && !read; r++)
      for (int j = 0; j < l->body[r].nb && !read; j++) read = l->body[r].cells[j] == e;
    for (int f = 0; f < ne && !read; f++) read = l->copy_from[f] == e;
    for (int j = 0; j < nin && !read; j++) read = j != st->k->ip_input && st->cells[j] == e;
    if (read) continue;
    for (int r = q + 1; r < l->nbody; r++)
      for (int j = 0; j < l->body[r].nb; j++)
        if (l->body[r].cells[j] == ne + e) l->body[r].cells[j] = e;
    for (int f = 0; f < ne; f++)
      if (l->copy_from[f] == ne + e) l->copy_from[f] = e;
    st->cells[nin] = e;
    st->inplace = true;
    l->changes[e] = false;
  }
  /* Loop-invariant body kernels (inputs that are constants, elements the body passes through
     unchanged, or other invariant values; an iota-only kernel has none) run once before the first
     trip, as XLA hoists them: a million-trip loop recomputed a million-element reduce every trip. */
  bool *inv = ok ? fx_calloc((size_t)l->ncells, sizeof *inv) : NULL;
  if (ok && !inv) ok = false;
  for (int e = 0; ok && e < ne; e++) inv[e] = !l->changes[e] && l->copy_from[e] == -1;
  for (int q = 0; ok && q < l->nbody; q++)
    if (l->body[q].inplace) inv[l->body[q].cells[l->body[q].nb - 1]] = false;
  for (int q = 0; ok && q < l->nconsts; q++) inv[l->const_cell[q]] = true;
  for (int q = 0; ok && q < l->nbody; q++) {
    LoopStep *st = &l->body[q];
    if (!st->k || st->inplace) continue;
    int nin = st->k->instr->noperands;
    bool all = true;
    for (int j = 0; j < nin && all; j++) all = inv[st->cells[j]];
    for (int j = nin; j < st->nb && all; j++) all = st->cells[j] >= 2 * ne;
    if (!all) continue;
    st->hoisted = true;
    for (int j = nin; j < st->nb; j++) inv[st->cells[j]] = true;
  }
  fx_free(inv);
  if (ok) ok = (l->passed = fx_calloc((size_t)ne, sizeof *l->passed)) != NULL;
  for (int e = 0; ok && e < ne; e++) l->passed[e] = !l->changes[e] && l->copy_from[e] < 0;
  for (int q = 0; ok && q < l->nbody; q++)
    if (l->body[q].inplace) l->passed[l->body[q].cells[l->body[q].nb - 1]] = false;
  /* memory: two buffers per element, then the scratch cells, 64-byte aligned */
  int64_t total = 0;
  for (int c = 0; ok && c < l->ncells; c++) {
    int64_t want = c < 2 * ne ? l->ebytes[c % ne] : l->cbytes[c];
    total += (want + 63) / 64 * 64;
  }
  if (ok && total > LOOP_MAX_SCRATCH) ok = false;
  ptrmap_free(&lb.cellof);
  ptrmap_free(&lb.nested);
  if (!ok) {
    loop_free(l);
    return NULL;
  }
  l->body_comp = NULL;
  return l;
}

/* Numbers the loops and steps of top's nest (depth first: a loop's steps, then the loops inside
 * them) and lists them in top. */
static bool number_nest(CpuLoop *top, CpuLoop *l) {
  if (top->nloops >= LOOP_MAX_NEST) return false;
  CpuLoop **nn = fx_realloc(top->nest, sizeof *nn * (size_t)(top->nloops + 1));
  if (!nn) return false;
  top->nest = nn;
  l->nid = top->nloops;
  top->nest[top->nloops++] = l;
  int n = l->ncond + l->nbody;
  LoopStep **ns = fx_realloc(top->steps, sizeof *ns * (size_t)(top->nsteps + n + 1));
  if (!ns) return false;
  top->steps = ns;
  for (int q = 0; q < n; q++) {
    LoopStep *st = q < l->ncond ? &l->cond[q] : &l->body[q - l->ncond];
    st->gid = top->nsteps;
    top->steps[top->nsteps++] = st;
  }
  for (int q = 0; q < n; q++) {
    LoopStep *st = q < l->ncond ? &l->cond[q] : &l->body[q - l->ncond];
    if (st->inner && !number_nest(top, st->inner)) return false;
  }
  return true;
}

/* Numbers the nest under outermost loop l and gives it its driver's tables and counters. When
 * ok is false or that fails, frees l and returns NULL. */
static CpuLoop *outermost_ready(CpuLoop *l, bool ok) {
  if (ok) ok = number_nest(l, l);
  if (ok) {
    l->tables = fx_calloc((size_t)l->nloops, sizeof *l->tables);
    l->counts = fx_calloc((size_t)(3 * l->nloops), sizeof *l->counts);
    ok = l->tables && l->counts;
  }
  if (!ok) {
    loop_free(l);
    return NULL;
  }
  return l;
}

/* The plan of outermost loop w with its nest numbered, or NULL. */
static CpuLoop *plan_outermost(CpuBackend *b, const IrInstr *w) {
  CpuLoop *l = loop_plan(b, w);
  if (!l) return NULL;
  return outermost_ready(l, true);
}

/* ---------- the driver (C source) ---------- */

static bool small_kernel(const CpuKernel *k) {
  for (int p = 0; p < k->nparts; p++)
    if (k->count[p] >= LOOP_LAUNCH_MIN) return false;
  return true;
}

/* In a driver, a state element of at most LOOP_COPY_MAX bytes that changes is copied from its
 * other buffer after each trip instead of swapping the two: every cell pointer but those of the
 * larger elements then stays the same for the whole run, so the driver reads it once into a local
 * and the compiler keeps the addresses of a scan's scalars in registers. */
enum { LOOP_COPY_MAX = 64 };

static bool swapped(const CpuLoop *l, int e) { return l->changes[e] && l->ebytes[e] > LOOP_COPY_MAX; }

/* Cell k of loop l as the driver names it: its table entry when it moves (a swapped element's
 * buffers), else the local holding it. */
static void cellref(char *out, size_t n, const CpuLoop *l, int k) {
  if (k < 2 * l->ne && swapped(l, k % l->ne)) snprintf(out, n, "c%d[%d]", l->nid, k);
  else snprintf(out, n, "x%d_%d", l->nid, k);
}

static void emit_loop_code(EmitBuf *u, const CpuLoop *l, int ind, const CpuLoop *outer, const LoopStep *at);

static void emit_step(EmitBuf *u, const CpuLoop *l, const LoopStep *st, int ind) {
  char r1[32];
  if (st->inner) {
    emit_printf(u, "%*s{ /* nested loop */\n", ind, "");
    emit_loop_code(u, st->inner, ind + 2, l, st);
    emit_printf(u, "%*s}\n", ind, "");
    return;
  }
  const CpuKernel *k = st->k;
  emit_printf(u, "%*s{ char *const b[%d] = {", ind, "", st->nb);
  for (int j = 0; j < st->nb; j++) {
    cellref(r1, sizeof r1, l, st->cells[j]);
    emit_printf(u, "%s%s", j ? ", " : "", r1);
  }
  emit_printf(u, "};");
  if (st->inplace) emit_printf(u, " %s_ip(b);", k->sym);
  else if (!small_kernel(k)) emit_printf(u, " launch(ctx, %d, b);", st->gid);
  else
    for (int p = 0; p < k->nparts; p++) emit_printf(u, " %s_p%d(b, 0, %lldll);", k->sym, p, (long long)k->outer[p]);
  emit_printf(u, " }\n");
}

/* The cells of l that its steps, copies and test use (their pointers read into locals). */
static void mark_cells(const CpuLoop *l, bool *used) {
  for (int q = 0; q < l->ncond + l->nbody; q++) {
    const LoopStep *st = q < l->ncond ? &l->cond[q] : &l->body[q - l->ncond];
    if (st->inner) {
      for (int e = 0; e < st->inner->ne; e++) used[st->cells[e]] = used[st->cells[st->inner->ne + e]] = true;
      continue;
    }
    for (int j = 0; j < st->nb; j++) used[st->cells[j]] = true;
  }
  used[l->cond_cell] = true;
  for (int e = 0; e < l->ne; e++)
    if (l->changes[e]) {
      used[e] = used[l->ne + e] = true;
      if (l->copy_from[e] >= 0) used[l->copy_from[e]] = true;
    }
}

/* Loop l's code: its table, the locals of its fixed cells, then (a loop nested in `outer` at step
 * `at`) its state copied in from the outer loop's cells, the trips, and the state copied out. */
static void emit_loop_code(EmitBuf *u, const CpuLoop *l, int ind, const CpuLoop *outer, const LoopStep *at) {
  int id = l->nid, ne = l->ne;
  char r1[32], r2[32];
  emit_printf(u, "%*schar **c%d = tables[%d];\n", ind, "", id, id);
  /* a nested loop's pass-through elements: read where the outer loop has them */
  for (int e = 0; outer && e < ne; e++)
    if (at->alias[e]) {
      cellref(r2, sizeof r2, outer, at->cells[e]);
      emit_printf(u, "%*sc%d[%d] = %s;\n", ind, "", id, e, r2);
    }
  bool *used = fx_calloc((size_t)l->ncells, sizeof *used);
  if (!used) {
    u->oom = true;
    return;
  }
  mark_cells(l, used);
  for (int k = 0; k < ne; k++) used[k] = true; /* the state, copied in and out */
  for (int k = 0; k < l->ncells; k++)
    if (used[k] && !(k < 2 * ne && swapped(l, k % ne))) emit_printf(u, "%*schar *const x%d_%d = c%d[%d];\n", ind, "", id, k, id, k);
  fx_free(used);
  for (int e = 0; outer && e < ne; e++) {
    if (at->alias[e]) continue;
    cellref(r1, sizeof r1, l, e);
    cellref(r2, sizeof r2, outer, at->cells[e]);
    emit_printf(u, "%*smemcpy(%s, %s, %lld);\n", ind, "", r1, r2, (long long)l->ebytes[e]);
  }
  emit_printf(u, "%*sint64_t t%d = 0;\n", ind, "", id);
  for (int q = 0; q < l->nbody; q++)
    if (l->body[q].hoisted) emit_step(u, l, &l->body[q], ind);
  if (l->for_loop) /* a known trip count: the body for_trips times, no condition */
    emit_printf(u, "%*sfor (; t%d < %lldLL; t%d++) {\n", ind, "", id, (long long)l->for_trips, id);
  else
    emit_printf(u, "%*sfor (;; t%d++) {\n", ind, "", id);
  emit_printf(u, "%*s  if ((t%d & 1023) == 0 && poll(ctx)) return 1;\n", ind, "", id);
  if (!l->for_loop) {
    for (int q = 0; q < l->ncond; q++) emit_step(u, l, &l->cond[q], ind + 2);
    cellref(r1, sizeof r1, l, l->cond_cell);
    emit_printf(u, "%*s  if (!*(const uint8_t *)%s) break;\n", ind, "", r1);
  }
  for (int q = 0; q < l->nbody; q++)
    if (!l->body[q].hoisted) emit_step(u, l, &l->body[q], ind + 2);
  /* the next state: every new value into its element's other buffer first (an element may be
     another's new value), then copied back or swapped */
  for (int e = 0; e < ne; e++)
    if (l->copy_from[e] >= 0) {
      cellref(r1, sizeof r1, l, ne + e);
      cellref(r2, sizeof r2, l, l->copy_from[e]);
      emit_printf(u, "%*s  memcpy(%s, %s, %lld);\n", ind, "", r1, r2, (long long)l->ebytes[e]);
    }
  for (int e = 0; e < ne; e++) {
    if (!l->changes[e]) continue;
    if (swapped(l, e)) {
      emit_printf(u, "%*s  { char *s = c%d[%d]; c%d[%d] = c%d[%d]; c%d[%d] = s; }\n", ind, "", id, e, id, e, id, ne + e, id,
                  ne + e);
    } else {
      cellref(r1, sizeof r1, l, e);
      cellref(r2, sizeof r2, l, ne + e);
      emit_printf(u, "%*s  memcpy(%s, %s, %lld);\n", ind, "", r1, r2, (long long)l->ebytes[e]);
    }
  }
  emit_printf(u, "%*s}\n", ind, "");
  emit_printf(u, "%*scounts[%d] += t%d; counts[%d] += 1; if (t%d > 1) counts[%d] += t%d - 1;\n", ind, "", 3 * id, id,
              3 * id + 1, id, 3 * id + 2, id);
  for (int e = 0; outer && e < ne; e++) {
    if (at->alias[e]) continue;
    cellref(r1, sizeof r1, outer, at->cells[ne + e]);
    cellref(r2, sizeof r2, l, e);
    emit_printf(u, "%*smemcpy(%s, %s, %lld);\n", ind, "", r1, r2, (long long)l->ebytes[e]);
  }
}

/* Whether every kernel of top's nest has its code in the unit being generated. */
static bool nest_in_unit(const CpuBackend *b, const CpuLoop *top) {
  for (int s = 0; s < top->nsteps; s++)
    if (top->steps[s]->k && top->steps[s]->k->unit != b->unit) return false;
  return true;
}

static uint64_t text_hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t k = 0; k < n; k++) {
    h ^= (unsigned char)s[k];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* Appends top's driver to unit (once per distinct text) and names it in top->sym. */
/* Whether driver text h is in the unit already (several stages prepared together can have the same
 * loop); notes it when not. False when out of memory. */
static bool driver_seen(CpuBackend *b, uint64_t h, bool *seen) {
  *seen = false;
  for (int q = 0; q < b->ndrivers; q++) *seen = *seen || b->drivers[q] == h;
  if (*seen) return true;
  if (b->ndrivers == b->capdrivers) {
    int nc = b->capdrivers ? b->capdrivers * 2 : 16;
    uint64_t *nd = fx_realloc(b->drivers, sizeof *nd * (size_t)nc);
    if (!nd) return false;
    b->drivers = nd;
    b->capdrivers = nc;
  }
  b->drivers[b->ndrivers++] = h;
  return true;
}

/* Names driver d (its body) after its text's hash, prefix_HASH, and adds it to unit under the
 * comment `what` unless an identical one is there already. Frees d. */
static bool add_driver(CpuBackend *b, CpuLoop *top, EmitBuf *d, EmitBuf *unit, const char *prefix, const char *what) {
  if (d->oom) {
    emit_buf_free(d);
    return false;
  }
  uint64_t h = text_hash(d->s, d->len);
  snprintf(top->sym, sizeof top->sym, "%s_%016llx", prefix, (unsigned long long)h);
  bool seen;
  bool ok = driver_seen(b, h, &seen);
  if (ok && !seen)
    emit_printf(unit, "/* %s */\nint %s(char ***tables, int64_t *counts, void *ctx, void (*launch)(void *, int, char *const *), "
                      "int (*poll)(void *))\n%s",
                what, top->sym, d->s);
  emit_buf_free(d);
  return ok;
}

static bool emit_driver(CpuBackend *b, CpuLoop *top, EmitBuf *unit) {
  EmitBuf d;
  emit_buf_init(&d);
  emit_printf(&d, "{\n");
  emit_loop_code(&d, top, 2, NULL, NULL);
  emit_printf(&d, "  (void)launch;\n  return 0;\n}\n\n");
  return add_driver(b, top, &d, unit, "fx_loop", "while loop");
}

/* ---------- the entry computation ----------
 *
 * A module's entry computation whose instructions are all generated kernels, while loops planned
 * as above and free ops runs as one call too, as XLA:CPU runs a program: the walker's half a
 * microsecond per instruction (the outputs' tensors, the reference counts, the hook) was most of a
 * small module's time (104 kernels of a few elements each). It is planned as a loop body run once:
 * the parameters are cells 0..nparams-1 (pointed at the arguments' data each run, never written),
 * every kernel output has a scratch cell of its own (at most LOOP_MAX_SCRATCH in all: a large
 * model keeps the walker, whose buffer slots reuse memory), and the root's arrays are copied into
 * the run's result (an argument returned as it is is returned by reference). */

static CpuLoop *plan_entry(CpuBackend *b, const IrComputation *c) {
  if (!c->root) return NULL;
  CpuLoop *l = fx_calloc(1, sizeof *l);
  LoopBuild lb = {.l = l, .entry = true};
  bool ok = l != NULL;
  if (ok) {
    l->entry = true;
    l->nparams = c->nparams;
    l->body_comp = c;
    l->pbytes = fx_calloc((size_t)(c->nparams ? c->nparams : 1), sizeof *l->pbytes);
    ok = l->pbytes != NULL;
  }
  for (int p = 0; ok && p < c->nparams; p++) {
    ok = new_cell(&lb, 0) == p && c->params[p] && plain_array(&c->params[p]->shape);
    if (ok) l->pbytes[p] = ir_shape_bytes(&c->params[p]->shape);
  }
  if (ok) ok = loop_steps(b, &lb, c, &l->body, &l->nbody);
  const IrInstr *root = c->root;
  int nout = root->op == IR_OP_TUPLE ? root->noperands : 1;
  if (ok) ok = nout >= 1 && (l->out_cells = fx_calloc((size_t)nout, sizeof *l->out_cells)) != NULL;
  for (int j = 0; ok && j < nout; j++) {
    const IrInstr *o = root->op == IR_OP_TUPLE ? root->operands[j] : root;
    ok = plain_array(&o->shape) && (l->out_cells[j] = cell_of(&lb, o)) >= 0;
  }
  l->nout = ok ? nout : 0;
  /* the kernels' outputs, for the buffer slots (the scratch limit is checked at the first run,
     when the slots are known) */
  if (ok) {
    l->cell_k = fx_calloc((size_t)l->ncells, sizeof *l->cell_k);
    l->cell_o = fx_calloc((size_t)l->ncells, sizeof *l->cell_o);
    l->slotted = fx_calloc((size_t)l->ncells, sizeof *l->slotted);
    ok = l->cell_k && l->cell_o && l->slotted;
  }
  for (int q = 0; ok && q < l->nbody; q++) {
    const LoopStep *st = &l->body[q];
    if (!st->k) continue;
    int nin = st->k->instr->noperands;
    for (int o = 0; o < st->nb - nin; o++) {
      l->cell_k[st->cells[nin + o]] = st->k;
      l->cell_o[st->cells[nin + o]] = o;
    }
  }
  if (ok) ok = (l->passed = fx_calloc(1, sizeof *l->passed)) != NULL;
  ptrmap_free(&lb.cellof);
  ptrmap_free(&lb.nested);
  if (!(l = outermost_ready(l, ok))) return NULL;
  l->body_comp = NULL;
  return l;
}

/* The entry's driver: every step once, in order. */
static bool emit_entry_driver(CpuBackend *b, CpuLoop *top, EmitBuf *unit) {
  EmitBuf d;
  emit_buf_init(&d);
  emit_printf(&d, "{\n  char **c0 = tables[0];\n");
  bool *used = fx_calloc((size_t)top->ncells, sizeof *used);
  if (!used) {
    emit_buf_free(&d);
    return false;
  }
  mark_cells(top, used);
  for (int j = 0; j < top->nout; j++) used[top->out_cells[j]] = true;
  for (int k = 0; k < top->ncells; k++)
    if (used[k]) emit_printf(&d, "  char *const x0_%d = c0[%d];\n", k, k);
  fx_free(used);
  emit_printf(&d, "  if (poll(ctx)) return 1;\n");
  for (int q = 0; q < top->nbody; q++) emit_step(&d, top, &top->body[q], 2);
  emit_printf(&d, "  counts[0] += 1; counts[1] += 1;\n  (void)launch;\n  return 0;\n}\n\n");
  return add_driver(b, top, &d, unit, "fx_entry", "entry computation");
}

bool cpu_entry_plan(CpuBackend *b, const IrComputation *entry, EmitBuf *unit, FxError *err) {
  if (!entry || ptrmap_get(&b->loops, entry)) return true;
  CpuLoop *l = plan_entry(b, entry);
  if (l && !nest_in_unit(b, l)) {
    loop_free(l);
    l = NULL;
  }
  if (!ptrmap_put(&b->loops, entry, l ? (void *)l : (void *)&loop_none)) {
    loop_free(l);
    return fx_error_set(err, NULL, 0, 0, "out of memory planning the entry computation");
  }
  if (l && !emit_entry_driver(b, l, unit)) return fx_error_set(err, NULL, 0, 0, "out of memory writing the entry's driver");
  return true;
}

bool cpu_loops_plan(CpuBackend *b, const IrComputation *const *comps, int n, EmitBuf *unit, FxError *err) {
  int nwhile = 0;
  for (int c = 0; c < n; c++)
    for (int q = 0; q < comps[c]->ninstrs; q++) {
      const IrInstr *w = comps[c]->instrs[q];
      if (w->op != IR_OP_WHILE || ptrmap_get(&b->loops, w)) continue;
      nwhile++;
      CpuLoop *l = plan_outermost(b, w);
      if (!ptrmap_put(&b->loops, w, l ? (void *)l : (void *)&loop_none)) {
        loop_free(l);
        return fx_error_set(err, NULL, 0, 0, "out of memory planning while loops");
      }
    }
  if (nwhile == 0) return true;
  /* the loops that run inside another's driver get none of their own */
  PtrMap nested = {0};
  bool ok = true;
  for (size_t q = 0; ok && q < b->loops.cap; q++) {
    if (!b->loops.keys[q] || b->loops.vals[q] == &loop_none) continue;
    const CpuLoop *l = b->loops.vals[q];
    for (int k = 1; ok && k < l->nloops; k++) ok = ptrmap_put(&nested, l->nest[k]->w, (void *)1);
  }

  /* in the computations' order, so that the unit's text (and its cache entry) is the same each time */
  for (int c = 0; ok && c < n; c++)
    for (int q = 0; ok && q < comps[c]->ninstrs; q++) {
      const IrInstr *w = comps[c]->instrs[q];
      CpuLoop *l = w->op == IR_OP_WHILE ? ptrmap_get(&b->loops, w) : NULL;
      if (!l || (void *)l == &loop_none || l->sym[0] || ptrmap_get(&nested, w) || !nest_in_unit(b, l)) continue;
      ok = emit_driver(b, l, unit);
    }
  ptrmap_free(&nested);
  if (!ok) return fx_error_set(err, NULL, 0, 0, "out of memory writing while loops' drivers");
  return true;
}

void cpu_loops_bind(CpuBackend *b, void *handle) {
  for (size_t q = 0; q < b->loops.cap; q++) {
    if (!b->loops.keys[q] || b->loops.vals[q] == &loop_none) continue;
    CpuLoop *l = b->loops.vals[q];
    if (!l->sym[0] || l->fn) continue;
    void *fn = dlsym(handle, l->sym);
    if (fn) memcpy(&l->fn, &fn, sizeof fn);
  }
}

/* ---------- running ---------- */

/* The memory and constants of every loop of top's nest. */
/* Whether kernel output o of k has a buffer slot of the plan in this run, and which. */
static int slot_of(const CpuBackend *b, const CpuKernel *k, int o, int64_t bytes) {
  if (!k || o >= CPU_MAX_SLOTTED) return -1;
  int sl = k->slot[o];
  if (sl < 0 || sl >= b->nslots || !b->slots || !b->slots[sl] || (int64_t)b->slots[sl]->bytes < bytes) return -1;
  return sl;
}

static bool materialize(CpuBackend *b, RtExec *x, CpuLoop *top) {
  for (int n = 0; n < top->nloops; n++) {
    CpuLoop *l = top->nest[n];
    int ne = l->ne;
    if (l->entry) { /* outputs with a slot take no scratch; the rest must fit the limit */
      int64_t total = 0;
      for (int c = 0; c < l->ncells; c++) {
        l->slotted[c] = slot_of(b, l->cell_k[c], l->cell_o[c], l->cbytes[c]) >= 0;
        if (!l->slotted[c]) total += (l->cbytes[c] + 63) / 64 * 64;
      }
      if (total > LOOP_MAX_SCRATCH) return false;
    }
    if (l->nconsts) {
      l->const_vals = fx_calloc((size_t)l->nconsts, sizeof *l->const_vals);
      if (!l->const_vals) return false;
    }
    for (int q = 0; q < l->nconsts; q++) {
      FxError ignore = {0};
      RtTensor *v = NULL;
      if (!rt_exec_instr(x, l->consts[q], NULL, &v, &ignore) || !v) return false;
      l->const_vals[q] = v;
      l->cell[l->const_cell[q]] = v->data;
    }
    for (int q = 0; q < l->nbody; q++)
      if (l->body[q].inplace && !l->body[q].k->ip) return false;
    int64_t total = 0;
    for (int c = 0; c < l->ncells; c++) {
      int64_t want = c < 2 * ne ? l->ebytes[c % ne] : l->entry && l->slotted[c] ? 0 : l->cbytes[c];
      total += (want + 63) / 64 * 64;
    }
    if (!(l->mem = fx_malloc((size_t)(total ? total : 64) + 64))) return false;
    char *p = (char *)(((uintptr_t)l->mem + 63) & ~(uintptr_t)63);
    for (int c = 0; c < l->ncells; c++) {
      int64_t want = c < 2 * ne ? l->ebytes[c % ne] : l->entry && l->slotted[c] ? 0 : l->cbytes[c];
      if (c < 2 * ne || want > 0) {
        l->cell[c] = p;
        p += (want + 63) / 64 * 64;
      }
    }
    top->tables[n] = l->cell;
  }
  top->ready = true;
  return true;
}

static bool walk(CpuBackend *b, RtExec *x, CpuLoop *top, CpuLoop *l, FxError *err);

static bool walk_step(CpuBackend *b, RtExec *x, CpuLoop *top, const CpuLoop *l, const LoopStep *st, FxError *err) {
  if (st->inner) {
    CpuLoop *in = st->inner;
    for (int e = 0; e < in->ne; e++)
      if (st->alias[e]) in->cell[e] = l->cell[st->cells[e]]; /* passed through: read where it is */
      else memcpy(in->cell[e], l->cell[st->cells[e]], (size_t)in->ebytes[e]);
    if (!walk(b, x, top, in, err)) return false;
    for (int e = 0; e < in->ne; e++)
      if (!st->alias[e]) memcpy(l->cell[st->cells[in->ne + e]], in->cell[e], (size_t)in->ebytes[e]);
    return true;
  }
  char *bufs[2 * EMIT_MAX_BUFFERS];
  for (int j = 0; j < st->nb; j++) bufs[j] = l->cell[st->cells[j]];
  CpuKernel *k = st->k;
  if (st->inplace) {
    k->ip(bufs);
    return true;
  }
  for (int p = 0; p < k->nparts; p++) {
    /* tiny kernels called directly; larger ones as the host launches them: timed, and split over
       the threads when large or slow (CartPole's steps over 2048 environments) */
    if (k->count[p] >= LOOP_LAUNCH_MIN) cpu_launch_part(b, k, p, bufs);
    else k->fns[p](bufs, 0, k->outer[p]);
  }
  return true;
}

/* Runs loop l of top's nest from the state in its current cells to the end, step by step (the
 * plan without a driver); counts its trips and runs in top->counts. */
static bool walk(CpuBackend *b, RtExec *x, CpuLoop *top, CpuLoop *l, FxError *err) {
  int ne = l->ne;
  int64_t trips = 0;
  for (int q = 0; q < l->nbody; q++)
    if (l->body[q].hoisted && !walk_step(b, x, top, l, &l->body[q], err)) return false;
  for (;;) {
    if ((trips & 1023) == 0 && !rt_exec_poll(x, err)) return false;
    if (l->for_loop) { /* a known trip count: no condition */
      if (trips >= l->for_trips) break;
    } else {
      for (int q = 0; q < l->ncond; q++)
        if (!walk_step(b, x, top, l, &l->cond[q], err)) return false;
      if (!*(const uint8_t *)l->cell[l->cond_cell]) break;
    }
    for (int q = 0; q < l->nbody; q++)
      if (!l->body[q].hoisted && !walk_step(b, x, top, l, &l->body[q], err)) return false;
    for (int e = 0; e < ne; e++)
      if (l->copy_from[e] >= 0) memcpy(l->cell[ne + e], l->cell[l->copy_from[e]], (size_t)l->ebytes[e]);
    for (int e = 0; e < ne; e++)
      if (l->changes[e]) {
        char *t = l->cell[e];
        l->cell[e] = l->cell[ne + e];
        l->cell[ne + e] = t;
      }
    trips++;
  }
  int64_t *c = &top->counts[3 * l->nid];
  c[0] += trips;
  c[1] += 1;
  if (trips > 1) c[2] += trips - 1;
  return true;
}

typedef struct {
  CpuBackend *b;
  RtExec *x;
  CpuLoop *top;
  FxError *err;
} DriverCtx;

static void driver_launch(void *vc, int step, char *const *bufs) {
  DriverCtx *c = vc;
  CpuKernel *k = c->top->steps[step]->k;
  for (int p = 0; p < k->nparts; p++) cpu_launch_part(c->b, k, p, bufs);
}

static int driver_poll(void *vc) {
  DriverCtx *c = vc;
  return !rt_exec_poll(c->x, c->err);
}

/* The counters and the profile after a run of top's nest: every kernel launch as the host would
 * have made it, so the run's figures stay the kernel plan's. */
static void account(CpuBackend *b, RtExec *x, const CpuLoop *top) {
  RtCounters *c = rt_exec_counters(x);
  for (int n = 0; n < top->nloops; n++) {
    const CpuLoop *l = top->nest[n];
    int64_t trips = top->counts[3 * n], runs = top->counts[3 * n + 1], saved = top->counts[3 * n + 2];
    if (!l->entry) c->while_iterations += trips;
    for (int q = 0; q < l->ncond + l->nbody; q++) {
      const LoopStep *st = q < l->ncond ? &l->cond[q] : &l->body[q - l->ncond];
      if (!st->k) continue; /* a nested loop counts itself */
      /* the condition runs once more than the body per run, and never in a for loop (a known trip
         count); a hoisted kernel counts every trip, as the kernel plan counts it (it ran once per
         run) */
      int64_t launches = q < l->ncond ? (l->for_loop ? 0 : trips + runs) : trips;
      if (st->hoisted && b->stats) b->stats->hoisted_launches += saved;
      c->launches += launches;
      c->bytes_read += launches * st->k->rbytes;
      c->bytes_written += launches * st->k->wbytes;
      if (st->inplace && b->stats) b->stats->inplace_updates += launches;
      RtKernelStat *s = cpu_stat_for(b->stats, st->k, st->k->instr);
      if (s) {
        s->launches += launches;
        s->bytes += launches * (st->k->rbytes + st->k->wbytes);
        s->native = true;
        s->how = "generated";
      }
    }
  }
}

/* Runs loop l (materialized) from state `init` into a new tuple *out. */
static bool loop_run(CpuBackend *b, RtExec *x, CpuLoop *l, const IrInstr *w, RtTensor *init, RtTensor **out, FxError *err) {
  int ne = l->ne;
  if (init->type != IR_TUPLE || init->ntuple != ne) return fx_error_set(err, NULL, 0, 0, "%s: a loop state of the wrong shape", w->name);
  for (int e = 0; e < ne; e++) {
    if ((int64_t)init->tuple[e]->bytes != l->ebytes[e])
      return fx_error_set(err, NULL, 0, 0, "%s: a loop state of the wrong shape", w->name);
    /* an element the loop never writes is read where the caller has it (no copy in or out) */
    if (l->passed[e]) l->cell[e] = init->tuple[e]->data;
    else memcpy(l->cell[e], init->tuple[e]->data, (size_t)l->ebytes[e]);
  }
  memset(l->counts, 0, sizeof *l->counts * (size_t)(3 * l->nloops));
  if (l->fn) {
    DriverCtx ctx = {.b = b, .x = x, .top = l, .err = err};
    if (l->fn(l->tables, l->counts, &ctx, driver_launch, driver_poll) != 0) return false;
  } else if (!walk(b, x, l, l, err)) {
    return false;
  }
  account(b, x, l);
  RtTensor *stackel[16];
  RtTensor **el = ne <= 16 ? stackel : fx_calloc((size_t)ne, sizeof *el);
  if (!el) return fx_error_set(err, NULL, 0, 0, "out of memory");
  int made = 0;
  for (; made < ne; made++) {
    if (l->passed[made]) {
      el[made] = rt_tensor_ref(init->tuple[made]);
      continue;
    }
    if (!(el[made] = rt_tensor_for_shape_uninit(&w->shape.tuple[made], err))) break;
    memcpy(el[made]->data, l->cell[made], (size_t)l->ebytes[made]);
  }
  *out = made == ne ? rt_tensor_tuple(el, ne, err) : NULL;
  for (int q = 0; q < made; q++) rt_tensor_unref(el[q]);
  if (el != stackel) fx_free(el);
  return *out != NULL;
}

bool cpu_loop_hook(CpuBackend *b, RtExec *x, const IrInstr *w, RtTensor **ops, RtTensor **out, bool *handled, FxError *err) {
  void *v = ptrmap_get(&b->loops, w);
  if (!v) { /* not planned at prepare: planned now, walked without a driver */
    CpuLoop *l = plan_outermost(b, w);
    v = l ? (void *)l : (void *)&loop_none;
    if (!ptrmap_put(&b->loops, w, v)) {
      loop_free(l);
      return true;
    }
  }
  if (v == &loop_none) return true;
  CpuLoop *l = v;
  if (!l->ready && !materialize(b, x, l)) { /* a constant the interpreter cannot make, no memory: the host's way */
    loop_free(l);
    ptrmap_put(&b->loops, w, &loop_none);
    return true;
  }
  double t0 = cpu_now_ns();
  if (!loop_run(b, x, l, w, ops[0], out, err)) return false;
  *handled = true;
  RtKernelStat *s = cpu_stat_for(b->stats, NULL, w);
  if (s) {
    s->launches++;
    s->total_ns += cpu_now_ns() - t0;
    s->native = true;
    s->how = "loop";
    s->why = NULL;
  }
  return true;
}

bool cpu_entry_hook(CpuBackend *b, RtExec *x, const IrComputation *c, RtTensor **args, int nargs, RtTensor **out,
                    bool *handled, FxError *err) {
  void *v = ptrmap_get(&b->loops, c);
  if (!v || v == &loop_none) return true;
  CpuLoop *l = v;
  if (!l->entry || !l->fn || nargs != l->nparams) return true;
  for (int p = 0; p < nargs; p++)
    if (!args[p] || args[p]->type == IR_TUPLE || (int64_t)args[p]->bytes != l->pbytes[p]) return true;
  if (!l->ready && !materialize(b, x, l)) { /* a constant the interpreter cannot make, no memory: the walker */
    loop_free(l);
    ptrmap_put(&b->loops, c, &loop_none);
    return true;
  }
  /* the outputs in the plan's buffer slots, as the walker places them (a slot cached from the
     previous run may have been replaced) */
  int nslotted = 0;
  for (int q = 0; q < l->ncells; q++) {
    if (!l->slotted[q]) continue;
    int sl = slot_of(b, l->cell_k[q], l->cell_o[q], l->cbytes[q]);
    if (sl < 0) return true; /* not this run: the walker */
    l->cell[q] = b->slots[sl]->data;
    nslotted++;
  }
  if (b->stats) b->stats->slot_outputs += nslotted;
  /* the profile's row for the whole entry, under its root's name: made before the kernels' own
     rows (the root may be one of them) */
  const IrInstr *root = c->root;
  RtKernelStat *st = cpu_stat_for(b->stats, NULL, root);
  int strow = st && b->stats ? (int)(st - b->stats->kernels) : -1;
  double t0 = cpu_now_ns();
  for (int p = 0; p < nargs; p++) l->cell[p] = args[p]->data;
  memset(l->counts, 0, sizeof *l->counts * (size_t)(3 * l->nloops));
  DriverCtx ctx = {.b = b, .x = x, .top = l, .err = err};
  if (l->fn(l->tables, l->counts, &ctx, driver_launch, driver_poll) != 0) return false;
  account(b, x, l);
  RtTensor *stackel[16];
  RtTensor **el = l->nout <= 16 ? stackel : fx_calloc((size_t)l->nout, sizeof *el);
  if (!el) return fx_error_set(err, NULL, 0, 0, "out of memory");
  int made = 0;
  for (; made < l->nout; made++) {
    int cl = l->out_cells[made];
    const IrShape *os = root->op == IR_OP_TUPLE ? &root->operands[made]->shape : &root->shape;
    if (cl < l->nparams && rt_tensor_matches(args[cl], os)) { /* an argument, returned as it is */
      el[made] = rt_tensor_ref(args[cl]);
      continue;
    }
    if (!(el[made] = rt_tensor_for_shape_uninit(os, err))) break;
    memcpy(el[made]->data, l->cell[cl], el[made]->bytes);
  }
  bool ok = made == l->nout;
  if (ok && root->op == IR_OP_TUPLE) ok = (*out = rt_tensor_tuple(el, l->nout, err)) != NULL;
  else if (ok) *out = rt_tensor_ref(el[0]);
  for (int q = 0; q < made; q++) rt_tensor_unref(el[q]);
  if (el != stackel) fx_free(el);
  if (!ok) return false;
  *handled = true;
  st = strow >= 0 ? &b->stats->kernels[strow] : NULL; /* the rows may have moved */
  if (st) {
    st->launches++;
    st->total_ns += cpu_now_ns() - t0;
    st->native = true;
    st->how = "entry";
    st->why = NULL;
  }
  return true;
}
