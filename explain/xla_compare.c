/* xla_compare.c — XLA's kernels beside fxplain's, and two compilations side by side
 * (compare-modules). Each kernel of one module is matched with the kernel of the other that
 * computes the same: the same multiset of instructions by opcode and shape. Names cannot be compared: XLA renames what it moves into a fusion (sub.3 -> sub.3.1) and
 * what it duplicates (.clone), so, as scripts/xla_compare.py does, kernels are compared by what
 * their instructions compute. */
#include <stdio.h>
#include <string.h>

#include <sys/stat.h>

#include "../compiler/hlo/hlo.h"
#include "format.h"
#include "xla_dump.h"

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

typedef struct {
  const IrInstr *k;
  char **names;
  int n, cap;
} KernelSet;

static bool launches(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_PARAMETER: case IR_OP_CONSTANT: case IR_OP_GET_TUPLE_ELEMENT: case IR_OP_TUPLE: case IR_OP_BITCAST:
    return false;
  default: return true;
  }
}

static void add_name(KernelSet *k, const IrInstr *i) {
  char b[256], sh[200];
  ir_shape_format(&i->shape, false, sh, sizeof sh);
  snprintf(b, sizeof b, "%s %s", ir_op_name(i->op), sh);
  if (k->n == k->cap) {
    int nc = k->cap ? k->cap * 2 : 8;
    char **g = fx_realloc(k->names, sizeof *g * (size_t)nc);
    if (!g) return;
    k->names = g;
    k->cap = nc;
  }
  k->names[k->n] = fx_strdup(b);
  if (k->names[k->n]) k->n++;
}

static void gather(KernelSet *k, const IrInstr *i) {
  const IrComputation *c = ir_instr_is_fusion(i) ? ir_fused_computation(i) : NULL;
  if (!c) {
    if (launches(i)) add_name(k, i);
    return;
  }
  for (int j = 0; j < c->ninstrs; j++) gather(k, c->instrs[j]);
}

static int kernel_sets(const IrModule *m, KernelSet **out) {
  const IrComputation *c = m->entry;
  int n = 0;
  KernelSet *ks = fx_calloc((size_t)(c ? c->ninstrs : 0) + 1, sizeof *ks);
  if (!ks) return -1;
  for (int j = 0; c && j < c->ninstrs; j++) {
    const IrInstr *i = c->instrs[j];
    if (i->dead || !launches(i)) continue;
    ks[n].k = i;
    gather(&ks[n], i);
    if (ks[n].n) n++;
  }
  *out = ks;
  return n;
}

static void sets_free(KernelSet *ks, int n) {
  for (int k = 0; k < n; k++) {
    for (int j = 0; j < ks[k].n; j++) fx_free(ks[k].names[j]);
    fx_free(ks[k].names);
  }
  fx_free(ks);
}

/* Instructions the two kernels have in common, as multisets of "opcode shape". */
static int common(const KernelSet *a, const KernelSet *b) {
  int c = 0;
  bool *used = fx_calloc((size_t)b->n + 1, sizeof *used);
  if (!used) return 0;
  for (int x = 0; x < a->n; x++)
    for (int y = 0; y < b->n; y++)
      if (!used[y] && strcmp(a->names[x], b->names[y]) == 0) {
        used[y] = true;
        c++;
        break;
      }
  fx_free(used);
  return c;
}

int xla_kernels_match(const IrModule *xla, const IrModule *mine, XlaKernelPair **out, int *nmine) {
  KernelSet *a = NULL, *b = NULL;
  int na = kernel_sets(xla, &a), nb = kernel_sets(mine, &b);
  XlaKernelPair *pairs = na >= 0 && nb >= 0 ? fx_calloc((size_t)na + 1, sizeof *pairs) : NULL;
  if (!pairs) {
    if (na >= 0) sets_free(a, na);
    if (nb >= 0) sets_free(b, nb);
    return -1;
  }
  for (int x = 0; x < na; x++) {
    int best = -1, bc = 0;
    for (int y = 0; y < nb; y++) {
      int c = common(&a[x], &b[y]);
      if (c > bc) bc = c, best = y;
    }
    pairs[x] = (XlaKernelPair){a[x].k->name, best >= 0 ? b[best].k->name : NULL, a[x].n, best >= 0 ? b[best].n : 0,
                               bc, best >= 0 && bc == a[x].n && bc == b[best].n};
  }
  if (nmine) *nmine = nb;
  sets_free(a, na);
  sets_free(b, nb);
  *out = pairs;
  return na;
}

void xla_dump_side_by_side(XlaDump *d, const DeviceProfile *device, const PassSettings *settings, XlaSideBySide *out) {
  memset(out, 0, sizeof *out);
  out->nxla = out->nmine = -1;
  int last = d->pipeline.npasses;
  int fs0 = xla_dump_fusion_stage(d);
  FxError e3;
  fx_error_clear(&e3);
  IrModule *xfin = last > 0 ? xla_dump_stage(d, last, NULL, &e3) : NULL;
  IrModule *mine = fs0 > 0 ? xla_dump_stage(d, fs0 - 1, NULL, &e3) : NULL;
  /* The priority pipeline from priority-fusion on: XLA's fusion pipeline (priority-fusion, cse and
   * dce, multi_output_fusion, cse and dce). */
  const Pipeline *pl = pipeline_lookup("priority");
  int first = 0;
  while (pl && first < pl->npasses && strcmp(pl->passes[first]->name, "priority-fusion") != 0) first++;
  for (int k = 0; mine && pl && first + k < pl->npasses; k++) {
    const Pass *p = pl->passes[first + k];
    ExplainLog *scratch = explain_log_new();
    if (!p || !scratch) {
      explain_log_free(scratch);
      break;
    }
    explain_log_begin_stage(scratch, k + 1, p->name);
    DecisionSink sk = explain_log_sink(scratch);
    FxError e2;
    fx_error_clear(&e2);
    PassContext cx = {&sk, device, settings, k + 1, p->name, &e2, NULL, false};
    IrModule *next = NULL;
    bool ch = false;
    bool good = pass_run_stage(p, mine, &cx, &next, &ch);
    explain_log_free(scratch);
    if (!good) break;
    if (next) {
      ir_module_free(mine);
      mine = next;
    }
  }
  out->xla = xfin;
  out->mine = mine;
  if (xfin && mine) out->nxla = xla_kernels_match(xfin, mine, &out->pairs, &out->nmine);
}

void xla_side_by_side_free(XlaSideBySide *sbs) {
  fx_free(sbs->pairs);
  if (sbs->xla) ir_module_free(sbs->xla);
  if (sbs->mine) ir_module_free(sbs->mine);
  memset(sbs, 0, sizeof *sbs);
}

int xla_disagreements(const ExplainLog *log, int stage, const ExplainRecord **out, int max) {
  int n = explain_stage_count(log, stage), found = 0;
  for (int k = 0; k < n; k++) {
    const ExplainRecord *r = explain_stage_record(log, stage, k);
    if (strcmp(r->pass, "priority-fusion") != 0 || !r->detail || !strstr(r->detail, "DISAGREE")) continue;
    if (found < max) out[found] = r;
    found++;
  }
  return found;
}

/* ---------- compare-modules ---------- */

/* A compilation's final module: a dump folder's after_optimizations (or last snapshot), or a file. */
static IrModule *final_module(const char *path, FxError *err) {
  if (!is_dir(path)) return hlo_load_file(path, err);
  XlaDump *d = xla_dump_scan(path, err);
  if (!d) return NULL;
  IrModule *m = NULL;
  if (xla_dump_select(d, NULL, err)) {
    const XlaDumpModule *dm = &d->mods[d->chosen];
    if (dm->after) m = hlo_load_file(dm->after, err);
    else m = xla_dump_stage(d, d->pipeline.npasses, NULL, err);
  }
  xla_dump_free(d);
  return m;
}

/* The decision log of a dump folder's main module, or NULL. */
static XlaFusionLog *dump_log(const char *path) {
  if (!is_dir(path)) return NULL;
  FxError e;
  fx_error_clear(&e);
  XlaDump *d = xla_dump_scan(path, &e);
  XlaFusionLog *l = NULL;
  if (d && xla_dump_select(d, NULL, &e)) {
    l = d->log;
    d->log = NULL;
  }
  xla_dump_free(d);
  return l;
}

static void print_step(FILE *out, const char *side, const XlaStep *st) {
  if (!st) {
    fprintf(out, "  %s: (no more steps)\n", side);
  } else if (st->kind == XLA_STEP_FUSION) {
    fprintf(out, "  %s: fused %s into %s, making %s\n", side, st->producer, st->consumer, st->fusion);
  } else {
    fprintf(out, "  %s: %s not fused: \"%s\"\n", side, st->producer, st->reason ? st->reason : "?");
  }
}

static bool ineligible_in(const XlaFusionLog *l, const XlaStep *st) {
  for (int k = 0; k < l->nsteps; k++)
    if (l->steps[k].kind == XLA_STEP_INELIGIBLE && strcmp(l->steps[k].producer, st->producer) == 0 &&
        strcmp(l->steps[k].reason ? l->steps[k].reason : "", st->reason ? st->reason : "") == 0)
      return true;
  return false;
}

/* The first fusion where the two logs differ (XLA makes its fusions in order; its priority
 * updates and ineligibility checks run in parallel, so those are compared as sets), then the
 * producers one log finds ineligible and the other does not. */
static void first_difference(FILE *out, const XlaFusionLog *a, const XlaFusionLog *b) {
  int i = 0, j = 0, n = 0;
  for (int side = 0; side < 2; side++) {
    const XlaFusionLog *x = side ? b : a, *y = side ? a : b;
    int shown = 0, more = 0;
    for (int k = 0; k < x->nsteps; k++) {
      const XlaStep *st = &x->steps[k];
      if (st->kind != XLA_STEP_INELIGIBLE || ineligible_in(y, st)) continue;
      bool dup = false;
      for (int q = 0; q < k && !dup; q++)
        dup = x->steps[q].kind == XLA_STEP_INELIGIBLE && strcmp(x->steps[q].producer, st->producer) == 0 &&
              strcmp(x->steps[q].reason ? x->steps[q].reason : "", st->reason ? st->reason : "") == 0;
      if (dup) continue;
      if (shown++ < 5) fprintf(out, "  ineligible only in %s: %s: \"%s\"\n", side ? "B" : "A", st->producer,
                               st->reason ? st->reason : "?");
      else more++;
    }
    if (more) fprintf(out, "  ... %d more ineligible only in %s\n", more, side ? "B" : "A");
  }
  for (;;) {
    while (i < a->nsteps && a->steps[i].kind != XLA_STEP_FUSION) i++;
    while (j < b->nsteps && b->steps[j].kind != XLA_STEP_FUSION) j++;
    const XlaStep *x = i < a->nsteps ? &a->steps[i] : NULL, *y = j < b->nsteps ? &b->steps[j] : NULL;
    if (!x && !y) {
      fprintf(out, "XLA's priority-fusion: the same %d fusions, in the same order, in both\n", n);
      return;
    }
    bool same = x && y && x->kind == y->kind && strcmp(x->producer, y->producer) == 0 &&
                (x->kind != XLA_STEP_FUSION || strcmp(x->consumer, y->consumer) == 0) &&
                (x->kind != XLA_STEP_INELIGIBLE || strcmp(x->reason ? x->reason : "", y->reason ? y->reason : "") == 0);
    if (!same) {
      fprintf(out, "XLA's priority-fusion: the first %d fusions agree; fusion %d differs:\n", n, n + 1);
      print_step(out, "A", x);
      print_step(out, "B", y);
      return;
    }
    n++;
    i++;
    j++;
  }
}

bool xla_compare_modules(const ExplainOut *o, const DeviceProfile *device, const char *path_a, const char *path_b,
                         int *bad, FxError *err) {
  const char *paths[2] = {path_a, path_b};
  IrModule *m[2] = {NULL, NULL};
  KernelPlan *p[2] = {NULL, NULL};
  bool ok = true;
  for (int k = 0; k < 2 && ok; k++) {
    FxError e;
    fx_error_clear(&e);
    m[k] = final_module(paths[k], &e);
    if (m[k]) p[k] = plan_build(m[k], device, &e);
    if (!p[k]) {
      *bad = k + 1;
      *err = e; /* where in the file, when it is a parse error */
      ok = false;
    }
  }
  if (ok) {
    /* Kernels by the set of source positions and opcodes they hold is too fine for renamed
     * clones: compare by kernel name and count, and list the kernels only one side has. */
    char mem[2][32], moved[2][32];
    for (int k = 0; k < 2; k++) {
      fx_format_bytes(mem[k], sizeof mem[k], (double)p[k]->slot_total, FX_BYTES_PLAN);
      fx_format_bytes(moved[k], sizeof moved[k], (double)(p[k]->bytes_read + p[k]->bytes_written), FX_BYTES_PLAN);
    }
    JsonWriter w;
    if (o->json) {
      json_init(&w, o->out);
      json_object_begin(&w);
      for (int k = 0; k < 2; k++) {
        json_key(&w, k ? "b" : "a");
        json_object_begin(&w);
        json_kv_str(&w, "module", m[k]->name);
        json_kv_int(&w, "kernels", p[k]->ncompute);
        json_kv_int(&w, "bytes", (long long)(p[k]->bytes_read + p[k]->bytes_written));
        json_kv_int(&w, "memory_bytes", (long long)p[k]->slot_total);
        json_kv_int(&w, "memory_without_reuse_bytes", (long long)p[k]->buffer_bytes);
        json_kv_double(&w, "est_us", p[k]->est_us);
        json_object_end(&w);
      }
    } else {
      fprintf(o->out, "%-10s %-30s %8s %14s %12s %14s\n", "", "module", "kernels", "bytes", "est. us", "memory");
      for (int k = 0; k < 2; k++)
        fprintf(o->out, "%-10s %-30s %8d %14lld %12.2f %14s\n", k ? "B" : "A", m[k]->name, p[k]->ncompute,
                (long long)(p[k]->bytes_read + p[k]->bytes_written), p[k]->est_us, mem[k]);
      /* A fusion change that costs memory (openxla/xla#29620: 10x) shows here first. */
      if (p[0]->slot_total > 0 && p[1]->slot_total != p[0]->slot_total)
        fprintf(o->out, "memory for intermediate buffers: A %s, B %s (B/A %.2fx); bytes moved: A %s, B %s\n", mem[0],
                mem[1], (double)p[1]->slot_total / (double)p[0]->slot_total, moved[0], moved[1]);
    }
    for (int k = 0; k < 2; k++) {
      int only = 0;
      if (o->json) {
        json_key(&w, k ? "only_in_b" : "only_in_a");
        json_array_begin(&w);
      }
      const IrComputation *c = m[k]->entry;
      for (int j = 0; c && j < c->ninstrs; j++) {
        const IrInstr *i = c->instrs[j];
        if (i->op != IR_OP_FUSION) continue;
        const IrInstr *other = ir_module_find_instr(m[1 - k], i->name);
        if (other && other->op == IR_OP_FUSION) continue;
        char loc[300];
        const IrComputation *fc = ir_fused_computation(i);
        loc[0] = 0;
        if (fc && fc->root) xla_source_short(m[k], fc->root, loc, sizeof loc);
        if (o->json) {
          json_object_begin(&w);
          json_kv_str(&w, "fusion", i->name);
          json_kv_str(&w, "kind", ir_fusion_kind(i));
          json_kv_str(&w, "source", loc[0] ? loc : NULL);
          json_object_end(&w);
        } else if (only++ < 12) {
          fprintf(o->out, "  only in %s: %s (%s) %s\n", k ? "B" : "A", i->name, ir_fusion_kind(i), loc);
        }
      }
      if (o->json) json_array_end(&w);
      else if (only > 12) fprintf(o->out, "  ... %d more only in %s\n", only - 12, k ? "B" : "A");
    }
    if (o->json) {
      json_object_end(&w);
      fputc('\n', o->out);
    } else {
      XlaFusionLog *la = dump_log(path_a), *lb = dump_log(path_b);
      if (la && lb) first_difference(o->out, la, lb);
      xla_fusion_log_free(la);
      xla_fusion_log_free(lb);
    }
  }
  for (int k = 0; k < 2; k++) {
    if (p[k]) plan_free(p[k]);
    if (m[k]) ir_module_free(m[k]);
  }
  return ok;
}
