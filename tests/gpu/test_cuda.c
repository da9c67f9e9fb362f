/* test_cuda.c — the GPU runtime without a GPU: driver loading and its messages, a fake driver
 * standing in for libcuda (device listing, error text, buffers, launches, host-driven while
 * loops), NVRTC compilation for sm_75/sm_80/sm_90 with real ptxas figures (spills included),
 * the cubin cache, occupancy, the rng kernel's stream, and the dot → cuBLAS and
 * convolution → cuDNN mappings checked by executing the library call's semantics on the host. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/fusion/fusion.h"
#include "../../compiler/ir/ir.h"
#include "../../repl/session.h"
#include "../../runtime/backend.h"
#include "../../runtime/cuda/cuda.h"
#include "../../runtime/interp/rng_stream.h"
#include "../../runtime/runtime.h"
#include "loop_kernels.h"

/* ---------- a fake driver ---------- */

typedef struct {
  const char *name;
} FakeFn;
static FakeFn fake_fns[] = {{"fx_cond"}, {"fx_body"}, {"fx_axpb"}};
static FakeFn fake_generic = {"generic"}; /* any other kernel: launched, computes nothing */
static bool fake_accept_any;
static int fake_live_allocs, fake_launches, fake_fail_alloc, fake_loaded, fake_dtoh, fake_alloc_calls;
static unsigned fake_last_block, fake_last_grid;

static CUresult f_init(unsigned fl) { (void)fl; return 0; }
static CUresult f_version(int *v) { *v = 12040; return 0; }
static CUresult f_err_name(CUresult r, const char **s) {
  *s = r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : r == 500 ? "CUDA_ERROR_NOT_FOUND" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
static CUresult f_err_string(CUresult r, const char **s) {
  *s = r == 2 ? "out of memory" : r == 500 ? "named symbol not found" : "unknown error";
  return 0;
}
static CUresult f_count(int *n) { *n = 1; return 0; }
static CUresult f_get(CUdevice *d, int o) { *d = o; return o == 0 ? 0 : 101; }
static CUresult f_name(char *n, int len, CUdevice d) { (void)d; snprintf(n, (size_t)len, "Fake RTX 2080 Ti"); return 0; }
static CUresult f_attr(int *v, int attr, CUdevice d) {
  (void)d;
  switch (attr) {
  case FX_CU_ATTR_COMPUTE_CAPABILITY_MAJOR: *v = 7; break;
  case FX_CU_ATTR_COMPUTE_CAPABILITY_MINOR: *v = 5; break;
  case FX_CU_ATTR_MULTIPROCESSOR_COUNT: *v = 68; break;
  case FX_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 * 1024; break;
  case FX_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 64 * 1024; break;
  case FX_CU_ATTR_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
  case FX_CU_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
  case FX_CU_ATTR_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case FX_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR: *v = 1024; break;
  case FX_CU_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 16; break;
  case FX_CU_ATTR_MAX_GRID_DIM_X: *v = 2147483647; break;
  case FX_CU_ATTR_WARP_SIZE: *v = 32; break;
  case FX_CU_ATTR_CLOCK_RATE: *v = 1545000; break;
  case FX_CU_ATTR_MEMORY_CLOCK_RATE: *v = 7000000; break;
  case FX_CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH: *v = 352; break;
  default: *v = 0;
  }
  return 0;
}
static CUresult f_total(size_t *b, CUdevice d) { (void)d; *b = (size_t)11 << 30; return 0; }
static int fake_ctx_token;
static CUresult f_retain(CUcontext *c, CUdevice d) { (void)d; *c = (CUcontext)(void *)&fake_ctx_token; return 0; }
static CUresult f_release(CUdevice d) { (void)d; return 0; }
static CUresult f_setcur(CUcontext c) { (void)c; return 0; }
static CUresult f_sync(void) { return 0; }
static CUresult f_alloc(CUdeviceptr *p, size_t n) {
  if (fake_fail_alloc) return 2;
  fake_alloc_calls++;
  void *m = calloc(1, n);
  *p = (CUdeviceptr)(uintptr_t)m;
  fake_live_allocs++;
  return 0;
}
static CUresult f_free(CUdeviceptr p) { free((void *)(uintptr_t)p); fake_live_allocs--; return 0; }
static CUresult f_htod(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
static CUresult f_dtoh(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (void *)(uintptr_t)s, n);
  fake_dtoh++;
  return 0;
}
static CUresult f_dtod(CUdeviceptr d, CUdeviceptr s, size_t n) { memcpy((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return 0; }
static CUresult f_memset(CUdeviceptr d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); return 0; }
static CUresult f_modload(CUmodule *m, const void *img) {
  /* A cubin is an ELF image: the fake accepts only what NVRTC really produced. */
  if (memcmp(img, "\x7f" "ELF", 4) != 0) return 200;
  *m = (CUmodule)(void *)&fake_fns;
  fake_loaded++;
  return 0;
}
static CUresult f_modunload(CUmodule m) { (void)m; fake_loaded--; return 0; }
static CUresult f_getfn(CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  for (size_t i = 0; i < sizeof fake_fns / sizeof fake_fns[0]; i++)
    if (strcmp(fake_fns[i].name, name) == 0) {
      *f = (CUfunction)(void *)&fake_fns[i];
      return 0;
    }
  if (fake_accept_any) {
    *f = (CUfunction)(void *)&fake_generic;
    return 0;
  }
  return 500;
}
/* Runs the kernels of loop_kernels.h on the host, thread 0 only where they do. */
static CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned sh, CUstream s, void **params, void **extra) {
  (void)gy, (void)gz, (void)by, (void)bz, (void)sh, (void)s, (void)extra;
  const FakeFn *fn = (const FakeFn *)(void *)f;
  fake_launches++;
  fake_last_block = bx;
  fake_last_grid = gx;
  if (fn == &fake_generic) return 0;
  CUdeviceptr p0 = *(CUdeviceptr *)params[0], p1 = *(CUdeviceptr *)params[1];
  if (strcmp(fn->name, "fx_cond") == 0) {
    CUdeviceptr p2 = *(CUdeviceptr *)params[2];
    *(unsigned char *)(uintptr_t)p2 = *(int *)(uintptr_t)p0 < *(int *)(uintptr_t)p1;
  } else if (strcmp(fn->name, "fx_body") == 0) {
    int *i = (int *)(uintptr_t)p0;
    *(float *)(uintptr_t)p1 += (float)*i;
    *i += 1;
  } else {
    long long n = *(long long *)params[2];
    const float *in = (const float *)(uintptr_t)p0;
    float *out = (float *)(uintptr_t)p1;
    for (long long j = 0; j < n && j < (long long)gx * bx; j++) out[j] = in[j] * 2.0f + 1.0f;
  }
  return 0;
}
static int fake_event_token;
static CUresult f_evcreate(CUevent *e, unsigned fl) { (void)fl; *e = (CUevent)(void *)&fake_event_token; return 0; }
static CUresult f_evdestroy(CUevent e) { (void)e; return 0; }
static CUresult f_evrecord(CUevent e, CUstream s) { (void)e, (void)s; return 0; }
static CUresult f_evsync(CUevent e) { (void)e; return 0; }
static CUresult f_evtime(float *ms, CUevent a, CUevent b) { (void)a, (void)b; *ms = 0.25f; return 0; }

static const CudaApi fake_api = {
    f_init, f_version, f_err_name, f_err_string, f_count, f_get, f_name, f_attr, f_total, f_retain, f_release,
    f_setcur, f_sync, f_alloc, f_free, f_htod, f_dtoh, f_dtod, f_memset, f_modload, f_modunload, f_getfn,
    f_launch, f_evcreate, f_evdestroy, f_evrecord, f_evsync, f_evtime,
};

/* ---------- driver ---------- */

TEST(driver_missing_is_explained) {
  cuda_driver_install(NULL);
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  FxError err;
  fx_error_clear(&err);
  bool ok = cuda_driver_load(&err);
  if (!h) {
    /* No driver on this machine: the message is the loader's own reason. */
    CHECK(!ok);
    CHECK_CONTAINS(err.msg, "no NVIDIA driver: libcuda.so.1: cannot open shared object file");
    fx_error_clear(&err);
    CHECK(!rt_gpu_available(&err));
    CHECK_CONTAINS(err.msg, "no NVIDIA driver");
    CudaDeviceInfo d;
    fx_error_clear(&err);
    CHECK(cuda_device_list(&d, 1, &err) == -1);
    CHECK(cuda_backend_open(0, &err) == NULL);
    CHECK(cuda_api() == NULL);
  } else {
    dlclose(h);
    /* A driver exists: it either initializes or says cuInit's error. */
    CHECK(ok || strstr(err.msg, "cuInit failed: CUDA_ERROR_") != NULL);
  }
  cuda_driver_install(NULL);
}

TEST(fake_driver_lists_device_and_profile) {
  cuda_driver_install(&fake_api);
  FxError err;
  fx_error_clear(&err);
  CudaDeviceInfo d[4];
  CHECK(cuda_device_list(d, 4, &err) == 1);
  CHECK_STR(d[0].name, "Fake RTX 2080 Ti");
  CHECK(d[0].cc_major == 7 && d[0].cc_minor == 5 && d[0].sm_count == 68);
  CHECK(d[0].regs_per_sm == 65536 && d[0].shared_per_block == 48 * 1024);
  DeviceProfile p;
  cuda_device_profile(&d[0], &p);
  CHECK_STR(p.arch, "sm_75");
  CHECK(p.is_gpu && p.sm_count == 68);
  /* 68 SMs x 64 lanes x 2 FLOPs x 1.545 GHz = 13.45 TFLOP/s; 352-bit at 14 Gbit/s = 616 GB/s. */
  CHECK_NEAR(p.peak_gflops, 13447.7, 0.1);
  CHECK_NEAR(p.dram_gbps, 616.0, 0.01);
  CHECK(rt_gpu_available(&err));
  CHECK_STR(cuda_nvrtc_default_arch(), "sm_75");
  cuda_driver_install(NULL);
}

TEST(driver_errors_carry_the_drivers_text) {
  cuda_driver_install(&fake_api);
  FxError err;
  fx_error_clear(&err);
  CudaBackend *b = cuda_backend_open(0, &err);
  CHECK(b != NULL);
  fake_fail_alloc = 1;
  CUdeviceptr p;
  CHECK(!cuda_buffer_alloc(b, 64, &p, &err));
  CHECK_STR(err.msg, "CUDA driver: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY: out of memory");
  fake_fail_alloc = 0;
  fx_error_clear(&err);
  CHECK(cuda_backend_open(3, &err) == NULL);
  CHECK_STR(err.msg, "there is no GPU 3 (1 found)");
  cuda_backend_close(b);
  cuda_driver_install(NULL);
}

/* ---------- backend over the fake driver ---------- */

typedef struct {
  CudaBackend *b;
  CudaKernel *cond, *body;
  CUdeviceptr i, limit, pred, acc;
} LoopCtx;

static bool loop_cond(void *c, FxError *err) {
  LoopCtx *x = c;
  long long n = 1;
  void *params[] = {&x->i, &x->limit, &x->pred, &n};
  return cuda_launch(x->b, x->cond, 1, params, err);
}
static bool loop_body(void *c, FxError *err) {
  LoopCtx *x = c;
  long long n = 1;
  void *params[] = {&x->i, &x->acc, &n};
  return cuda_launch(x->b, x->body, 1, params, err);
}

TEST(fake_driver_runs_a_host_driven_loop) {
  if (!cuda_nvrtc_built_in()) return;
  cuda_driver_install(&fake_api);
  FxError err;
  fx_error_clear(&err);
  CudaBackend *b = cuda_backend_open(0, &err);
  CHECK(b != NULL);
  CudaKernel cond, body;
  CHECK(cuda_kernel_load(b, loop_kernels_src, "fx_cond", &cond, &err));
  CHECK(cuda_kernel_load(b, loop_kernels_src, "fx_body", &body, &err));
  CHECK_STR(cond.arch, "sm_75");
  CHECK(cond.res.found && cond.res.registers > 0);
  LoopCtx x = {b, &cond, &body, 0, 0, 0, 0};
  int zero = 0, limit = 10;
  float facc = 0;
  CHECK(cuda_buffer_alloc(b, 4, &x.i, &err) && cuda_buffer_alloc(b, 4, &x.limit, &err) &&
        cuda_buffer_alloc(b, 1, &x.pred, &err) && cuda_buffer_alloc(b, 4, &x.acc, &err));
  CHECK(cuda_upload(b, x.i, &zero, 4, &err) && cuda_upload(b, x.limit, &limit, 4, &err) &&
        cuda_upload(b, x.acc, &facc, 4, &err));
  int64_t trips = 0;
  fake_launches = 0;
  CHECK(cuda_while(b, loop_cond, loop_body, &x, x.pred, 0, &trips, &err));
  CHECK(trips == 10);
  CHECK(fake_launches == 21); /* 11 conditions, 10 bodies */
  CHECK(cuda_download(b, &facc, x.acc, 4, &err));
  CHECK(facc == 45.0f);
  CHECK(cond.launches == 11 && body.launches == 10);
  CHECK_NEAR(body.total_ms, 2.5, 1e-6); /* the fake's events say 0.25 ms per launch */
  /* A loop limit stops a runaway loop with a message. */
  CHECK(cuda_upload(b, x.i, &zero, 4, &err));
  CHECK(!cuda_while(b, loop_cond, loop_body, &x, x.pred, 3, &trips, &err));
  CHECK_STR(err.msg, "while loop still running after 3 iterations");
  /* Elementwise kernel over 1000 elements: 4 blocks of 256. */
  fx_error_clear(&err);
  CudaKernel k;
  CHECK(cuda_kernel_load(b, axpb_src, "fx_axpb", &k, &err));
  float in[1000], out[1000];
  for (int j = 0; j < 1000; j++) in[j] = (float)j;
  CUdeviceptr din, dout;
  CHECK(cuda_buffer_alloc(b, sizeof in, &din, &err) && cuda_buffer_alloc(b, sizeof out, &dout, &err));
  CHECK(cuda_upload(b, din, in, sizeof in, &err));
  long long n = 1000;
  void *params[] = {&din, &dout, &n};
  CHECK(cuda_launch(b, &k, n, params, &err));
  CHECK(fake_last_block == 256 && fake_last_grid == 4);
  CHECK(cuda_download(b, out, dout, sizeof out, &err));
  CHECK(out[0] == 1.0f && out[999] == 1999.0f);
  CHECK(cuda_buffer_free(b, din, &err));
  /* A missing kernel name is the driver's error, with its text. */
  CudaKernel bad;
  CHECK(!cuda_kernel_load(b, axpb_src, "fx_nope", &bad, &err));
  CHECK_STR(err.msg, "CUDA driver: cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND: named symbol not found");
  cuda_backend_close(b); /* frees what is left */
  CHECK(fake_live_allocs == 0);
  CHECK(fake_loaded == 0);
  cuda_driver_install(NULL);
}

TEST(block_size_respects_limits) {
  CudaDeviceInfo d = {.warp_size = 32, .max_threads_per_block = 1024, .regs_per_block = 65536};
  CHECK(cuda_block_size(0, &d, 0) == 256);
  CHECK(cuda_block_size(32, &d, 1 << 20) == 256);
  CHECK(cuda_block_size(255, &d, 1 << 20) == 256); /* 256 x 255 = 65280 registers: fits */
  d.regs_per_block = 32768;
  CHECK(cuda_block_size(255, &d, 1 << 20) == 128); /* 32768 / 255 = 128: 32640 registers */
  CHECK(cuda_block_size(200, &d, 1 << 20) == 160); /* 163 -> whole warps: 160 x 200 = 32000 */
  CHECK(cuda_block_size(16, &d, 5) == 32);         /* a whole warp at least */
  d.max_threads_per_block = 64;
  CHECK(cuda_block_size(0, &d, 1 << 20) == 64);
}

/* ---------- ptxas logs ---------- */

TEST(ptxas_log_parsing) {
  const char *log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'first' for 'sm_80'\n"
      "ptxas info    : Function properties for first\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers, 364 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'second' for 'sm_80'\n"
      "ptxas info    : Function properties for second\n"
      "ptxas         .     104 bytes stack frame, 96 bytes spill stores, 112 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]\n";
  CudaResources r;
  CHECK(cuda_ptxas_parse(log, "second", &r));
  CHECK(r.registers == 255 && r.spill_stores == 96 && r.spill_loads == 112 && r.stack_bytes == 104);
  CHECK(r.shared_bytes == 4096 && r.barriers == 1 && r.const_bytes == 380);
  CHECK(cuda_ptxas_parse(log, "first", &r));
  CHECK(r.registers == 8 && r.spill_stores == 0 && r.shared_bytes == 0 && r.const_bytes == 364);
  CHECK(cuda_ptxas_parse(log, NULL, &r) && r.registers == 8);
  CHECK(!cuda_ptxas_parse(log, "third", &r));
  CHECK(!cuda_ptxas_parse("", "first", &r));
}

TEST(occupancy_follows_resources) {
  const DeviceProfile *turing = device_lookup("rtx2080ti");
  CHECK(turing != NULL);
  if (!turing) return;
  CudaResources r = {.found = true, .registers = 255};
  const char *limit = NULL;
  /* 255 registers -> 8192 per warp; 8 warps per block -> one block per SM: 8 of 32 warps. */
  CHECK_NEAR(cuda_occupancy(&r, 256, turing, &limit), 0.25, 1e-9);
  CHECK_STR(limit, "registers");
  r.registers = 32;
  CHECK_NEAR(cuda_occupancy(&r, 256, turing, &limit), 1.0, 1e-9);
  CHECK_STR(limit, "threads");
  r.shared_bytes = 48 * 1024; /* one block of 64 KiB per SM fits */
  CHECK_NEAR(cuda_occupancy(&r, 256, turing, &limit), 0.25, 1e-9);
  CHECK_STR(limit, "shared memory");
}

/* ---------- NVRTC ---------- */

static char cache_dir[256];

static void use_temp_cache(void) {
  if (!cache_dir[0]) {
    snprintf(cache_dir, sizeof cache_dir, "/tmp/fxplain-test-cuda-XXXXXX");
    if (!mkdtemp(cache_dir)) cache_dir[0] = 0;
  }
  setenv("FXPLAIN_CACHE_DIR", cache_dir, 1);
}

TEST(nvrtc_compiles_for_each_arch) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  static const char *const archs[] = {"sm_75", "sm_80", "sm_90"};
  for (int a = 0; a < 3; a++) {
    CudaCompileOptions opt = {.arch = archs[a], .no_cache = true};
    CudaCubin c;
    FxError err;
    fx_error_clear(&err);
    CHECK(cuda_nvrtc_compile(axpb_src, "axpb.cu", "fx_axpb", &opt, &c, &err));
    CHECK_STR(c.arch, archs[a]);
    CHECK(c.cubin_size > 64 && memcmp(c.cubin, "\x7f" "ELF", 4) == 0);
    CHECK(c.res.found && c.res.registers > 0 && c.res.registers < 32 && c.res.spill_stores == 0);
    char want[64];
    snprintf(want, sizeof want, "Compiling entry function 'fx_axpb' for '%s'", archs[a]);
    CHECK_CONTAINS(c.log, want);
    cuda_cubin_free(&c);
  }
}

TEST(nvrtc_cache_by_source_hash) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  CudaCompileOptions opt = {.arch = "sm_80"};
  CudaCubin a, b;
  FxError err;
  fx_error_clear(&err);
  CHECK(cuda_nvrtc_compile(loop_kernels_src, "loop.cu", "fx_body", &opt, &a, &err));
  CHECK(!a.cached);
  CHECK(cuda_nvrtc_compile(loop_kernels_src, "loop.cu", "fx_cond", &opt, &b, &err));
  CHECK(b.cached && b.hash == a.hash);
  CHECK(b.cubin_size == a.cubin_size && memcmp(a.cubin, b.cubin, a.cubin_size) == 0);
  CHECK(b.res.found && b.res.registers > 0); /* the log is cached too */
  char path[512];
  snprintf(path, sizeof path, "%s/cuda/%016llx.cubin", cache_dir, (unsigned long long)a.hash);
  CHECK(access(path, R_OK) == 0);
  cuda_cubin_free(&a);
  cuda_cubin_free(&b);
  /* Another architecture is another entry. */
  opt.arch = "sm_90";
  CHECK(cuda_nvrtc_compile(loop_kernels_src, "loop.cu", "fx_body", &opt, &a, &err));
  CHECK(!a.cached);
  cuda_cubin_free(&a);
}

TEST(nvrtc_reports_compile_errors) {
  if (!cuda_nvrtc_built_in()) return;
  CudaCompileOptions opt = {.arch = "sm_75", .no_cache = true};
  CudaCubin c;
  FxError err;
  fx_error_clear(&err);
  CHECK(!cuda_nvrtc_compile("extern \"C\" __global__ void k(float *a) { a[0] = undefined_name; }\n", "bad.cu",
                            "k", &opt, &c, &err));
  CHECK_CONTAINS(err.msg, "NVRTC: compiling bad.cu for sm_75 failed: NVRTC_ERROR_COMPILATION: bad.cu(1): error:");
  CHECK_CONTAINS(err.msg, "undefined_name");
  CHECK(c.cubin == NULL && c.log == NULL);
  fx_error_clear(&err);
  opt.arch = "compute_75";
  CHECK(!cuda_nvrtc_compile(axpb_src, "x.cu", "fx_axpb", &opt, &c, &err));
  CHECK_STR(err.msg, "'compute_75' is not a GPU architecture (expected sm_NN, e.g. sm_80)");
  fx_error_clear(&err);
  CHECK(!cuda_nvrtc_set_arch("sm_10", &err));
  CHECK_CONTAINS(err.msg, "cannot compile for sm_10 (it supports: sm_75 ");
  CHECK(cuda_nvrtc_set_arch("sm_90", &err));
  CHECK_STR(cuda_nvrtc_default_arch(), "sm_90");
  CHECK(cuda_nvrtc_set_arch("auto", &err));
}

/* A kernel with 160 values live at once: ptxas cannot hold them in registers. */
static char *spill_source(int nvals) {
  size_t cap = (size_t)nvals * 160 + 1024;
  char *s = malloc(cap);
  size_t len = (size_t)snprintf(s, cap,
                                "extern \"C\" __global__ void fx_spill(const float *in, float *out, int n) {\n"
                                "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  if (t >= n) return;\n");
  for (int i = 0; i < nvals; i++) len += (size_t)snprintf(s + len, cap - len, "  float v%d = __ldg(&in[t + %d * n]);\n", i, i);
  len += (size_t)snprintf(s + len, cap - len, "  float s = 0.0f");
  for (int i = 0; i < nvals / 2; i++) len += (size_t)snprintf(s + len, cap - len, " + v%d * v%d", i, nvals - 1 - i);
  len += (size_t)snprintf(s + len, cap - len, ";\n");
  for (int i = 0; i < nvals; i++) len += (size_t)snprintf(s + len, cap - len, "  out[t + %d * n] = v%d * s;\n", i, i);
  snprintf(s + len, cap - len, "}\n");
  return s;
}

TEST(nvrtc_measures_real_spills) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  char *src = spill_source(160);
  CudaCompileOptions opt = {.arch = "sm_75", .max_registers = 32};
  CudaCubin c;
  FxError err;
  fx_error_clear(&err);
  CHECK(cuda_nvrtc_compile(src, "spill.cu", "fx_spill", &opt, &c, &err));
  CHECK(c.res.registers <= 32);
  CHECK(c.res.spill_stores > 1000 && c.res.spill_loads > 1000);
  cuda_cubin_free(&c);
  /* Without a limit it needs about every register there is (and still spills a little). */
  opt.max_registers = 0;
  CHECK(cuda_nvrtc_compile(src, "spill.cu", "fx_spill", &opt, &c, &err));
  CHECK(c.res.registers > 200);
  cuda_cubin_free(&c);
  free(src);
}

/* ---------- rng ---------- */

TEST(rng_philox_known_answers) {
  /* Philox4x32-10 known answers (Random123's kat_vectors; cuRAND's curand_Philox4x32_10 gives the
   * same, which tests/gpu/curand_match.cu checks against cuRAND's own header). */
  static const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                     {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                     {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
  static const uint32_t key[3][2] = {{0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
  static const uint32_t want[3][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                      {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                      {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
  for (int c = 0; c < 3; c++) {
    uint32_t o[4];
    rt_philox4x32_10(ctr[c], key[c], o);
    CHECK(memcmp(o, want[c], sizeof o) == 0);
  }
  /* curand_init(seed, subsequence, offset): key = seed, counter = (offset / 4, subsequence), and
   * offset % 4 words of the first block skipped by curand4. */
  RtPhilox s;
  rt_philox_init(&s, 0xa4093822299f31d0ull, 0x03707344ull << 32 | 0x13198a2eull, 4 * (0x05a308d3ull << 32 | 0x243f6a88ull) + 2);
  uint32_t o[4], first[4], next[4];
  rt_philox_next4(&s, o);
  uint32_t c1[4] = {0x243f6a88u, 0x05a308d3u, 0x13198a2eu, 0x03707344u};
  rt_philox4x32_10(c1, (const uint32_t[2]){0x299f31d0u, 0xa4093822u}, first);
  uint32_t c2[4] = {0x243f6a89u, 0x05a308d3u, 0x13198a2eu, 0x03707344u};
  rt_philox4x32_10(c2, (const uint32_t[2]){0x299f31d0u, 0xa4093822u}, next);
  CHECK(o[0] == first[2] && o[1] == first[3] && o[2] == next[0] && o[3] == next[1]);
  /* curand_uniform's conversion: (0, 1], 0 -> 2^-33, all ones -> 1. */
  CHECK(rt_curand_uniform(0) == 0x1p-33f);
  CHECK(rt_curand_uniform(0xffffffffu) == 1.0f);
  CHECK(rt_curand_uniform(0x80000000u) == 0.5f);
  /* The rng key: the seed, the instruction's id mixed into the high word. */
  CHECK(rt_rng_key(0x0000000500000007ull, 3) == (((uint64_t)(5u ^ (3u * 0x9E3779B9u)) << 32) | 7u));
}

TEST(rng_kernel_compiles) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  struct {
    IrType t;
    const char *dist;
    const char *call;
  } cases[] = {{IR_F32, "rng_uniform", "curand_uniform4(&st)"},
               {IR_F32, "rng_normal", "curand_normal4(&st)"},
               {IR_F64, "rng_uniform", "curand_uniform2_double(&st)"},
               {IR_F64, "rng_normal", "curand_normal2_double(&st)"},
               {IR_S32, "rng_uniform", "curand4(&st)"},
               {IR_U64, "rng_uniform", "curand4(&st)"}};
  const char *archs[] = {"sm_75", "sm_80", "sm_90"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *src = cuda_rng_source(cases[c].t, cases[c].dist);
    CHECK(src != NULL);
    if (!src) continue;
    CHECK_CONTAINS(src, "#include <curand_kernel.h>");
    CHECK_CONTAINS(src, "curandStatePhilox4_32_10_t st;");
    CHECK_CONTAINS(src, "curand_init(key, (unsigned long long)g, 4ull * draw, &st);");
    CHECK_CONTAINS(src, cases[c].call);
    char *copy = strdup(src);
    /* Each kind for one architecture in turn, two kinds per architecture (each compile reads
     * cuRAND's headers: 2 to 3 s; nvrtc.curand_match compiles every kind again with nvcc). */
    {
      CudaCompileOptions opt = {.arch = archs[c % 3]};
      CudaCubin cb;
      FxError err;
      fx_error_clear(&err);
      CHECK(cuda_nvrtc_compile(copy, "rng.cu", "fx_rng", &opt, &cb, &err));
      if (err.set) fprintf(stderr, "%s\n", err.msg);
      CHECK(cb.res.found && cb.res.spill_stores == 0);
      cuda_cubin_free(&cb);
    }
    free(copy);
  }
  CHECK(cuda_rng_per_thread(IR_F32) == 4 && cuda_rng_per_thread(IR_F64) == 2 && cuda_rng_per_thread(IR_S32) == 2);
  CHECK(cuda_rng_source(IR_S32, "rng_normal") == NULL);
  CHECK(cuda_rng_source(IR_F16, "rng_uniform") == NULL);
  CHECK(cuda_rng_source(IR_F32, "rng_bernoulli") == NULL);
}

/* ---------- dot → cuBLAS ---------- */

static IrInstr *param(IrComputation *c, int num, IrType t, int rank, const int64_t *dims) {
  IrShape s = ir_shape_array(&c->module->arena, t, rank, dims);
  char name[16];
  snprintf(name, sizeof name, "p%d", num);
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, &s, NULL, 0, name);
  p->param_number = num;
  return p;
}

/* Builds a dot, maps it to a gemm, runs the gemm's column-major semantics on the host and
 * compares with a direct evaluation of the dot. */
static void check_dot(int nb, int lr, const int64_t *ld, int rr, const int64_t *rd, int orank, const int64_t *od,
                      const char *lc, const char *rc, const char *lb, const char *rb) {
  IrModule *m = ir_module_new("dot");
  IrComputation *c = ir_computation_new(m, "main");
  IrInstr *ops[2] = {param(c, 0, IR_F32, lr, ld), param(c, 1, IR_F32, rr, rd)};
  IrShape os = ir_shape_array(&m->arena, IR_F32, orank, od);
  IrInstr *dot = ir_instr_new(c, IR_OP_DOT, &os, ops, 2, "dot");
  ir_attr_set_text(dot, "lhs_contracting_dims", lc);
  ir_attr_set_text(dot, "rhs_contracting_dims", rc);
  if (nb) {
    ir_attr_set_text(dot, "lhs_batch_dims", lb);
    ir_attr_set_text(dot, "rhs_batch_dims", rb);
  }
  CudaGemm g;
  FxError err;
  fx_error_clear(&err);
  CHECK(cuda_gemm_from_instr(dot, &g, &err));
  if (err.set) fprintf(stderr, "%s\n", err.msg);
  int64_t nl = ir_shape_elements(&ops[0]->shape), nr = ir_shape_elements(&ops[1]->shape), no = ir_shape_elements(&os);
  float *L = malloc(sizeof(float) * (size_t)nl), *R = malloc(sizeof(float) * (size_t)nr);
  float *O = malloc(sizeof(float) * (size_t)no), *W = malloc(sizeof(float) * (size_t)no);
  for (int64_t i = 0; i < nl; i++) L[i] = (float)((i * 7) % 11) - 5;
  for (int64_t i = 0; i < nr; i++) R[i] = (float)((i * 5) % 13) - 6;
  cuda_gemm_reference(&g, L, R, O);
  /* Direct: out[b, i, j] = sum_p lhs[b, i/p..] * rhs[...], with each operand's own index order. */
  int lcd = (int)strtol(lc + 1, NULL, 10), rcd = (int)strtol(rc + 1, NULL, 10);
  int64_t batch = g.batch, M = g.m, N = g.n, K = g.k;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0;
        for (int64_t p = 0; p < K; p++) {
          int64_t li = (lr == nb + 1) ? b * K + p : (lcd == nb + 1 ? (b * M + i) * K + p : (b * K + p) * M + i);
          int64_t ri = (rr == nb + 1) ? b * K + p : (rcd == nb ? (b * K + p) * N + j : (b * N + j) * K + p);
          acc += (double)L[li] * R[ri];
        }
        W[(b * M + i) * N + j] = (float)acc;
      }
  bool same = true;
  for (int64_t i = 0; i < no; i++) same = same && O[i] == W[i];
  CHECK(same);
  free(L), free(R), free(O), free(W);
  ir_module_free(m);
}

TEST(dot_maps_to_gemm) {
  /* [3,4] x [4,5] */
  check_dot(0, 2, (int64_t[]){3, 4}, 2, (int64_t[]){4, 5}, 2, (int64_t[]){3, 5}, "{1}", "{0}", NULL, NULL);
  /* lhs transposed: [4,3] contracting 0 */
  check_dot(0, 2, (int64_t[]){4, 3}, 2, (int64_t[]){4, 5}, 2, (int64_t[]){3, 5}, "{0}", "{0}", NULL, NULL);
  /* rhs transposed: [5,4] contracting 1 */
  check_dot(0, 2, (int64_t[]){3, 4}, 2, (int64_t[]){5, 4}, 2, (int64_t[]){3, 5}, "{1}", "{1}", NULL, NULL);
  /* both transposed */
  check_dot(0, 2, (int64_t[]){4, 3}, 2, (int64_t[]){5, 4}, 2, (int64_t[]){3, 5}, "{0}", "{1}", NULL, NULL);
  /* batched [2,3,4] x [2,4,5] */
  check_dot(1, 3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){2, 4, 5}, 3, (int64_t[]){2, 3, 5}, "{2}", "{1}", "{0}", "{0}");
  /* batched, rhs transposed */
  check_dot(1, 3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){2, 5, 4}, 3, (int64_t[]){2, 3, 5}, "{2}", "{2}", "{0}", "{0}");
  /* matrix-vector [3,4] x [4] and vector-matrix [4] x [4,5] */
  check_dot(0, 2, (int64_t[]){3, 4}, 1, (int64_t[]){4}, 1, (int64_t[]){3}, "{1}", "{0}", NULL, NULL);
  check_dot(0, 1, (int64_t[]){4}, 2, (int64_t[]){4, 5}, 1, (int64_t[]){5}, "{0}", "{0}", NULL, NULL);
}

TEST(dot_forms_cublas_cannot_take) {
  IrModule *m = ir_module_new("dot");
  IrComputation *c = ir_computation_new(m, "main");
  IrInstr *ops[2] = {param(c, 0, IR_S32, 2, (int64_t[]){3, 4}), param(c, 1, IR_S32, 2, (int64_t[]){4, 5})};
  IrShape os = ir_shape_array(&m->arena, IR_S32, 2, (int64_t[]){3, 5});
  IrInstr *dot = ir_instr_new(c, IR_OP_DOT, &os, ops, 2, "dot");
  ir_attr_set_text(dot, "lhs_contracting_dims", "{1}");
  ir_attr_set_text(dot, "rhs_contracting_dims", "{0}");
  CudaGemm g;
  FxError err;
  fx_error_clear(&err);
  CHECK(!cuda_gemm_from_instr(dot, &g, &err));
  CHECK_STR(err.msg, "cuBLAS: dot of s32 x s32 -> s32: only f32 and f64 dots go to cuBLAS");
  ir_module_free(m);
}

/* ---------- convolution → cuDNN ---------- */

TEST(conv_maps_to_cudnn) {
  IrModule *m = ir_module_new("conv");
  IrComputation *c = ir_computation_new(m, "main");
  /* JAX's default: NHWC input [8,32,32,16], HWIO filter [3,3,16,64], NHWC output [8,16,16,64]. */
  IrInstr *ops[2] = {param(c, 0, IR_F32, 4, (int64_t[]){8, 32, 32, 16}), param(c, 1, IR_F32, 4, (int64_t[]){3, 3, 16, 64})};
  IrShape os = ir_shape_array(&m->arena, IR_F32, 4, (int64_t[]){8, 16, 16, 64});
  IrInstr *conv = ir_instr_new(c, IR_OP_CONVOLUTION, &os, ops, 2, "conv");
  ir_attr_set_text(conv, "window", "{size=3x3 stride=2x2 pad=1_1x1_1}");
  ir_attr_set_text(conv, "dim_labels", "b01f_01io->b01f");
  CudaConv cv;
  FxError err;
  fx_error_clear(&err);
  CHECK(cuda_conv_from_instr(conv, &cv, &err));
  CHECK(cv.nspatial == 2 && cv.groups == 1);
  CHECK(cv.in_dims[0] == 8 && cv.in_dims[1] == 16 && cv.in_dims[2] == 32 && cv.in_dims[3] == 32);
  /* NHWC strides seen as NCHW: n = 32*32*16, c = 1, h = 32*16, w = 16 */
  CHECK(cv.in_strides[0] == 16384 && cv.in_strides[1] == 1 && cv.in_strides[2] == 512 && cv.in_strides[3] == 16);
  CHECK(cv.out_dims[1] == 64 && cv.out_strides[1] == 1 && cv.out_strides[3] == 64);
  CHECK(cv.filter_dims[0] == 64 && cv.filter_dims[1] == 16 && cv.filter_dims[2] == 3 && cv.filter_dims[3] == 3);
  CHECK(cv.pad[0] == 1 && cv.pad[1] == 1 && cv.stride[0] == 2 && cv.dilation[1] == 1);
  /* HWIO is neither KCRS nor KRSC: the filter is permuted first. */
  CHECK(cv.filter_needs_permute);
  CudaPermute p;
  cuda_conv_filter_permute(&cv, &p);
  CHECK(p.rank == 4 && p.dims[0] == 64 && p.in_strides[0] == 1 && p.in_strides[1] == 64 && p.in_strides[2] == 3072);
  /* The permutation, run on the host, puts filter[h][w][i][o] at KCRS [o][i][h][w]. */
  float hwio[3 * 3 * 16 * 64], kcrs[3 * 3 * 16 * 64];
  for (int i = 0; i < 3 * 3 * 16 * 64; i++) hwio[i] = (float)i;
  for (long long i = 0; i < 3 * 3 * 16 * 64; i++) {
    long long rem = i, off = 0;
    for (int d = p.rank - 1; d >= 0; d--) {
      off += (rem % p.dims[d]) * p.in_strides[d];
      rem /= p.dims[d];
    }
    kcrs[i] = hwio[off];
  }
  /* KCRS [o=5][i=7][h=2][w=1] = HWIO [2][1][7][5] */
  CHECK(kcrs[((5 * 16 + 7) * 3 + 2) * 3 + 1] == hwio[((2 * 3 + 1) * 16 + 7) * 64 + 5]);
  /* OIHW filters go straight to cuDNN. */
  IrInstr *oihw = param(c, 2, IR_F32, 4, (int64_t[]){64, 16, 3, 3});
  IrInstr *ops2[2] = {ops[0], oihw};
  IrInstr *conv2 = ir_instr_new(c, IR_OP_CONVOLUTION, &os, ops2, 2, "conv2");
  ir_attr_set_text(conv2, "window", "{size=3x3 stride=2x2 pad=1_1x1_1}");
  ir_attr_set_text(conv2, "dim_labels", "b01f_oi01->b01f");
  CHECK(cuda_conv_from_instr(conv2, &cv, &err));
  CHECK(!cv.filter_needs_permute && cv.filter_format == 0);
  /* Asymmetric padding is refused with the numbers. */
  ir_attr_set_text(conv2, "window", "{size=3x3 stride=2x2 pad=0_1x0_1}");
  CHECK(!cuda_conv_from_instr(conv2, &cv, &err));
  CHECK_STR(err.msg, "cuDNN: convolution 'conv2' has asymmetric padding 0_1");
  ir_module_free(m);
  CHECK(cuda_permute_source(IR_F32) != NULL);
}

TEST(permute_kernel_compiles) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  CudaCompileOptions opt = {.arch = "sm_75"};
  CudaCubin c;
  FxError err;
  fx_error_clear(&err);
  CHECK(cuda_nvrtc_compile(cuda_permute_source(IR_F32), "permute.cu", "fx_permute", &opt, &c, &err));
  CHECK(c.res.found);
  cuda_cubin_free(&c);
}

/* Without a driver the libraries load but cannot start: their own status text comes through. */
TEST(library_status_text) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    return;
  }
  FxError err;
  fx_error_clear(&err);
  /* (Not probed with dlopen/dlclose first: unloading the C++ runtime they bring leaks its pool.) */
  if (!cuda_blas_ready(&err) && !strstr(err.msg, "cuBLAS not found"))
    CHECK_STR(err.msg, "cuBLAS: cublasCreate failed: CUBLAS_STATUS_NOT_INITIALIZED: the library was not initialized");
  fx_error_clear(&err);
  if (!cuda_dnn_ready(&err) && !strstr(err.msg, "cuDNN 9 not found"))
    CHECK_CONTAINS(err.msg, "cuDNN: cudnnCreate failed: CUDNN_STATUS_NOT_INITIALIZED (status 1001)");
  fx_error_clear(&err);
  CHECK(!cuda_blas_failed(13, "cublasSgemmStridedBatched", &err));
  CHECK_CONTAINS(err.msg, "cuBLAS: cublasSgemmStridedBatched failed: CUBLAS_STATUS_EXECUTION_FAILED");
}

/* ---------- the devices command ---------- */

static char *run_cmd(const char *name, int argc, char **argv, bool json, bool *ok, FxError *err) {
  Session s;
  memset(&s, 0, sizeof s);
  char *buf = NULL;
  size_t len = 0;
  s.out = open_memstream(&buf, &len);
  s.err = s.out;
  s.json = json;
  const ReplCommand *c = repl_command_lookup(name);
  *ok = c && c->run(&s, argc, argv, err);
  fclose(s.out);
  return buf;
}

TEST(devices_command) {
  FxError err;
  fx_error_clear(&err);
  bool ok;
  cuda_driver_install(&fake_api);
  char *argv[] = {"devices"};
  char *out = run_cmd("devices", 1, argv, false, &ok, &err);
  CHECK(ok);
  CHECK_CONTAINS(out, "CUDA driver 12.4, 1 GPU\nGPU 0: Fake RTX 2080 Ti\n  compute capability  7.5 (sm_75)\n"
                      "  SMs                 68\n  memory              11.0 GiB\n"
                      "  shared memory       48 KiB per block, 64 KiB per SM\n"
                      "  registers           65536 per block, 65536 per SM\n");
  free(out);
  out = run_cmd("devices", 1, argv, true, &ok, &err);
  CHECK_CONTAINS(out, "{\"gpus\":[{\"ordinal\":0,\"name\":\"Fake RTX 2080 Ti\",\"arch\":\"sm_75\",\"sms\":68,");
  free(out);
  {
    Session s;
    memset(&s, 0, sizeof s);
    char *b = NULL;
    size_t l = 0;
    s.out = open_memstream(&b, &l);
    char *use[] = {"devices", "--use", "0"};
    CHECK(repl_command_lookup("devices")->run(&s, 3, use, &err));
    fclose(s.out);
    CHECK_STR(b, "device profile = Fake RTX 2080 Ti (GPU 0: sm_75, 68 SMs, 616 GB/s, 13.4 TFLOP/s f32)\n");
    CHECK(s.eng.device.is_gpu && s.eng.device.registers_per_sm == 65536 && s.eng.device.shared_mem_per_block == 48 * 1024);
    free(b);
    char *use9[] = {"devices", "--use", "9"};
    CHECK(!repl_command_lookup("devices")->run(&s, 3, use9, &err));
    CHECK_STR(err.msg, "there is no GPU 9 (1 found)");
    fx_error_clear(&err);
  }
  cuda_driver_install(NULL);
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    out = run_cmd("devices", 1, argv, false, &ok, &err);
    CHECK(ok);
    CHECK_CONTAINS(out, "no GPU found: no NVIDIA driver: libcuda.so.1: cannot open shared object file");
    CHECK_CONTAINS(out, "fxplain runs on the CPU here; ");
    free(out);
  } else {
    dlclose(h);
  }
  char *bad[] = {"devices", "x"};
  out = run_cmd("devices", 2, bad, false, &ok, &err);
  CHECK(!ok);
  CHECK_STR(err.msg, "usage: devices [--use N]");
  free(out);
}

/* `run --backend gpu` without a GPU says why and leaves the session as it was; `auto` uses the CPU. */
TEST(run_backend_gpu_without_gpu) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    return;
  }
  use_temp_cache();
  cuda_driver_install(NULL);
  static const char text[] = "HloModule t\n\nENTRY main {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] add(p, p)\n}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, sizeof text - 1, "t.hlo", &err);
  CHECK(m != NULL);
  if (!m) return;
  Session s;
  memset(&s, 0, sizeof s);
  CHECK(explain_engine_init(&s.eng));
  explain_engine_set_input(&s.eng, m); /* the engine owns m, its stages and their plans */
  char *buf = NULL;
  size_t len = 0;
  s.out = open_memstream(&buf, &len);
  s.err = s.out;
  const ReplCommand *run = repl_command_lookup("run");
  CHECK(run != NULL);
  if (run) {
    char *gpu[] = {"run", "--backend", "gpu"};
    CHECK(!run->run(&s, 3, gpu, &err));
    CHECK_STR(err.msg, "no GPU to run on: no NVIDIA driver: libcuda.so.1: cannot open shared object file: No such file "
                       "or directory");
    fx_error_clear(&err);
    char *autob[] = {"run", "--backend", "auto"};
    bool ok = run->run(&s, 3, autob, &err);
    if (!ok) fprintf(stderr, "%s\n", err.msg);
    CHECK(ok);
    fflush(s.out);
    CHECK_CONTAINS(buf, "stage 0 on cpu:");
    CHECK_CONTAINS(buf, "kernels launched 1,");
  }
  fclose(s.out);
  free(buf);
  explain_engine_fini(&s.eng);
}

/* A stage's unit: each kernel classified, the generated ones compiled with their figures. */
TEST(stage_unit_classifies_and_compiles) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_load_file("tests/gpu/loop_dot_rng.hlo", &err);
  IrModule *c = hlo_load_file("tests/gpu/conv.hlo", &err);
  CHECK(m && c);
  if (!m || !c) {
    fx_error_print(stderr, &err);
    return;
  }
  const IrModule *mods[2] = {m, c};
  CudaUnit u;
  CHECK(cuda_unit_build(&u, mods, 2, &err));
  const char *want[][2] = {{"lt", "generated"}, {"i2", "generated"}, {"d", "cuBLAS"}, {"r", "rng"},
                           {"t", "generated"},  {"y", "generated"},  {"c", "cuDNN"}, {"r", "rng"}};
  for (int q = 0; q < 7; q++) {
    IrInstr *i = ir_module_find_instr(q == 6 ? c : m, want[q][0]);
    const CudaKernelInfo *k = i ? cuda_unit_find(&u, i) : NULL;
    CHECK(k != NULL);
    if (k) CHECK_STR(cuda_kernel_how_name(k->how), want[q][1]);
  }
  CHECK(u.n == 10); /* lt, i2, d, kb, e, r, t, y; c, r (conv.hlo's maximum) */
  CHECK(u.ngenerated >= 4);
  CHECK_CONTAINS(u.source.s, "extern \"C\" __global__ void fx_");
  CHECK_CONTAINS(u.source.s, "tanhf(");
  CHECK(cuda_unit_compile(&u, "sm_80", NULL, &err));
  if (err.set) fprintf(stderr, "%s\n", err.msg);
  for (int q = 0; q < u.n; q++)
    if (u.k[q].how == CUDA_K_GENERATED) CHECK(u.k[q].res[0].found && u.k[q].res[0].registers > 0);
  cuda_unit_free(&u);
  ir_module_free(m);
  ir_module_free(c);
}

/* A fused multiply-add keeps both roundings: NVRTC's default would contract a * b + c into one fma
 * (one rounding), which the interpreter and the CPU backend never do; on an H200 that made the fused
 * CartPole drift 9e-5 from the interpreter over 100 steps. The PTX must hold mul.rn and add.rn. */
TEST(nvrtc_rounds_every_operation) {
  if (!cuda_nvrtc_built_in()) return;
  const char *text = "HloModule fma\n\nf {\n  a = f32[1024] parameter(0)\n  b = f32[1024] parameter(1)\n"
                     "  c = f32[1024] parameter(2)\n  m = f32[1024] multiply(a, b)\n"
                     "  ROOT r = f32[1024] add(m, c)\n}\n\nENTRY main {\n  x = f32[1024] parameter(0)\n"
                     "  y = f32[1024] parameter(1)\n  z = f32[1024] parameter(2)\n"
                     "  ROOT k = f32[1024] fusion(x, y, z), kind=kLoop, calls=f\n}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "fma.hlo", &err);
  CHECK(m != NULL);
  if (!m) return;
  const IrModule *mods[1] = {m};
  CudaUnit u;
  CHECK(cuda_unit_build(&u, mods, 1, &err));
  CudaCompileOptions o = {.arch = "sm_90", .want_ptx = true};
  CudaCubin cb;
  CHECK(cuda_nvrtc_compile(u.source.s, "fma.cu", NULL, &o, &cb, &err));
  if (err.set) fprintf(stderr, "%s\n", err.msg);
  CHECK(cb.ptx != NULL);
  if (cb.ptx) {
    CHECK_CONTAINS(cb.ptx, "mul.rn.f32");
    CHECK_CONTAINS(cb.ptx, "add.rn.f32");
    CHECK(strstr(cb.ptx, "fma.rn.f32") == NULL);
  }
  cuda_cubin_free(&cb);
  cuda_unit_free(&u);
  ir_module_free(m);
}

/* ---------- the registers rule with real ptxas figures ---------- */

/* Producer A = exp(x) over f32[256,N]; consumer B reads N columns b_k of A and computes
 * sum_k b_k * (S - b_k) with S = sum_k b_k * b_{N-1-k}: every b_k is live until S is known, so
 * the kernel of A fused into B needs far more than 255 registers and spills. */
static char *pressure_hlo(int n) {
  size_t cap = (size_t)n * 400 + 4096, len = 0;
  char *t = malloc(cap);
#define OUT(...) len += (size_t)snprintf(t + len, cap - len, __VA_ARGS__)
  OUT("HloModule pressure\n\nfa {\n  p = f32[256,%d] parameter(0)\n  ROOT e = f32[256,%d] exponential(p)\n}\n\n", n, n);
  OUT("fb {\n  q = f32[256,%d] parameter(0)\n", n);
  for (int k = 0; k < n; k++) {
    OUT("  s%d = f32[256,1] slice(q), slice={[0:256], [%d:%d]}\n", k, k, k + 1);
    OUT("  b%d = f32[256] reshape(s%d)\n", k, k);
  }
  for (int k = 0; k < n / 2; k++) OUT("  m%d = f32[256] multiply(b%d, b%d)\n", k, k, n - 1 - k);
  OUT("  S0 = f32[256] add(m0, m1)\n");
  for (int k = 2; k < n / 2; k++) OUT("  S%d = f32[256] add(S%d, m%d)\n", k - 1, k - 2, k);
  int last = n / 2 - 2;
  for (int k = 0; k < n; k++) {
    OUT("  d%d = f32[256] subtract(S%d, b%d)\n", k, last, k);
    OUT("  t%d = f32[256] multiply(b%d, d%d)\n", k, k, k);
  }
  OUT("  T0 = f32[256] add(t0, t1)\n");
  for (int k = 2; k < n; k++) OUT("  T%d = f32[256] add(T%d, t%d)\n", k - 1, k - 2, k);
  OUT("  ROOT r = f32[256] copy(T%d)\n}\n\n", n - 2);
  OUT("ENTRY main {\n  x = f32[256,%d] parameter(0)\n  A = f32[256,%d] fusion(x), kind=kLoop, calls=fa\n", n, n);
  OUT("  ROOT B = f32[256] fusion(A), kind=kLoop, calls=fb\n}\n");
#undef OUT
  return t;
}

TEST(registers_rule_refuses_a_spilling_fusion) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  char *text = pressure_hlo(320);
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "pressure.hlo", &err);
  free(text);
  CHECK(m != NULL);
  if (!m) {
    fx_error_print(stderr, &err);
    return;
  }
  IrInstr *a = ir_module_find_instr(m, "A"), *b = ir_module_find_instr(m, "B");
  CHECK(a && b);
  const DeviceProfile *turing = device_lookup("rtx2080ti");
  /* The hook alone, on the consumer's own body. */
  int regs = 0, spills = 0;
  CHECK(cuda_registers_hook((void *)turing, ir_fused_computation(b), &regs, &spills));
  CHECK(regs <= 255 && regs > 200);
  /* The rule: fusing A into B is refused with ptxas' numbers. */
  PassSettings st;
  pass_settings_default(&st);
  PassContext cx = {NULL, turing, &st, 1, "instruction-fusion", &err, NULL, false};
  FusionVerdict v;
  memset(&v, 0, sizeof v);
  cuda_registers_install(true, turing);
  CHECK(fusion_register_hook_installed());
  bool ok = fusion_check_too_large(a, b, &cx, FUSION_SIZE_PRODUCER_CONSUMER, &v);
  cuda_registers_install(false, NULL);
  CHECK(!fusion_register_hook_installed());
  CHECK(!ok);
  CHECK_STR(v.reason, "registers");
  CHECK_CONTAINS(v.detail, "ptxas needs ");
  CHECK_CONTAINS(v.detail, " registers per thread for A fused with B and ");
  CHECK_CONTAINS(v.detail, " B spilled; rtx2080ti allows 255 and no spills");
  double mreg = -1, mspill = -1;
  for (int q = 0; q < v.nmetrics; q++) {
    if (strcmp(v.metrics[q].key, "registers") == 0) mreg = v.metrics[q].value;
    if (strcmp(v.metrics[q].key, "spill_bytes") == 0) mspill = v.metrics[q].value;
  }
  CHECK(mreg > 200 && mreg <= 255);
  CHECK(mspill > 0);
  printf("registers rule: %s\n", v.detail);
  ir_module_free(m);
}

/* The report on a stage with two rng kernels of different types keeps each one's own cuRAND unit
 * (cuda_rng_source writes into one static buffer: a report that kept its pointer showed the last
 * unit for both). */
TEST(kernel_report_two_rng_kernels) {
  static const char text[] = "HloModule two_rng\n\nENTRY main {\n"
                             "  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n"
                             "  a = f32[64] rng(lo, hi), distribution=rng_uniform\n"
                             "  mu = f64[] constant(0)\n  sd = f64[] constant(1)\n"
                             "  b = f64[32] rng(mu, sd), distribution=rng_normal\n"
                             "  ROOT t = (f32[64], f64[32]) tuple(a, b)\n}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, sizeof text - 1, "two_rng.hlo", &err);
  CHECK(m != NULL);
  if (!m) return;
  KernelReport r;
  CHECK(cuda_report_source(m, 0, NULL, &r, &err));
  int nrng = 0;
  for (int q = 0; q < r.nrows; q++) {
    if (!r.rows[q].rng) continue;
    nrng++;
    bool a = strcmp(r.rows[q].kernel, "a") == 0;
    CHECK(r.rows[q].source && strstr(r.rows[q].source, a ? "// rng (f32, uniform)" : "// rng (f64, normal)"));
    CHECK(r.rows[q].threads == 16); /* 64 f32 four a thread, 32 f64 two a thread */
  }
  CHECK(nrng == 2);
  kernel_report_free(&r);
  /* One kernel asked for; a name that is no kernel is an error naming the stage. */
  CHECK(cuda_report_source(m, 0, "b", &r, &err) && r.nrows == 1 && r.rows[0].rng);
  if (r.nrows == 1) CHECK_CONTAINS(r.rows[0].source, "curand_normal2_double");
  kernel_report_free(&r);
  CHECK(!cuda_report_source(m, 0, "lo", &r, &err));
  CHECK_STR(err.msg, "'lo' is not a kernel of stage 0");
  ir_module_free(m);
}

/* `kernels --resources` and `kernels --source` on a loaded stage. */
TEST(kernel_views) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_load_file("tests/gpu/loop_dot_rng.hlo", &err);
  CHECK(m != NULL);
  if (!m) return;
  Session s;
  memset(&s, 0, sizeof s);
  CHECK(explain_engine_init(&s.eng));
  explain_engine_set_input(&s.eng, m);
  s.eng.device = *device_lookup("rtx2080ti");
  char *buf = NULL;
  size_t len = 0;
  s.out = open_memstream(&buf, &len);
  char *res[] = {"kernels-resources"};
  CHECK(repl_command_lookup("kernels-resources")->run(&s, 1, res, &err));
  fflush(s.out);
  char head[128];
  snprintf(head, sizeof head, "stage 0: 8 kernels compiled for sm_75 by NVRTC %s; occupancy on rtx2080ti\n",
           cuda_nvrtc_version());
  CHECK_CONTAINS(buf, head);
  CHECK_CONTAINS(buf, "  d                            cuBLAS        -      -           -      -      -     -  (library)\n");
  /* rng: its cuRAND kernel compiled alone, with ptxas' figures. */
  CHECK_CONTAINS(buf, "  r                            rng           1 ");
  const char *rl = strstr(buf, "  r                            rng");
  const char *rle = rl ? strchr(rl, '\n') : NULL;
  CHECK(rl && rle && strstr(rl, "         0/0      0      0   256  100% (threads) cuRAND Philox4_32_10\n") == rle - 69);
  CHECK_CONTAINS(buf, "  t                            generated     1 ");
  CHECK_CONTAINS(buf, "         0/0      0      0   256  100% (threads)\n");
  fclose(s.out);
  free(buf);
  buf = NULL;
  s.out = open_memstream(&buf, &len);
  char *src[] = {"kernels-source", "t"};
  CHECK(repl_command_lookup("kernels-source")->run(&s, 2, src, &err));
  fflush(s.out);
  const char *start = "// kernel t\nextern \"C\" __global__ void fx_";
  CHECK(strncmp(buf, start, strlen(start)) == 0);
  CHECK_CONTAINS(buf, "_p0(const float *__restrict__ in0, float *__restrict__ out0, long long n) {\n"
                      "  for (long long fx_l = blockIdx.x * (long long)blockDim.x + threadIdx.x; fx_l < n;\n");
  CHECK_CONTAINS(buf, "tanhf(");
  CHECK(strstr(buf, "// kernel y") == NULL);
  fclose(s.out);
  free(buf);
  buf = NULL;
  /* rng's kernel is cuRAND's device API, shown alone and at the end of the whole unit. */
  s.out = open_memstream(&buf, &len);
  char *src3[] = {"kernels-source", "r"};
  CHECK(repl_command_lookup("kernels-source")->run(&s, 2, src3, &err));
  fflush(s.out);
  const char *rstart = "// kernel r: rng -> cuRAND (its own unit, launched as fx_rng over 1024 threads)\n"
                       "// rng (f32, uniform): cuRAND's Philox4_32_10 device generator.";
  CHECK(strncmp(buf, rstart, strlen(rstart)) == 0);
  CHECK_CONTAINS(buf, "#include <curand_kernel.h>\n");
  CHECK_CONTAINS(buf, "  curand_init(key, (unsigned long long)g, 4ull * draw, &st);\n  float4 q = curand_uniform4(&st);\n");
  fclose(s.out);
  free(buf);
  buf = NULL;
  s.out = open_memstream(&buf, &len);
  char *all[] = {"kernels-source"};
  CHECK(repl_command_lookup("kernels-source")->run(&s, 1, all, &err));
  fflush(s.out);
  CHECK_CONTAINS(buf, "// kernel t\n");
  CHECK_CONTAINS(buf, "// kernel r: rng -> cuRAND");
  fclose(s.out);
  free(buf);
  buf = NULL;
  s.out = open_memstream(&buf, &len);
  s.json = true;
  CHECK(repl_command_lookup("kernels-source")->run(&s, 1, all, &err));
  s.json = false;
  fflush(s.out);
  CHECK_CONTAINS(buf, "\"rng_kernels\":[{\"kernel\":\"r\",\"source\":\"// rng (f32, uniform): cuRAND's Philox4_32_10");
  char *src2[] = {"kernels-source", "nope"};
  CHECK(!repl_command_lookup("kernels-source")->run(&s, 2, src2, &err));
  CHECK_STR(err.msg, "'nope' is not a kernel of stage 0");
  fclose(s.out);
  free(buf);
  explain_engine_fini(&s.eng);
}

/* The GPU backend's plumbing over the fake driver: prepare compiles and loads the stage's unit,
 * run launches every kernel (the fake computes nothing), reads results back, keeps the counters
 * and per-kernel statistics, and frees every buffer and module. */
TEST(gpu_backend_plumbing_on_fake_driver) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  cuda_driver_install(&fake_api);
  fake_accept_any = true;
  static const char text[] =
      "HloModule plumbing\n\n"
      "ENTRY main {\n"
      "  x = f32[1000] parameter(0)\n"
      "  y = f32[1000] parameter(1)\n"
      "  a = f32[1000] add(x, y)\n"
      "  e = f32[1000] exponential(a)\n"
      "  lo = f32[] constant(0)\n"
      "  hi = f32[] constant(1)\n"
      "  r = f32[1000] rng(lo, hi), distribution=rng_uniform\n"
      "  ROOT t = (f32[1000], f32[1000]) tuple(e, r)\n"
      "}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, sizeof text - 1, "plumbing.hlo", &err);
  CHECK(m != NULL);
  void *be = m ? rt_backend_gpu.create(&err) : NULL;
  CHECK(be != NULL);
  if (m && be) {
    const IrModule *mods[1] = {m};
    CHECK(rt_backend_gpu.prepare(be, mods, 1, &err));
    RtTensor *args[2];
    for (int k = 0; k < 2; k++) {
      args[k] = rt_tensor_for_shape(&m->entry->params[k]->shape, &err);
      rt_tensor_fill_random(args[k], 3, (uint64_t)k);
    }
    RtOptions o = {.seed = 5, .kernel_times = true};
    RtRunStats st = {0};
    RtTensor *out = NULL;
    fake_launches = 0;
    fake_dtoh = 0;
    bool ok = rt_backend_gpu.run(be, m, args, 2, &o, &out, &st, &err);
    if (!ok) fprintf(stderr, "%s\n", err.msg);
    CHECK(ok);
    CHECK(st.counters.launches == 3);  /* add, exponential, rng: three kernels, none fused yet */
    CHECK(fake_launches == 3);
    /* results stay on the device until the host needs them: the two outputs of the run are read
       back, a (read only by the exponential's kernel) never is */
    CHECK(fake_dtoh == 2);
    /* a second run takes its buffers from the pool the first one left: no new allocation */
    RtTensor *out2 = NULL;
    RtRunStats st2 = {0};
    int allocs = fake_alloc_calls;
    CHECK(rt_backend_gpu.run(be, m, args, 2, &o, &out2, &st2, &err));
    CHECK(fake_alloc_calls == allocs);
    rt_tensor_unref(out2);
    rt_run_stats_free(&st2);
    CHECK(st.nkernels == 3);
    for (int q = 0; q < st.nkernels; q++) {
      CHECK(st.kernels[q].native && st.kernels[q].launches == 1);
      CHECK_NEAR(st.kernels[q].total_ns, 0.25e6, 1); /* the fake's events: 0.25 ms */
    }
    CHECK_STR(st.kernels[2].how, "rng");
    CHECK(out && out->type == IR_TUPLE && out->ntuple == 2);
    CHECK(st.counters.bytes_read == 4 * 1000 * 2 + 4 * 1000 + 8 && st.counters.bytes_written == 3 * 4 * 1000);
    rt_tensor_unref(out);
    rt_run_stats_free(&st);
    for (int k = 0; k < 2; k++) rt_tensor_unref(args[k]);
  }
  if (be) rt_backend_gpu.destroy(be);
  CHECK(fake_live_allocs == 0);
  CHECK(fake_loaded == 0);
  fake_accept_any = false;
  cuda_driver_install(NULL);
  if (m) ir_module_free(m);
}

/* Runs `text` on the GPU backend over the fake driver (kernels compute nothing); the launches,
 * device-to-host copies and loop iterations of the run. */
static bool fake_gpu_run(const char *text, int *launches, int *dtoh, int64_t *iterations) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "loop.hlo", &err);
  CHECK(m != NULL);
  void *be = m ? rt_backend_gpu.create(&err) : NULL;
  CHECK(be != NULL);
  bool ok = false;
  if (m && be) {
    const IrModule *mods[1] = {m};
    CHECK(rt_backend_gpu.prepare(be, mods, 1, &err));
    RtTensor *arg = rt_tensor_for_shape(&m->entry->params[0]->shape, &err);
    rt_tensor_fill_random(arg, 3, 0);
    RtOptions o = {.seed = 5};
    RtRunStats st = {0};
    RtTensor *out = NULL;
    fake_launches = 0;
    fake_dtoh = 0;
    ok = rt_backend_gpu.run(be, m, &arg, 1, &o, &out, &st, &err);
    if (!ok) fprintf(stderr, "%s\n", err.msg);
    *launches = fake_launches;
    *dtoh = fake_dtoh;
    *iterations = st.counters.while_iterations;
    CHECK(st.counters.launches == fake_launches);
    rt_tensor_unref(out);
    rt_run_stats_free(&st);
    rt_tensor_unref(arg);
  }
  if (be) rt_backend_gpu.destroy(be);
  if (m) ir_module_free(m);
  return ok;
}

/* A loop whose trip count is known runs as XLA:GPU runs it, as a for loop (ForThunk; today
 * WhileThunk given the trip count): the body's kernels 5 times, the condition's kernel never, and
 * nothing is read back but the result. A loop whose trip count is unknown (its limit computed by
 * an add) launches its condition's kernels and reads the pred back (the fake's memory starts at
 * zero, so the pred says stop at once: the two condition kernels, one read-back, no body). Without
 * for loops the known loop would launch 6 compares and read 6 preds back. */
TEST(gpu_backend_runs_known_trip_counts_as_for_loops) {
  if (!cuda_nvrtc_built_in()) return;
  use_temp_cache();
  cuda_driver_install(&fake_api);
  fake_accept_any = true;
  static const char known[] =
      "HloModule fl\n"
      "cond { s = (s32[], f32[1000]) parameter(0)\n i = s32[] get-tuple-element(s), index=0\n n = s32[] constant(5)\n"
      " ROOT lt = pred[] compare(i, n), direction=LT }\n"
      "body { s = (s32[], f32[1000]) parameter(0)\n i = s32[] get-tuple-element(s), index=0\n"
      " v = f32[1000] get-tuple-element(s), index=1\n one = s32[] constant(1)\n i2 = s32[] add(i, one)\n"
      " h = f32[1000] sine(v)\n ROOT r = (s32[], f32[1000]) tuple(i2, h) }\n"
      "ENTRY main { x = f32[1000] parameter(0)\n z = s32[] constant(0)\n init = (s32[], f32[1000]) tuple(z, x)\n"
      " w = (s32[], f32[1000]) while(init), condition=cond, body=body\n"
      " ROOT v = f32[1000] get-tuple-element(w), index=1 }\n";
  int launches = -1, dtoh = -1;
  int64_t iterations = -1;
  CHECK(fake_gpu_run(known, &launches, &dtoh, &iterations));
  CHECK(launches == 5 * 2); /* add and sine, 5 times; the compare never */
  CHECK(dtoh == 1);         /* the result only: no pred read back */
  CHECK(iterations == 5);
  char unknown[sizeof known + 64];
  const char *at = strstr(known, " n = s32[] constant(5)\n");
  CHECK(at != NULL);
  if (at) {
    snprintf(unknown, sizeof unknown, "%.*s n0 = s32[] constant(3)\n n = s32[] add(n0, n0)\n%s", (int)(at - known),
             known, at + strlen(" n = s32[] constant(5)\n"));
    CHECK(fake_gpu_run(unknown, &launches, &dtoh, &iterations));
    CHECK(launches == 2); /* the condition's add and compare */
    CHECK(dtoh == 1);     /* the pred (the result is the argument, passed through untouched) */
    CHECK(iterations == 0);
  }
  fake_accept_any = false;
  cuda_driver_install(NULL);
  CHECK(fake_live_allocs == 0);
  CHECK(fake_loaded == 0);
}

int main(void) {
  RUN(driver_missing_is_explained);
  RUN(fake_driver_lists_device_and_profile);
  RUN(driver_errors_carry_the_drivers_text);
  RUN(fake_driver_runs_a_host_driven_loop);
  RUN(block_size_respects_limits);
  RUN(ptxas_log_parsing);
  RUN(occupancy_follows_resources);
  RUN(nvrtc_compiles_for_each_arch);
  RUN(nvrtc_cache_by_source_hash);
  RUN(nvrtc_reports_compile_errors);
  RUN(nvrtc_measures_real_spills);
  RUN(rng_philox_known_answers);
  RUN(rng_kernel_compiles);
  RUN(dot_maps_to_gemm);
  RUN(dot_forms_cublas_cannot_take);
  RUN(conv_maps_to_cudnn);
  RUN(permute_kernel_compiles);
  RUN(library_status_text);
  RUN(devices_command);
  RUN(run_backend_gpu_without_gpu);
  RUN(stage_unit_classifies_and_compiles);
  RUN(nvrtc_rounds_every_operation);
  RUN(registers_rule_refuses_a_spilling_fusion);
  RUN(kernel_views);
  RUN(kernel_report_two_rng_kernels);
  RUN(gpu_backend_plumbing_on_fake_driver);
  RUN(gpu_backend_runs_known_trip_counts_as_for_loops);
  if (cache_dir[0]) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cache_dir);
  }
  return check_summary();
}
