/* diff.c — the differential test: random computations through every stage of every pipeline, run
 * on the native CPU backend, must agree with the reference interpreter on the unfused program.
 *
 * A seeded generator writes random HLO modules (elementwise ops of every kind, compare/select,
 * converts between f32/f16/s32, broadcast, transpose, reshape, slice, pad with negative and
 * interior padding, concatenate, reverse, iota, reduce, dot, dynamic-slice, dynamic-update-slice)
 * over small random shapes; the HLO parser and verifier check they are well formed. Each module
 * goes through every pipeline pass by pass; every distinct stage is compiled (many modules per
 * compiler invocation, so the test fits in CI) and run on the same inputs, and its outputs are
 * compared with the interpreter's outputs for stage 0, or, after a pass that may drop a rounding
 * step (pass_excess_precision: simplify-fp-conversions), for that pass's stage: such a pass
 * computes more precisely on purpose, and every stage after it must agree with it.
 *
 *   runtime_diff [COUNT] [SEED] [BACKEND]     (defaults: 1000 graphs, seed 1, cpu; BACKEND gpu runs
 *   the stages on the GPU backend and exits 77, skipped, where there is no GPU) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../runtime/backend.h"
#include "../../runtime/cuda/cuda.h"

/* ---------- random numbers ---------- */

static uint64_t rng_state;
static uint32_t rnd(void) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(rng_state >> 33);
}
static int rndi(int n) { return (int)(rnd() % (uint32_t)n); }

/* ---------- the generator ---------- */

typedef struct {
  char name[16];
  IrType t;
  int rank;
  int64_t d[3];
} Val;

typedef struct {
  char *s;
  size_t len, cap;
} Str;

static void sp(Str *s, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(s->s ? s->s + s->len : NULL, s->cap - s->len, fmt, ap);
    va_end(ap);
    if ((size_t)n < s->cap - s->len) {
      s->len += (size_t)n;
      return;
    }
    s->cap = (s->cap + (size_t)n + 1) * 2;
    s->s = realloc(s->s, s->cap);
  }
}

static const char *tn(IrType t) { return ir_type_name(t); }

static void shape_str(const Val *v, char *buf, size_t n) {
  size_t l = (size_t)snprintf(buf, n, "%s[", tn(v->t));
  for (int k = 0; k < v->rank; k++) l += (size_t)snprintf(buf + l, n - l, "%s%lld", k ? "," : "", (long long)v->d[k]);
  snprintf(buf + l, n - l, "]");
}

typedef struct {
  Str body;
  Val vals[96];
  int n, next;
  bool need_add_f32, need_add_s32, need_max_f32, need_add_f16;
} Gen;

static Val *newval(Gen *g, IrType t, int rank, const int64_t *d) {
  Val *v = &g->vals[g->n++];
  snprintf(v->name, sizeof v->name, "v%d", g->next++);
  v->t = t;
  v->rank = rank;
  for (int k = 0; k < rank; k++) v->d[k] = d[k];
  return v;
}

static void emit_val(Gen *g, const Val *v, const char *fmt, ...) {
  char sh[64], rhs[512];
  shape_str(v, sh, sizeof sh);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rhs, sizeof rhs, fmt, ap);
  va_end(ap);
  sp(&g->body, "  %s = %s %s\n", v->name, sh, rhs);
}

static bool same_shape(const Val *a, const Val *b) {
  if (a->t != b->t || a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->d[k] != b->d[k]) return false;
  return true;
}

/* a value of v's shape and type to combine with v: an existing one, or a broadcast constant */
static Val *partner(Gen *g, const Val *v) {
  int start = rndi(g->n);
  for (int q = 0; q < g->n; q++) {
    Val *w = &g->vals[(start + q) % g->n];
    if (w != v && same_shape(w, v) && rndi(3)) return w;
  }
  int64_t none[1];
  Val *c = newval(g, v->t, 0, none);
  if (v->t == IR_S32) emit_val(g, c, "constant(%d)", rndi(7) - 3);
  else emit_val(g, c, "constant(%.3f)", (double)(rndi(2000) - 1000) / 400.0);
  Val *b = newval(g, v->t, v->rank, v->d);
  emit_val(g, b, "broadcast(%s), dimensions={}", c->name);
  return b;
}

static Val *pick(Gen *g, IrType want_or_invalid, int min_rank) {
  for (int tries = 0; tries < 20; tries++) {
    Val *v = &g->vals[g->n - 1 - rndi(g->n < 6 ? g->n : 6)];
    if ((want_or_invalid == IR_INVALID ? v->t != IR_PRED : v->t == want_or_invalid) && v->rank >= min_rank) return v;
  }
  return NULL;
}

static void dims_list(char *buf, size_t n, const int64_t *v, int k) {
  size_t l = (size_t)snprintf(buf, n, "{");
  for (int q = 0; q < k; q++) l += (size_t)snprintf(buf + l, n - l, "%s%lld", q ? "," : "", (long long)v[q]);
  snprintf(buf + l, n - l, "}");
}

static void step(Gen *g) {
  Val *v = pick(g, IR_INVALID, 0);
  if (!v) return;
  int kind = rndi(18);
  char lst[64];
  switch (kind) {
  case 0: case 1: { /* unary */
    static const char *fops[] = {"exponential", "tanh", "negate", "abs", "sine", "cosine", "floor", "logistic", "sqrt", "log", "round-nearest-even", "sign"};
    static const char *iops[] = {"negate", "abs", "not", "popcnt", "count-leading-zeros", "sign"};
    const char *op = v->t == IR_S32 ? iops[rndi(6)] : fops[rndi(12)];
    Val *r = newval(g, v->t, v->rank, v->d);
    emit_val(g, r, "%s(%s)", op, v->name);
    break;
  }
  case 2: case 3: case 4: { /* binary */
    static const char *fops[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder", "atan2"};
    static const char *iops[] = {"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical"};
    const char *op = v->t == IR_S32 ? iops[rndi(13)] : fops[rndi(9)];
    Val *w = partner(g, v);
    Val *r = newval(g, v->t, v->rank, v->d);
    emit_val(g, r, "%s(%s, %s)", op, v->name, w->name);
    break;
  }
  case 5: { /* compare + select */
    static const char *dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
    Val *w = partner(g, v);
    Val *p = newval(g, IR_PRED, v->rank, v->d);
    emit_val(g, p, "compare(%s, %s), direction=%s", v->name, w->name, dirs[rndi(6)]);
    Val *r = newval(g, v->t, v->rank, v->d);
    emit_val(g, r, "select(%s, %s, %s)", p->name, w->name, v->name);
    break;
  }
  case 6: { /* convert */
    IrType to = v->t == IR_F32 ? (rndi(2) ? IR_F16 : IR_S32) : IR_F32;
    Val *r = newval(g, to, v->rank, v->d);
    emit_val(g, r, "convert(%s)", v->name);
    break;
  }
  case 7: { /* transpose */
    if (v->rank < 2) return;
    int64_t perm[3] = {0, 1, 2}, d[3];
    for (int k = v->rank - 1; k > 0; k--) {
      int j = rndi(k + 1);
      int64_t t = perm[k];
      perm[k] = perm[j];
      perm[j] = t;
    }
    for (int k = 0; k < v->rank; k++) d[k] = v->d[perm[k]];
    Val *r = newval(g, v->t, v->rank, d);
    dims_list(lst, sizeof lst, perm, v->rank);
    emit_val(g, r, "transpose(%s), dimensions=%s", v->name, lst);
    break;
  }
  case 8: { /* reshape: flatten or split */
    int64_t n = 1;
    for (int k = 0; k < v->rank; k++) n *= v->d[k];
    int64_t d[3];
    int rank = 1;
    d[0] = n;
    if (n % 2 == 0 && rndi(2)) {
      d[0] = 2;
      d[1] = n / 2;
      rank = 2;
    }
    Val *r = newval(g, v->t, rank, d);
    emit_val(g, r, "reshape(%s)", v->name);
    break;
  }
  case 9: { /* slice */
    if (v->rank < 1) return;
    int64_t d[3];
    char sl[128];
    size_t l = (size_t)snprintf(sl, sizeof sl, "{");
    for (int k = 0; k < v->rank; k++) {
      int64_t st = rndi((int)v->d[k]), lim = st + 1 + rndi((int)(v->d[k] - st)), str = 1 + rndi(2);
      d[k] = (lim - st + str - 1) / str;
      l += (size_t)snprintf(sl + l, sizeof sl - l, "%s[%lld:%lld:%lld]", k ? ", " : "", (long long)st, (long long)lim, (long long)str);
    }
    snprintf(sl + l, sizeof sl - l, "}");
    Val *r = newval(g, v->t, v->rank, d);
    emit_val(g, r, "slice(%s), slice=%s", v->name, sl);
    break;
  }
  case 10: { /* pad */
    if (v->rank < 1) return;
    int64_t none[1], d[3];
    Val *c = newval(g, v->t, 0, none);
    emit_val(g, c, v->t == IR_S32 ? "constant(%d)" : "constant(%d.5)", rndi(5));
    char cfg[128];
    size_t l = 0;
    cfg[0] = 0;
    for (int k = 0; k < v->rank; k++) {
      int64_t in = rndi(2), lo = rndi(4) - 1, hi = rndi(4) - 1;
      int64_t base = v->d[k] + (v->d[k] - 1) * in;
      if (base + lo + hi < 1) lo = hi = 0;
      d[k] = base + lo + hi;
      l += (size_t)snprintf(cfg + l, sizeof cfg - l, "%s%lld_%lld_%lld", k ? "x" : "", (long long)lo, (long long)hi, (long long)in);
    }
    Val *r = newval(g, v->t, v->rank, d);
    emit_val(g, r, "pad(%s, %s), padding=%s", v->name, c->name, cfg);
    break;
  }
  case 11: { /* concatenate with itself or a partner */
    if (v->rank < 1) return;
    int dim = rndi(v->rank);
    Val *w = partner(g, v);
    int64_t d[3];
    for (int k = 0; k < v->rank; k++) d[k] = v->d[k];
    d[dim] *= 2;
    Val *r = newval(g, v->t, v->rank, d);
    emit_val(g, r, "concatenate(%s, %s), dimensions={%d}", v->name, w->name, dim);
    break;
  }
  case 12: { /* reverse */
    if (v->rank < 1) return;
    Val *r = newval(g, v->t, v->rank, v->d);
    emit_val(g, r, "reverse(%s), dimensions={%d}", v->name, rndi(v->rank));
    break;
  }
  case 13: { /* reduce */
    if (v->rank < 1 || v->t == IR_PRED) return;
    int64_t red[3], keep[3];
    int nr = 0, nk = 0;
    for (int k = 0; k < v->rank; k++) {
      if (rndi(2) || (k == v->rank - 1 && nr == 0)) red[nr++] = k;
      else keep[nk++] = v->d[k];
    }
    int64_t none[1];
    Val *c = newval(g, v->t, 0, none);
    bool mx = rndi(3) == 0;
    const char *comp;
    if (v->t == IR_S32) {
      emit_val(g, c, "constant(0)");
      comp = "add_s32";
      g->need_add_s32 = true;
    } else if (v->t == IR_F16) {
      emit_val(g, c, "constant(0)");
      comp = "add_f16";
      g->need_add_f16 = true;
    } else if (mx) {
      emit_val(g, c, "constant(-inf)");
      comp = "max_f32";
      g->need_max_f32 = true;
    } else {
      emit_val(g, c, "constant(0)");
      comp = "add_f32";
      g->need_add_f32 = true;
    }
    Val *r = newval(g, v->t, nk, keep);
    dims_list(lst, sizeof lst, red, nr);
    emit_val(g, r, "reduce(%s, %s), dimensions=%s, to_apply=%s", v->name, c->name, lst, comp);
    break;
  }
  case 14: { /* broadcast into a new leading dim */
    if (v->rank > 2) return;
    int64_t d[3], map[3];
    d[0] = 1 + rndi(3);
    for (int k = 0; k < v->rank; k++) {
      d[k + 1] = v->d[k];
      map[k] = k + 1;
    }
    Val *r = newval(g, v->t, v->rank + 1, d);
    dims_list(lst, sizeof lst, map, v->rank);
    emit_val(g, r, "broadcast(%s), dimensions=%s", v->name, lst);
    break;
  }
  case 15: { /* dot */
    if (v->rank != 2 || v->t != IR_F32) return;
    int64_t d[2] = {v->d[0], v->d[0]};
    Val *r = newval(g, v->t, 2, d);
    emit_val(g, r, "dot(%s, %s), lhs_contracting_dims={1}, rhs_contracting_dims={1}", v->name, v->name);
    break;
  }
  case 17: { /* gather rows along dim 0 at constant (possibly out-of-range) indices */
    if (v->rank < 1) return;
    int m = 1 + rndi(4);
    int64_t id[2] = {m, 1}, od[3], none[1];
    (void)none;
    Val *ix = newval(g, IR_S32, 2, id);
    char lit[128];
    size_t l = (size_t)snprintf(lit, sizeof lit, "{");
    for (int q = 0; q < m; q++) l += (size_t)snprintf(lit + l, sizeof lit - l, "%s{%d}", q ? ", " : "", rndi((int)v->d[0] + 2) - 1);
    snprintf(lit + l, sizeof lit - l, "}");
    emit_val(g, ix, "constant(%s)", lit);
    od[0] = m;
    char offs[32] = "{", sizes[64];
    size_t lo = 1, ls = (size_t)snprintf(sizes, sizeof sizes, "{1");
    for (int k = 1; k < v->rank; k++) {
      od[k] = v->d[k];
      lo += (size_t)snprintf(offs + lo, sizeof offs - lo, "%s%d", k > 1 ? "," : "", k);
      ls += (size_t)snprintf(sizes + ls, sizeof sizes - ls, ",%lld", (long long)v->d[k]);
    }
    snprintf(offs + lo, sizeof offs - lo, "}");
    snprintf(sizes + ls, sizeof sizes - ls, "}");
    Val *r = newval(g, v->t, v->rank, od);
    emit_val(g, r, "gather(%s, %s), offset_dims=%s, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes=%s",
             v->name, ix->name, offs, sizes);
    break;
  }
  case 16: { /* dynamic-slice / dynamic-update-slice with constant (possibly out of range) starts */
    if (v->rank < 1) return;
    int64_t none[1], d[3];
    char starts[96];
    size_t l = 0;
    starts[0] = 0;
    for (int k = 0; k < v->rank; k++) {
      Val *c = newval(g, IR_S32, 0, none);
      emit_val(g, c, "constant(%d)", rndi(8) - 2);
      l += (size_t)snprintf(starts + l, sizeof starts - l, ", %s", c->name);
      d[k] = 1 + rndi((int)v->d[k]);
    }
    Val *r = newval(g, v->t, v->rank, d);
    dims_list(lst, sizeof lst, d, v->rank);
    emit_val(g, r, "dynamic-slice(%s%s), dynamic_slice_sizes=%s", v->name, starts, lst);
    if (rndi(2)) {
      Val *u = newval(g, v->t, v->rank, v->d);
      emit_val(g, u, "dynamic-update-slice(%s, %s%s)", v->name, r->name, starts);
    }
    break;
  }
  }
}

static char *gen_module(int idx) {
  Gen g;
  memset(&g, 0, sizeof g);
  int np = 1 + rndi(3);
  for (int p = 0; p < np; p++) {
    int64_t d[3];
    int rank = rndi(4);
    for (int k = 0; k < rank; k++) d[k] = 1 + rndi(5);
    IrType t = rndi(10) < 7 ? IR_F32 : (rndi(3) ? IR_S32 : IR_F16);
    Val *v = newval(&g, t, rank, d);
    emit_val(&g, v, "parameter(%d)", p);
  }
  int nops = 3 + rndi(10);
  for (int s = 0; s < nops && g.n < 80; s++) step(&g);
  Str m = {0};
  sp(&m, "HloModule g%d\n", idx);
  if (g.need_add_f32) sp(&m, "add_f32 {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n");
  if (g.need_add_f16) sp(&m, "add_f16 {\n  x = f16[] parameter(0)\n  y = f16[] parameter(1)\n  ROOT s = f16[] add(x, y)\n}\n");
  if (g.need_max_f32) sp(&m, "max_f32 {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] maximum(x, y)\n}\n");
  if (g.need_add_s32) sp(&m, "add_s32 {\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n  ROOT s = s32[] add(x, y)\n}\n");
  sp(&m, "ENTRY main {\n%s", g.body.s);
  /* root: a tuple of the last values that are not pred */
  int nout = 1 + rndi(3), k = 0;
  char names[256] = "", shapes[512] = "";
  size_t ln = 0, ls = 0;
  for (int q = g.n - 1; q >= 0 && k < nout; q--) {
    if (g.vals[q].t == IR_PRED) continue;
    char sh[64];
    shape_str(&g.vals[q], sh, sizeof sh);
    ln += (size_t)snprintf(names + ln, sizeof names - ln, "%s%s", k ? ", " : "", g.vals[q].name);
    ls += (size_t)snprintf(shapes + ls, sizeof shapes - ls, "%s%s", k ? ", " : "", sh);
    k++;
  }
  sp(&m, "  ROOT out = (%s) tuple(%s)\n}\n", shapes, names);
  free(g.body.s);
  return m.s;
}

/* ---------- the test ---------- */

static void no_emit(void *ctx, const PassDecision *d) {
  (void)ctx;
  (void)d;
}

typedef struct {
  char *text;
  IrModule *stages[64];
  int nstages;
  int ref[64]; /* the stage whose interpreter outputs stage s must agree with */
} Case;

int main(int argc, char **argv) {
  int count = argc > 1 ? atoi(argv[1]) : 1000;
  uint64_t seed = argc > 2 ? (uint64_t)atoll(argv[2]) : 1;
  const RtBackend *B = argc > 3 && strcmp(argv[3], "gpu") == 0 ? &rt_backend_gpu : &rt_backend_cpu;
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 12345;
  const int batch = 100;
  int failures = 0, stages_run = 0, kernels = 0, interpreted = 0, compiled_units = 0;
  long long slot_outputs = 0; /* kernel outputs the CPU backend wrote into reused buffer slots */
  double t_start = (double)clock() / CLOCKS_PER_SEC;
  PassSettings settings;
  pass_settings_default(&settings);
  DecisionSink sink = {.emit = no_emit};
  Case *cases = calloc((size_t)batch, sizeof *cases);
  for (int b0 = 0, bsize = 10; b0 < count; b0 += bsize, bsize = batch) {
    int nb = count - b0 < bsize ? count - b0 : bsize;
    const IrModule *all[64 * 100];
    int nall = 0;
    for (int c = 0; c < nb; c++) {
      Case *cs = &cases[c];
      memset(cs, 0, sizeof *cs);
      cs->text = gen_module(b0 + c);
      FxError e = {0};
      IrModule *m0 = hlo_parse(cs->text, strlen(cs->text), "generated.hlo", &e);
      if (!m0) {
        fprintf(stderr, "graph %d: the generator wrote an invalid module: %s:%d:%d: %s\n%s\n", b0 + c, e.file, e.line,
                e.col, e.msg, cs->text);
        failures++;
        continue;
      }
      cs->ref[cs->nstages] = 0;
      cs->stages[cs->nstages++] = m0;
      all[nall++] = m0;
      for (int p = 0; p < pipeline_count(); p++) {
        const Pipeline *pl = pipeline_at(p);
        const char *only = getenv("FX_DIFF_PIPELINE"); /* debugging: one pipeline */
        if (only && strcmp(only, pl->name) != 0) continue;
        const IrModule *cur = m0;
        int ref = 0;
        for (int q = 0; q < pl->npasses && cs->nstages < 64; q++) {
          PassContext cx = {.sink = &sink, .device = device_default(), .settings = &settings, .stage = q + 1,
                            .pass = pl->passes[q]->name, .err = &e};
          IrModule *out = NULL;
          bool changed = false;
          if (!pass_run_stage(pl->passes[q], cur, &cx, &out, &changed)) {
            fprintf(stderr, "graph %d: pipeline %s, pass %s failed: %s\n%s\n", b0 + c, pl->name, pl->passes[q]->name,
                    e.msg, cs->text);
            failures++;
            break;
          }
          if (out) {
            /* a pass that drops a rounding step or reassociates (as XLA's do) computes on purpose
               numbers that differ from the stage before it: later stages must agree with it */
            if ((pass_excess_precision(pl->passes[q]) || cx.reassociated) && changed) ref = cs->nstages;
            cs->ref[cs->nstages] = ref;
            cs->stages[cs->nstages++] = out;
            all[nall++] = out;
            cur = out;
          }
        }
      }
    }
    /* compile every stage of the batch at once */
    FxError e = {0};
    void *be = B->create(&e);
    if (!be && B == &rt_backend_gpu) {
      printf("SKIPPED: %s\n", e.msg);
      for (int c = 0; c < nb; c++) {
        for (int s = 0; s < cases[c].nstages; s++) ir_module_free(cases[c].stages[s]);
        free(cases[c].text);
      }
      free(cases);
      return 77;
    }
    if (!be) {
      fprintf(stderr, "%s backend: %s\n", B->name, e.msg);
      return 1;
    }
    /* the first (small) batch as `run` compiles (-O3 -march=native); the rest at -O0, which computes the
       same IEEE results (no contraction, no fast-math) and compiles several times faster */
    const char *opt = getenv("FX_DIFF_OPT");
    CpuOptions o = {.opt = opt ? opt : b0 == 0 ? "-O3 -march=native" : "-O0", .threads = 1};
    if (B == &rt_backend_cpu) cpu_set_options(be, &o);
    if (!B->prepare(be, all, nall, &e)) {
      fprintf(stderr, "prepare: %s\n", e.msg);
      failures++;
    }
    int nk = 0, ni = 0, comp = 0, cached = 0;
    if (B == &rt_backend_cpu) cpu_prepare_counts(be, &comp, &cached, &nk, &ni);
    kernels += nk;
    interpreted += ni;
    compiled_units += comp + cached;
    for (int c = 0; c < nb; c++) {
      Case *cs = &cases[c];
      if (!cs->nstages) continue;
      IrModule *m0 = cs->stages[0];
      int np = m0->entry->nparams;
      RtTensor *args[8];
      for (int k = 0; k < np; k++) {
        args[k] = rt_tensor_for_shape(&m0->entry->params[k]->shape, &e);
        rt_tensor_fill_random(args[k], 99, (uint64_t)k);
      }
      RtOptions ro = {.seed = 7};
      RtTensor *wants[64] = {0};
      for (int s = 0; s < cs->nstages; s++) {
        int r = cs->ref[s];
        if (wants[r]) continue;
        if (!rt_interp_run(cs->stages[r], args, np, &ro, &wants[r], NULL, &e)) {
          fprintf(stderr, "graph %d: interpreter on stage %d: %s\n%s\n", b0 + c, r, e.msg, cs->text);
          failures++;
          wants[r] = NULL;
        }
      }
      for (int s = 0; s < cs->nstages; s++) {
        const RtTensor *want = wants[cs->ref[s]];
        if (!want) continue;
        RtTensor *got = NULL;
        fx_error_clear(&e);
        RtRunStats rs = {0};
        bool ran = B->run(be, cs->stages[s], args, np, &ro, &got, &rs, &e);
        slot_outputs += rs.slot_outputs;
        rt_run_stats_free(&rs);
        if (!ran) {
          fprintf(stderr, "graph %d stage %d: %s run: %s\n%s\n", b0 + c, s, B->name, e.msg, cs->text);
          failures++;
          continue;
        }
        stages_run++;
        RtCompare cmp;
        rt_compare(got, want, &cmp);
        if (!cmp.ok) {
          failures++;
          fprintf(stderr, "graph %d stage %d (against the interpreter on stage %d): output %d: %s\n%s\n", b0 + c, s,
                  cs->ref[s], cmp.tuple_index, cmp.what, cs->text);
          char *st = hlo_print_string(cs->stages[s]);
          if (st) fprintf(stderr, "the stage:\n%s\n", st);
          fx_free(st);
        }
        rt_tensor_unref(got);
      }
      for (int s = 0; s < cs->nstages; s++)
        if (wants[s]) rt_tensor_unref(wants[s]);
      for (int k = 0; k < np; k++) rt_tensor_unref(args[k]);
      if (failures > 20) break;
    }
    B->destroy(be);
    for (int c = 0; c < nb; c++) {
      Case *cs = &cases[c];
      for (int s = 0; s < cs->nstages; s++) ir_module_free(cs->stages[s]);
      free(cs->text);
    }
    if (failures > 20) break;
  }
  free(cases);
  double t = (double)clock() / CLOCKS_PER_SEC - t_start;
  printf("%d graphs, %d stage runs, %d kernels (%d on the interpreter's implementation), %d compiled units, "
         "%lld kernel outputs in reused buffer slots, %.1f s CPU: %d failures\n",
         count, stages_run, kernels, interpreted, compiled_units, slot_outputs, t, failures);
  /* the CPU backend takes the kernel plan's buffer assignment: random graphs with chains of unfused
     ops must have put outputs into reused memory, or the assignment is not used */
  if (B == &rt_backend_cpu && count >= 100 && slot_outputs == 0) {
    fprintf(stderr, "no kernel output was written into a reused buffer slot\n");
    failures++;
  }
  return failures ? 1 : 0;
}
