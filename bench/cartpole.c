/* cartpole.c — the CartPole benchmark of the case study (§IV–V of the paper), measured on the CPU.
 *
 * In one process, side by side: the unfused program (stage 0), each fused variant of the case
 * study after the classic pipeline (baseline with the in-loop RNG; random numbers precomputed;
 * the concatenate fused into its users as the paper's patched XLA did; the state carried as four
 * arrays; and the last unrolled 10 times when the pipeline has the unroll pass), a hand-written C
 * version of the same simulation (cartpole_hand.c, -O3 -march=native), and JAX/XLA on the CPU
 * when `python3 -c "import jax"` works. Every variant runs 2048 environments for 10,000 steps on
 * the native CPU backend; the table shows kernels launched, bytes moved, the median time and the
 * speedup over the fused baseline, next to the paper's ratios (measured on an RTX 2080 Ti).
 * The hand-written C must compute the four-array stage's numbers (same inputs, same f32
 * operations): when it does not, or a variant fails to run, the bench says so and exits 1.
 *
 * The best four-array variant is then timed against the hand-written C and JAX/XLA in back-to-back
 * rounds (--pairs, default 5; JAX runs as a server compiled once, cartpole_jax.py --serve), whose
 * median ratios a shared machine's load moves much less than the table's medians taken apart.
 *
 *   bench_cartpole [--steps N] [--repeat R] [--pairs P] [--threads N] [--libm] [--quick]
 *   (run from the repository root; --threads: `set threads`, --libm: `set vecmath libm`) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../compiler/fx/fx.h"
#include "../compiler/hlo/hlo.h"
#include "../compiler/passes/passes.h"
#include "../runtime/backend.h"

double cartpole_hand(int n, int steps, int pool, const float *actions, const float *const fresh[4], float *x,
                     float *x_dot, float *theta, float *theta_dot);

/* The entry parameter of m named `name`, or -1. */
static int param_named(const IrModule *m, const char *name) {
  for (int k = 0; k < m->entry->nparams; k++)
    if (strcmp(m->entry->params[k]->name, name) == 0) return k;
  return -1;
}

/* CPU time of the calling thread: what a run costs, with little of the wall-clock noise a shared
 * machine adds (time the thread waits for a core is not counted). */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void no_emit(void *ctx, const PassDecision *d) {
  (void)ctx;
  (void)d;
}

/* Loads a .fx script with `steps` substituted, returns stage 0. */
static IrModule *load_fx(const char *path, int steps) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s: cannot open (run from the repository root)\n", path);
    return NULL;
  }
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *s = strstr(buf, "let steps = ");
  if (s) {
    char *e = strchr(s, '\n');
    char tail[1 << 16];
    snprintf(tail, sizeof tail, "%s", e ? e : "");
    snprintf(s, sizeof buf - (size_t)(s - buf), "let steps = %d%s", steps, tail);
  }
  FxState *st = fx_state_new();
  FxError e = {0};
  IrModule *m = NULL;
  if (fx_feed(st, buf, path, 1, &e)) m = fx_build_module(st, "cartpole", &e);
  if (!m) fx_error_print(stderr, &e);
  fx_state_free(st);
  return m;
}

/* Runs a pipeline; returns the last stage (a new module). */
static IrModule *pipeline_last(const char *name, const IrModule *m0, const PassSettings *set) {
  const Pipeline *pl = pipeline_lookup(name);
  DecisionSink sink = {.emit = no_emit};
  IrModule *cur = NULL;
  FxError e = {0};
  for (int q = 0; pl && q < pl->npasses; q++) {
    if (pass_settings_is_disabled(set, pl->passes[q]->name)) continue;
    PassContext cx = {.sink = &sink, .device = device_default(), .settings = set, .stage = q + 1,
                      .pass = pl->passes[q]->name, .err = &e};
    IrModule *out = NULL;
    bool changed = false;
    if (!pass_run_stage(pl->passes[q], cur ? cur : m0, &cx, &out, &changed)) {
      fprintf(stderr, "pass %s: %s\n", pl->passes[q]->name, e.msg);
      break;
    }
    if (out) {
      if (cur) ir_module_free(cur);
      cur = out;
    }
  }
  return cur ? cur : ir_module_clone(m0);
}

typedef struct {
  const char *name;
  double paper; /* the paper's speedup over its baseline; 0 when it has none */
  int64_t launches, bytes;
  double secs;
  bool ok;
  char note[160];
} Row;

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static IrModule *classic(const IrModule *m0, const PassSettings *set) { return pipeline_last("classic", m0, set); }

/* The 1-minute load average, for the record ("?" when unknown). */
static const char *load_average(void) {
  static char buf[32] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%31s", buf) != 1) snprintf(buf, sizeof buf, "?");
    fclose(f);
  }
  return buf;
}

/* The largest difference between two runs' four state arrays, relative to max(|b|, 1); 1e30 when
 * either did not run. */
static double max_rel_diff(const RtTensor *a, const RtTensor *b, int n) {
  if (!a || !b || a->type != IR_TUPLE || b->type != IR_TUPLE || a->ntuple != 4 || b->ntuple != 4) return 1e30;
  double worst = 0;
  for (int q = 0; q < 4; q++)
    for (int e = 0; e < n; e++) {
      double x = ((const float *)a->tuple[q]->data)[e], y = ((const float *)b->tuple[q]->data)[e];
      double d = (x > y ? x - y : y - x) / (fabs(y) > 1 ? fabs(y) : 1);
      if (!(d <= worst)) worst = d;
    }
  return worst;
}

/* The inputs every variant and the hand-written C get: seeded, the state in [-0.05, 0.05), the
 * action pool in [0, 1) as uniform draws. */
static void fill_args(const IrModule *m, RtTensor **args) {
  FxError e = {0};
  for (int k = 0; k < m->entry->nparams && k < 16; k++) {
    args[k] = rt_tensor_for_shape(&m->entry->params[k]->shape, &e);
    rt_tensor_fill_random(args[k], 1, (uint64_t)k);
    if (args[k]->type == IR_F32)
      for (int64_t q = 0; q < args[k]->count; q++) {
        double v = rt_get_f(args[k], q);
        const char *pn = m->entry->params[k]->name;
        if (strstr(pn, "actions")) rt_set_f(args[k], q, (v + 1) / 2);
        else rt_set_f(args[k], q, v * 0.05);
      }
  }
}

static bool run_variant(const IrModule *m, int repeat, Row *row, RtTensor **out_keep) {
  FxError e = {0};
  void *be = rt_backend_cpu.create(&e);
  if (!be || !rt_backend_cpu.prepare(be, &m, 1, &e)) {
    snprintf(row->note, sizeof row->note, "%.150s", e.msg);
    if (be) rt_backend_cpu.destroy(be);
    return false;
  }
  int np = m->entry->nparams;
  RtTensor *args[16];
  fill_args(m, args);
  double t[16];
  bool ok = true;
  RtOptions o = {.seed = 1};
  for (int r = 0; r < repeat && ok; r++) {
    RtTensor *res = NULL;
    RtRunStats st = {0};
    double t0 = now_s();
    ok = rt_backend_cpu.run(be, m, args, np, &o, &res, &st, &e);
    t[r] = now_s() - t0;
    if (ok && getenv("FX_BENCH_PROFILE") && r == 0)
      for (int q = 0; q < st.nkernels; q++)
        fprintf(stderr, "  %-24s %-12s %-11s %8lld launches %9.3f ms\n", st.kernels[q].instr->name,
                ir_op_name(st.kernels[q].instr->op), st.kernels[q].how, (long long)st.kernels[q].launches,
                st.kernels[q].total_ns / 1e6);
    if (ok) {
      row->launches = st.counters.launches;
      row->bytes = st.counters.bytes_read + st.counters.bytes_written;
    }
    if (ok && out_keep && r == 0) *out_keep = rt_tensor_ref(res);
    rt_tensor_unref(res);
    rt_run_stats_free(&st);
  }
  if (!ok) snprintf(row->note, sizeof row->note, "%.150s", e.msg);
  qsort(t, (size_t)repeat, sizeof t[0], cmpd);
  row->secs = t[repeat / 2];
  row->ok = ok;
  for (int k = 0; k < np; k++) rt_tensor_unref(args[k]);
  rt_backend_cpu.destroy(be);
  return ok;
}

/* JAX/XLA on the CPU as a server (cartpole_jax.py --serve): compiled once, one run per request,
 * so that its runs can sit between the fused and hand-written runs of each round. */
typedef struct {
  pid_t pid;
  FILE *to, *from;
} JaxServer;

static bool jax_start(JaxServer *j, int n, int steps) {
  int in[2], out[2];
  memset(j, 0, sizeof *j);
  if (pipe(in) != 0) return false;
  if (pipe(out) != 0) {
    close(in[0]);
    close(in[1]);
    return false;
  }
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    close(in[1]);
    close(out[0]);
    char ns[32], ss[32];
    snprintf(ns, sizeof ns, "%d", n);
    snprintf(ss, sizeof ss, "%d", steps);
    execlp("python3", "python3", "bench/cartpole_jax.py", ns, ss, "1", "--serve", (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  j->pid = pid;
  j->to = fdopen(in[1], "w");
  j->from = fdopen(out[0], "r");
  char line[64];
  if (!j->to || !j->from || !fgets(line, sizeof line, j->from) || strncmp(line, "ready", 5) != 0) {
    if (j->to) fclose(j->to);
    if (j->from) fclose(j->from);
    waitpid(pid, NULL, 0);
    memset(j, 0, sizeof *j);
    return false;
  }
  return true;
}

static double jax_run(JaxServer *j) {
  char line[64];
  double secs = -1;
  if (fputs("run\n", j->to) < 0 || fflush(j->to) != 0 || !fgets(line, sizeof line, j->from) || sscanf(line, "%lf", &secs) != 1)
    return -1;
  return secs;
}

static void jax_stop(JaxServer *j) {
  if (!j->pid) return;
  fclose(j->to);
  fclose(j->from);
  waitpid(j->pid, NULL, 0);
}

/* Back-to-back rounds on a shared machine: one run of fused module m, one of the hand-written C on
 * the same inputs and, when jax is there, one of JAX/XLA, in an order that rotates from round to
 * round, `pairs` times; the medians of the per-round ratios move much less with the machine's
 * load than ratios of medians taken seconds apart. *med, *lo, *hi: fused / hand; *cpu_med: the
 * same in the calling thread's CPU time; *jax_med, *jax_lo, *jax_hi: fused / JAX (0 without jax). */
typedef struct {
  double med, lo, hi, cpu_med, jax_med, jax_lo, jax_hi;
} Rounds;

static bool paired_ratio(const IrModule *m, int n, int steps, int pool, int pairs, Rounds *out) {
  static const char *const names[9] = {"x0",     "x_dot0",      "theta0",      "theta_dot0",     "actions",
                                       "fresh_x", "fresh_x_dot", "fresh_theta", "fresh_theta_dot"};
  int idx[9];
  memset(out, 0, sizeof *out);
  for (int q = 0; q < 9; q++)
    if ((idx[q] = param_named(m, names[q])) < 0) return false;
  FxError e = {0};
  void *be = rt_backend_cpu.create(&e);
  if (!be || !rt_backend_cpu.prepare(be, &m, 1, &e)) {
    if (be) rt_backend_cpu.destroy(be);
    return false;
  }
  int np = m->entry->nparams;
  RtTensor *args[16];
  fill_args(m, args);
  const float *fresh[4];
  for (int q = 0; q < 4; q++) fresh[q] = args[idx[5 + q]]->data;
  float *st[4];
  for (int q = 0; q < 4; q++) st[q] = malloc(sizeof(float) * (size_t)n);
  double ratio[64], cpu_ratio[64], jratio[64];
  JaxServer jx;
  bool have_jax = jax_start(&jx, n, steps);
  bool ok = true;
  RtOptions o = {.seed = 1};
  for (int r = 0; r < pairs && ok; r++) {
    double tf = 0, cf = 0, th = 0, ch = 0, tj = -1;
    for (int k = 0; k < 3 && ok; k++) {
      int which = (r + k) % 3; /* 0 fused, 1 hand, 2 jax: each goes first in a third of the rounds */
      if (which == 0) {
        RtTensor *res = NULL;
        RtRunStats rs = {0};
        double t0 = now_s(), c0 = cpu_s();
        ok = rt_backend_cpu.run(be, m, args, np, &o, &res, &rs, &e);
        tf = now_s() - t0, cf = cpu_s() - c0;
        if (ok && getenv("FX_BENCH_PROFILE")) {
          double kern = 0;
          for (int q = 0; q < rs.nkernels; q++) kern += rs.kernels[q].total_ns;
          fprintf(stderr, "  round %d: run %.3f s, in kernels %.3f s, outside kernels %.2f us per step\n", r, tf, kern / 1e9,
                  (tf - kern / 1e9) / steps * 1e6);
        }
        rt_tensor_unref(res);
        rt_run_stats_free(&rs);
      } else if (which == 1) {
        for (int q = 0; q < 4; q++) memcpy(st[q], args[idx[q]]->data, sizeof(float) * (size_t)n);
        double c1 = cpu_s();
        th = cartpole_hand(n, steps, pool, args[idx[4]]->data, fresh, st[0], st[1], st[2], st[3]);
        ch = cpu_s() - c1;
      } else if (have_jax) {
        tj = jax_run(&jx);
      }
    }
    ratio[r] = tf / th;
    cpu_ratio[r] = ch > 0 ? cf / ch : 0;
    jratio[r] = tj > 0 ? tf / tj : 0;
    if (tj <= 0) have_jax = false;
  }
  if (ok) {
    qsort(ratio, (size_t)pairs, sizeof ratio[0], cmpd);
    out->med = ratio[pairs / 2];
    out->lo = ratio[0];
    out->hi = ratio[pairs - 1];
    qsort(cpu_ratio, (size_t)pairs, sizeof cpu_ratio[0], cmpd);
    out->cpu_med = cpu_ratio[pairs / 2];
    if (have_jax) {
      qsort(jratio, (size_t)pairs, sizeof jratio[0], cmpd);
      out->jax_med = jratio[pairs / 2];
      out->jax_lo = jratio[0];
      out->jax_hi = jratio[pairs - 1];
    }
  }
  jax_stop(&jx);
  for (int q = 0; q < 4; q++) free(st[q]);
  for (int k = 0; k < np; k++) rt_tensor_unref(args[k]);
  rt_backend_cpu.destroy(be);
  return ok;
}

int main(int argc, char **argv) {
  int steps = 10000, repeat = 3, n = 2048, pool = 100, pairs = 5;
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--steps") == 0 && k + 1 < argc) steps = atoi(argv[++k]);
    else if (strcmp(argv[k], "--repeat") == 0 && k + 1 < argc) repeat = atoi(argv[++k]);
    else if (strcmp(argv[k], "--quick") == 0) steps = 1000, repeat = 1;
    else if (strcmp(argv[k], "--pairs") == 0 && k + 1 < argc) pairs = atoi(argv[++k]);
    else if (strcmp(argv[k], "--threads") == 0 && k + 1 < argc) cpu_set_default_threads(atoi(argv[++k]));
    else if (strcmp(argv[k], "--libm") == 0) cpu_set_default_vecmath(false);
  }
  if (repeat < 1) repeat = 1;
  if (repeat > 16) repeat = 16;
  if (pairs < 0) pairs = 0;
  if (pairs > 64) pairs = 64;
  Row rows[16]; /* 0 unfused, 1 baseline, 2 pre-rng, 3 concat, 4 four arrays, 5 one kernel, 6 unrolled, 7 C, 8 JAX,
                  9 four arrays with libm, 10 unrolled on one thread (what vector math and threads each bring),
                  11 unrolled through the priority pipeline */
  int nrows = 0;
  memset(rows, 0, sizeof rows);
  PassSettings set;
  pass_settings_default(&set);

  IrModule *base0 = load_fx("scripts/cartpole.fx", steps);
  IrModule *pre0 = load_fx("scripts/cartpole_pre_rng.fx", steps);
  IrModule *sep0 = load_fx("scripts/cartpole_separate.fx", steps);
  if (!base0 || !pre0 || !sep0) return 1;

  printf("CartPole: %d environments x %d steps on the CPU backend (median of %d)\n\n", n, steps, repeat);
  fflush(stdout);

  Row *r;
  r = &rows[nrows++];
  r->name = "unfused (stage 0)";
  r->paper = 0;
  run_variant(base0, repeat, r, NULL);

  IrModule *base = classic(base0, &set);
  r = &rows[nrows++];
  r->name = "baseline: classic fusion";
  r->paper = 1.0;
  run_variant(base, repeat, r, NULL);

  IrModule *pre = classic(pre0, &set);
  r = &rows[nrows++];
  r->name = "random numbers precomputed";
  r->paper = 1.87;
  run_variant(pre, repeat, r, NULL);

  PassSettings patched = set;
  patched.concat_user_limit = 3;
  IrModule *prep = classic(pre0, &patched);
  r = &rows[nrows++];
  r->name = "+ concatenate fused (limit 3)";
  r->paper = 1.87 * 1.10;
  run_variant(prep, repeat, r, NULL);

  IrModule *sep = classic(sep0, &set);
  if (getenv("FX_BENCH_DUMP")) {
    FxError de = {0};
    hlo_print(stderr, sep, &de);
  }
  r = &rows[nrows++];
  r->name = "state as four arrays";
  r->paper = 3.41;
  RtTensor *vec_out = NULL;
  run_variant(sep, repeat, r, &vec_out);
  /* The same stage with libm's scalar math, untimed: the hand-written C (which calls libm) must
   * agree with it bit for bit. With vector math (SLEEF) each sin/cos is within 1 ulp of libm's but
   * not always the same ulp, and 10,000 steps of a chaotic simulation amplify that: the vector run
   * is held to `--check`'s tolerance over one step below, and its drift after all steps is shown. */
  RtTensor *sep_out = NULL;
  {
    Row libm_row = {0};
    bool vm = cpu_default_vecmath();
    cpu_set_default_vecmath(false);
    run_variant(sep, 1, &libm_row, &sep_out);
    cpu_set_default_vecmath(vm);
  }

  IrModule *merged = pipeline_last("priority", sep0, &set);
  r = &rows[nrows++];
  r->name = "four arrays, priority fusion";
  r->paper = 0;
  if (merged) run_variant(merged, repeat, r, NULL);

  IrModule *unr = NULL;
  r = &rows[nrows++];
  r->name = "+ loop unrolled 10x";
  r->paper = 10.56;
  if (pass_lookup("while-loop-unroll") || pass_lookup("loop-unroll")) {
    PassSettings u = set;
    u.unroll = 10;
    unr = classic(sep0, &u);
    run_variant(unr, repeat, r, NULL);
  } else {
    snprintf(r->note, sizeof r->note, "no unroll pass in this build");
  }

  /* hand-written C, same math as the four-array variant, same inputs. It must compute the same
   * numbers as the fused stage: a difference means the two programs are not the same simulation
   * (e.g. the script changed), and the comparison would be meaningless. */
  int status = 0;
  r = &rows[nrows++];
  r->name = "hand-written C (-O3)";
  r->paper = 0;
  {
    static const char *const names[9] = {"x0",     "x_dot0",      "theta0",      "theta_dot0",     "actions",
                                         "fresh_x", "fresh_x_dot", "fresh_theta", "fresh_theta_dot"};
    int idx[9];
    bool shapes_ok = sep->entry->nparams == 9;
    for (int q = 0; q < 9; q++) {
      idx[q] = param_named(sep, names[q]);
      if (idx[q] < 0) {
        shapes_ok = false;
        continue;
      }
      const IrShape *ps = &sep->entry->params[idx[q]]->shape;
      int64_t want = q < 4 ? n : (int64_t)pool * n;
      if (ps->type != IR_F32 || ir_shape_elements(ps) != want || (q >= 4 && (ps->rank != 2 || ps->dims[0] != pool)))
        shapes_ok = false;
    }
    if (!shapes_ok) {
      fprintf(stderr,
              "bench_cartpole: FAILED: scripts/cartpole_separate.fx no longer takes the parameters the hand-written\n"
              "version reads (x0, x_dot0, theta0, theta_dot0: f32[%d]; actions, fresh_x, fresh_x_dot, fresh_theta,\n"
              "fresh_theta_dot: f32[%d, %d]); update bench/cartpole_hand.c to the script's math\n",
              n, pool, n);
      return 1;
    }
    int np = sep->entry->nparams;
    RtTensor *args[16];
    fill_args(sep, args);
    const float *fresh[4];
    for (int q = 0; q < 4; q++) fresh[q] = args[idx[5 + q]]->data;
    double t[16];
    float *st[4];
    for (int q = 0; q < 4; q++) st[q] = malloc(sizeof(float) * (size_t)n);
    for (int rr = 0; rr < repeat; rr++) {
      for (int q = 0; q < 4; q++) memcpy(st[q], args[idx[q]]->data, sizeof(float) * (size_t)n);
      t[rr] = cartpole_hand(n, steps, pool, args[idx[4]]->data, fresh, st[0], st[1], st[2], st[3]);
    }
    qsort(t, (size_t)repeat, sizeof t[0], cmpd);
    r->secs = t[repeat / 2];
    r->ok = true;
    r->launches = 0;
    r->bytes = 0;
    /* same numbers as the generated code? Same f32 operations in the same order: they should agree
     * bit for bit; the tolerance only allows for a libm that rounds differently in one place. */
    const double tol = 1e-5;
    static const char *const outs[4] = {"x", "x_dot", "theta", "theta_dot"};
    if (!sep_out || sep_out->type != IR_TUPLE || sep_out->ntuple != 4) {
      fprintf(stderr, "bench_cartpole: FAILED: the four-array stage did not run, so the hand-written C cannot be "
                      "checked against it\n");
      status = 1;
    } else {
      double worst = 0;
      int wq = 0, we = 0;
      for (int q = 0; q < 4; q++)
        for (int e2 = 0; e2 < n; e2++) {
          double a = ((float *)sep_out->tuple[q]->data)[e2], b = st[q][e2];
          double d = (a > b ? a - b : b - a) / (fabs(b) > 1 ? fabs(b) : 1);
          if (!(d <= worst)) {
            worst = d;
            wq = q;
            we = e2;
          }
        }
      snprintf(r->note, sizeof r->note, "max difference from the fused stage (libm): %.3g", worst);
      if (!(worst <= tol)) {
        fprintf(stderr,
                "bench_cartpole: FAILED: the hand-written C and the fused stage disagree: %s[%d] is %.9g by hand, "
                "%.9g fused (relative difference %.3g > %.0e); they are not the same program\n",
                outs[wq], we, (double)st[wq][we], (double)((float *)sep_out->tuple[wq]->data)[we], worst, tol);
        status = 1;
      }
    }
    for (int q = 0; q < 4; q++) free(st[q]);
    for (int k = 0; k < np; k++) rt_tensor_unref(args[k]);
  }

  /* Vector math vs libm: one step within --check's tolerance (relative 1e-5), and the drift after
   * all steps, shown in the four-array row. */
  {
    double drift = max_rel_diff(vec_out, sep_out, n);
    IrModule *one0 = load_fx("scripts/cartpole_separate.fx", 1);
    IrModule *one = one0 ? classic(one0, &set) : NULL;
    RtTensor *ov = NULL, *ol = NULL;
    Row tmp = {0};
    if (one) run_variant(one, 1, &tmp, &ov);
    bool was = cpu_default_vecmath();
    cpu_set_default_vecmath(false);
    if (one) run_variant(one, 1, &tmp, &ol);
    cpu_set_default_vecmath(was);
    double step1 = max_rel_diff(ov, ol, n);
    char vm[200];
    cpu_vecmath_describe(vm, sizeof vm);
    printf("vector math: %s\n", vm);
    printf("vector math vs libm, four-array stage: one step %.3g (--check allows 1e-05), after %d steps %.3g "
           "(a chaotic simulation amplifies 1-ulp differences)\n\n", step1, steps, drift);
    if (!(step1 <= 1e-5)) {
      fprintf(stderr, "bench_cartpole: FAILED: one step with vector math differs from libm's by %.3g (> 1e-05)\n", step1);
      status = 1;
    }
    rt_tensor_unref(ov);
    rt_tensor_unref(ol);
    if (one) ir_module_free(one);
    if (one0) ir_module_free(one0);
  }

  /* JAX on the CPU, when installed */
  r = &rows[nrows++];
  r->name = "JAX/XLA on the CPU";
  {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "python3 bench/cartpole_jax.py %d %d %d 2>/dev/null", n, steps, repeat);
    FILE *p = popen(cmd, "r");
    double secs = -1;
    if (p) {
      if (fscanf(p, "%lf", &secs) != 1) secs = -1;
      pclose(p);
    }
    if (secs > 0) {
      r->secs = secs;
      r->ok = true;
    } else {
      snprintf(r->note, sizeof r->note, "jax is not importable (pip install jax to compare)");
    }
  }

  /* What vector math and the threads each bring, in the same run: the four-array stage with libm's
   * scalar math, and the unrolled stage on one thread. */
  {
    bool was = cpu_default_vecmath();
    r = &rows[nrows++];
    r->name = "four arrays, scalar libm";
    cpu_set_default_vecmath(false);
    run_variant(sep, repeat, r, NULL);
    cpu_set_default_vecmath(was);
    r = &rows[nrows++];
    r->name = "unrolled 10x, one thread";
    if (unr) {
      int nt = cpu_default_threads();
      cpu_set_default_threads(1);
      run_variant(unr, repeat, r, NULL);
      cpu_set_default_threads(nt);
    }
  }

  /* Today's pipeline on the unrolled loop: priority fusion keeps one kernel for the ten steps, and
   * its fusion-dce drops the outputs nobody reads (the classic pipeline has no dce after fusion, so
   * the unrolled row above writes every step's state). */
  IrModule *unrp = NULL;
  int ipu = nrows;
  r = &rows[nrows++];
  r->name = "priority, unrolled 10x";
  if (pass_lookup("while-loop-unroll")) {
    PassSettings u = set;
    u.unroll = 10;
    unrp = pipeline_last("priority", sep0, &u);
    if (unrp) run_variant(unrp, repeat, r, NULL);
  }

  double bt = rows[1].ok ? rows[1].secs : 0;
  printf("%-32s %9s %10s %10s %9s %9s  %s\n", "variant", "kernels", "bytes", "time", "speedup", "paper", "note");
  for (int k = 0; k < nrows; k++) {
    Row *w = &rows[k];
    char by[32] = "-", tm[32] = "-", su[32] = "-", pa[32] = "-";
    if (w->bytes) snprintf(by, sizeof by, "%.1f MiB", (double)w->bytes / (1024.0 * 1024.0));
    if (w->ok) snprintf(tm, sizeof tm, "%.3f s", w->secs);
    if (w->ok && bt > 0) snprintf(su, sizeof su, "%.2fx", bt / w->secs);
    if (w->paper > 0) snprintf(pa, sizeof pa, "%.2fx", w->paper);
    char kn[32] = "-";
    if (w->ok && w->launches) snprintf(kn, sizeof kn, "%lld", (long long)w->launches);
    printf("%-32s %9s %10s %10s %9s %9s  %s\n", w->name, kn, by, tm, su, pa, w->note);
  }
  double hand = rows[7].secs, best = 0;
  const char *bestname = "";
  for (int k = 1; k < nrows; k++)
    if ((k <= 6 || k == ipu) && rows[k].ok && (best == 0 || rows[k].secs < best)) {
      best = rows[k].secs;
      bestname = rows[k].name;
    }
  if (best > 0 && hand > 0) printf("\nbest fused variant (%s) / hand-written C: %.2fx\n", bestname, best / hand);
  /* the goals, as speedups from this one run: >= 4x the scalar C, >= 3x XLA:CPU */
  if (best > 0) {
    printf("speedup of the best fused variant: %.2fx over the hand-written C", hand > 0 ? hand / best : 0);
    if (rows[8].ok) printf(", %.2fx over JAX/XLA on the CPU", rows[8].secs / best);
    printf(" (%d threads for kernels of at least %d elements; load average at the end: %s)\n", cpu_default_threads(),
           CPU_PARALLEL_MIN, load_average());
  }
  /* the same comparison in back-to-back pairs, for the fastest variant of the four-array script
     (the program the hand-written C is) */
  if (pairs > 0 && status == 0) {
    const IrModule *cand[4] = {sep, merged, unr, unrp};
    const int crow[4] = {4, 5, 6, ipu};
    int bk = -1;
    for (int k = 0; k < 4; k++)
      if (cand[k] && rows[crow[k]].ok && (bk < 0 || rows[crow[k]].secs < rows[crow[bk]].secs)) bk = k;
    Rounds rd;
    if (bk >= 0 && paired_ratio(cand[bk], n, steps, pool, pairs, &rd)) {
      printf("%s / hand-written C in %d back-to-back rounds: median %.2fx (%.2fx to %.2fx); in CPU time %.2fx\n",
             rows[crow[bk]].name, pairs, rd.med, rd.lo, rd.hi, rd.cpu_med);
      if (rd.jax_med > 0)
        printf("%s / JAX/XLA on the CPU in the same rounds: median %.2fx (%.2fx to %.2fx)\n", rows[crow[bk]].name,
               rd.jax_med, rd.jax_lo, rd.jax_hi);
      printf("in the rounds: %.2fx faster than the hand-written C", 1 / rd.med);
      if (rd.jax_med > 0) printf(", %.2fx faster than JAX/XLA on the CPU", 1 / rd.jax_med);
      printf(" (the goals: 4x and 3x)\n");
    }
  }
  rt_tensor_unref(sep_out);
  rt_tensor_unref(vec_out);
  ir_module_free(base0);
  ir_module_free(pre0);
  ir_module_free(sep0);
  ir_module_free(base);
  ir_module_free(pre);
  ir_module_free(prep);
  ir_module_free(sep);
  if (unr) ir_module_free(unr);
  if (unrp) ir_module_free(unrp);
  if (merged) ir_module_free(merged);
  for (int k = 0; k <= 5; k++)
    if (!rows[k].ok) {
      fprintf(stderr, "bench_cartpole: FAILED: %s did not run: %s\n", rows[k].name, rows[k].note);
      status = 1;
    }
  if (status) fprintf(stderr, "bench_cartpole: FAILED (see above)\n");
  return status;
}
