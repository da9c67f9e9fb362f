/* cuda_backend.h — executing kernels on an NVIDIA GPU through the Driver API.
 *
 * The GPU backend's primitives: a context on one device (its primary context), buffers from
 * cuMemAlloc (never managed memory), uploads and downloads, kernels compiled by NVRTC
 * (cuda_nvrtc.h) and loaded from cubin, launches with a block size chosen within the device's
 * limits and the kernel's register use, CUDA events around every launch for per-kernel times
 * (waited for at once, or read in batches: cuda_backend_defer_timing),
 * and while loops driven from the host the way XLA drives them: the condition's kernels write a
 * pred on the device, the host reads it back after each iteration and launches the body again.
 * Library kernels go through cuda_libs.h. */
#ifndef FXPLAIN_CUDA_BACKEND_H
#define FXPLAIN_CUDA_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "../../compiler/ir/ir.h"
#include "cuda_driver.h"
#include "cuda_nvrtc.h"

typedef struct CudaBackend CudaBackend;

typedef struct {
  char name[128];
  CUmodule module;
  CUfunction fn;
  CudaResources res;
  char arch[16];
  int block;            /* threads per block it launches with */
  int64_t launches;     /* since it was loaded */
  double total_ms;      /* event-timed, when timing is on */
  double last_ms;
} CudaKernel;

/* Opens device `ordinal`: loads the driver, retains the primary context and makes it current.
 * Returns NULL with err saying why (no driver, no such device, a driver error). */
CudaBackend *cuda_backend_open(int ordinal, FxError *err);
/* Frees every buffer and module still held, releases the context. NULL is fine. */
void cuda_backend_close(CudaBackend *b);
const CudaDeviceInfo *cuda_backend_device(const CudaBackend *b);
/* Event-time every launch (per-kernel times for `run` and `profile`). On by default. */
void cuda_backend_set_timing(CudaBackend *b, bool on);

/* Deferred timing: with fn set, launches and timer start/stop record CUDA events and return
 * without waiting; each timed piece of work is reported later as fn(ctx, tag, ms) with the tag
 * set when it was launched (cuda_backend_set_tag), at cuda_timings_collect (which waits for the
 * last recorded event) or when many are pending. NULL fn: every launch waits for its own time
 * (last_ms). Collect before turning it off. */
typedef void (*CudaTimeFn)(void *ctx, int tag, double ms);
void cuda_backend_defer_timing(CudaBackend *b, CudaTimeFn fn, void *ctx);
void cuda_backend_set_tag(CudaBackend *b, int tag);
bool cuda_timings_collect(CudaBackend *b, FxError *err);

/* Device memory: cuMemAlloc'd, zero bytes allowed (gets a 1-byte allocation). */
bool cuda_buffer_alloc(CudaBackend *b, size_t bytes, CUdeviceptr *out, FxError *err);
bool cuda_buffer_free(CudaBackend *b, CUdeviceptr p, FxError *err);
bool cuda_upload(CudaBackend *b, CUdeviceptr dst, const void *src, size_t bytes, FxError *err);
bool cuda_download(CudaBackend *b, void *dst, CUdeviceptr src, size_t bytes, FxError *err);
bool cuda_copy(CudaBackend *b, CUdeviceptr dst, CUdeviceptr src, size_t bytes, FxError *err);

/* Compiles `source` for the device (cuda_nvrtc_compile, cached), loads the cubin and finds
 * `kernel`. The kernel's block size follows from its registers and the device's limits. */
bool cuda_kernel_load(CudaBackend *b, const char *source, const char *kernel, CudaKernel *k, FxError *err);
void cuda_kernel_unload(CudaBackend *b, CudaKernel *k);
/* Loads a cubin holding many kernels (a stage's unit); it stays loaded until close. */
bool cuda_module_load(CudaBackend *b, const void *cubin, CUmodule *out, FxError *err);
/* Finds `name` in a loaded module; res are its ptxas figures (for the block size). */
bool cuda_module_kernel(CudaBackend *b, CUmodule m, const char *name, const CudaResources *res, CudaKernel *k,
                        FxError *err);
/* Event-times work that is not a cuLaunchKernel of ours (cuBLAS, cuDNN): start, then stop gives
 * the milliseconds between (0 when timing is off). */
bool cuda_timer_start(CudaBackend *b, FxError *err);
bool cuda_timer_stop(CudaBackend *b, double *ms, FxError *err);
/* Threads per block for a kernel using `regs` registers per thread over n elements: a multiple
 * of the warp size, at most 256, within max threads per block and registers per block. */
int cuda_block_size(int regs, const CudaDeviceInfo *d, int64_t n);
/* Launches k over n elements (grid = ceil(n / block)) with the kernel parameters `params`
 * (pointers to each argument, as cuLaunchKernel takes them); waits for it when timing and not
 * deferred. */
bool cuda_launch(CudaBackend *b, CudaKernel *k, int64_t n, void **params, FxError *err);
bool cuda_sync(CudaBackend *b, FxError *err);

/* A while loop driven from the host. cond() launches the condition's kernels, which leave a
 * pred (one byte) at `pred`; the host reads it back; while true, body() launches the body's
 * kernels. Stops with an error after max_trips iterations (0 = no limit). *trips counts the
 * bodies run. */
typedef bool (*CudaStepFn)(void *ctx, FxError *err);
bool cuda_while(CudaBackend *b, CudaStepFn cond, CudaStepFn body, void *ctx, CUdeviceptr pred,
                int64_t max_trips, int64_t *trips, FxError *err);

/* The GPU backend's table (cuda_exec.c): `run --backend gpu`, found by rt_backend_lookup
 * (backend.h). */
struct RtBackend;
extern const struct RtBackend rt_backend_gpu;

#endif
