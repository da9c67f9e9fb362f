/* cuda_nvrtc.c — NVRTC compilation, the cubin cache, and ptxas resource figures.
 *
 * Flow: cuda_nvrtc_compile() hashes (source, arch, options, NVRTC version); a cached
 * cuda/<hash>.cubin + .log pair is used when present; otherwise NVRTC compiles with
 * --gpu-architecture=sm_XX and --ptxas-options=-v, the cubin and log are stored, and the log is
 * parsed for the kernel's registers, spills, shared memory and stack. Where this sits: runtime/,
 * called by the GPU backend (cuda_backend.c), by `kernels --resources` and by the `registers`
 * fusion check the shell installs (repl/cmd_gpu.c). */
#include "cuda_nvrtc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../compiler/ir/ir.h"
#include "../backend.h"
#include "cuda_driver.h"

#ifdef FXPLAIN_HAVE_NVRTC
#include <nvrtc.h>
#endif

#ifndef FXPLAIN_CUDA_INCLUDE
#define FXPLAIN_CUDA_INCLUDE ""
#endif

static char g_arch[16]; /* `set gpu_arch`; "" = automatic */

bool cuda_nvrtc_built_in(void) {
#ifdef FXPLAIN_HAVE_NVRTC
  return true;
#else
  return false;
#endif
}

const char *cuda_nvrtc_version(void) {
  static char v[16];
#ifdef FXPLAIN_HAVE_NVRTC
  int maj = 0, min = 0;
  if (!v[0] && nvrtcVersion(&maj, &min) == NVRTC_SUCCESS) snprintf(v, sizeof v, "%d.%d", maj, min);
#endif
  return v;
}

bool cuda_nvrtc_has_curand(char *why, size_t n) {
  char path[4200];
  snprintf(path, sizeof path, "%s/curand_kernel.h", FXPLAIN_CUDA_INCLUDE);
  if (cuda_nvrtc_built_in() && FXPLAIN_CUDA_INCLUDE[0] && access(path, R_OK) == 0) return true;
  if (!cuda_nvrtc_built_in()) snprintf(why, n, "this fxplain was built without the CUDA toolkit");
  else snprintf(why, n, "cuRAND's device headers are missing (%s)", FXPLAIN_CUDA_INCLUDE[0] ? path : "curand_kernel.h");
  return false;
}

bool cuda_nvrtc_arch_is_set(void) { return g_arch[0] != 0; }

const char *cuda_nvrtc_default_arch(void) {
  static char live[16];
  if (g_arch[0]) return g_arch;
  if (!live[0]) {
    CudaDeviceInfo d;
    FxError e;
    fx_error_clear(&e);
    if (cuda_device_list(&d, 1, &e) == 1)
      snprintf(live, sizeof live, "sm_%d%d", d.cc_major, d.cc_minor);
    else
      snprintf(live, sizeof live, "sm_75");
  }
  return live;
}

static bool arch_number(const char *arch, int *num) {
  if (strncmp(arch, "sm_", 3) != 0) return false;
  char *end;
  long v = strtol(arch + 3, &end, 10);
  if (end == arch + 3 || v < 10 || v > 999) return false;
  /* sm_90a, sm_100f: arch-specific variants */
  if (*end && !((*end == 'a' || *end == 'f') && end[1] == 0)) return false;
  *num = (int)v;
  return true;
}

void cuda_nvrtc_supported_archs(char *buf, size_t n) {
  buf[0] = 0;
#ifndef FXPLAIN_HAVE_NVRTC
  (void)n;
#else
  int na = 0;
  if (nvrtcGetNumSupportedArchs(&na) != NVRTC_SUCCESS || na <= 0 || na > 256) return;
  int archs[256];
  if (nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS) return;
  size_t len = 0;
  for (int i = 0; i < na && len + 8 < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%ssm_%d", i ? " " : "", archs[i]);
#endif
}

bool cuda_nvrtc_set_arch(const char *arch, FxError *err) {
  if (!arch || !*arch || strcmp(arch, "auto") == 0) {
    g_arch[0] = 0;
    return true;
  }
  int num;
  if (!arch_number(arch, &num) || strlen(arch) >= sizeof g_arch)
    return fx_error_set(err, NULL, 0, 0, "'%s' is not a GPU architecture (expected sm_NN, e.g. sm_80)", arch);
#ifdef FXPLAIN_HAVE_NVRTC
  char list[1024];
  cuda_nvrtc_supported_archs(list, sizeof list);
  char base[16];
  snprintf(base, sizeof base, "sm_%d", num);
  bool found = false;
  for (const char *p = list; (p = strstr(p, base)) != NULL; p += strlen(base))
    if ((p == list || p[-1] == ' ') && (p[strlen(base)] == 0 || p[strlen(base)] == ' ')) found = true;
  if (!found)
    return fx_error_set(err, NULL, 0, 0, "NVRTC %s cannot compile for %s (it supports: %s)", cuda_nvrtc_version(),
                        arch, list);
#endif
  snprintf(g_arch, sizeof g_arch, "%s", arch);
  return true;
}

uint64_t cuda_hash(uint64_t h, const void *s, size_t n) {
  const unsigned char *p = s;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* ---------- ptxas log ---------- */

static int num_before(const char *line, const char *unit) {
  const char *p = strstr(line, unit);
  if (!p) return -1;
  while (p > line && p[-1] == ' ') p--;
  const char *q = p;
  while (q > line && q[-1] >= '0' && q[-1] <= '9') q--;
  if (q == p) return -1;
  return atoi(q);
}

/* Copies the quoted name after `key` ("... function 'k' ...") into out. */
static bool quoted_after(const char *line, const char *key, char *out, size_t n) {
  const char *p = strstr(line, key);
  if (!p) return false;
  p += strlen(key);
  const char *q = strchr(p, '\'');
  size_t len = q ? (size_t)(q - p) : strcspn(p, " \n");
  if (len >= n) len = n - 1;
  memcpy(out, p, len);
  out[len] = 0;
  return true;
}

bool cuda_ptxas_parse(const char *log, const char *kernel, CudaResources *out) {
  memset(out, 0, sizeof *out);
  if (!log) return false;
  char entry[256] = "", props[256] = "", first[256] = "";
  bool want_props = false;
  const char *line = log;
  while (*line) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    char buf[512];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, line, len);
    buf[len] = 0;
    char name[256];
    if (quoted_after(buf, "Compiling entry function '", name, sizeof name)) {
      snprintf(entry, sizeof entry, "%s", name);
    } else if (strstr(buf, "Function properties for ")) {
      const char *p = strstr(buf, "Function properties for ") + strlen("Function properties for ");
      snprintf(props, sizeof props, "%.*s", (int)strcspn(p, " \r"), p);
      want_props = !kernel ? (!out->found && (!entry[0] || strcmp(props, entry) == 0)) : strcmp(props, kernel) == 0;
    } else if (want_props && strstr(buf, "bytes stack frame")) {
      out->stack_bytes = num_before(buf, "bytes stack frame");
      out->spill_stores = num_before(buf, "bytes spill stores");
      out->spill_loads = num_before(buf, "bytes spill loads");
      if (out->spill_stores < 0) out->spill_stores = 0;
      if (out->spill_loads < 0) out->spill_loads = 0;
      want_props = false;
    } else if (strstr(buf, "Used ") && strstr(buf, " registers")) {
      bool mine = kernel ? strcmp(entry, kernel) == 0 : !out->found;
      if (mine && entry[0]) {
        out->found = true;
        out->registers = num_before(buf, "registers");
        int b = num_before(buf, "barriers");
        out->barriers = b > 0 ? b : 0;
        int sm = num_before(buf, "bytes smem");
        out->shared_bytes = sm > 0 ? sm : 0;
        int cm = num_before(buf, "bytes cmem[0]");
        out->const_bytes = cm > 0 ? cm : 0;
        if (!kernel) { /* the first entry: its properties may come later */
          snprintf(first, sizeof first, "%s", entry);
          kernel = first;
        }
      }
    }
    line += nl ? (size_t)(nl - line) + 1 : strlen(line);
  }
  return out->found;
}

/* ---------- occupancy ---------- */

typedef struct {
  int max_threads_sm, max_blocks_sm, shared_sm, reg_alloc_unit;
} ArchLimits;

static ArchLimits arch_limits(const char *arch) {
  int num = 75;
  if (arch && arch[0]) arch_number(arch, &num);
  ArchLimits l = {2048, 32, 64 * 1024, 256};
  if (num == 75) l = (ArchLimits){1024, 16, 64 * 1024, 256};
  else if (num == 80) l = (ArchLimits){2048, 32, 164 * 1024, 256};
  else if (num == 86 || num == 87 || num == 89) l = (ArchLimits){1536, num == 89 ? 24 : 16, 100 * 1024, 256};
  else if (num >= 90 && num < 100) l = (ArchLimits){2048, 32, 228 * 1024, 256};
  else if (num >= 100) l = (ArchLimits){2048, 32, 228 * 1024, 256};
  else if (num < 75) l = (ArchLimits){2048, 32, 96 * 1024, 256};
  return l;
}

double cuda_occupancy(const CudaResources *r, int block, const DeviceProfile *dev, const char **limit) {
  const char *dummy;
  if (!limit) limit = &dummy;
  *limit = "threads";
  if (block <= 0) return 0;
  ArchLimits l = arch_limits(dev->arch);
  int regs_sm = dev->registers_per_sm > 0 ? dev->registers_per_sm : 65536;
  int warps_block = (block + 31) / 32;
  int max_warps = l.max_threads_sm / 32;
  int by_threads = l.max_threads_sm / (warps_block * 32);
  int blocks = by_threads;
  if (l.max_blocks_sm < blocks) {
    blocks = l.max_blocks_sm;
    *limit = "blocks";
  }
  if (r->registers > 0) {
    /* Registers are allocated per warp in units of reg_alloc_unit. */
    int per_warp = (r->registers * 32 + l.reg_alloc_unit - 1) / l.reg_alloc_unit * l.reg_alloc_unit;
    int by_regs = regs_sm / (per_warp * warps_block);
    if (by_regs < blocks) {
      blocks = by_regs;
      *limit = "registers";
    }
  }
  if (r->shared_bytes > 0) {
    int by_smem = l.shared_sm / r->shared_bytes;
    if (by_smem < blocks) {
      blocks = by_smem;
      *limit = "shared memory";
    }
  }
  int warps = blocks * warps_block;
  if (warps > max_warps) warps = max_warps;
  return (double)warps / max_warps;
}

/* ---------- cache ---------- */

const char *cuda_cache_dir(char *buf, size_t n) {
  /* The CPU backend's folder (created owner-only; one others can write is refused, since cubins
   * from it are loaded and run), with the cubins under cuda/. */
  char base[4096];
  FxError e;
  fx_error_clear(&e);
  int w = -1;
  if (cpu_resolve_cache_dir(base, sizeof base, &e)) w = snprintf(buf, n, "%s/cuda", base);
  if (w < 0 || (size_t)w >= n || (mkdir(buf, 0700) != 0 && errno != EEXIST)) buf[0] = 0;
  return buf;
}

#ifdef FXPLAIN_HAVE_NVRTC
static void *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *data = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = (len + 4096 + 1) * 2;
      char *nd = fx_realloc(data, cap);
      if (!nd) {
        fx_free(data);
        fclose(f);
        return NULL;
      }
      data = nd;
    }
    size_t got = fread(data + len, 1, cap - len - 1, f);
    len += got;
    if (got == 0) break;
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    fx_free(data);
    return NULL;
  }
  data[len] = 0; /* so logs read as strings */
  *size = len;
  return data;
}

/* Writes through a temporary file and rename, so a reader never sees half a cubin. */
static void write_all(const char *path, const void *data, size_t size) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return;
  bool ok = fwrite(data, 1, size, f) == size;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) remove(tmp);
}
#endif

/* ---------- compile ---------- */

void cuda_cubin_free(CudaCubin *c) {
  if (!c) return;
  fx_free(c->cubin);
  fx_free(c->log);
  fx_free(c->ptx);
  memset(c, 0, sizeof *c);
}

#ifdef FXPLAIN_HAVE_NVRTC
static bool nvrtc_failed(nvrtcResult r, const char *what, FxError *err) {
  return fx_error_set(err, NULL, 0, 0, "NVRTC: %s failed: %s", what, nvrtcGetErrorString(r));
}
#define NVRTC_CHECK(err, call)                                              \
  do {                                                                      \
    nvrtcResult nv_r_ = (call);                                             \
    if (nv_r_ != NVRTC_SUCCESS) {                                           \
      ok = nvrtc_failed(nv_r_, #call, (err));                               \
      goto done;                                                            \
    }                                                                       \
  } while (0)

/* A text NVRTC holds for prog (its log, its PTX), read with its size and get functions into a
 * fresh, terminated buffer. */
static bool nvrtc_text(nvrtcProgram prog, nvrtcResult (*size_fn)(nvrtcProgram, size_t *), const char *size_name,
                       nvrtcResult (*get_fn)(nvrtcProgram, char *), const char *get_name, const char *what, char **out,
                       FxError *err) {
  size_t n = 0;
  nvrtcResult r = size_fn(prog, &n);
  if (r != NVRTC_SUCCESS) return nvrtc_failed(r, size_name, err);
  if (!(*out = fx_malloc(n + 1))) return fx_error_set(err, NULL, 0, 0, "out of memory reading %s", what);
  (*out)[0] = 0;
  if ((r = get_fn(prog, *out)) != NVRTC_SUCCESS) return nvrtc_failed(r, get_name, err);
  (*out)[n] = 0;
  return true;
}
#endif

bool cuda_nvrtc_compile(const char *source, const char *file, const char *kernel,
                        const CudaCompileOptions *opt, CudaCubin *out, FxError *err) {
  memset(out, 0, sizeof *out);
  CudaCompileOptions none = {0};
  if (!opt) opt = &none;
  const char *arch = opt->arch && opt->arch[0] ? opt->arch : cuda_nvrtc_default_arch();
  int num;
  if (!arch_number(arch, &num) || strlen(arch) >= sizeof out->arch)
    return fx_error_set(err, NULL, 0, 0, "'%s' is not a GPU architecture (expected sm_NN, e.g. sm_80)", arch);
  snprintf(out->arch, sizeof out->arch, "%s", arch);
#ifndef FXPLAIN_HAVE_NVRTC
  (void)source, (void)file, (void)kernel;
  return fx_error_set(err, NULL, 0, 0, "this fxplain was built without the CUDA toolkit: NVRTC is not available");
#else
  char archopt[48], regopt[48], incopt[4200], ccclopt[4200], cccldir[4200];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
  snprintf(regopt, sizeof regopt, "--maxrregcount=%d", opt->max_registers);
  snprintf(incopt, sizeof incopt, "-I%s", FXPLAIN_CUDA_INCLUDE);
  const char *opts[8];
  int nopts = 0;
  opts[nopts++] = archopt;
  opts[nopts++] = "--ptxas-options=-v";
  opts[nopts++] = "--std=c++17";
  /* No contraction of a multiply and an add into one fused multiply-add: every operation rounds as
   * the reference interpreter and the CPU backend (-ffp-contract=off) round it, so `run --check`
   * compares like with like. Measured on an H200: with NVRTC's default (--fmad=true) the fused
   * CartPole (100 steps) drifted 9e-5 from the interpreter while its unfused stage agreed. */
  opts[nopts++] = "--fmad=false";
  if (opt->max_registers > 0) opts[nopts++] = regopt;
  if (FXPLAIN_CUDA_INCLUDE[0]) opts[nopts++] = incopt;
  /* CUDA 13 keeps libcu++ (cuda/std/..., which cuRAND's headers include under NVRTC) in
   * include/cccl. */
  snprintf(cccldir, sizeof cccldir, "%s/cccl/cuda/std", FXPLAIN_CUDA_INCLUDE);
  snprintf(ccclopt, sizeof ccclopt, "-I%s/cccl", FXPLAIN_CUDA_INCLUDE);
  if (FXPLAIN_CUDA_INCLUDE[0] && access(cccldir, R_OK) == 0) opts[nopts++] = ccclopt;

  uint64_t h = CUDA_HASH_INIT;
  h = cuda_hash(h, source, strlen(source) + 1);
  for (int i = 0; i < nopts; i++) h = cuda_hash(h, opts[i], strlen(opts[i]) + 1);
  const char *ver = cuda_nvrtc_version();
  h = cuda_hash(h, ver, strlen(ver) + 1);
  out->hash = h;

  char dir[4096], cpath[4200], lpath[4200];
  bool use_cache = !opt->no_cache && !opt->want_ptx && cuda_cache_dir(dir, sizeof dir)[0];
  if (use_cache) {
    snprintf(cpath, sizeof cpath, "%s/%016llx.cubin", dir, (unsigned long long)h);
    snprintf(lpath, sizeof lpath, "%s/%016llx.log", dir, (unsigned long long)h);
    size_t cs = 0, ls = 0;
    void *cubin = read_all(cpath, &cs);
    char *log = cubin ? read_all(lpath, &ls) : NULL;
    if (cubin && log && cs > 0) {
      out->cubin = cubin;
      out->cubin_size = cs;
      out->log = log;
      out->cached = true;
      cuda_ptxas_parse(log, kernel, &out->res);
      return true;
    }
    fx_free(cubin);
    fx_free(log);
  }

  bool ok = true;
  nvrtcProgram prog = NULL;
  NVRTC_CHECK(err, nvrtcCreateProgram(&prog, source, file ? file : "kernel.cu", 0, NULL, NULL));
  nvrtcResult cr = nvrtcCompileProgram(prog, nopts, opts);
  if (!(ok = nvrtc_text(prog, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize(prog, &lsize)", nvrtcGetProgramLog,
                        "nvrtcGetProgramLog(prog, out->log)", "the NVRTC log", &out->log, err)))
    goto done;
  if (cr != NVRTC_SUCCESS) {
    /* The first "error" line of the log says what went wrong in the source. */
    const char *e = strstr(out->log, "error");
    const char *ls = e;
    while (ls && ls > out->log && ls[-1] != '\n') ls--;
    int elen = ls ? (int)strcspn(ls, "\n") : 0;
    ok = fx_error_set(err, NULL, 0, 0, "NVRTC: compiling %s for %s failed: %s%s%.*s", file ? file : "kernel.cu", arch,
                      nvrtcGetErrorString(cr), ls ? ": " : "", elen, ls ? ls : "");
    goto done;
  }
  NVRTC_CHECK(err, nvrtcGetCUBINSize(prog, &out->cubin_size));
  out->cubin = fx_malloc(out->cubin_size ? out->cubin_size : 1);
  if (!out->cubin) {
    ok = fx_error_set(err, NULL, 0, 0, "out of memory reading the cubin");
    goto done;
  }
  NVRTC_CHECK(err, nvrtcGetCUBIN(prog, out->cubin));
  if (opt->want_ptx && !(ok = nvrtc_text(prog, nvrtcGetPTXSize, "nvrtcGetPTXSize(prog, &psize)", nvrtcGetPTX,
                                          "nvrtcGetPTX(prog, out->ptx)", "the PTX", &out->ptx, err)))
    goto done;
  cuda_ptxas_parse(out->log, kernel, &out->res);
  if (use_cache) {
    write_all(lpath, out->log, strlen(out->log));
    write_all(cpath, out->cubin, out->cubin_size);
  }
done:
  if (prog) nvrtcDestroyProgram(&prog);
  if (!ok) cuda_cubin_free(out);
  return ok;
#endif
}
