/* cuda_exec.c — the GPU backend (`run --backend gpu`, `profile`): the RtBackend table over the
 * CUDA Driver API.
 *
 * prepare: every kernel of the modules is classified and generated (cuda_kernels.c), the unit is
 * compiled by NVRTC for the device's architecture, loaded, and each kernel part looked up.
 * run: the interpreter's walker drives the module from the host (tuples, while, call,
 * conditional), as XLA's host does; every kernel it reaches is taken over here: operands are made
 * resident on the device (uploaded once, then kept while their tensor lives), outputs get device
 * buffers (reused from a pool of freed ones, as an allocator does, rather than a cuMemAlloc and
 * a cuMemFree per launch) and the kernel is launched (generated code, cuBLAS, cuDNN or the rng
 * kernel) without waiting for it. A result stays on the device until the host needs its values:
 * the walker asks through RtHooks.host_read (a while condition's pred, a conditional's selector,
 * an instruction the host runs itself, the run's result), and only then is it read back, which
 * waits for the kernels before it. A while loop whose trip count is unknown therefore computes its
 * condition on the device and reads it back each iteration, as XLA's host-driven loops do, and
 * nothing else waits; a loop whose trip count is known (plan_while_for_loop) runs its body N times
 * and never its condition, as XLA:GPU's ForThunk (today WhileThunk given the trip count) does. When
 * `profile` asks for kernel times (RtOptions.kernel_times), they come from CUDA events around each
 * launch, read in batches (cuda_backend_defer_timing). Instructions the
 * emitter does not generate run on the interpreter's implementation and are reported as such in
 * `profile`. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../compiler/plan/plan.h"
#include "../backend.h"
#include "cuda_backend.h"
#include "cuda_kernels.h"
#include "cuda_libs.h"
#include "../interp/rng_stream.h"
#include "../../compiler/ir/ptrmap.h"

typedef struct {
  const IrInstr *instr;
  int64_t read_bytes, written_bytes; /* per launch, the kernel plan's figures (made once) */
  CudaKernelHow how;
  int nparts;
  CudaKernel parts[EMIT_MAX_PARTS];
  int64_t count[EMIT_MAX_PARTS];
  int part_noutputs[EMIT_MAX_PARTS];
  int part_outputs[EMIT_MAX_PARTS][EMIT_MAX_BUFFERS];
  CudaGemm gemm;
  CudaConv conv;
  int stat;
} GpuKernel;

typedef struct {
  RtTensor *t;  /* a reference held while resident */
  CUdeviceptr p;
  bool stale;   /* the device holds the values; t->data does not yet */
} Resident;

typedef struct {
  CUdeviceptr p;
  size_t bytes;
} FreeBuffer;

typedef struct {
  CudaBackend *cb;
  GpuKernel **kernels;
  int nkernels, capkernels;
  PtrMap by_instr; /* IrInstr* -> GpuKernel* */
  PtrMap consts;   /* constant IrInstr* -> its RtTensor, made once per run (and uploaded once) */
  CudaKernel rng[2][IR_TYPE_COUNT]; /* [normal][type], loaded on first use */
  CudaKernel permute[IR_TYPE_COUNT];
  Resident *res;
  int nres, capres;
  size_t res_bytes, res_limit;
  FreeBuffer *pool; /* device buffers no tensor uses, kept for the next output of their size */
  int npool, cappool;
  size_t pool_bytes;
  RtRunStats *stats;
  int64_t readbacks; /* results read back to the host during the run */
} GpuBackend;

#define RESIDENT_MAX 4096
#define POOL_MAX 256

static GpuKernel *kernel_of(GpuBackend *g, const IrInstr *i) { return ptrmap_get(&g->by_instr, i); }

/* ---------- device buffers ---------- */

static void buffer_release(GpuBackend *g, CUdeviceptr p, size_t bytes) {
  FxError ignore;
  fx_error_clear(&ignore);
  if (g->npool < POOL_MAX && g->pool_bytes + bytes <= g->res_limit) {
    if (g->npool == g->cappool) {
      int nc = g->cappool ? g->cappool * 2 : 32;
      FreeBuffer *np = fx_realloc(g->pool, sizeof *np * (size_t)nc);
      if (np) {
        g->pool = np;
        g->cappool = nc;
      }
    }
    if (g->npool < g->cappool) {
      g->pool[g->npool++] = (FreeBuffer){p, bytes};
      g->pool_bytes += bytes;
      return;
    }
  }
  cuda_buffer_free(g->cb, p, &ignore);
}

/* A device buffer of `bytes`: a pooled one of that size (work on the one stream is ordered, so a
 * kernel that still reads its old contents finishes before a later kernel writes it), else a new
 * allocation. */
static bool buffer_get(GpuBackend *g, size_t bytes, CUdeviceptr *p, FxError *err) {
  for (int q = g->npool - 1; q >= 0; q--)
    if (g->pool[q].bytes == bytes) {
      *p = g->pool[q].p;
      g->pool_bytes -= bytes;
      g->pool[q] = g->pool[--g->npool];
      return true;
    }
  return cuda_buffer_alloc(g->cb, bytes, p, err);
}

static void pool_drain(GpuBackend *g) {
  FxError ignore;
  fx_error_clear(&ignore);
  for (int q = 0; q < g->npool; q++) cuda_buffer_free(g->cb, g->pool[q].p, &ignore);
  g->npool = 0;
  g->pool_bytes = 0;
}

/* ---------- residency ---------- */

static int resident_index(GpuBackend *g, const RtTensor *t) {
  for (int q = g->nres - 1; q >= 0; q--)
    if (g->res[q].t == t) return q;
  return -1;
}

/* Makes the host copy of a resident current (reads it back, waiting for the kernels before). */
static bool make_host_current(GpuBackend *g, Resident *r, FxError *err) {
  if (!r->stale) return true;
  if (!cuda_download(g->cb, r->t->data, r->p, r->t->bytes, err)) return false;
  r->stale = false;
  g->readbacks++;
  return true;
}

/* Forgets resident idx; a stale one is read back first when someone else still holds it. */
/* Gives r's buffer back to the pool and its reference to the tensor (the entry itself stays). */
static void release_resident(GpuBackend *g, Resident *r) {
  buffer_release(g, r->p, r->t->bytes);
  g->res_bytes -= r->t->bytes;
  rt_tensor_unref(r->t);
}

static bool drop_resident(GpuBackend *g, int idx, FxError *err) {
  Resident *r = &g->res[idx];
  bool ok = r->t->refs <= 1 || make_host_current(g, r, err);
  release_resident(g, r);
  memmove(&g->res[idx], &g->res[idx + 1], sizeof *g->res * (size_t)(g->nres - idx - 1));
  g->nres--;
  return ok;
}

/* Drops the residents whose tensor nobody else holds any more (the walker dropped its value):
 * their buffers go back to the pool. */
static void sweep(GpuBackend *g) {
  int w = 0;
  for (int q = 0; q < g->nres; q++) {
    Resident *r = &g->res[q];
    if (r->t->refs <= 1) release_resident(g, r);
    else g->res[w++] = *r;
  }
  g->nres = w;
}

static bool evict(GpuBackend *g, size_t incoming, FxError *err) {
  sweep(g);
  while (g->nres > 0 && (g->nres >= RESIDENT_MAX || g->res_bytes + incoming > g->res_limit))
    if (!drop_resident(g, 0, err)) return false;
  return true;
}

/* The end of a run: every resident's buffer goes back to the pool, which the next run (a
 * `--repeat`, a bench's next round) takes its buffers from; destroy frees it. */
static void drop_all(GpuBackend *g) {
  FxError ignore;
  fx_error_clear(&ignore);
  for (size_t q = 0; q < g->consts.cap; q++)
    if (g->consts.keys[q]) rt_tensor_unref(g->consts.vals[q]);
  ptrmap_free(&g->consts);
  while (g->nres > 0) drop_resident(g, g->nres - 1, &ignore);
}

static bool remember(GpuBackend *g, RtTensor *t, CUdeviceptr p, bool stale, FxError *err) {
  if (g->nres == g->capres) {
    int nc = g->capres ? g->capres * 2 : 64;
    Resident *nr = fx_realloc(g->res, sizeof *nr * (size_t)nc);
    if (!nr) return fx_error_set(err, NULL, 0, 0, "out of memory");
    g->res = nr;
    g->capres = nc;
  }
  g->res[g->nres++] = (Resident){rt_tensor_ref(t), p, stale};
  g->res_bytes += t->bytes;
  return true;
}

/* The device copy of an array tensor, uploading it when it is not resident. */
static bool on_device(GpuBackend *g, RtTensor *t, CUdeviceptr *p, FxError *err) {
  int q = resident_index(g, t);
  if (q >= 0) {
    *p = g->res[q].p;
    return true;
  }
  if (!buffer_get(g, t->bytes, p, err)) return false;
  if (!cuda_upload(g->cb, *p, t->data, t->bytes, err) || !remember(g, t, *p, false, err)) {
    buffer_release(g, *p, t->bytes);
    return false;
  }
  return true;
}

/* RtHooks.host_read: t's values (every element of a tuple) on the host. */
static bool host_current(GpuBackend *g, RtTensor *t, FxError *err) {
  if (!t) return true;
  if (t->type == IR_TUPLE) {
    for (int k = 0; k < t->ntuple; k++)
      if (!host_current(g, t->tuple[k], err)) return false;
    return true;
  }
  int q = resident_index(g, t);
  return q < 0 || make_host_current(g, &g->res[q], err);
}

static bool gpu_host_read(void *ctx, RtTensor *t, FxError *err) { return host_current(ctx, t, err); }

/* ---------- prepare ---------- */

static bool gpu_prepare(void *vb, const IrModule *const *mods, int nmods, FxError *err) {
  GpuBackend *g = vb;
  CudaUnit u;
  if (!cuda_unit_build(&u, mods, nmods, err)) return false;
  const CudaDeviceInfo *d = cuda_backend_device(g->cb);
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", d->cc_major, d->cc_minor);
  CudaCubin cubin = {0};
  CUmodule mod = NULL;
  bool ok = u.ngenerated == 0 || (cuda_unit_compile(&u, arch, &cubin, err) && cuda_module_load(g->cb, cubin.cubin, &mod, err));
  cuda_cubin_free(&cubin);
  for (int q = 0; ok && q < u.n; q++) {
    const CudaKernelInfo *ki = &u.k[q];
    if (kernel_of(g, ki->instr)) continue;
    GpuKernel *k = fx_calloc(1, sizeof *k);
    if (!k) {
      ok = fx_error_set(err, NULL, 0, 0, "out of memory");
      break;
    }
    k->instr = ki->instr;
    plan_kernel_bytes(ki->instr, &k->read_bytes, &k->written_bytes);
    k->how = ki->how;
    k->stat = -1;
    k->nparts = ki->nparts;
    FxError ignore;
    fx_error_clear(&ignore);
    if (k->how == CUDA_K_CUBLAS) cuda_gemm_from_instr(ki->instr, &k->gemm, &ignore);
    if (k->how == CUDA_K_CUDNN) cuda_conv_from_instr(ki->instr, &k->conv, &ignore);
    for (int p = 0; ok && p < ki->nparts; p++) {
      char name[48];
      snprintf(name, sizeof name, "%s_p%d", ki->sym, p);
      k->count[p] = ki->count[p];
      k->part_noutputs[p] = ki->part_noutputs[p];
      memcpy(k->part_outputs[p], ki->part_outputs[p], sizeof(int) * (size_t)ki->part_noutputs[p]);
      ok = cuda_module_kernel(g->cb, mod, name, &ki->res[p], &k->parts[p], err);
    }
    if (ok && g->nkernels == g->capkernels) {
      int nc = g->capkernels ? g->capkernels * 2 : 64;
      GpuKernel **nk = fx_realloc(g->kernels, sizeof *nk * (size_t)nc);
      if (!nk) ok = fx_error_set(err, NULL, 0, 0, "out of memory");
      else {
        g->kernels = nk;
        g->capkernels = nc;
      }
    }
    if (!ok) {
      fx_free(k);
      break;
    }
    if (!ptrmap_put(&g->by_instr, k->instr, k)) {
      fx_free(k);
      ok = fx_error_set(err, NULL, 0, 0, "out of memory");
      break;
    }
    g->kernels[g->nkernels++] = k;
  }
  cuda_unit_free(&u);
  return ok;
}

/* ---------- running one kernel ---------- */

static double host_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static RtKernelStat *stat_for(RtRunStats *s, GpuKernel *k) {
  if (!s) return NULL;
  if (k->stat >= 0 && k->stat < s->nkernels && s->kernels[k->stat].instr == k->instr) return &s->kernels[k->stat];
  RtKernelStat *st = rt_run_stats_add(s, k->instr);
  if (st) k->stat = s->nkernels - 1;
  return st;
}

static bool load_rng(GpuBackend *g, const IrInstr *i, CudaKernel **out, FxError *err) {
  const char *dist = ir_attr_text(i, "distribution");
  if (!dist) dist = "rng_uniform";
  int normal = strstr(dist, "normal") != NULL;
  CudaKernel *k = &g->rng[normal][i->shape.type];
  if (!k->fn && !cuda_kernel_load(g->cb, cuda_rng_source(i->shape.type, dist), "fx_rng", k, err)) return false;
  *out = k;
  return true;
}

/* Runs k on device buffers in[] -> outs[]; *ms gets the device time. */
static bool launch_kernel(GpuBackend *g, RtExec *x, GpuKernel *k, RtTensor **ops, CUdeviceptr *in, CUdeviceptr *outs,
                          double *ms, FxError *err) {
  const IrInstr *i = k->instr;
  *ms = 0;
  switch (k->how) {
  case CUDA_K_GENERATED: {
    CUdeviceptr vals[2 * EMIT_MAX_BUFFERS];
    void *params[2 * EMIT_MAX_BUFFERS + 1];
    for (int p = 0; p < k->nparts; p++) {
      int np = 0;
      for (int j = 0; j < i->noperands; j++) {
        vals[np] = in[j];
        params[np] = &vals[np];
        np++;
      }
      for (int q = 0; q < k->part_noutputs[p]; q++) {
        vals[np] = outs[k->part_outputs[p][q]];
        params[np] = &vals[np];
        np++;
      }
      long long n = k->count[p];
      params[np++] = &n;
      if (!cuda_launch(g->cb, &k->parts[p], n, params, err)) return false;
      *ms += k->parts[p].last_ms;
    }
    return true;
  }
  case CUDA_K_CUBLAS:
    return cuda_timer_start(g->cb, err) && cuda_blas_gemm(&k->gemm, in[0], in[1], outs[0], err) &&
           cuda_timer_stop(g->cb, ms, err);
  case CUDA_K_CUDNN: {
    CUdeviceptr w = in[1], tmp = 0;
    if (k->conv.filter_needs_permute) {
      IrType t = k->conv.type;
      if (!g->permute[t].fn && !cuda_kernel_load(g->cb, cuda_permute_source(t), "fx_permute", &g->permute[t], err))
        return false;
      CudaPermute pm;
      cuda_conv_filter_permute(&k->conv, &pm);
      long long n = ops[1]->count;
      if (!buffer_get(g, ops[1]->bytes, &tmp, err)) return false;
      void *params[] = {&in[1], &tmp, &n, &pm};
      if (!cuda_launch(g->cb, &g->permute[t], n, params, err)) {
        buffer_release(g, tmp, ops[1]->bytes);
        return false;
      }
      *ms += g->permute[t].last_ms;
      w = tmp;
    }
    double cms = 0;
    bool ok = cuda_timer_start(g->cb, err) && cuda_dnn_conv(&k->conv, in[0], w, outs[0], err) &&
              cuda_timer_stop(g->cb, &cms, err);
    *ms += cms;
    if (tmp) buffer_release(g, tmp, ops[1]->bytes); /* (stream order: the convolution reads it first) */
    return ok;
  }
  case CUDA_K_RNG: {
    CudaKernel *rk;
    if (!load_rng(g, i, &rk, err)) return false;
    unsigned long long key = rt_rng_key(rt_exec_seed(x), i->id), draw = rt_exec_rng_counter(x, i);
    long long n = ir_shape_elements(&i->shape);
    int per = cuda_rng_per_thread(i->shape.type);
    long long threads = (n + per - 1) / per;
    double fa = rt_get_f(ops[0], 0), fb = rt_get_f(ops[1], 0);
    long long ia = rt_get_i(ops[0], 0), ib = rt_get_i(ops[1], 0);
    bool fl = ir_type_is_float(i->shape.type);
    void *params[] = {&outs[0], &n, &key, &draw, fl ? (void *)&fa : (void *)&ia, fl ? (void *)&fb : (void *)&ib};
    if (!cuda_launch(g->cb, rk, threads, params, err)) return false;
    *ms = rk->last_ms;
    return true;
  }
  case CUDA_K_HOST: break;
  }
  return fx_error_set(err, NULL, 0, 0, "%s: not a device kernel", i->name);
}

static bool gpu_hook(void *ctx, RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, bool *handled,
                     FxError *err) {
  GpuBackend *g = ctx;
  *handled = false;
  GpuKernel *k = kernel_of(g, i);
  if (!k && i->op == IR_OP_CONSTANT && i->shape.type != IR_TUPLE) {
    /* the same tensor each time a loop body reaches it, so it is uploaded once */
    RtTensor *c = ptrmap_get(&g->consts, i);
    if (!c) {
      if (!rt_exec_instr(x, i, ops, &c, err)) return false;
      if (!ptrmap_put(&g->consts, i, c)) {
        rt_tensor_unref(c);
        return fx_error_set(err, NULL, 0, 0, "out of memory");
      }
    }
    *out = rt_tensor_ref(c);
    *handled = true;
    return true;
  }
  if (!k) return true; /* free ops, and instructions inside fused or called computations */
  bool device = k->how != CUDA_K_HOST;
  for (int j = 0; device && j < i->noperands; j++) device = ops[j]->type != IR_TUPLE && ops[j]->type != IR_TOKEN;
  RtKernelStat *s = stat_for(g->stats, k);
  double ms = 0;
  if (!device) {
    for (int j = 0; j < i->noperands; j++)
      if (!host_current(g, ops[j], err)) return false;
    double t0 = host_ns();
    if (!rt_exec_instr(x, i, ops, out, err)) return false;
    ms = (host_ns() - t0) / 1e6;
  } else {
    /* the rng kernel takes its bounds as values */
    if (k->how == CUDA_K_RNG && (!host_current(g, ops[0], err) || !host_current(g, ops[1], err))) return false;
    size_t need = 0;
    for (int j = 0; j < i->noperands; j++) need += ops[j]->bytes;
    if (!evict(g, need, err)) return false;
    RtTensor *r = rt_tensor_for_shape_uninit(&i->shape, err);
    if (!r) return false;
    int nout = r->type == IR_TUPLE ? r->ntuple : 1;
    CUdeviceptr in[EMIT_MAX_BUFFERS], outs[EMIT_MAX_BUFFERS];
    bool ok = i->noperands <= EMIT_MAX_BUFFERS && nout <= EMIT_MAX_BUFFERS;
    if (!ok) fx_error_set(err, NULL, 0, 0, "%s: too many buffers for one kernel", i->name);
    for (int j = 0; ok && j < i->noperands; j++) ok = on_device(g, ops[j], &in[j], err);
    int nalloc = 0;
    for (int o = 0; ok && o < nout; o++) {
      RtTensor *t = r->type == IR_TUPLE ? r->tuple[o] : r;
      ok = buffer_get(g, t->bytes, &outs[o], err);
      if (ok) nalloc++;
    }
    cuda_backend_set_tag(g->cb, s ? (int)(s - g->stats->kernels) : -1);
    if (ok) ok = launch_kernel(g, x, k, ops, in, outs, &ms, err);
    /* The results stay on the device (stale on the host) until the host reads them. */
    for (int o = 0; o < nalloc; o++) {
      RtTensor *t = r->type == IR_TUPLE ? r->tuple[o] : r;
      if (ok) ok = remember(g, t, outs[o], true, err);
      else buffer_release(g, outs[o], t->bytes);
    }
    if (!ok) {
      rt_tensor_unref(r);
      return false;
    }
    *out = r;
  }
  *handled = true;
  RtCounters *c = rt_exec_counters(x);
  int64_t rb = k->read_bytes, wb = k->written_bytes; /* the kernel plan's figures: one place counts bytes */
  c->launches++;
  c->bytes_read += rb;
  c->bytes_written += wb;
  if (s) {
    s->launches++;
    s->total_ns += ms * 1e6; /* device kernels: 0 here, their event times arrive in on_time */
    s->bytes += rb + wb;
    s->native = device;
    s->how = device ? cuda_kernel_how_name(k->how) : "interpreter";
  }
  return true;
}

/* cuda_backend_defer_timing's report: a device kernel's time, tagged with its stat's index. */
static void on_time(void *ctx, int tag, double ms) {
  GpuBackend *g = ctx;
  if (g->stats && tag >= 0 && tag < g->stats->nkernels) g->stats->kernels[tag].total_ns += ms * 1e6;
}

static bool gpu_run(void *vb, const IrModule *m, RtTensor **args, int nargs, const RtOptions *o, RtTensor **out,
                    RtRunStats *stats, FxError *err) {
  GpuBackend *g = vb;
  if (m->entry && m->entry->ninstrs > 0) {
    /* Kernels not prepared yet (run without prepare): prepare this module now. */
    bool known = false;
    for (int q = 0; q < m->entry->ninstrs && !known; q++) known = kernel_of(g, m->entry->instrs[q]) != NULL;
    const IrModule *mods[1] = {m};
    if (!known && !gpu_prepare(g, mods, 1, err)) return false;
  }
  RtOptions ro = o ? *o : (RtOptions){0};
  /* for_loops: a loop with a known trip count runs its body N times and never its condition, and
     nothing is read back per iteration, as XLA:GPU's ForThunk (today WhileThunk given the count) */
  RtHooks hooks = {.exec = gpu_hook, .host_read = gpu_host_read, .ctx = g, .for_loops = true};
  ro.hooks = &hooks;
  ro.count_kernels = false;
  g->stats = stats;
  g->readbacks = 0;
  for (int q = 0; q < g->nkernels; q++) g->kernels[q]->stat = -1;
  /* kernel times only when someone reads them (`profile`), and then without waiting per launch */
  cuda_backend_set_timing(g->cb, stats != NULL && o && o->kernel_times);
  cuda_backend_defer_timing(g->cb, on_time, g);
  double t0 = host_ns();
  RtCounters c;
  bool ok = rt_interp_run(m, args, nargs, &ro, out, &c, err);
  if (ok) ok = host_current(g, *out, err); /* the result, read back */
  if (!ok && *out) {
    rt_tensor_unref(*out);
    *out = NULL;
  }
  FxError terr;
  fx_error_clear(&terr);
  bool timed = cuda_timings_collect(g->cb, ok ? err : &terr);
  if (ok) ok = timed && cuda_sync(g->cb, err);
  if (stats) {
    stats->counters = c;
    stats->total_ns = host_ns() - t0;
  }
  cuda_backend_defer_timing(g->cb, NULL, NULL);
  cuda_backend_set_timing(g->cb, true);
  g->stats = NULL;
  drop_all(g);
  return ok;
}

/* ---------- lifetime ---------- */

static void *gpu_create(FxError *err) {
  FxError why;
  fx_error_clear(&why);
  CudaBackend *cb = cuda_backend_open(0, &why);
  if (!cb) {
    fx_error_set(err, NULL, 0, 0, "no GPU to run on: %s", why.msg);
    return NULL;
  }
  GpuBackend *g = fx_calloc(1, sizeof *g);
  if (!g) {
    cuda_backend_close(cb);
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  g->cb = cb;
  size_t mem = cuda_backend_device(cb)->total_mem;
  g->res_limit = mem / 2 < ((size_t)4 << 30) ? mem / 2 : ((size_t)4 << 30);
  return g;
}

static void gpu_destroy(void *vb) {
  GpuBackend *g = vb;
  if (!g) return;
  drop_all(g);
  pool_drain(g);
  for (int q = 0; q < g->nkernels; q++) fx_free(g->kernels[q]);
  fx_free(g->kernels);
  ptrmap_free(&g->by_instr);
  fx_free(g->res);
  fx_free(g->pool);
  cuda_backend_close(g->cb); /* unloads every module and frees every buffer */
  fx_free(g);
}

const RtBackend rt_backend_gpu = {
    .name = "gpu",
    .create = gpu_create,
    .destroy = gpu_destroy,
    .prepare = gpu_prepare,
    .run = gpu_run,
};
