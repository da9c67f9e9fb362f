/* cuda_nvrtc.h — compiling CUDA C to cubin with NVRTC, and what ptxas says about each kernel.
 *
 * The GPU backend hands every kernel's CUDA source here. It is compiled for the device's
 * architecture (or `set gpu_arch sm_XX`) with ptxas in verbose mode, so every kernel comes back
 * with its real resource figures: registers per thread, spill stores and loads, shared memory,
 * stack. Cubins and their ptxas logs are cached by a hash of source, architecture, options and
 * NVRTC version in the user cache directory the CPU backend uses (cpu_resolve_cache_dir:
 * $FXPLAIN_CACHE_DIR, else $XDG_CACHE_HOME/fxplain, else ~/.cache/fxplain), under its cuda/ folder.
 *
 * NVRTC needs no GPU, so all of this works (and is tested) on machines without one. When fxplain
 * is built without the CUDA toolkit, cuda_nvrtc_compile() fails with a plain message and the
 * parsing and occupancy functions still work. */
#ifndef FXPLAIN_CUDA_NVRTC_H
#define FXPLAIN_CUDA_NVRTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../compiler/plan/plan.h"
#include "../../compiler/ir/ir.h"

/* What ptxas reports for one kernel. */
typedef struct {
  bool found;          /* the log described the kernel */
  int registers;       /* per thread */
  int spill_stores;    /* bytes */
  int spill_loads;     /* bytes */
  int stack_bytes;     /* stack frame */
  int shared_bytes;    /* static shared memory (smem) */
  int const_bytes;     /* cmem[0]: kernel parameters and constants */
  int barriers;
} CudaResources;

typedef struct {
  const char *arch;   /* "sm_80"; NULL or "" uses cuda_nvrtc_default_arch() */
  int max_registers;  /* --maxrregcount; 0 leaves it to ptxas */
  bool no_cache;      /* compile even when a cached cubin exists (and don't store) */
  bool want_ptx;      /* also keep the PTX NVRTC made (implies no_cache) */
} CudaCompileOptions;

typedef struct {
  void *cubin;        /* fx_malloc'd */
  size_t cubin_size;
  char *log;          /* the NVRTC/ptxas log, fx_malloc'd, never NULL after success */
  char arch[16];
  uint64_t hash;      /* the cache key */
  bool cached;        /* came from the cache */
  CudaResources res;  /* of the requested kernel */
  char *ptx;          /* the PTX, fx_malloc'd, when CudaCompileOptions.want_ptx asked for it */
} CudaCubin;

/* Whether this build has NVRTC (FXPLAIN_HAVE_NVRTC). */
bool cuda_nvrtc_built_in(void);
/* "13.0", or "" without NVRTC. */
const char *cuda_nvrtc_version(void);
/* Whether cuRAND's device headers (curand_kernel.h, which the rng kernel includes) are where NVRTC
 * looks; false with the reason in why (n bytes) when not. */
bool cuda_nvrtc_has_curand(char *why, size_t n);
/* The architecture used when none is given: `set gpu_arch`, else the live device's, else sm_75
 * (the paper's RTX 2080 Ti). */
const char *cuda_nvrtc_default_arch(void);
/* Sets the default architecture ("sm_80"); NULL or "" goes back to automatic. Returns false with
 * err when NVRTC (where built in) cannot compile for it, or it is not of the form sm_NN. */
bool cuda_nvrtc_set_arch(const char *arch, FxError *err);
/* Whether `set gpu_arch` chose one (rather than automatic). */
bool cuda_nvrtc_arch_is_set(void);
/* Lists the architectures NVRTC supports as "sm_75 sm_80 ..." into buf. */
void cuda_nvrtc_supported_archs(char *buf, size_t n);

/* Compiles `source` (CUDA C; kernels declared extern "C") and reads the resources of `kernel`
 * from the ptxas log. `file` names the program in NVRTC's messages. Fills out (free with
 * cuda_cubin_free). Returns false with err holding NVRTC's status and the first error of its log. */
bool cuda_nvrtc_compile(const char *source, const char *file, const char *kernel,
                        const CudaCompileOptions *opt, CudaCubin *out, FxError *err);
void cuda_cubin_free(CudaCubin *c);

/* Reads the figures for `kernel` (NULL: the first entry function) from a ptxas -v log. Returns
 * false when the log does not describe it. */
bool cuda_ptxas_parse(const char *log, const char *kernel, CudaResources *out);

/* Occupancy of a kernel with these resources launched with `block` threads per block on the
 * device: resident warps per SM over the maximum, 0..1. *limit names what bounds it ("registers",
 * "shared memory", "threads", "blocks"). */
double cuda_occupancy(const CudaResources *r, int block, const DeviceProfile *dev, const char **limit);

/* The cache folder for cubins (created on demand), or "" when there is none usable. */
const char *cuda_cache_dir(char *buf, size_t n);
/* FNV-1a 64 over the bytes of s, continuing from h (start with CUDA_HASH_INIT). */
#define CUDA_HASH_INIT 0xcbf29ce484222325ULL
uint64_t cuda_hash(uint64_t h, const void *s, size_t n);

#endif
