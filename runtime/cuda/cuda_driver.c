/* cuda_driver.c — loading the CUDA Driver API at run time, and what it says about the GPUs.
 *
 * The first call to cuda_driver_load() dlopens libcuda.so.1, looks up every symbol of CudaApi (by
 * the versioned names cuda.h maps to: cuMemAlloc_v2, ...), and calls cuInit(0). The outcome, good
 * or bad, is remembered: `devices`, `run --backend gpu` and the GPU backend all ask here first.
 * Where this sits: runtime/, below cuda_backend.c and cuda_libs.c; repl/cmd_gpu.c prints what
 * cuda_device_list() returns. */
#include "cuda_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static CudaApi g_api;
static bool g_tried, g_ok;
static FxError g_load_err;
static void *g_handle;
static int g_version;

const CudaApi *cuda_api(void) { return g_ok ? &g_api : NULL; }
int cuda_driver_version(void) { return g_ok ? g_version : 0; }

void cuda_driver_install(const CudaApi *api) {
  if (g_handle) {
    dlclose(g_handle);
    g_handle = NULL;
  }
  memset(&g_api, 0, sizeof g_api);
  fx_error_clear(&g_load_err);
  g_version = 0;
  if (api) {
    g_api = *api;
    g_tried = g_ok = true;
    if (g_api.cuDriverGetVersion) g_api.cuDriverGetVersion(&g_version);
  } else {
    g_tried = g_ok = false;
  }
}

bool cuda_check_failed(CUresult r, const char *what, FxError *err) {
  const char *name = NULL, *text = NULL;
  if (g_ok && g_api.cuGetErrorName) g_api.cuGetErrorName(r, &name);
  if (g_ok && g_api.cuGetErrorString) g_api.cuGetErrorString(r, &text);
  /* Show the call without its arguments: "cuMemAlloc(&p, bytes)" -> "cuMemAlloc". The table's
   * field access (api->cuMemAlloc) is dropped too. */
  char fn[96];
  const char *start = strstr(what, "cu");
  const char *arrow = strrchr(what, '>');
  if (arrow && arrow < strchr(what, '(')) start = arrow + 1;
  if (!start) start = what;
  size_t n = strcspn(start, "(");
  if (n >= sizeof fn) n = sizeof fn - 1;
  memcpy(fn, start, n);
  fn[n] = 0;
  return fx_error_set(err, NULL, 0, 0, "CUDA driver: %s failed: %s: %s", fn,
                      name ? name : "CUDA_ERROR_UNKNOWN", text ? text : "unknown error");
}

/* dlsym into *slot; false (with err) when the symbol is missing. */
static bool sym(void *h, const char *name, void *slot, FxError *err) {
  void *p = dlsym(h, name);
  if (!p) return fx_error_set(err, NULL, 0, 0, "no usable NVIDIA driver: libcuda.so.1 lacks %s", name);
  memcpy(slot, &p, sizeof p); /* object pointer to function pointer, without a cast ISO C forbids */
  return true;
}

static bool load(FxError *err) {
  dlerror();
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    return fx_error_set(err, NULL, 0, 0, "no NVIDIA driver: %s", why ? why : "libcuda.so.1 not found");
  }
  CudaApi a;
  memset(&a, 0, sizeof a);
  bool ok = sym(h, "cuInit", &a.cuInit, err) && sym(h, "cuDriverGetVersion", &a.cuDriverGetVersion, err) &&
            sym(h, "cuGetErrorName", &a.cuGetErrorName, err) &&
            sym(h, "cuGetErrorString", &a.cuGetErrorString, err) &&
            sym(h, "cuDeviceGetCount", &a.cuDeviceGetCount, err) && sym(h, "cuDeviceGet", &a.cuDeviceGet, err) &&
            sym(h, "cuDeviceGetName", &a.cuDeviceGetName, err) &&
            sym(h, "cuDeviceGetAttribute", &a.cuDeviceGetAttribute, err) &&
            sym(h, "cuDeviceTotalMem_v2", &a.cuDeviceTotalMem, err) &&
            sym(h, "cuDevicePrimaryCtxRetain", &a.cuDevicePrimaryCtxRetain, err) &&
            sym(h, "cuDevicePrimaryCtxRelease_v2", &a.cuDevicePrimaryCtxRelease, err) &&
            sym(h, "cuCtxSetCurrent", &a.cuCtxSetCurrent, err) && sym(h, "cuCtxSynchronize", &a.cuCtxSynchronize, err) &&
            sym(h, "cuMemAlloc_v2", &a.cuMemAlloc, err) && sym(h, "cuMemFree_v2", &a.cuMemFree, err) &&
            sym(h, "cuMemcpyHtoD_v2", &a.cuMemcpyHtoD, err) && sym(h, "cuMemcpyDtoH_v2", &a.cuMemcpyDtoH, err) &&
            sym(h, "cuMemcpyDtoD_v2", &a.cuMemcpyDtoD, err) && sym(h, "cuMemsetD8_v2", &a.cuMemsetD8, err) &&
            sym(h, "cuModuleLoadData", &a.cuModuleLoadData, err) && sym(h, "cuModuleUnload", &a.cuModuleUnload, err) &&
            sym(h, "cuModuleGetFunction", &a.cuModuleGetFunction, err) &&
            sym(h, "cuLaunchKernel", &a.cuLaunchKernel, err) && sym(h, "cuEventCreate", &a.cuEventCreate, err) &&
            sym(h, "cuEventDestroy_v2", &a.cuEventDestroy, err) && sym(h, "cuEventRecord", &a.cuEventRecord, err) &&
            sym(h, "cuEventSynchronize", &a.cuEventSynchronize, err);
  if (ok) {
    /* cuEventElapsedTime_v2 arrived with CUDA 12.8; older drivers have only the first version,
     * with the same signature. */
    FxError ignore;
    fx_error_clear(&ignore);
    if (!sym(h, "cuEventElapsedTime_v2", &a.cuEventElapsedTime, &ignore))
      ok = sym(h, "cuEventElapsedTime", &a.cuEventElapsedTime, err);
  }
  if (!ok) {
    dlclose(h);
    return false;
  }
  g_api = a;
  g_handle = h;
  g_ok = true; /* so cuda_check_failed can ask the driver for its messages */
  CUresult r = a.cuInit(0);
  if (r != FX_CUDA_SUCCESS) {
    FxError e;
    fx_error_clear(&e);
    cuda_check_failed(r, "cuInit", &e);
    g_ok = false;
    memset(&g_api, 0, sizeof g_api);
    dlclose(h);
    g_handle = NULL;
    /* "CUDA driver: cuInit failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected" */
    return fx_error_set(err, NULL, 0, 0, "%s", e.msg);
  }
  a.cuDriverGetVersion(&g_version);
  return true;
}

bool cuda_driver_load(FxError *err) {
  if (!g_tried) {
    g_tried = true;
    fx_error_clear(&g_load_err);
    g_ok = load(&g_load_err);
  }
  if (!g_ok) {
    fx_error_set(err, NULL, 0, 0, "%s", g_load_err.msg);
    return false;
  }
  return true;
}

static bool device_info(const CudaApi *a, int ordinal, CudaDeviceInfo *d, FxError *err) {
  memset(d, 0, sizeof *d);
  d->ordinal = ordinal;
  CUdevice dev;
  CU_CHECK(err, a->cuDeviceGet(&dev, ordinal));
  CU_CHECK(err, a->cuDeviceGetName(d->name, (int)sizeof d->name - 1, dev));
  CU_CHECK(err, a->cuDeviceTotalMem(&d->total_mem, dev));
  struct {
    int attr;
    int *out;
  } q[] = {
      {FX_CU_ATTR_COMPUTE_CAPABILITY_MAJOR, &d->cc_major},
      {FX_CU_ATTR_COMPUTE_CAPABILITY_MINOR, &d->cc_minor},
      {FX_CU_ATTR_MULTIPROCESSOR_COUNT, &d->sm_count},
      {FX_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, &d->shared_per_block},
      {FX_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &d->shared_per_sm},
      {FX_CU_ATTR_MAX_REGISTERS_PER_BLOCK, &d->regs_per_block},
      {FX_CU_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR, &d->regs_per_sm},
      {FX_CU_ATTR_MAX_THREADS_PER_BLOCK, &d->max_threads_per_block},
      {FX_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR, &d->max_threads_per_sm},
      {FX_CU_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR, &d->max_blocks_per_sm},
      {FX_CU_ATTR_MAX_GRID_DIM_X, &d->max_grid_x},
      {FX_CU_ATTR_WARP_SIZE, &d->warp_size},
      {FX_CU_ATTR_CLOCK_RATE, &d->clock_khz},
      {FX_CU_ATTR_MEMORY_CLOCK_RATE, &d->mem_clock_khz},
      {FX_CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH, &d->bus_width_bits},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) CU_CHECK(err, a->cuDeviceGetAttribute(q[i].out, q[i].attr, dev));
  return true;
}

int cuda_device_list(CudaDeviceInfo *out, int max, FxError *err) {
  if (!cuda_driver_load(err)) return -1;
  const CudaApi *a = cuda_api();
  int n = 0;
  CUresult r = a->cuDeviceGetCount(&n);
  if (r != FX_CUDA_SUCCESS) {
    cuda_check_failed(r, "cuDeviceGetCount", err);
    return -1;
  }
  int k = 0;
  for (int i = 0; i < n && k < max; i++, k++)
    if (!device_info(a, i, &out[k], err)) return -1;
  return n < max ? n : max;
}

void cuda_device_profile(const CudaDeviceInfo *d, DeviceProfile *p) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%.63s", d->name);
  p->is_gpu = true;
  p->sm_count = d->sm_count;
  p->max_threads_per_block = d->max_threads_per_block;
  p->shared_mem_per_block = d->shared_per_block;
  p->registers_per_sm = d->regs_per_sm;
  p->max_registers_per_thread = 255; /* every architecture since Kepler */
  /* DDR: two transfers per memory clock. */
  p->dram_gbps = 2.0 * d->mem_clock_khz * 1e3 * (d->bus_width_bits / 8.0) / 1e9;
  /* FP32 lanes per SM by architecture (2 FLOPs per FMA). */
  int lanes = 64;
  if (d->cc_major == 8 && d->cc_minor != 0) lanes = 128;
  if (d->cc_major >= 9 || (d->cc_major == 8 && d->cc_minor == 9)) lanes = 128;
  p->peak_gflops = 2.0 * lanes * d->sm_count * d->clock_khz / 1e6;
  p->launch_us = 5.0;
  snprintf(p->arch, sizeof p->arch, "sm_%d%d", d->cc_major, d->cc_minor);
  p->clock_ghz = d->clock_khz / 1e6;
  p->fpus_per_sm = lanes;
  p->max_threads_per_sm = d->max_threads_per_sm;
  p->registers_per_block = d->regs_per_block;
  p->shared_mem_per_sm = d->shared_per_sm;
  p->l1_cache_bytes_per_sm = 2 * 1024; /* XLA's figure for every NVIDIA GPU (see device.h) */
}

bool rt_gpu_available(FxError *err) {
  CudaDeviceInfo d;
  int n = cuda_device_list(&d, 1, err);
  if (n < 0) return false;
  if (n == 0) return fx_error_set(err, NULL, 0, 0, "the NVIDIA driver found no CUDA device");
  return true;
}
