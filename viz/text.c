/* text.c — `show graph`: a compact terminal picture of one computation of a stage.
 *
 * It lists the kernels in execution order — each fusion with its member instructions, each
 * library call with the library it goes to, each unfused compute op, loop control with the
 * computations it runs — then the values that cross between kernels (written to memory), with
 * their sizes. Parameters, constants, tuples, get-tuple-element and bitcasts launch nothing and
 * appear only as sources of kernel inputs. When the caller has the kernel plan, its kernels are
 * the ones listed (with their bytes, launches and estimated time). */
#include <string.h>

#include "../explain/xla_dump.h"
#include "viz_internal.h"

#define MAX_KERNELS_SHOWN 400

/* The value an operand really comes from: through get-tuple-element and bitcast. */
static const IrInstr *source_of(const IrInstr *i) {
  for (int guard = 0; guard < 64 && i && (i->op == IR_OP_GET_TUPLE_ELEMENT || i->op == IR_OP_BITCAST) &&
                      i->noperands > 0;
       guard++)
    i = i->operands[0];
  return i;
}

static int count_kernels(const IrComputation *c) {
  int n = 0;
  for (int k = 0; k < c->ninstrs; k++)
    if (viz_live(c->instrs[k]) && viz_kernel_kind(c->instrs[k]) != VIZ_K_NONE) n++;
  return n;
}

static const VizKernelNumbers *numbers_of(const VizNumbers *nums, const char *name) {
  if (!nums) return NULL;
  for (int k = 0; k < nums->count; k++)
    if (nums->items[k].name && strcmp(nums->items[k].name, name) == 0) return &nums->items[k];
  return NULL;
}

/* Appends words to a line, wrapping at width with the given indent. */
typedef struct {
  FILE *out;
  int col, width, indent;
} Wrap;

static void wrap_word(Wrap *w, const char *word) {
  int n = (int)strlen(word);
  if (w->col > w->indent && w->col + 1 + n > w->width) {
    fprintf(w->out, "\n%*s", w->indent, "");
    w->col = w->indent;
  } else if (w->col > w->indent) {
    fputc(' ', w->out);
    w->col++;
  }
  fputs(word, w->out);
  w->col += n;
}

/* A kernel's instructions by the names the user's JAX program gave them (XLA's op_name, without
 * jit(...)), distinct, in order: "JAX names: layer/dot_general layer/add layer/tanh mul". Nothing
 * for a module without that metadata. */
static void jax_names(FILE *out, const IrInstr *k, Wrap *wr) {
  const IrComputation *body = ir_fused_computation(k);
  const IrInstr *one[1] = {k};
  const IrInstr *const *list = body ? (const IrInstr *const *)body->instrs : one;
  int n = body ? body->ninstrs : 1;
  char seen[12][96];
  int ns = 0, more = 0;
  for (int j = 0; j < n; j++) {
    const IrInstr *b = list[j];
    if (!viz_live(b) || b->op == IR_OP_PARAMETER) continue;
    char name[96];
    xla_user_name(b, name, sizeof name);
    if (!name[0]) continue;
    bool dup = false;
    for (int q = 0; q < ns && !dup; q++) dup = strcmp(seen[q], name) == 0;
    if (dup) continue;
    if (ns == 12) {
      more++;
      continue;
    }
    snprintf(seen[ns++], sizeof seen[0], "%s", name);
  }
  if (!ns) return;
  fprintf(out, "        ");
  wr->col = 8;
  wrap_word(wr, "JAX names:");
  for (int q = 0; q < ns; q++) wrap_word(wr, seen[q]);
  if (more) {
    char word[32];
    snprintf(word, sizeof word, "(+%d more)", more);
    wrap_word(wr, word);
  }
  fputc('\n', out);
}

bool viz_text_graph(FILE *out, const IrModule *m, const char *comp, const VizNumbers *numbers, int width,
                    FxError *err) {
  const IrComputation *c = comp ? ir_module_find_computation(m, comp) : m->entry;
  if (!c) {
    if (comp) return fx_error_set(err, NULL, 0, 0, "no computation named '%s' in module %s", comp, m->name);
    return fx_error_set(err, NULL, 0, 0, "module %s has no entry computation", m->name);
  }
  if (width <= 0) width = 100;
  if (c->fusion_instr) {
    /* A fused body: one kernel; list its instructions and what each reads. */
    const IrInstr *f = c->fusion_instr;
    int nops = 0;
    for (int k = 0; k < c->ninstrs; k++)
      if (viz_live(c->instrs[k]) && c->instrs[k]->op != IR_OP_PARAMETER) nops++;
    fprintf(out, "%s \xc2\xb7 %s: the body of %s (%s fusion), %d instruction%s in one kernel; values between them stay in registers\n",
            m->name ? m->name : "module", c->name, f->name, viz_kernel_kind_name(viz_kernel_kind(f)), nops,
            nops == 1 ? "" : "s");
    for (int k = 0; k < c->ninstrs; k++) {
      const IrInstr *i = c->instrs[k];
      if (!viz_live(i) || i->op == IR_OP_PARAMETER) continue;
      char shape[64];
      viz_fmt_shape(&i->shape, shape, sizeof shape, 40);
      fprintf(out, "  %-20s %-16s %s  <-", i->name, ir_op_name(i->op), shape);
      for (int j = 0; j < i->noperands; j++) {
        const IrInstr *o = i->operands[j];
        if (o->op == IR_OP_PARAMETER && o->param_number < f->noperands)
          fprintf(out, " %s (from memory: %s)", o->name, f->operands[o->param_number]->name);
        else
          fprintf(out, " %s", o->name);
      }
      fputc('\n', out);
    }
    return true;
  }
  /* Kernel numbers by instruction id. */
  int nmap = m->next_id + 1;
  int *knum = fx_calloc((size_t)nmap, sizeof(int));
  if (!knum) return fx_error_set(err, NULL, 0, 0, "out of memory");
  int nk = 0, nfusion = 0, nlib = 0, nctl = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!viz_live(i) || viz_kernel_kind(i) == VIZ_K_NONE) continue;
    /* With the plan's numbers, its kernels are the kernels (a reshape that is only a new view of
     * a buffer launches nothing there). */
    if (numbers && !numbers_of(numbers, i->name)) continue;
    if (i->id >= 0 && i->id < nmap) knum[i->id] = ++nk;
    VizKernelKind kk = viz_kernel_kind(i);
    if (ir_instr_is_fusion(i)) nfusion++;
    else if (kk == VIZ_K_LIBRARY) nlib++;
    else if (kk == VIZ_K_CONTROL) nctl++;
  }
  fprintf(out, "%s \xc2\xb7 %s: %d kernel%s (%d fusion%s, %d library call%s, %d loop control, %d unfused)\n",
          m->name ? m->name : "module", c->name, nk, nk == 1 ? "" : "s", nfusion, nfusion == 1 ? "" : "s", nlib,
          nlib == 1 ? "" : "s", nctl, nk - nfusion - nlib - nctl);
  int shown = 0;
  char shape[64], bytes[32], word[320], lib[128];
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!viz_live(i) || i->id < 0 || i->id >= nmap || !knum[i->id]) continue;
    if (++shown > MAX_KERNELS_SHOWN) continue;
    VizKernelKind kk = viz_kernel_kind(i);
    char kind[160];
    if (ir_instr_is_fusion(i)) {
      const char *fk = ir_fusion_kind(i);
      snprintf(kind, sizeof kind, "%s fusion%s%s%s", viz_kernel_kind_name(kk), fk ? " (" : "", fk ? fk : "",
               fk ? ")" : "");
    } else if (kk == VIZ_K_LIBRARY) {
      snprintf(kind, sizeof kind, "library: %s", viz_library_name(i, lib, sizeof lib));
    } else if (kk == VIZ_K_CONTROL) {
      snprintf(kind, sizeof kind, "loop control");
    } else {
      snprintf(kind, sizeof kind, "%s (unfused %s)", viz_kernel_kind_name(kk), ir_op_name(i->op));
    }
    viz_fmt_shape(&i->shape, shape, sizeof shape, 40);
    char num[16];
    snprintf(num, sizeof num, "#%d", knum[i->id]);
    fprintf(out, "  %-4s %-20s %-28s %s\n", num, i->name, kind, shape);
    const VizKernelNumbers *kn = numbers_of(numbers, i->name);
    if (kn) {
      char r[32], w[32];
      viz_fmt_bytes(kn->bytes_read, r, sizeof r);
      viz_fmt_bytes(kn->bytes_written, w, sizeof w);
      fprintf(out, "        reads %s, writes %s, %.2f us per launch, %lld launch%s\n", r, w, kn->est_us,
              (long long)kn->launches, kn->launches == 1 ? "" : "es");
    }
    Wrap wr = {out, 0, width, 10};
    const IrComputation *body = ir_fused_computation(i);
    if (body) {
      int nops = 0;
      for (int j = 0; j < body->ninstrs; j++)
        if (viz_live(body->instrs[j]) && body->instrs[j]->op != IR_OP_PARAMETER) nops++;
      fprintf(out, "        ");
      wr.col = 8;
      snprintf(word, sizeof word, "members (%d):", nops);
      wrap_word(&wr, word);
      for (int j = 0; j < body->ninstrs; j++) {
        const IrInstr *b = body->instrs[j];
        if (viz_live(b) && b->op != IR_OP_PARAMETER) wrap_word(&wr, b->name);
      }
      fputc('\n', out);
    }
    jax_names(out, i, &wr);
    if (kk == VIZ_K_CONTROL) {
      IrComputation *called[8];
      int nc = ir_called_computations(i, called, 8);
      for (int j = 0; j < nc && j < 8; j++) {
        int kn2 = count_kernels(called[j]);
        fprintf(out, "        runs %s (%d kernel%s)\n", called[j]->name, kn2, kn2 == 1 ? "" : "s");
      }
    }
    if (i->noperands > 0) {
      fprintf(out, "        ");
      wr.col = 8;
      wrap_word(&wr, "reads");
      for (int j = 0; j < i->noperands; j++) {
        const IrInstr *o = i->operands[j];
        const IrInstr *src = source_of(o);
        viz_fmt_bytes(ir_shape_bytes(&o->shape), bytes, sizeof bytes);
        if (src && src->id >= 0 && src->id < nmap && knum[src->id] && src->parent == c)
          snprintf(word, sizeof word, "#%d %s (%s)%s", knum[src->id], o->name, bytes, j + 1 < i->noperands ? "," : "");
        else
          snprintf(word, sizeof word, "%s (%s)%s", o->name, bytes, j + 1 < i->noperands ? "," : "");
        wrap_word(&wr, word);
      }
      fputc('\n', out);
    }
  }
  if (shown > MAX_KERNELS_SHOWN)
    fprintf(out, "  ... %d more kernels (render --collapse draws them all)\n", shown - MAX_KERNELS_SHOWN);
  /* Values crossing between kernels: producer kernel → consumer kernel, deduplicated per pair. */
  int ncross = 0;
  int64_t total = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!viz_live(i) || i->id < 0 || i->id >= nmap || !knum[i->id]) continue;
    for (int j = 0; j < i->noperands; j++) {
      const IrInstr *src = source_of(i->operands[j]);
      if (!src || src->parent != c || src->id < 0 || src->id >= nmap || !knum[src->id] || src == i) continue;
      bool dup = false;
      for (int q = 0; q < j; q++)
        if (source_of(i->operands[q]) == src) dup = true;
      if (dup) continue;
      int64_t b = ir_shape_bytes(&i->operands[j]->shape);
      total += b;
      if (ncross++ == 0) fprintf(out, "between kernels (written to memory, read back):\n");
      if (ncross <= MAX_KERNELS_SHOWN) {
        viz_fmt_bytes(b, bytes, sizeof bytes);
        char tag[160];
        bool tagged = numbers && numbers->edge_tag && numbers->edge_tag(numbers->edge_ctx, src, i, tag, sizeof tag);
        fprintf(out, "  #%d %s \xe2\x94\x80\xe2\x94\x80 %s \xe2\x94\x80\xe2\x96\xb6 #%d %s%s%s\n", knum[src->id],
                src->name, bytes, knum[i->id], i->name, tagged ? "   " : "", tagged ? tag : "");
      }
    }
  }
  if (ncross > MAX_KERNELS_SHOWN) fprintf(out, "  ... %d more\n", ncross - MAX_KERNELS_SHOWN);
  if (ncross) {
    viz_fmt_bytes(total, bytes, sizeof bytes);
    fprintf(out, "  %d value%s, %s in all\n", ncross, ncross == 1 ? "" : "s", bytes);
  } else {
    fprintf(out, "no values cross between kernels\n");
  }
  if (c->root) {
    const IrInstr *r = c->root;
    fprintf(out, "result: %s", r->name);
    if (r->op == IR_OP_TUPLE) {
      fprintf(out, " (tuple of");
      for (int j = 0; j < r->noperands; j++) {
        const IrInstr *src = source_of(r->operands[j]);
        if (src && src->id >= 0 && src->id < nmap && knum[src->id] && src->parent == c)
          fprintf(out, "%s #%d", j ? "," : "", knum[src->id]);
        else
          fprintf(out, "%s %s", j ? "," : "", r->operands[j]->name);
      }
      fprintf(out, ")");
    } else if (knum[r->id]) {
      fprintf(out, " (#%d)", knum[r->id]);
    }
    fputc('\n', out);
  }
  fx_free(knum);
  return true;
}
