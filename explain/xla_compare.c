/* xla_compare.c — XLA's kernels beside fxplain's: each kernel of one module matched with the
 * kernel of the other that computes the same: the same multiset of instructions by opcode and
 * shape. Names cannot be compared: XLA renames what it moves into a fusion (sub.3 -> sub.3.1) and
 * what it duplicates (.clone), so, as scripts/xla_compare.py does, kernels are compared by what
 * their instructions compute. */
#include <stdio.h>
#include <string.h>

#include "xla_dump.h"

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
  static const char *const passes[] = {"priority-fusion", "multi_output_fusion"};
  for (int k = 0; mine && k < 2; k++) {
    const Pass *p = pass_lookup(passes[k]);
    ExplainLog *scratch = explain_log_new();
    if (!p || !scratch) {
      explain_log_free(scratch);
      break;
    }
    explain_log_begin_stage(scratch, k + 1, p->name);
    DecisionSink sk = explain_log_sink(scratch);
    FxError e2;
    fx_error_clear(&e2);
    PassContext cx = {&sk, device, settings, k + 1, p->name, &e2};
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
