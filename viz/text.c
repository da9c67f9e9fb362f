/* text.c — `show graph`: a compact terminal picture of one computation of a stage.
 *
 * It lists the kernels in execution order — each fusion with its member instructions, each
 * library call with the library it goes to, each unfused compute op, loop control with the
 * computations it runs — then the values that cross between kernels (written to memory), with
 * their sizes. Parameters, constants, tuples, get-tuple-element and bitcasts launch nothing and
 * appear only as sources of kernel inputs. When the caller has the kernel plan, its kernels are
 * the ones listed (with their bytes, launches and estimated time). */
#include <string.h>

#include "../explain/json.h"
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
 * jit(...)), distinct, in order, up to 12 (*more: how many others); none for a module without
 * that metadata. */
typedef struct {
  char names[12][96];
  int n, more;
} JaxNames;

static void collect_jax_names(const IrInstr *k, JaxNames *jn) {
  const IrComputation *body = ir_fused_computation(k);
  const IrInstr *one[1] = {k};
  const IrInstr *const *list = body ? (const IrInstr *const *)body->instrs : one;
  int n = body ? body->ninstrs : 1;
  jn->n = jn->more = 0;
  for (int j = 0; j < n; j++) {
    const IrInstr *b = list[j];
    if (!viz_live(b) || b->op == IR_OP_PARAMETER) continue;
    char name[96];
    xla_user_name(b, name, sizeof name);
    if (!name[0]) continue;
    bool dup = false;
    for (int q = 0; q < jn->n && !dup; q++) dup = strcmp(jn->names[q], name) == 0;
    if (dup) continue;
    if (jn->n == 12) {
      jn->more++;
      continue;
    }
    snprintf(jn->names[jn->n++], sizeof jn->names[0], "%s", name);
  }
}

/* "JAX names: layer/dot_general layer/add layer/tanh mul". */
static void jax_names(FILE *out, const IrInstr *k, Wrap *wr) {
  JaxNames jn;
  collect_jax_names(k, &jn);
  if (!jn.n) return;
  fprintf(out, "        ");
  wr->col = 8;
  wrap_word(wr, "JAX names:");
  for (int q = 0; q < jn.n; q++) wrap_word(wr, jn.names[q]);
  if (jn.more) {
    char word[32];
    snprintf(word, sizeof word, "(+%d more)", jn.more);
    wrap_word(wr, word);
  }
  fputc('\n', out);
}

/* The kernel whose output operand j of kernel i (in c) reads from memory, when that value crosses
 * between two kernels of c: through get-tuple-element and bitcast, the first operand of i to
 * read it (a value crosses once per pair). NULL otherwise. */
static const IrInstr *crossing_source(const IrComputation *c, const int *knum, int nmap, const IrInstr *i, int j) {
  const IrInstr *src = source_of(i->operands[j]);
  if (!src || src->parent != c || src->id < 0 || src->id >= nmap || !knum[src->id] || src == i) return NULL;
  for (int q = 0; q < j; q++)
    if (source_of(i->operands[q]) == src) return NULL;
  return src;
}

/* Whether i is one of the kernels knum numbers. */
static bool numbered(const int *knum, int nmap, const IrInstr *i) { return viz_live(i) && i->id >= 0 && i->id < nmap && knum[i->id]; }

/* Numbers the kernels of c (knum[id] = 1, 2, ... in order; 0 for the rest): with the plan's
 * numbers, its kernels are the kernels (a reshape that is only a new view of a buffer launches
 * nothing there). counts: kernels, fusions, library calls, loop control. */
static void number_kernels(const IrComputation *c, const VizNumbers *numbers, int *knum, int nmap, int counts[4]) {
  counts[0] = counts[1] = counts[2] = counts[3] = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!viz_live(i) || viz_kernel_kind(i) == VIZ_K_NONE) continue;
    if (numbers && !numbers_of(numbers, i->name)) continue;
    if (i->id >= 0 && i->id < nmap) knum[i->id] = ++counts[0];
    VizKernelKind kk = viz_kernel_kind(i);
    if (ir_instr_is_fusion(i)) counts[1]++;
    else if (kk == VIZ_K_LIBRARY) counts[2]++;
    else if (kk == VIZ_K_CONTROL) counts[3]++;
  }
}

static const IrComputation *graph_computation(const IrModule *m, const char *comp, FxError *err);

bool viz_text_graph(FILE *out, const IrModule *m, const char *comp, const VizNumbers *numbers, int width,
                    FxError *err) {
  const IrComputation *c = graph_computation(m, comp, err);
  if (!c) return false;
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
  int counts[4];
  number_kernels(c, numbers, knum, nmap, counts);
  int nk = counts[0], nfusion = counts[1], nlib = counts[2], nctl = counts[3];
  fprintf(out, "%s \xc2\xb7 %s: %d kernel%s (%d fusion%s, %d library call%s, %d loop control, %d unfused)\n",
          m->name ? m->name : "module", c->name, nk, nk == 1 ? "" : "s", nfusion, nfusion == 1 ? "" : "s", nlib,
          nlib == 1 ? "" : "s", nctl, nk - nfusion - nlib - nctl);
  int shown = 0;
  char shape[64], bytes[32], word[320], lib[128];
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!numbered(knum, nmap, i)) continue;
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
    if (!numbered(knum, nmap, i)) continue;
    for (int j = 0; j < i->noperands; j++) {
      const IrInstr *src = crossing_source(c, knum, nmap, i, j);
      if (!src) continue;
      int64_t b = ir_shape_bytes(&i->operands[j]->shape);
      total += b;
      if (ncross++ == 0) fprintf(out, "between kernels (written to memory, read back):\n");
      if (ncross <= MAX_KERNELS_SHOWN) {
        viz_fmt_bytes(b, bytes, sizeof bytes);
        char tag[160];
        int decision;
        bool tagged = numbers && numbers->edge_tag && numbers->edge_tag(numbers->edge_ctx, src, i, tag, sizeof tag, &decision);
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

/* ---------- the same as JSON ---------- */

static const IrComputation *graph_computation(const IrModule *m, const char *comp, FxError *err) {
  const IrComputation *c = comp ? ir_module_find_computation(m, comp) : m->entry;
  if (!c && comp) fx_error_set(err, NULL, 0, 0, "no computation named '%s' in module %s", comp, m->name);
  else if (!c) fx_error_set(err, NULL, 0, 0, "module %s has no entry computation", m->name);
  return c;
}

/* A fused body: its instructions, each with what it reads (a parameter as the value it stands for). */
static void json_body(JsonWriter *w, const IrComputation *c) {
  const IrInstr *f = c->fusion_instr;
  json_kv_str(w, "body_of", f->name);
  json_kv_str(w, "kind", viz_kernel_kind_name(viz_kernel_kind(f)));
  json_key(w, "instructions");
  json_array_begin(w);
  char shape[64];
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!viz_live(i) || i->op == IR_OP_PARAMETER) continue;
    json_object_begin(w);
    json_kv_str(w, "name", i->name);
    json_kv_str(w, "op", ir_op_name(i->op));
    viz_fmt_shape(&i->shape, shape, sizeof shape, 40);
    json_kv_str(w, "shape", shape);
    json_key(w, "reads");
    json_array_begin(w);
    for (int j = 0; j < i->noperands; j++) {
      const IrInstr *o = i->operands[j];
      json_object_begin(w);
      json_kv_str(w, "name", o->name);
      bool outside = o->op == IR_OP_PARAMETER && o->param_number < f->noperands;
      json_kv_str(w, "from_memory", outside ? f->operands[o->param_number]->name : NULL);
      json_object_end(w);
    }
    json_array_end(w);
    json_object_end(w);
  }
  json_array_end(w);
}

bool viz_json_graph(FILE *out, const IrModule *m, const char *comp, const VizNumbers *numbers, FxError *err) {
  const IrComputation *c = graph_computation(m, comp, err);
  if (!c) return false;
  JsonWriter w;
  json_init(&w, out);
  json_object_begin(&w);
  json_kv_str(&w, "module", m->name);
  json_kv_str(&w, "computation", c->name);
  if (c->fusion_instr) {
    json_body(&w, c);
    json_object_end(&w);
    return true;
  }
  int nmap = m->next_id + 1;
  int *knum = fx_calloc((size_t)nmap, sizeof(int));
  if (!knum) return fx_error_set(err, NULL, 0, 0, "out of memory");
  int counts[4];
  number_kernels(c, numbers, knum, nmap, counts);
  json_kv_int(&w, "fusions", counts[1]);
  json_kv_int(&w, "library_calls", counts[2]);
  json_kv_int(&w, "loop_control", counts[3]);
  json_kv_int(&w, "unfused", counts[0] - counts[1] - counts[2] - counts[3]);
  json_key(&w, "kernels");
  json_array_begin(&w);
  char shape[64], lib[128];
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!numbered(knum, nmap, i)) continue;
    VizKernelKind kk = viz_kernel_kind(i);
    json_object_begin(&w);
    json_kv_int(&w, "number", knum[i->id]);
    json_kv_str(&w, "name", i->name);
    json_kv_str(&w, "op", ir_op_name(i->op));
    json_kv_str(&w, "kind", kk == VIZ_K_CONTROL ? "control" : viz_kernel_kind_name(kk));
    json_kv_str(&w, "fusion_kind", ir_instr_is_fusion(i) ? ir_fusion_kind(i) : NULL);
    json_kv_str(&w, "library", kk == VIZ_K_LIBRARY ? viz_library_name(i, lib, sizeof lib) : NULL);
    viz_fmt_shape(&i->shape, shape, sizeof shape, 40);
    json_kv_str(&w, "shape", shape);
    const VizKernelNumbers *kn = numbers_of(numbers, i->name);
    if (kn) {
      json_kv_int(&w, "bytes_read", (long long)kn->bytes_read);
      json_kv_int(&w, "bytes_written", (long long)kn->bytes_written);
      json_kv_double(&w, "est_us", kn->est_us);
      json_kv_int(&w, "launches", (long long)kn->launches);
    }
    json_key(&w, "members");
    json_array_begin(&w);
    const IrComputation *body = ir_fused_computation(i);
    for (int j = 0; body && j < body->ninstrs; j++)
      if (viz_live(body->instrs[j]) && body->instrs[j]->op != IR_OP_PARAMETER) json_str(&w, body->instrs[j]->name);
    json_array_end(&w);
    JaxNames jn;
    collect_jax_names(i, &jn);
    json_key(&w, "jax_names");
    json_array_begin(&w);
    for (int q = 0; q < jn.n; q++) json_str(&w, jn.names[q]);
    json_array_end(&w);
    if (kk == VIZ_K_CONTROL) {
      IrComputation *called[8];
      int nc = ir_called_computations(i, called, 8);
      json_key(&w, "runs");
      json_array_begin(&w);
      for (int j = 0; j < nc && j < 8; j++) {
        json_object_begin(&w);
        json_kv_str(&w, "computation", called[j]->name);
        json_kv_int(&w, "kernels", count_kernels(called[j]));
        json_object_end(&w);
      }
      json_array_end(&w);
    }
    json_key(&w, "reads");
    json_array_begin(&w);
    for (int j = 0; j < i->noperands; j++) {
      const IrInstr *o = i->operands[j], *src = source_of(o);
      json_object_begin(&w);
      json_kv_str(&w, "name", o->name);
      json_kv_int(&w, "bytes", (long long)ir_shape_bytes(&o->shape));
      if (src && src->id >= 0 && src->id < nmap && knum[src->id] && src->parent == c) json_kv_int(&w, "kernel", knum[src->id]);
      else json_kv_null(&w, "kernel");
      json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
  }
  json_array_end(&w);
  /* Values crossing between kernels, as the text lists them. */
  json_key(&w, "between_kernels");
  json_array_begin(&w);
  long long total = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!numbered(knum, nmap, i)) continue;
    for (int j = 0; j < i->noperands; j++) {
      const IrInstr *src = crossing_source(c, knum, nmap, i, j);
      if (!src) continue;
      int64_t b = ir_shape_bytes(&i->operands[j]->shape);
      total += b;
      char tag[160];
      int decision = -1;
      bool tagged = numbers && numbers->edge_tag && numbers->edge_tag(numbers->edge_ctx, src, i, tag, sizeof tag, &decision);
      json_object_begin(&w);
      json_kv_int(&w, "from", knum[src->id]);
      json_kv_str(&w, "from_name", src->name);
      json_kv_int(&w, "to", knum[i->id]);
      json_kv_str(&w, "to_name", i->name);
      json_kv_int(&w, "bytes", (long long)b);
      if (decision >= 0) json_kv_int(&w, "decision", decision);
      else json_kv_null(&w, "decision");
      json_kv_str(&w, "why", tagged ? tag : NULL);
      json_object_end(&w);
    }
  }
  json_array_end(&w);
  json_kv_int(&w, "between_kernels_bytes", total);
  json_key(&w, "result");
  if (c->root) {
    const IrInstr *r = c->root;
    json_object_begin(&w);
    json_kv_str(&w, "name", r->name);
    json_key(&w, "kernels");
    json_array_begin(&w);
    int n = r->op == IR_OP_TUPLE ? r->noperands : 1;
    for (int j = 0; j < n; j++) {
      const IrInstr *src = r->op == IR_OP_TUPLE ? source_of(r->operands[j]) : r;
      if (src && src->id >= 0 && src->id < nmap && knum[src->id] && src->parent == c) json_int(&w, knum[src->id]);
      else json_null(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
  } else {
    json_null(&w);
  }
  json_object_end(&w);
  fx_free(knum);
  return true;
}
