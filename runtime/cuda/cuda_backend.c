/* cuda_backend.c — the GPU backend's primitives over the Driver API (see cuda_backend.h).
 *
 * Every driver call goes through CU_CHECK. Buffers and modules are tracked so that closing the
 * backend frees whatever a failed run left behind. Where this sits: runtime/, between the kernel
 * plan executor (which decides what to launch) and the driver (cuda_driver.c). */
#include "cuda_backend.h"

#include <stdio.h>
#include <string.h>

#include "../../compiler/ir/ir.h"
#include "cuda_libs.h"

struct CudaBackend {
  const CudaApi *api;
  CudaDeviceInfo dev;
  CUdevice device;
  CUcontext ctx;
  bool timing;
  CUevent start, stop;
  /* deferred timing (cuda_backend_defer_timing): launches record a pair of events and go on;
   * the times are read at the next collection */
  CudaTimeFn on_time;
  void *on_time_ctx;
  int tag;
  CUevent open; /* cuda_timer_start's event while deferred */
  struct {
    CUevent a, b;
    int tag;
  } *pend;
  int npend, cappend;
  CUevent *events; /* spare events */
  int nevents, capevents;
  CUdeviceptr *bufs; /* live allocations */
  int nbufs, bufs_cap;
  CUmodule *mods;
  int nmods, mods_cap;
};

const CudaDeviceInfo *cuda_backend_device(const CudaBackend *b) { return &b->dev; }
void cuda_backend_set_timing(CudaBackend *b, bool on) { b->timing = on; }

static bool open_ctx(CudaBackend *b, int ordinal, FxError *err) {
  const CudaApi *a = b->api;
  CU_CHECK(err, a->cuDeviceGet(&b->device, ordinal));
  CU_CHECK(err, a->cuDevicePrimaryCtxRetain(&b->ctx, b->device));
  CU_CHECK(err, a->cuCtxSetCurrent(b->ctx));
  CU_CHECK(err, a->cuEventCreate(&b->start, 0));
  CU_CHECK(err, a->cuEventCreate(&b->stop, 0));
  return true;
}

CudaBackend *cuda_backend_open(int ordinal, FxError *err) {
  CudaDeviceInfo devs[16];
  int n = cuda_device_list(devs, 16, err);
  if (n < 0) return NULL;
  if (ordinal < 0 || ordinal >= n) {
    if (n == 0)
      fx_error_set(err, NULL, 0, 0, "the NVIDIA driver found no CUDA device");
    else
      fx_error_set(err, NULL, 0, 0, "there is no GPU %d (%d found)", ordinal, n);
    return NULL;
  }
  CudaBackend *b = fx_calloc(1, sizeof *b);
  if (!b) {
    fx_error_set(err, NULL, 0, 0, "out of memory opening the GPU");
    return NULL;
  }
  b->api = cuda_api();
  b->dev = devs[ordinal];
  b->timing = true;
  if (!open_ctx(b, ordinal, err)) {
    cuda_backend_close(b);
    return NULL;
  }
  return b;
}

void cuda_backend_close(CudaBackend *b) {
  if (!b) return;
  const CudaApi *a = b->api;
  if (b->ctx) {
    a->cuCtxSetCurrent(b->ctx);
    cuda_libs_shutdown();
    for (int i = 0; i < b->nbufs; i++) a->cuMemFree(b->bufs[i]);
    for (int i = 0; i < b->nmods; i++) a->cuModuleUnload(b->mods[i]);
    if (b->start) a->cuEventDestroy(b->start);
    if (b->stop) a->cuEventDestroy(b->stop);
    for (int i = 0; i < b->npend; i++) {
      a->cuEventDestroy(b->pend[i].a);
      a->cuEventDestroy(b->pend[i].b);
    }
    for (int i = 0; i < b->nevents; i++) a->cuEventDestroy(b->events[i]);
    if (b->open) a->cuEventDestroy(b->open);
    a->cuDevicePrimaryCtxRelease(b->device);
  }
  fx_free(b->bufs);
  fx_free(b->mods);
  fx_free(b->pend);
  fx_free(b->events);
  fx_free(b);
}

static bool track(void **arr, int *n, int *cap, size_t elem, const void *v, FxError *err) {
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    void *na = fx_realloc(*arr, (size_t)nc * elem);
    if (!na) return fx_error_set(err, NULL, 0, 0, "out of memory tracking GPU resources");
    *arr = na;
    *cap = nc;
  }
  memcpy((char *)*arr + (size_t)*n * elem, v, elem);
  (*n)++;
  return true;
}

bool cuda_buffer_alloc(CudaBackend *b, size_t bytes, CUdeviceptr *out, FxError *err) {
  *out = 0;
  CUdeviceptr p = 0;
  CU_CHECK(err, b->api->cuMemAlloc(&p, bytes ? bytes : 1));
  if (!track((void **)&b->bufs, &b->nbufs, &b->bufs_cap, sizeof p, &p, err)) {
    b->api->cuMemFree(p);
    return false;
  }
  *out = p;
  return true;
}

bool cuda_buffer_free(CudaBackend *b, CUdeviceptr p, FxError *err) {
  for (int i = 0; i < b->nbufs; i++)
    if (b->bufs[i] == p) {
      b->bufs[i] = b->bufs[--b->nbufs];
      CU_CHECK(err, b->api->cuMemFree(p));
      return true;
    }
  return fx_error_set(err, NULL, 0, 0, "GPU buffer 0x%llx was not allocated here", (unsigned long long)p);
}

bool cuda_upload(CudaBackend *b, CUdeviceptr dst, const void *src, size_t bytes, FxError *err) {
  if (bytes) CU_CHECK(err, b->api->cuMemcpyHtoD(dst, src, bytes));
  return true;
}

bool cuda_download(CudaBackend *b, void *dst, CUdeviceptr src, size_t bytes, FxError *err) {
  if (bytes) CU_CHECK(err, b->api->cuMemcpyDtoH(dst, src, bytes));
  return true;
}

bool cuda_copy(CudaBackend *b, CUdeviceptr dst, CUdeviceptr src, size_t bytes, FxError *err) {
  if (bytes) CU_CHECK(err, b->api->cuMemcpyDtoD(dst, src, bytes));
  return true;
}

int cuda_block_size(int regs, const CudaDeviceInfo *d, int64_t n) {
  int warp = d->warp_size > 0 ? d->warp_size : 32;
  int block = 256;
  if (d->max_threads_per_block > 0 && block > d->max_threads_per_block) block = d->max_threads_per_block;
  if (regs > 0 && d->regs_per_block > 0) {
    int by_regs = d->regs_per_block / regs;
    if (by_regs < block) block = by_regs;
  }
  if (n > 0 && n < block) block = (int)n;
  block = (block + warp - 1) / warp * warp; /* whole warps */
  if (d->max_threads_per_block > 0 && block > d->max_threads_per_block) block -= warp;
  if (regs > 0 && d->regs_per_block > 0 && block * regs > d->regs_per_block) block -= warp;
  return block < warp ? warp : block;
}

bool cuda_kernel_load(CudaBackend *b, const char *source, const char *kernel, CudaKernel *k, FxError *err) {
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", kernel);
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", b->dev.cc_major, b->dev.cc_minor);
  CudaCompileOptions opt = {.arch = arch};
  CudaCubin cubin;
  char file[160];
  snprintf(file, sizeof file, "%s.cu", kernel);
  if (!cuda_nvrtc_compile(source, file, kernel, &opt, &cubin, err)) return false;
  k->res = cubin.res;
  snprintf(k->arch, sizeof k->arch, "%s", cubin.arch);
  CUresult r = b->api->cuModuleLoadData(&k->module, cubin.cubin);
  cuda_cubin_free(&cubin);
  if (r != FX_CUDA_SUCCESS) return cuda_check_failed(r, "cuModuleLoadData", err);
  if (!track((void **)&b->mods, &b->nmods, &b->mods_cap, sizeof k->module, &k->module, err)) {
    b->api->cuModuleUnload(k->module);
    k->module = NULL;
    return false;
  }
  CU_CHECK(err, b->api->cuModuleGetFunction(&k->fn, k->module, kernel));
  k->block = cuda_block_size(k->res.registers, &b->dev, 0);
  return true;
}

bool cuda_module_load(CudaBackend *b, const void *cubin, CUmodule *out, FxError *err) {
  *out = NULL;
  CUmodule m = NULL;
  CU_CHECK(err, b->api->cuModuleLoadData(&m, cubin));
  if (!track((void **)&b->mods, &b->nmods, &b->mods_cap, sizeof m, &m, err)) {
    b->api->cuModuleUnload(m);
    return false;
  }
  *out = m;
  return true;
}

bool cuda_module_kernel(CudaBackend *b, CUmodule m, const char *name, const CudaResources *res, CudaKernel *k,
                        FxError *err) {
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", name);
  if (res) k->res = *res;
  snprintf(k->arch, sizeof k->arch, "sm_%d%d", b->dev.cc_major, b->dev.cc_minor);
  CU_CHECK(err, b->api->cuModuleGetFunction(&k->fn, m, name));
  k->block = cuda_block_size(k->res.registers, &b->dev, 0);
  return true;
}

/* ---------- deferred timing ---------- */

static bool event_get(CudaBackend *b, CUevent *e, FxError *err) {
  if (b->nevents > 0) {
    *e = b->events[--b->nevents];
    return true;
  }
  CU_CHECK(err, b->api->cuEventCreate(e, 0));
  return true;
}

static bool event_put(CudaBackend *b, CUevent e, FxError *err) {
  if (!track((void **)&b->events, &b->nevents, &b->capevents, sizeof e, &e, err)) {
    b->api->cuEventDestroy(e);
    return false;
  }
  return true;
}

void cuda_backend_defer_timing(CudaBackend *b, CudaTimeFn fn, void *ctx) {
  b->on_time = fn;
  b->on_time_ctx = ctx;
}

void cuda_backend_set_tag(CudaBackend *b, int tag) { b->tag = tag; }

bool cuda_timings_collect(CudaBackend *b, FxError *err) {
  if (b->npend == 0) return true;
  const CudaApi *a = b->api;
  CU_CHECK(err, a->cuEventSynchronize(b->pend[b->npend - 1].b));
  bool ok = true;
  for (int i = 0; i < b->npend; i++) {
    float ms = 0;
    if (ok) {
      CUresult r = a->cuEventElapsedTime(&ms, b->pend[i].a, b->pend[i].b);
      if (r != FX_CUDA_SUCCESS) ok = cuda_check_failed(r, "cuEventElapsedTime", err);
      else if (b->on_time) b->on_time(b->on_time_ctx, b->pend[i].tag, ms);
    }
    if (!event_put(b, b->pend[i].a, err)) ok = false;
    if (!event_put(b, b->pend[i].b, err)) ok = false;
  }
  b->npend = 0;
  return ok;
}

/* Records the pair (start, a new stop event) for the current tag; collects when many wait. */
static bool pend_push(CudaBackend *b, CUevent start, FxError *err) {
  CUevent stop;
  if (!event_get(b, &stop, err)) {
    event_put(b, start, err);
    return false;
  }
  CUresult r = b->api->cuEventRecord(stop, NULL);
  if (r != FX_CUDA_SUCCESS) {
    event_put(b, start, err);
    event_put(b, stop, err);
    return cuda_check_failed(r, "cuEventRecord", err);
  }
  if (b->npend == b->cappend) {
    int nc = b->cappend ? b->cappend * 2 : 64;
    void *np = fx_realloc(b->pend, sizeof *b->pend * (size_t)nc);
    if (!np) {
      event_put(b, start, err);
      event_put(b, stop, err);
      return fx_error_set(err, NULL, 0, 0, "out of memory timing GPU kernels");
    }
    b->pend = np;
    b->cappend = nc;
  }
  b->pend[b->npend].a = start;
  b->pend[b->npend].b = stop;
  b->pend[b->npend].tag = b->tag;
  b->npend++;
  /* (a few hundred launches in flight: one wait for all of them) */
  return b->npend < 512 || cuda_timings_collect(b, err);
}

static bool deferred_start(CudaBackend *b, CUevent *e, FxError *err) {
  if (!event_get(b, e, err)) return false;
  CUresult r = b->api->cuEventRecord(*e, NULL);
  if (r != FX_CUDA_SUCCESS) {
    event_put(b, *e, err);
    *e = NULL;
    return cuda_check_failed(r, "cuEventRecord", err);
  }
  return true;
}

bool cuda_timer_start(CudaBackend *b, FxError *err) {
  if (b->timing && b->on_time) {
    if (b->open) event_put(b, b->open, err);
    b->open = NULL;
    return deferred_start(b, &b->open, err);
  }
  if (b->timing) CU_CHECK(err, b->api->cuEventRecord(b->start, NULL));
  return true;
}

bool cuda_timer_stop(CudaBackend *b, double *ms, FxError *err) {
  *ms = 0;
  if (b->timing && b->on_time) {
    if (!b->open) return true;
    CUevent start = b->open;
    b->open = NULL;
    return pend_push(b, start, err);
  }
  if (!b->timing) return true;
  float f = 0;
  CU_CHECK(err, b->api->cuEventRecord(b->stop, NULL));
  CU_CHECK(err, b->api->cuEventSynchronize(b->stop));
  CU_CHECK(err, b->api->cuEventElapsedTime(&f, b->start, b->stop));
  *ms = f;
  return true;
}

void cuda_kernel_unload(CudaBackend *b, CudaKernel *k) {
  if (!k->module) return;
  for (int i = 0; i < b->nmods; i++)
    if (b->mods[i] == k->module) {
      b->mods[i] = b->mods[--b->nmods];
      b->api->cuModuleUnload(k->module);
      break;
    }
  k->module = NULL;
  k->fn = NULL;
}

bool cuda_launch(CudaBackend *b, CudaKernel *k, int64_t n, void **params, FxError *err) {
  if (!k->fn) return fx_error_set(err, NULL, 0, 0, "kernel %s is not loaded", k->name);
  k->last_ms = 0;
  if (n <= 0) return true;
  int block = cuda_block_size(k->res.registers, &b->dev, n);
  int64_t grid = (n + block - 1) / block;
  if (b->dev.max_grid_x > 0 && grid > b->dev.max_grid_x)
    return fx_error_set(err, NULL, 0, 0, "kernel %s: %lld elements need %lld blocks; the device allows %d", k->name,
                        (long long)n, (long long)grid, b->dev.max_grid_x);
  if (b->timing && b->on_time) {
    CUevent start;
    if (!deferred_start(b, &start, err)) return false;
    CUresult r = b->api->cuLaunchKernel(k->fn, (unsigned)grid, 1, 1, (unsigned)block, 1, 1, 0, NULL, params, NULL);
    if (r != FX_CUDA_SUCCESS) {
      event_put(b, start, err);
      return cuda_check_failed(r, "cuLaunchKernel", err);
    }
    k->launches++;
    return pend_push(b, start, err);
  }
  if (b->timing) CU_CHECK(err, b->api->cuEventRecord(b->start, NULL));
  CU_CHECK(err, b->api->cuLaunchKernel(k->fn, (unsigned)grid, 1, 1, (unsigned)block, 1, 1, 0, NULL, params, NULL));
  k->launches++;
  if (b->timing) {
    CU_CHECK(err, b->api->cuEventRecord(b->stop, NULL));
    CU_CHECK(err, b->api->cuEventSynchronize(b->stop));
    float ms = 0;
    CU_CHECK(err, b->api->cuEventElapsedTime(&ms, b->start, b->stop));
    k->last_ms = ms;
    k->total_ms += ms;
  }
  return true;
}

bool cuda_sync(CudaBackend *b, FxError *err) {
  CU_CHECK(err, b->api->cuCtxSynchronize());
  return true;
}

bool cuda_while(CudaBackend *b, CudaStepFn cond, CudaStepFn body, void *ctx, CUdeviceptr pred, int64_t max_trips,
                int64_t *trips, FxError *err) {
  *trips = 0;
  for (;;) {
    if (!cond(ctx, err)) return false;
    unsigned char p = 0;
    /* The read-back synchronizes with the condition's kernels: one round trip per iteration, as
     * XLA's host-driven loops pay it. */
    if (!cuda_download(b, &p, pred, 1, err)) return false;
    if (!p) return true;
    if (max_trips > 0 && *trips >= max_trips)
      return fx_error_set(err, NULL, 0, 0, "while loop still running after %lld iterations", (long long)max_trips);
    if (!body(ctx, err)) return false;
    (*trips)++;
  }
}
