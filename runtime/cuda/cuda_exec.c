/* cuda_exec.c — the GPU backend (`run --backend gpu`, `profile`): the RtBackend table over the
 * CUDA Driver API.
 *
 * prepare: every kernel of the modules is classified and generated (cuda_kernels.c), the unit is
 * compiled by NVRTC for the device's architecture, loaded, and each kernel part looked up.
 * run: the interpreter's walker drives the module from the host (tuples, while, call,
 * conditional), as XLA's host does; every kernel it reaches is taken over here: operands are made
 * resident on the device (uploaded once, then kept while their tensor lives in the cache),
 * outputs are allocated with cuMemAlloc, the kernel is launched (generated code, cuBLAS, cuDNN or
 * the rng kernel) and timed with CUDA events, and its results are read back so the host can use
 * them. A while loop's condition is therefore computed on the device and read back each
 * iteration. Instructions the emitter does not generate run on the interpreter's implementation
 * and are reported as such in `profile`. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../compiler/plan/plan.h"
#include "../backend.h"
#include "cuda_backend.h"
#include "cuda_kernels.h"
#include "cuda_libs.h"
#include "../interp/rng_stream.h"

typedef struct {
  const IrInstr *instr;
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
  RtTensor *t; /* a reference held while cached */
  CUdeviceptr p;
} Resident;

typedef struct {
  CudaBackend *cb;
  GpuKernel **kernels;
  int nkernels, capkernels;
  CudaKernel rng[2][IR_TYPE_COUNT]; /* [normal][type], loaded on first use */
  CudaKernel permute[IR_TYPE_COUNT];
  Resident *res;
  int nres, capres;
  size_t res_bytes, res_limit;
  RtRunStats *stats;
} GpuBackend;

#define RESIDENT_MAX 4096

static GpuKernel *kernel_of(GpuBackend *g, const IrInstr *i) {
  for (int q = 0; q < g->nkernels; q++)
    if (g->kernels[q]->instr == i) return g->kernels[q];
  return NULL;
}

/* ---------- residency ---------- */

static void drop_resident(GpuBackend *g, int idx) {
  FxError ignore;
  fx_error_clear(&ignore);
  cuda_buffer_free(g->cb, g->res[idx].p, &ignore);
  g->res_bytes -= g->res[idx].t->bytes;
  rt_tensor_unref(g->res[idx].t);
  memmove(&g->res[idx], &g->res[idx + 1], sizeof *g->res * (size_t)(g->nres - idx - 1));
  g->nres--;
}

static void evict(GpuBackend *g, size_t incoming) {
  while (g->nres > 0 && (g->nres >= RESIDENT_MAX || g->res_bytes + incoming > g->res_limit)) drop_resident(g, 0);
}

static void drop_all(GpuBackend *g) {
  while (g->nres > 0) drop_resident(g, g->nres - 1);
}

static bool remember(GpuBackend *g, RtTensor *t, CUdeviceptr p, FxError *err) {
  if (g->nres == g->capres) {
    int nc = g->capres ? g->capres * 2 : 64;
    Resident *nr = fx_realloc(g->res, sizeof *nr * (size_t)nc);
    if (!nr) return fx_error_set(err, NULL, 0, 0, "out of memory");
    g->res = nr;
    g->capres = nc;
  }
  g->res[g->nres++] = (Resident){rt_tensor_ref(t), p};
  g->res_bytes += t->bytes;
  return true;
}

/* The device copy of an array tensor, uploading it when it is not resident. */
static bool on_device(GpuBackend *g, RtTensor *t, CUdeviceptr *p, FxError *err) {
  for (int q = g->nres - 1; q >= 0; q--)
    if (g->res[q].t == t) {
      *p = g->res[q].p;
      return true;
    }
  if (!cuda_buffer_alloc(g->cb, t->bytes, p, err)) return false;
  if (!cuda_upload(g->cb, *p, t->data, t->bytes, err) || !remember(g, t, *p, err)) {
    FxError ignore;
    fx_error_clear(&ignore);
    cuda_buffer_free(g->cb, *p, &ignore);
    return false;
  }
  return true;
}

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
      if (!cuda_buffer_alloc(g->cb, ops[1]->bytes, &tmp, err)) return false;
      void *params[] = {&in[1], &tmp, &n, &pm};
      if (!cuda_launch(g->cb, &g->permute[t], n, params, err)) {
        cuda_buffer_free(g->cb, tmp, err);
        return false;
      }
      *ms += g->permute[t].last_ms;
      w = tmp;
    }
    double cms = 0;
    bool ok = cuda_timer_start(g->cb, err) && cuda_dnn_conv(&k->conv, in[0], w, outs[0], err) &&
              cuda_timer_stop(g->cb, &cms, err);
    *ms += cms;
    if (tmp) {
      FxError ignore;
      fx_error_clear(&ignore);
      cuda_buffer_free(g->cb, tmp, &ignore);
    }
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
  if (!k) return true; /* free ops, and instructions inside fused or called computations */
  bool device = k->how != CUDA_K_HOST;
  for (int j = 0; device && j < i->noperands; j++) device = ops[j]->type != IR_TUPLE && ops[j]->type != IR_TOKEN;
  double ms = 0;
  if (!device) {
    double t0 = host_ns();
    if (!rt_exec_instr(x, i, ops, out, err)) return false;
    ms = (host_ns() - t0) / 1e6;
  } else {
    size_t need = 0;
    for (int j = 0; j < i->noperands; j++) need += ops[j]->bytes;
    evict(g, need);
    RtTensor *r = rt_tensor_for_shape(&i->shape, err);
    if (!r) return false;
    int nout = r->type == IR_TUPLE ? r->ntuple : 1;
    CUdeviceptr in[EMIT_MAX_BUFFERS], outs[EMIT_MAX_BUFFERS];
    bool ok = i->noperands <= EMIT_MAX_BUFFERS && nout <= EMIT_MAX_BUFFERS;
    if (!ok) fx_error_set(err, NULL, 0, 0, "%s: too many buffers for one kernel", i->name);
    for (int j = 0; ok && j < i->noperands; j++) ok = on_device(g, ops[j], &in[j], err);
    int nalloc = 0;
    for (int o = 0; ok && o < nout; o++) {
      RtTensor *t = r->type == IR_TUPLE ? r->tuple[o] : r;
      ok = cuda_buffer_alloc(g->cb, t->bytes, &outs[o], err);
      if (ok) nalloc++;
    }
    if (ok) ok = launch_kernel(g, x, k, ops, in, outs, &ms, err);
    /* Read the results back: the host walker may use them (a while condition's pred, a tuple
     * element); their device copies stay resident for the kernels that consume them. */
    for (int o = 0; o < nalloc; o++) {
      RtTensor *t = r->type == IR_TUPLE ? r->tuple[o] : r;
      if (ok) ok = cuda_download(g->cb, t->data, outs[o], t->bytes, err);
      if (ok) ok = remember(g, t, outs[o], err);
      else {
        FxError ignore;
        fx_error_clear(&ignore);
        cuda_buffer_free(g->cb, outs[o], &ignore);
      }
    }
    if (!ok) {
      rt_tensor_unref(r);
      return false;
    }
    *out = r;
  }
  *handled = true;
  RtCounters *c = rt_exec_counters(x);
  int64_t rb, wb; /* the kernel plan's figures: one place counts bytes */
  plan_kernel_bytes(i, &rb, &wb);
  c->launches++;
  c->bytes_read += rb;
  c->bytes_written += wb;
  RtKernelStat *s = stat_for(g->stats, k);
  if (s) {
    s->launches++;
    s->total_ns += ms * 1e6;
    s->bytes += rb + wb;
    s->native = device;
    s->how = device ? cuda_kernel_how_name(k->how) : "interpreter";
  }
  return true;
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
  RtHooks hooks = {.exec = gpu_hook, .ctx = g};
  ro.hooks = &hooks;
  ro.count_kernels = false;
  g->stats = stats;
  for (int q = 0; q < g->nkernels; q++) g->kernels[q]->stat = -1;
  double t0 = host_ns();
  RtCounters c;
  bool ok = rt_interp_run(m, args, nargs, &ro, out, &c, err);
  if (ok) ok = cuda_sync(g->cb, err);
  if (stats) {
    stats->counters = c;
    stats->total_ns = host_ns() - t0;
  }
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
  for (int q = 0; q < g->nkernels; q++) fx_free(g->kernels[q]);
  fx_free(g->kernels);
  fx_free(g->res);
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
