/* cartpole_gpu.c — the CartPole benchmark's GPU mode (§IV–V of the paper).
 *
 * For each variant of the case study — the unfused program, the classic-fusion baseline (RNG in
 * the loop), random numbers precomputed ("no rng"), the concatenate fused into its three users
 * ("merged": `set dup_limit 3`, the walkthrough's §V-B step), the state carried as four arrays
 * ("no concat"), and that unrolled 10 times ("unrolled": `set unroll 10`) — it prints the pass
 * settings it ran the classic pipeline with and what the kernel plan says one run launches on
 * the GPU profile (kernels per loop iteration, launches per run and per step, bytes, estimated
 * time), which of the plan's
 * kernels are generated CUDA, library calls or host fallbacks, and the most registers any
 * generated kernel needs (NVRTC + ptxas for the profile's architecture). All of that needs no GPU.
 * Where a GPU is present each variant also runs on it (2048 environments x --steps steps,
 * median of --repeat), with the launches counted by the backend and the speedup over the
 * baseline next to the paper's ratios (RTX 2080 Ti); where none is, it says why.
 *
 *   bench_cartpole_gpu [--steps N] [--repeat R] [--device PROFILE]   (run from the repository root) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../compiler/fx/fx.h"
#include "../compiler/passes/passes.h"
#include "../compiler/plan/plan.h"
#include "../runtime/backend.h"
#include "../runtime/cuda/cuda.h"

static void no_emit(void *ctx, const PassDecision *d) { (void)ctx, (void)d; }

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
    static char tail[1 << 16];
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

static IrModule *classic(const IrModule *m0, const PassSettings *set, const DeviceProfile *dev, bool fuse) {
  const Pipeline *pl = pipeline_lookup("classic");
  DecisionSink sink = {.emit = no_emit};
  IrModule *cur = NULL;
  FxError e = {0};
  for (int q = 0; fuse && pl && q < pl->npasses; q++) {
    if (pass_settings_is_disabled(set, pl->passes[q]->name)) continue;
    PassContext cx = {.sink = &sink, .device = dev, .settings = set, .stage = q + 1, .pass = pl->passes[q]->name,
                      .err = &e};
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

/* Kernels launched by one iteration of the loop: its body's and, only when its trip count is
 * unknown, its condition's (a loop with a known trip count runs as a for loop, as XLA:GPU runs it,
 * and never launches its condition: the plan lists those kernels with 0 launches). */
static int64_t per_iteration(const KernelPlan *p) {
  int64_t n = 0;
  for (int k = 0; k < p->nkernels; k++)
    if (p->kernels[k].comp && !p->kernels[k].comp->is_entry && p->kernels[k].launches > 0) n++;
  return n;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Runs m on the GPU backend; returns the median seconds (or -1) and the launches counted. */
static double run_gpu(const IrModule *m, int repeat, int64_t *launches, char *note, size_t nn) {
  FxError e = {0};
  void *be = rt_backend_gpu.create(&e);
  if (!be || !rt_backend_gpu.prepare(be, &m, 1, &e)) {
    snprintf(note, nn, "%.150s", e.msg);
    if (be) rt_backend_gpu.destroy(be);
    return -1;
  }
  int np = m->entry->nparams;
  RtTensor *args[16] = {0};
  for (int k = 0; k < np && k < 16; k++) {
    args[k] = rt_tensor_for_shape(&m->entry->params[k]->shape, &e);
    if (args[k]) rt_tensor_fill_random(args[k], 1, (uint64_t)k);
  }
  double t[16];
  bool ok = true;
  RtOptions o = {.seed = 1};
  for (int r = 0; r < repeat && ok; r++) {
    RtTensor *res = NULL;
    RtRunStats st = {0};
    ok = rt_backend_gpu.run(be, m, args, np, &o, &res, &st, &e);
    t[r] = st.total_ns / 1e9;
    if (ok) *launches = st.counters.launches;
    rt_tensor_unref(res);
    rt_run_stats_free(&st);
  }
  if (!ok) snprintf(note, nn, "%.150s", e.msg);
  for (int k = 0; k < np && k < 16; k++) rt_tensor_unref(args[k]);
  rt_backend_gpu.destroy(be);
  if (!ok) return -1;
  qsort(t, (size_t)repeat, sizeof t[0], cmpd);
  return t[repeat / 2];
}

typedef struct {
  const char *name, *script;
  double paper; /* speedup over the baseline in the paper (RTX 2080 Ti), 0 if none */
  int dup_limit, unroll; /* `set dup_limit N` (PassSettings.concat_user_limit), `set unroll N`; 0: default */
  bool fuse;
} Variant;

int main(int argc, char **argv) {
  int steps = 10000, repeat = 3;
  const char *devname = "rtx2080ti";
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--steps") == 0 && k + 1 < argc) steps = atoi(argv[++k]);
    else if (strcmp(argv[k], "--repeat") == 0 && k + 1 < argc) repeat = atoi(argv[++k]);
    else if (strcmp(argv[k], "--device") == 0 && k + 1 < argc) devname = argv[++k];
  }
  if (repeat < 1) repeat = 1;
  if (repeat > 16) repeat = 16;
  const DeviceProfile *dev = device_lookup(devname);
  if (!dev) {
    fprintf(stderr, "unknown device profile '%s'\n", devname);
    return 1;
  }
  static const Variant vs[] = {
      {"unfused (stage 0)", "scripts/cartpole.fx", 0, 0, 1, false},
      {"baseline", "scripts/cartpole.fx", 1.0, 0, 1, true},
      {"no rng", "scripts/cartpole_pre_rng.fx", 1.87, 0, 1, true},
      {"merged (dup_limit 3)", "scripts/cartpole_pre_rng.fx", 1.87 * 1.10, 3, 1, true},
      {"no concat", "scripts/cartpole_separate.fx", 3.41, 0, 1, true},
      {"unrolled 10x", "scripts/cartpole_separate.fx", 3.41 * 3.5, 0, 10, true},
  };
  int nv = (int)(sizeof vs / sizeof vs[0]);
  FxError why = {0};
  bool gpu = rt_gpu_available(&why);
  printf("CartPole on the GPU: 2048 environments x %d steps; plan on %s (%s)\n", steps, dev->name, dev->arch);
  if (!gpu) printf("no GPU here (%s): launches and kernels below come from the plan; no times\n", why.msg);
  printf("\n%-22s %-20s %8s %10s %8s %10s %10s %10s %5s  %s\n", "variant", "settings", "per iter", "launches",
         "per step", "bytes", "est. time", "measured", "regs", "kernels (generated / library / host)");
  double base_s = -1;
  for (int q = 0; q < nv; q++) {
    const Variant *v = &vs[q];
    IrModule *m0 = load_fx(v->script, steps);
    if (!m0) return 1;
    PassSettings set;
    pass_settings_default(&set);
    if (v->dup_limit) set.concat_user_limit = v->dup_limit;
    if (v->unroll) set.unroll = v->unroll;
    char settings[40];
    if (v->fuse) snprintf(settings, sizeof settings, "dup_limit %d unroll %d", set.concat_user_limit, set.unroll);
    else snprintf(settings, sizeof settings, "no passes");
    IrModule *m = classic(m0, &set, dev, v->fuse);
    FxError e = {0};
    KernelPlan *p = plan_build(m, dev, &e);
    if (!p) {
      printf("%-22s plan failed: %s\n", v->name, e.msg);
      ir_module_free(m);
      ir_module_free(m0);
      continue;
    }
    CudaUnit u;
    int gen = 0, lib = 0, host = 0, regs = -1;
    if (cuda_unit_build(&u, (const IrModule *const *)&m, 1, &e)) {
      for (int k = 0; k < u.n; k++) {
        if (u.k[k].how == CUDA_K_GENERATED) gen++;
        else if (u.k[k].how == CUDA_K_HOST) host++;
        else lib++;
      }
      if (cuda_nvrtc_built_in() && u.ngenerated && cuda_unit_compile(&u, dev->arch, NULL, &e)) {
        regs = 0;
        for (int k = 0; k < u.n; k++)
          if (u.k[k].how == CUDA_K_GENERATED) {
            int r, s;
            cuda_kernel_worst(&u.k[k], &r, &s);
            if (r > regs) regs = r;
          }
      }
      cuda_unit_free(&u);
    }
    char note[200] = "", meas[32] = "-", rg[16] = "-", by[32];
    int64_t launches = p->launches;
    if (gpu) {
      int64_t got = 0;
      double s = run_gpu(m, repeat, &got, note, sizeof note);
      if (s > 0) {
        if (q == 1) base_s = s;
        snprintf(meas, sizeof meas, "%.3f s", s);
        char extra[120];
        snprintf(extra, sizeof extra, "%lld launches counted%s", (long long)got, got == launches ? "" : " (plan differs)");
        if (base_s > 0 && q >= 1)
          snprintf(note, sizeof note, "%s; %.2fx over baseline (paper %.2fx)", extra, base_s / s, v->paper);
        else
          snprintf(note, sizeof note, "%s", extra);
      }
    } else if (v->paper > 0) {
      snprintf(note, sizeof note, "paper: %.2fx over baseline", v->paper);
    }
    if (regs >= 0) snprintf(rg, sizeof rg, "%d", regs);
    snprintf(by, sizeof by, "%.1f MiB", (double)(p->bytes_read + p->bytes_written) / (1024.0 * 1024.0));
    printf("%-22s %-20s %8lld %10lld %8.2f %10s %8.1f ms %10s %5s  %d / %d / %d%s%s\n", v->name, settings,
           (long long)per_iteration(p), (long long)launches, (double)launches / steps, by, p->est_us / 1e3, meas, rg,
           gen, lib, host, note[0] ? "; " : "", note);
    fflush(stdout);
    plan_free(p);
    ir_module_free(m);
    ir_module_free(m0);
  }
  return 0;
}
