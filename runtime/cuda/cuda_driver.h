/* cuda_driver.h — the CUDA Driver API, loaded at run time.
 *
 * fxplain never links libcuda: cuda_driver_load() opens libcuda.so.1 with dlopen and fills a table
 * of function pointers, so one binary starts on machines with and without a GPU. Everything GPU in
 * runtime/ (cuda_backend.c, cuda_libs.c) calls the driver through cuda_api() and wraps every call
 * in CU_CHECK, which turns a CUresult into an FxError carrying the driver's own name and text
 * ("CUDA_ERROR_OUT_OF_MEMORY: out of memory").
 *
 * The types below are the driver's ABI (cuda.h), declared here so the file builds without the CUDA
 * toolkit. Tests may install a table of their own (cuda_driver_install) to exercise the code paths
 * that need a driver on machines that have none. */
#ifndef FXPLAIN_CUDA_DRIVER_H
#define FXPLAIN_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

#include "../../compiler/plan/plan.h"
#include "../../compiler/ir/ir.h"

typedef int CUresult; /* 0 = CUDA_SUCCESS */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;

enum {
  FX_CUDA_SUCCESS = 0,
  FX_CUDA_ERROR_NOT_INITIALIZED = 3,
  FX_CUDA_ERROR_NO_DEVICE = 100,
};

/* Device attributes (CUdevice_attribute values). */
enum {
  FX_CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
  FX_CU_ATTR_MAX_BLOCK_DIM_X = 2,
  FX_CU_ATTR_MAX_GRID_DIM_X = 5,
  FX_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  FX_CU_ATTR_WARP_SIZE = 10,
  FX_CU_ATTR_MAX_REGISTERS_PER_BLOCK = 12,
  FX_CU_ATTR_CLOCK_RATE = 13,
  FX_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  FX_CU_ATTR_MEMORY_CLOCK_RATE = 36,
  FX_CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
  FX_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  FX_CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  FX_CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
  FX_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  FX_CU_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
  FX_CU_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
};

/* The driver functions fxplain uses, by their versioned symbol names. */
typedef struct {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *v);
  CUresult (*cuGetErrorName)(CUresult r, const char **s);
  CUresult (*cuGetErrorString)(CUresult r, const char **s);
  CUresult (*cuDeviceGetCount)(int *n);
  CUresult (*cuDeviceGet)(CUdevice *d, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int len, CUdevice d);
  CUresult (*cuDeviceGetAttribute)(int *v, int attr, CUdevice d);
  CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice d);                       /* _v2 */
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *c, CUdevice d);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice d);                             /* _v2 */
  CUresult (*cuCtxSetCurrent)(CUcontext c);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemAlloc)(CUdeviceptr *p, size_t bytes);                          /* _v2 */
  CUresult (*cuMemFree)(CUdeviceptr p);                                          /* _v2 */
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);      /* _v2 */
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);            /* _v2 */
  CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);      /* _v2 */
  CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char v, size_t n);            /* _v2 */
  CUresult (*cuModuleLoadData)(CUmodule *m, const void *image);
  CUresult (*cuModuleUnload)(CUmodule m);
  CUresult (*cuModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared_bytes, CUstream s,
                             void **params, void **extra);
  CUresult (*cuEventCreate)(CUevent *e, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent e);                                         /* _v2 */
  CUresult (*cuEventRecord)(CUevent e, CUstream s);
  CUresult (*cuEventSynchronize)(CUevent e);
  CUresult (*cuEventElapsedTime)(float *ms, CUevent a, CUevent b);               /* _v2 or v1 */
} CudaApi;

/* Loads libcuda.so.1 (once; later calls return the first outcome) and calls cuInit(0). Returns
 * false and fills err with why no driver is usable: the dlopen error, a missing symbol, or
 * cuInit's error name and text. */
bool cuda_driver_load(FxError *err);
/* The loaded table, or NULL before a successful cuda_driver_load. */
const CudaApi *cuda_api(void);
/* Installs a table instead of libcuda (tests); NULL forgets it and any loaded driver's outcome. */
void cuda_driver_install(const CudaApi *api);
/* The driver's version (e.g. 12040), or 0. */
int cuda_driver_version(void);

/* Fills err from a failed driver call: "WHAT: CUDA_ERROR_NAME: the driver's text". Returns false. */
bool cuda_check_failed(CUresult r, const char *what, FxError *err);

/* CU_CHECK(err, call): on failure fills err with the call's text and the driver's message and
 * returns false from the enclosing function. */
#define CU_CHECK(err, call)                                                         \
  do {                                                                              \
    CUresult cu_r_ = (call);                                                        \
    if (cu_r_ != FX_CUDA_SUCCESS)                                                   \
      return cuda_check_failed(cu_r_, #call, (err));                                \
  } while (0)

/* One GPU as the driver describes it. */
typedef struct {
  int ordinal;
  char name[128];
  int cc_major, cc_minor;
  int sm_count;
  size_t total_mem;
  int shared_per_block, shared_per_sm; /* bytes */
  int regs_per_block, regs_per_sm;
  int max_threads_per_block, max_threads_per_sm, max_blocks_per_sm;
  int max_grid_x;
  int warp_size;
  int clock_khz, mem_clock_khz, bus_width_bits;
} CudaDeviceInfo;

/* Lists up to max GPUs into out. Returns the count (0 when the driver reports none), or -1 with
 * err filled when there is no driver or a query fails. */
int cuda_device_list(CudaDeviceInfo *out, int max, FxError *err);
/* A device profile for the rules and the cost model, from a live device. */
void cuda_device_profile(const CudaDeviceInfo *d, DeviceProfile *out);

/* Whether `run --backend gpu` can run: a driver loads, cuInit succeeds and at least one GPU is
 * present. Returns false with err saying plainly why not ("no NVIDIA driver: libcuda.so.1: cannot
 * open shared object file", "cuInit failed: ...", "the driver found no CUDA device"). */
bool rt_gpu_available(FxError *err);

#endif
