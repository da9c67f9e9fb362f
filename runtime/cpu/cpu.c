/* cpu.c — the native CPU backend, and the interpreter wrapped as a backend.
 *
 * prepare: every kernel of the given modules (fusions and unfused compute ops in the entry and in
 * while/call/conditional bodies) goes through the emitter (emit.c) into C translation units;
 * identical kernels (same generated text, e.g. a fusion unchanged between two stages) appear once.
 * The loops' and the entry's drivers and every kernel they call share one unit (so the compiler
 * inlines them); the other kernels go into that unit too, or, past CPU_UNIT_SPLIT_BYTES of C per
 * process, into up to one unit per thread (`set threads`), compiled side by side. Each unit is
 * compiled with the system C compiler (-O3 -march=native -fPIC -shared) into a shared
 * object cached in the user's cache directory under the hash of its source and flags, written
 * atomically (temporary file + rename), and loaded with dlopen; an entry that fails to load or
 * lacks its marker symbol is treated as corrupt and rebuilt. Sorts (a merge sort per line with the
 * comparator inlined), scatters and small dots have kernels of their own (emit.c); kernels the
 * emitter does not generate (convolution, rng, custom calls, ...) run on the interpreter's
 * implementation; dot goes to OpenBLAS (cblas_sgemm/dgemm; bf16/f16 through double copies and dgemm) when
 * the shapes allow, and a small one is generated.
 *
 * run: the kernel plan's buffer assignment (compiler/plan/plan.c) gives one allocation per memory slot
 * for the whole run; the interpreter's walker drives the module (calls, conditionals, and while
 * loops that cannot run compiled: a while loop of generated kernels runs in one call of its C
 * driver, see cpu_loop.c); a hook takes over every kernel: it places the outputs in their
 * slots (a loop's results alternate between two; fresh memory for what goes to the caller, for
 * interpreted kernels, or when a slot is still held), launches the compiled parts (the outer loop
 * split over a pool of threads, `set threads N`, when the kernel is large or was slow on one
 * thread), and records launches, time, and the plan's bytes per kernel.
 *
 * Vector math: when SLEEF's GNU-ABI library is installed (found at build time, or
 * $FXPLAIN_SLEEF_LIB), the unit is compiled with -DFX_VECMATH=1 and linked against it, so the
 * elementwise loops that call sin, cos, exp, ... vectorize (emit.c's prelude and wrapper); without
 * it, or after `set vecmath libm`, the kernels call libm one element at a time. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../compiler/plan/plan.h"
#include "../cuda/cuda.h"
#include "cpu_internal.h"

enum { CPU_MAX_KERNEL_SOURCE = 256 * 1024 }; /* bytes of C per generated kernel */

/* ---------- stats ---------- */

RtKernelStat *rt_run_stats_add(RtRunStats *s, const IrInstr *i) {
  if (s->nkernels == s->cap) {
    int nc = s->cap ? s->cap * 2 : 32;
    RtKernelStat *nk = fx_realloc(s->kernels, sizeof *nk * (size_t)nc);
    if (!nk) return NULL;
    s->kernels = nk;
    s->cap = nc;
  }
  RtKernelStat *k = &s->kernels[s->nkernels++];
  memset(k, 0, sizeof *k);
  k->instr = i;
  return k;
}

void rt_run_stats_free(RtRunStats *s) {
  fx_free(s->kernels);
  memset(s, 0, sizeof *s);
}

double cpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

RtKernelStat *cpu_stat_for(RtRunStats *s, CpuKernel *k, const IrInstr *i) {
  if (!s) return NULL;
  int idx = k ? k->stat : -1;
  if (idx < 0 || idx >= s->nkernels || s->kernels[idx].instr != i) {
    idx = -1;
    /* a kernel's row is made at its first launch of the run (cpu_run clears k->stat): only a
       row without a kernel (a loop's) is looked for */
    for (int q = 0; !k && q < s->nkernels; q++)
      if (s->kernels[q].instr == i) idx = q;
    if (idx < 0) {
      if (!rt_run_stats_add(s, i)) return NULL;
      idx = s->nkernels - 1;
    }
    if (k) k->stat = idx;
  }
  return &s->kernels[idx];
}

/* ---------- kernel map ---------- */

CpuKernel *cpu_kernel(CpuBackend *b, const IrInstr *i) { return ptrmap_get(&b->kernels, i); }

/* Maps i to k, freeing the kernel it had. */
static bool kmap_put(CpuBackend *b, const IrInstr *i, CpuKernel *k) {
  CpuKernel *old = cpu_kernel(b, i);
  if (!ptrmap_put(&b->kernels, i, k)) return false;
  fx_free(old);
  return true;
}

/* ---------- cache directory ---------- */

static bool mkdir_p(const char *path) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
      *p = '/';
    }
  return mkdir(tmp, 0700) == 0 || errno == EEXIST;
}

bool cpu_resolve_cache_dir(char *out, size_t n, FxError *err) {
  const char *e = getenv("FXPLAIN_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  int len;
  if (e && *e) len = snprintf(out, n, "%s", e);
  else if (x && *x) len = snprintf(out, n, "%s/fxplain", x);
  else if (h && *h) len = snprintf(out, n, "%s/.cache/fxplain", h);
  else len = snprintf(out, n, "/tmp/fxplain-cache-%d", (int)geteuid());
  /* a longer path was cut short silently, and the cut one used: refuse it instead; the entries'
     names (fx_HASH.so.sum and the temporary files) need room after it too */
  if (len < 0 || (size_t)len + 64 >= n)
    return fx_error_set(err, NULL, 0, 0, "the kernel cache directory's path is %d characters long; the limit is %zu", len, n - 64);
  if (!mkdir_p(out)) return fx_error_set(err, out, 0, 0, "cannot create the kernel cache directory: %s", strerror(errno));
  struct stat st;
  if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode))
    return fx_error_set(err, out, 0, 0, "the kernel cache path is not a directory");
  if (st.st_uid != geteuid() || (st.st_mode & 022))
    return fx_error_set(err, out, 0, 0,
                        "the kernel cache directory is writable by others or not yours; fxplain loads code from it, "
                        "so it refuses (chmod 700 it, or set FXPLAIN_CACHE_DIR)");
  return true;
}

/* ---------- settings for every CPU backend made after them ---------- */

/* The shell's `set threads N` and `set vecmath sleef|libm` (process-wide, like max_memory): each
 * run makes its own backend, which starts from these. */
static int default_threads;        /* 0: every online CPU */
static bool default_vecmath = true; /* use the vector math library when it is there */

#ifndef FXPLAIN_SLEEF_GNUABI
#define FXPLAIN_SLEEF_GNUABI "" /* not found when fxplain was built */
#endif

void cpu_set_default_threads(int n) { default_threads = n > 0 ? n : 0; }
void cpu_set_default_vecmath(bool on) { default_vecmath = on; }
bool cpu_default_vecmath(void) { return default_vecmath; }

int cpu_default_threads(void) {
  if (default_threads > 0) return default_threads;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* The vector math library's path ($FXPLAIN_SLEEF_LIB, else the one found at build time), or NULL
 * when it is not installed. */
static const char *vecmath_library(void) {
  const char *e = getenv("FXPLAIN_SLEEF_LIB");
  const char *p = e && *e ? e : FXPLAIN_SLEEF_GNUABI;
  return *p && access(p, R_OK) == 0 ? p : NULL;
}

bool cpu_vecmath_is_sleef(void) { return default_vecmath && vecmath_library() != NULL; }

void cpu_vecmath_describe(char *out, size_t n) {
  const char *lib = vecmath_library();
  if (!default_vecmath) snprintf(out, n, "libm (scalar: set vecmath libm)");
  else if (lib) snprintf(out, n, "SLEEF (%s): sin, cos, exp, ... vectorized at the widest SIMD (with gcc)", lib);
  else snprintf(out, n, "libm (scalar: SLEEF's libsleefgnuabi not found; install libsleef-dev)");
}

/* ---------- compiling ---------- */

static uint64_t fnv(const char *s, size_t n, uint64_t h) {
  for (size_t k = 0; k < n; k++) {
    h ^= (unsigned char)s[k];
    h *= 0x100000001b3ULL;
  }
  return h;
}

static bool write_file_atomic(const char *path, const char *data, size_t n, FxError *err) {
  char tmp[700];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
    return fx_error_set(err, path, 0, 0, "cache path too long");
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return fx_error_set(err, tmp, 0, 0, "cannot write: %s", strerror(errno));
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(fd, data + off, n - off);
    if (w <= 0) {
      close(fd);
      unlink(tmp);
      return fx_error_set(err, tmp, 0, 0, "write failed: %s", strerror(errno));
    }
    off += (size_t)w;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    unlink(tmp);
    return fx_error_set(err, path, 0, 0, "cannot write: %s", strerror(errno));
  }
  return true;
}

/* The session's Ctrl-C flag (rt_set_interrupt_flag): polled while the compiler runs. */
static volatile int *cc_interrupt;
void rt_set_interrupt_flag(volatile int *flag) { cc_interrupt = flag; }

/* Starts the compiler on src, without a shell, writing so; its messages go to logpath. The pid, or
 * -1 with err set. */
static pid_t start_compiler(CpuBackend *b, const char *src, const char *so, const char *logpath, FxError *err) {
  char flags[256];
  snprintf(flags, sizeof flags, "%s", b->flags);
  char *argv[64];
  int argc = 0;
  argv[argc++] = b->cc;
  for (char *t = strtok(flags, " "); t && argc < 36; t = strtok(NULL, " ")) argv[argc++] = t;
  /* -fno-semantic-interposition: a kernel's function may be inlined into a loop's driver in the
     same unit (no shared object interposes them) */
  char *fixed[] = {"-fPIC", "-shared", "-fno-semantic-interposition", "-ffp-contract=off", "-fno-math-errno", "-w",
                   "-o", (char *)so, (char *)src};
  for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) argv[argc++] = fixed[k];
  /* vector math: its flags, and its library before libm so that the vector variants bind to it */
  char vflags[512];
  snprintf(vflags, sizeof vflags, "%s", b->vflags);
  for (char *t = strtok(vflags, " "); t && argc < 46; t = strtok(NULL, " ")) argv[argc++] = t;
  argv[argc++] = "-lm";
  argv[argc] = NULL;
  pid_t pid = fork();
  if (pid < 0) {
    fx_error_set(err, NULL, 0, 0, "cannot start the C compiler: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    /* a process group of its own, so that a time limit or Ctrl-C stops the compiler's own
       children (cc1, as, ld) too: killing the driver alone left cc1 running for minutes */
    setpgid(0, 0);
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execvp(argv[0], argv);
    _exit(127);
  }
  setpgid(pid, pid); /* as the child does: whichever runs first */
  return pid;
}

/* The compilers' time limit: $FXPLAIN_CC_TIMEOUT seconds, default 120. */
static double cc_time_limit(void) {
  const char *lim = getenv("FXPLAIN_CC_TIMEOUT");
  return lim && atof(lim) > 0 ? atof(lim) : 120.0;
}

/* How one compiler process ended. */
typedef struct {
  pid_t pid;
  int status;
  bool done, timed_out, interrupted;
} CcRun;

/* Waits for the compilers in runs (pid > 0), all under one time limit (cc_time_limit): a huge
 * unit (stack([x]*10000) made 1.9 MB of C) must not hang the session; past it, or at Ctrl-C, the
 * compilers still running are killed and their kernels run on the interpreter (the caller says
 * so). False only when waiting itself fails. */
static bool wait_compilers(CcRun *runs, int n, FxError *err) {
  double limit = cc_time_limit();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int left = 0;
    for (int k = 0; k < n; k++) {
      CcRun *r = &runs[k];
      if (r->pid <= 0 || r->done) continue;
      pid_t w = waitpid(r->pid, &r->status, WNOHANG);
      if (w == r->pid) {
        r->done = true;
        continue;
      }
      if (w < 0 && errno != EINTR) return fx_error_set(err, NULL, 0, 0, "waiting for the C compiler failed: %s", strerror(errno));
      left++;
    }
    if (!left) return true;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    bool over = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9 >= limit;
    bool stop = cc_interrupt && *cc_interrupt;
    for (int k = 0; (over || stop) && k < n; k++) {
      CcRun *r = &runs[k];
      if (r->pid <= 0 || r->done || r->timed_out || r->interrupted) continue;
      kill(-r->pid, SIGKILL);
      kill(r->pid, SIGKILL);
      r->timed_out = over && !stop;
      r->interrupted = stop;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* True when run r compiled src; else err says how it ended, with the first line of its messages. */
static bool compiler_result(CpuBackend *b, const CcRun *r, const char *src, const char *logpath, FxError *err) {
  if (!r->timed_out && !r->interrupted && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0) return true;
  char msg[400] = "";
  FILE *f = fopen(logpath, "r");
  if (f) {
    size_t n = fread(msg, 1, sizeof msg - 1, f);
    msg[n] = 0;
    fclose(f);
  }
  /* the first line of its own message, and how it ended */
  msg[strcspn(msg, "\n")] = 0;
  char how[80];
  if (r->interrupted) snprintf(how, sizeof how, "interrupted (Ctrl-C)");
  else if (r->timed_out) snprintf(how, sizeof how, "stopped after the %.0f s time limit", cc_time_limit());
  else if (WIFSIGNALED(r->status)) snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(r->status));
  else if (WEXITSTATUS(r->status) == 127) snprintf(how, sizeof how, "could not be run");
  else snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(r->status));
  return fx_error_set(err, NULL, 0, 0, "the C compiler (%s) failed on generated kernels (%s): %s%s%s", b->cc, src, how, msg[0] ? ": " : "", msg);
}

/* ---------- cache entries ----------
 *
 * A cached fx_HASH.so is loaded into the process, so it must be exactly what the compiler wrote:
 * a truncated one made dlopen die with SIGBUS on every later run. Beside each, fx_HASH.so.sum
 * records its size and FNV-1a checksum; it is written (atomically) before the .so is renamed into
 * place, and a .so whose size or checksum does not match is removed and rebuilt. */

/* size and checksum of the file at path; false when it cannot be read */
static bool file_sum(const char *path, uint64_t *size, uint64_t *sum) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return false;
  char buf[65536];
  uint64_t h = 0xcbf29ce484222325ULL, n = 0;
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0) {
    h = fnv(buf, (size_t)r, h);
    n += (uint64_t)r;
  }
  close(fd);
  if (r < 0) return false;
  *size = n;
  *sum = h;
  return true;
}

static bool entry_valid(const char *so, const char *sumpath) {
  FILE *f = fopen(sumpath, "r");
  if (!f) return false;
  unsigned long long want_size, want_sum;
  bool parsed = fscanf(f, "fxplain-kernel-cache 1 size %llu fnv1a %llx", &want_size, &want_sum) == 2;
  fclose(f);
  uint64_t size, sum;
  return parsed && file_sum(so, &size, &sum) && size == want_size && sum == want_sum;
}

static bool load_unit(CpuBackend *b, const char *so, const char *marker, void **out) {
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) return false;
  if (!dlsym(h, marker)) {
    dlclose(h);
    return false;
  }
  *out = h;
  (void)b;
  return true;
}

/* One unit of generated C: its text and hash, and after compile_units its handle (NULL when it
 * could not be compiled; err says why). */
typedef struct {
  EmitBuf src;
  uint64_t hash;
  void *handle;
  FxError err;
} CpuUnit;

/* The cache entry's paths of a unit. */
typedef struct {
  char base[600], cpath[640], so[640], sumpath[640], log[640], tmpso[680], marker[64];
} UnitPaths;

static void unit_paths(const CpuBackend *b, uint64_t hash, UnitPaths *p) {
  snprintf(p->base, sizeof p->base, "%s/fx_%016llx", b->cache, (unsigned long long)hash);
  snprintf(p->cpath, sizeof p->cpath, "%s.c", p->base);
  snprintf(p->so, sizeof p->so, "%s.so", p->base);
  snprintf(p->sumpath, sizeof p->sumpath, "%s.so.sum", p->base);
  snprintf(p->log, sizeof p->log, "%s.log", p->base);
  snprintf(p->tmpso, sizeof p->tmpso, "%s.so.tmp.%d", p->base, (int)getpid());
  snprintf(p->marker, sizeof p->marker, "fx_unit_%016llx", (unsigned long long)hash);
}

/* The compiled unit at p->tmpso checked, recorded and moved into the cache, then loaded. */
static bool store_unit(CpuBackend *b, const UnitPaths *p, void **handle, FxError *err) {
  uint64_t size, sum;
  char line[128];
  if (!file_sum(p->tmpso, &size, &sum)) {
    unlink(p->tmpso);
    return fx_error_set(err, p->tmpso, 0, 0, "cannot read the compiled kernels: %s", strerror(errno));
  }
  int ln = snprintf(line, sizeof line, "fxplain-kernel-cache 1 size %llu fnv1a %016llx\n", (unsigned long long)size,
                    (unsigned long long)sum);
  if (!write_file_atomic(p->sumpath, line, (size_t)ln, err)) {
    unlink(p->tmpso);
    return false;
  }
  if (rename(p->tmpso, p->so) != 0) {
    unlink(p->tmpso);
    return fx_error_set(err, p->so, 0, 0, "cannot store the compiled kernels: %s", strerror(errno));
  }
  unlink(p->log);
  if (!load_unit(b, p->so, p->marker, handle))
    return fx_error_set(err, p->so, 0, 0, "cannot load the compiled kernels: %s", dlerror());
  b->compiled++;
  return true;
}

/* Compiles (or finds in the cache) each of the n units, the compilers running side by side, one
 * process each, under one time limit. A unit that fails keeps handle NULL and its err. */
static void compile_units(CpuBackend *b, CpuUnit *units, int n) {
  UnitPaths *paths = fx_calloc((size_t)(n ? n : 1), sizeof *paths);
  CcRun *runs = fx_calloc((size_t)(n ? n : 1), sizeof *runs);
  if (!paths || !runs) {
    for (int k = 0; k < n; k++) fx_error_set(&units[k].err, NULL, 0, 0, "out of memory");
    fx_free(paths);
    fx_free(runs);
    return;
  }
  for (int k = 0; k < n; k++) {
    CpuUnit *u = &units[k];
    UnitPaths *p = &paths[k];
    u->handle = NULL;
    unit_paths(b, u->hash, p);
    if (access(p->so, R_OK) == 0) {
      if (entry_valid(p->so, p->sumpath) && load_unit(b, p->so, p->marker, &u->handle)) {
        b->cached++;
        continue;
      }
      unlink(p->so); /* truncated, corrupt or stale: rebuild */
    }
    if (!write_file_atomic(p->cpath, u->src.s, u->src.len, &u->err)) continue;
    runs[k].pid = start_compiler(b, p->cpath, p->tmpso, p->log, &u->err);
  }
  FxError werr;
  fx_error_clear(&werr);
  bool waited = wait_compilers(runs, n, &werr);
  for (int k = 0; k < n; k++) {
    CpuUnit *u = &units[k];
    if (runs[k].pid <= 0) continue;
    if (!waited) {
      u->err = werr;
      unlink(paths[k].tmpso);
      continue;
    }
    if (!compiler_result(b, &runs[k], paths[k].cpath, paths[k].log, &u->err)) {
      unlink(paths[k].tmpso);
      continue;
    }
    store_unit(b, &paths[k], &u->handle, &u->err);
  }
  fx_free(paths);
  fx_free(runs);
}

/* ---------- prepare ---------- */

enum { CPU_SMALL_DOT_MACS = 1 << 16 };

/* The multiply-adds of dot i. */
static int64_t dot_macs(const IrInstr *i) {
  IrDotDims dd;
  int64_t n = ir_shape_elements(&i->shape);
  if (!ir_dot_dims(i, &dd) || i->noperands != 2) return INT64_MAX;
  for (int c = 0; c < dd.nlhs_contract; c++) n *= i->operands[0]->shape.dims[dd.lhs_contract[c]];
  return n;
}

/* A distinct kernel's text (by hash), and the unit it goes into. */
typedef struct {
  uint64_t h;
  char sym[24];
  EmitBuf text;
  int unit;
} SeenHash;

/* Below this much C the kernels stay in one unit: a compiler process of its own costs more than
 * compiling them side by side saves. */
enum { CPU_UNIT_SPLIT_BYTES = 64 * 1024 };

static void free_slots(CpuBackend *b);

static bool cpu_prepare(void *vb, const IrModule *const *mods, int nmods, FxError *err) {
  CpuBackend *b = vb;
  cpu_loops_clear(b); /* planned again from this prepare's kernels */
  b->ndrivers = 0;
  free_slots(b);     /* assigned again at the next run */
  b->compiled = b->cached = b->nkernels = b->ninterp = 0;
  b->unit++;
  if (!b->no_cache) b->note[0] = 0;
  SeenHash *seen = NULL;
  int nseen = 0, capseen = 0;
  CpuKernel **pending = NULL;
  int *pend_seen = NULL; /* each pending kernel's text, in seen */
  int npending = 0, cappending = 0;
  bool ok = true;
  EmitBuf kb;
  emit_buf_init(&kb);
  EmitKernel *ek = fx_malloc(sizeof *ek);
  if (!ek) ok = fx_error_set(err, NULL, 0, 0, "out of memory");
  for (int m = 0; ok && m < nmods; m++) {
    const IrComputation *comps[256];
    int nc = 0;
    if (!mods[m]->entry) continue;
    nc = rt_host_computations(mods[m]->entry, comps, 256);
    for (int c = 0; ok && c < nc; c++) {
      for (int q = 0; ok && q < comps[c]->ninstrs; q++) {
        const IrInstr *i = comps[c]->instrs[q];
        if (rt_instr_is_free(i) || cpu_kernel(b, i)) continue;
        CpuKernel *k = fx_calloc(1, sizeof *k);
        if (!k || !kmap_put(b, i, k)) {
          fx_free(k);
          ok = fx_error_set(err, NULL, 0, 0, "out of memory");
          break;
        }
        k->instr = i;
        k->stat = -1;
        for (int o = 0; o < CPU_MAX_SLOTTED; o++) k->slot[o] = k->slot2[o] = -1;
        plan_kernel_bytes(i, &k->rbytes, &k->wbytes);
        b->nkernels++;
        if (b->interp_only) {
          k->how = K_INTERP;
          continue;
        }
        if (b->no_cache) {
          k->how = K_INTERP;
          snprintf(k->why, sizeof k->why, "the kernel cache cannot be used");
          b->ninterp++;
          continue;
        }
        /* gemm for a dot, but a small one (a vector dot in a loop) is generated: a call to the
           library costs more than it, and a loop of generated kernels can run compiled */
        CpuGemm gm;
        if (i->op == IR_OP_DOT && cpu_gemm_of_dot(i, &gm) && !(dot_macs(i) <= CPU_SMALL_DOT_MACS && emit_dot_kernel_init(ek, i, &(FxError){0}))) {
          k->how = K_BLAS;
          continue;
        }
        /* convolution: im2col + gemm, or a depthwise one directly */
        IrConvDims cd;
        IrWindow cw;
        RtConvMap cm;
        if (i->op == IR_OP_CONVOLUTION && cpu_conv_of(i, &cd, &cw, &cm) &&
            cpu_conv_ok(&cm, &i->operands[0]->shape, &i->operands[1]->shape, &i->shape)) {
          k->how = cpu_conv_is_depthwise(&cm, &i->operands[0]->shape, &i->operands[1]->shape, &i->shape) ? K_DIRECT : K_BLAS;
          continue;
        }
        FxError why = {0};
        const IrComputation *fc = ir_fused_computation(i);
        const IrInstr *root = fc ? fc->root : i;
        if (!emit_kernel_init(ek, i, &why) && !((i->op == IR_OP_SORT || i->op == IR_OP_FUSION) && emit_sort_kernel_init(ek, i, &why)) &&
            !(root && root->op == IR_OP_SCATTER && emit_scatter_kernel_init(ek, i, &why)) &&
            !(i->op == IR_OP_DOT && emit_dot_kernel_init(ek, i, &why))) {
          k->how = K_INTERP;
          snprintf(k->why, sizeof k->why, "%.199s", why.msg);
          if (getenv("FXPLAIN_CPU_VERBOSE")) fprintf(stderr, "interpreted: %s\n", k->why);
          b->ninterp++;
          continue;
        }
        /* generate under a placeholder name, name it by the hash of its text */
        snprintf(ek->name, sizeof ek->name, "fxK");
        kb.len = 0;
        if (kb.s) kb.s[0] = 0;
        bool gok = emit_globals(&kb, ek, EMIT_TARGET_C, &why);
        for (int p = 0; gok && p < ek->nparts; p++) gok = emit_c_wrapper(&kb, ek, p, &why);
        if (gok && ek->inplace_input >= 0) gok = emit_inplace(&kb, ek, &why);
        if (!gok || kb.oom) {
          k->how = K_INTERP;
          snprintf(k->why, sizeof k->why, "%.199s", why.msg);
          b->ninterp++;
          continue;
        }
        /* A bound on what the C compiler is given: stack([x]*10000) made one kernel of 1.9 MB
           that cc -O3 worked on for minutes. Bigger kernels run on the interpreter, said in a note. */
        if (kb.len > CPU_MAX_KERNEL_SOURCE) {
          k->how = K_INTERP;
          snprintf(k->why, sizeof k->why, "its generated code is too large (%zu KB; the limit is %d KB)", kb.len / 1024,
                   CPU_MAX_KERNEL_SOURCE / 1024);
          b->ninterp++;
          if (!b->note[0])
            snprintf(b->note, sizeof b->note, "%s: %s, so it runs on the interpreter's implementation", i->name, k->why);
          continue;
        }
        uint64_t h = fnv(kb.s, kb.len, 0xcbf29ce484222325ULL);
        k->how = K_GENERATED;
        snprintf(k->sym, sizeof k->sym, "fx_%016llx", (unsigned long long)h);
        k->nparts = ek->nparts;
        k->ip_input = ek->inplace_input;
        for (int p = 0; p < ek->nparts; p++) {
          k->outer[p] = ek->parts[p].outer;
          k->count[p] = ek->parts[p].count;
        }
        if (npending == cappending) {
          int ncap = cappending ? cappending * 2 : 64;
          CpuKernel **np = fx_realloc(pending, sizeof *np * (size_t)ncap);
          int *ps = np ? fx_realloc(pend_seen, sizeof *ps * (size_t)ncap) : NULL;
          if (np) pending = np;
          if (!np || !ps) {
            ok = fx_error_set(err, NULL, 0, 0, "out of memory");
            break;
          }
          pend_seen = ps;
          cappending = ncap;
        }
        pending[npending] = k;
        k->unit = b->unit;
        int dup = -1;
        for (int s = 0; s < nseen && dup < 0; s++)
          if (seen[s].h == h) dup = s;
        if (dup >= 0) {
          pend_seen[npending++] = dup;
          continue;
        }
        if (nseen == capseen) {
          int ncap = capseen ? capseen * 2 : 64;
          SeenHash *ns = fx_realloc(seen, sizeof *ns * (size_t)ncap);
          if (!ns) {
            ok = fx_error_set(err, NULL, 0, 0, "out of memory");
            break;
          }
          seen = ns;
          capseen = ncap;
        }
        pend_seen[npending++] = nseen;
        SeenHash *sh = &seen[nseen++];
        sh->h = h;
        sh->unit = 0;
        snprintf(sh->sym, sizeof sh->sym, "%s", k->sym);
        emit_buf_init(&sh->text);
        /* the only user text in the unit: the sanitized instruction name, in a comment */
        char san[120];
        emit_sanitize(i->name, san, sizeof san);
        emit_printf(&sh->text, "/* kernel %s */\n", san);
        /* replace the placeholder */
        const char *p = kb.s;
        for (const char *f; (f = strstr(p, "fxK")) != NULL; p = f + 3) {
          emit_printf(&sh->text, "%.*s%s", (int)(f - p), p, k->sym);
        }
        emit_printf(&sh->text, "%s", p);
        if (sh->text.oom) ok = fx_error_set(err, NULL, 0, 0, "out of memory generating kernels");
      }
    }
  }
  /* the while loops whose kernels are all generated, and entry computations that are nothing
     else: their drivers go into the unit of the kernels they call */
  EmitBuf drv;
  emit_buf_init(&drv);
  for (int m = 0; ok && nseen > 0 && m < nmods; m++) {
    const IrComputation *comps[256];
    int nc = mods[m]->entry ? rt_host_computations(mods[m]->entry, comps, 256) : 0;
    ok = cpu_loops_plan(b, comps, nc, &drv, err);
    if (ok && !b->host_loops) ok = cpu_entry_plan(b, mods[m]->entry, &drv, err);
  }
  if (drv.oom) ok = fx_error_set(err, NULL, 0, 0, "out of memory writing loop drivers");
  /* The units: the first holds the drivers and every kernel they call (so that the compiler can
     inline them), the others the remaining kernels, split so that one compiler process per thread
     (`set threads`) works on them side by side: Gemma 4's 1,451 kernels are 1.4 MB of C, minutes
     for one process. Below CPU_UNIT_SPLIT_BYTES of C per process the kernels stay in one unit. */
  size_t rest = 0;
  bool main_used = drv.len > 0;
  for (int q = 0; q < nseen; q++) {
    seen[q].unit = drv.len && strstr(drv.s, seen[q].sym) ? 0 : -1;
    if (seen[q].unit < 0) rest += seen[q].text.len;
    else main_used = true;
  }
  int nt = cpu_threads(b), nsplit = (int)((rest + CPU_UNIT_SPLIT_BYTES - 1) / CPU_UNIT_SPLIT_BYTES);
  if (nsplit > nt) nsplit = nt;
  if (nsplit < 2) nsplit = 0;
  int first = nsplit && main_used ? 1 : 0; /* the drivers' unit, when there is one beside the split */
  size_t filled = 0;
  for (int q = 0; q < nseen; q++) {
    if (seen[q].unit >= 0) continue;
    seen[q].unit = nsplit ? first + (int)(filled * (size_t)nsplit / (rest ? rest : 1)) : 0;
    filled += seen[q].text.len;
  }
  int nunits = nseen > 0 ? (nsplit ? first + nsplit : 1) : 0;
  CpuUnit *units = nunits ? fx_calloc((size_t)nunits, sizeof *units) : NULL;
  if (nunits && !units) ok = fx_error_set(err, NULL, 0, 0, "out of memory");
  for (int u = 0; ok && u < nunits; u++) {
    EmitBuf *src = &units[u].src;
    emit_buf_init(src);
    emit_prelude(src, EMIT_TARGET_C);
    for (int q = 0; q < nseen; q++)
      if (seen[q].unit == u) emit_printf(src, "%s", seen[q].text.s);
    if (u == 0 && drv.len) emit_printf(src, "%s", drv.s);
    uint64_t uh = fnv(src->s, src->len, 0xcbf29ce484222325ULL);
    uh = fnv(b->cc, strlen(b->cc), uh);
    uh = fnv(b->flags, strlen(b->flags), uh);
    uh = fnv(b->vflags, strlen(b->vflags), uh);
    units[u].hash = uh;
    emit_printf(src, "int fx_unit_%016llx(void) { return 1; }\n", (unsigned long long)uh);
    if (src->oom) ok = fx_error_set(err, NULL, 0, 0, "out of memory generating kernels");
  }
  if (ok && nunits) compile_units(b, units, nunits);
  for (int u = 0; ok && u < nunits; u++) {
    if (!units[u].handle) {
      /* a cache that cannot be written (read-only, full), a compiler that fails or is stopped:
         the unit's kernels run on the interpreter's implementation, and the run says why */
      FxError *ce = &units[u].err;
      if (!b->note[0])
        snprintf(b->note, sizeof b->note, "generated kernels could not be compiled (%s%s%.400s): they run on the interpreter's implementation",
                 ce->file[0] ? ce->file : "", ce->file[0] ? ": " : "", ce->msg);
      cpu_loops_clear(b); /* planned over kernels that may not run */
      continue;
    }
    if (b->nhandles == b->caphandles) {
      int nc = b->caphandles ? b->caphandles * 2 : 8;
      void **nh = fx_realloc(b->handles, sizeof *nh * (size_t)nc);
      if (nh) {
        b->handles = nh;
        b->caphandles = nc;
      }
    }
    if (b->nhandles < b->caphandles) b->handles[b->nhandles++] = units[u].handle;
  }
  for (int q = 0; ok && q < npending; q++) {
    CpuKernel *k = pending[q];
    void *h = units ? units[seen[pend_seen[q]].unit].handle : NULL;
    if (!h) {
      k->how = K_INTERP;
      snprintf(k->why, sizeof k->why, "the generated code could not be compiled");
      b->ninterp++;
      continue;
    }
    for (int p = 0; p < k->nparts; p++) {
      char sym[64];
      snprintf(sym, sizeof sym, "%s_p%d", k->sym, p);
      void *fn = dlsym(h, sym);
      if (!fn) {
        ok = fx_error_set(err, NULL, 0, 0, "compiled kernels lack %s", sym);
        break;
      }
      memcpy(&k->fns[p], &fn, sizeof fn);
    }
    if (ok && k->ip_input >= 0) {
      char sym[64];
      snprintf(sym, sizeof sym, "%s_ip", k->sym);
      void *fn = dlsym(h, sym);
      if (fn) memcpy(&k->ip, &fn, sizeof fn);
    }
  }
  if (ok && units && main_used && units[0].handle) cpu_loops_bind(b, units[0].handle);
  if (!ok) { /* kernels not compiled must not be launched */
    for (int q = 0; q < npending; q++) pending[q]->how = K_INTERP;
    cpu_loops_clear(b);
  }
  /* what `show` prints as the generated source: the units one after another */
  emit_buf_free(&b->last_source);
  emit_buf_init(&b->last_source);
  if (!nunits) emit_prelude(&b->last_source, EMIT_TARGET_C);
  for (int u = 0; u < nunits; u++) {
    if (units[u].src.s) emit_printf(&b->last_source, "%s", units[u].src.s);
    emit_buf_free(&units[u].src);
  }
  fx_free(units);
  emit_buf_free(&drv);
  for (int q = 0; q < nseen; q++) emit_buf_free(&seen[q].text);
  emit_buf_free(&kb);
  fx_free(ek);
  fx_free(seen);
  fx_free(pending);
  fx_free(pend_seen);
  return ok;
}

/* ---------- launching ---------- */

/* A large kernel's outer loop is split into chunks that the calling thread and a pool of
 * workers (started at the first such launch, kept until destroy) claim one at a time from a
 * shared counter. A worker that a loaded machine does not schedule in time simply finds no chunk
 * left: the caller never waits for a thread that has not started, only for chunks already
 * claimed. The caller waits for the workers of the previous launch to leave before it publishes
 * the next one, so no worker runs one launch's function over another's range. */
struct CpuPool {
  pthread_mutex_t mu;
  pthread_cond_t wake, idle, finished;
  pthread_t th[CPU_MAX_THREADS];
  struct PoolWorker {
    struct CpuPool *pool;
    int tid;
  } who[CPU_MAX_THREADS];
  int nworkers, active; /* active: workers inside a launch (under mu) */
  uint64_t gen;         /* launches published; a worker joins each new one */
  bool quit;
  CpuTask task;
  void *ctx;
  int64_t outer, chunk;
  _Atomic int64_t next, done; /* next chunk's start; elements finished */
};

static void run_chunks(CpuPool *p, CpuTask task, void *ctx, int64_t outer, int64_t chunk, int tid) {
  for (;;) {
    int64_t lo = atomic_fetch_add(&p->next, chunk);
    if (lo >= outer) return;
    int64_t hi = lo + chunk < outer ? lo + chunk : outer;
    task(ctx, lo, hi, tid);
    if (atomic_fetch_add(&p->done, hi - lo) + (hi - lo) >= outer && tid != 0) {
      /* the last chunk: the caller may be asleep waiting for it */
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->finished);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

static void *worker_main(void *arg) {
  CpuPool *p = ((struct PoolWorker *)arg)->pool;
  int tid = ((struct PoolWorker *)arg)->tid;
  pthread_mutex_lock(&p->mu);
  uint64_t seen = p->gen;
  for (;;) {
    while (p->gen == seen && !p->quit) pthread_cond_wait(&p->wake, &p->mu);
    if (p->quit) break;
    seen = p->gen;
    p->active++;
    CpuTask task = p->task;
    void *ctx = p->ctx;
    int64_t outer = p->outer, chunk = p->chunk;
    pthread_mutex_unlock(&p->mu);
    run_chunks(p, task, ctx, outer, chunk, tid);
    pthread_mutex_lock(&p->mu);
    if (--p->active == 0) pthread_cond_signal(&p->idle);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* The pool with nt - 1 workers (fewer when threads fail to start), or NULL. */
static CpuPool *pool_start(int nt) {
  CpuPool *p = fx_calloc(1, sizeof *p);
  if (!p) return NULL;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->idle, NULL);
  pthread_cond_init(&p->finished, NULL);
  for (int t = 0; t < nt - 1 && t < CPU_MAX_THREADS; t++) {
    p->who[t].pool = p;
    p->who[t].tid = t + 1; /* the calling thread is 0 */
    if (pthread_create(&p->th[t], NULL, worker_main, &p->who[t]) != 0) break;
    p->nworkers++;
  }
  return p;
}

static void pool_stop(CpuPool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->quit = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int t = 0; t < p->nworkers; t++) pthread_join(p->th[t], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->idle);
  pthread_cond_destroy(&p->finished);
  fx_free(p);
}

static void pool_run(CpuPool *p, CpuTask task, void *ctx, int64_t outer, int64_t chunk) {
  pthread_mutex_lock(&p->mu);
  while (p->active > 0) pthread_cond_wait(&p->idle, &p->mu);
  p->task = task;
  p->ctx = ctx;
  p->outer = outer;
  p->chunk = chunk;
  atomic_store(&p->next, 0);
  atomic_store(&p->done, 0);
  p->gen++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  run_chunks(p, task, ctx, outer, chunk, 0);
  /* the chunks the workers claimed: a short spin (they are usually running), then sleep until the
     last one signals (on a loaded machine a worker can wait milliseconds for a core, and a caller
     spinning or yielding meanwhile takes the core from it) */
  for (unsigned spins = 0; spins < 2000 && atomic_load(&p->done) < outer; spins++) {
  }
  if (atomic_load(&p->done) < outer) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->done) < outer) pthread_cond_wait(&p->finished, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
}

int cpu_threads(const CpuBackend *b) { return b->threads < CPU_MAX_THREADS ? b->threads : CPU_MAX_THREADS; }

void *cpu_scratch(CpuBackend *b, int slot, size_t bytes) {
  if (slot < 0 || slot >= CPU_MAX_THREADS + 3) return NULL;
  if (b->scratch_cap[slot] < bytes || !b->scratch[slot]) {
    fx_free(b->scratch[slot]);
    b->scratch_cap[slot] = 0;
    if (!(b->scratch[slot] = fx_malloc(bytes ? bytes : 1))) return NULL;
    b->scratch_cap[slot] = bytes;
  }
  return b->scratch[slot];
}

bool cpu_parallel(CpuBackend *b, CpuTask task, void *ctx, int64_t n, int64_t chunk) {
  if (chunk < 1) chunk = 1;
  if (!b->serial && cpu_threads(b) > 1 && n > chunk) {
    if (!b->pool) b->pool = pool_start(cpu_threads(b));
    if (b->pool && b->pool->nworkers > 0) {
      pool_run(b->pool, task, ctx, n, chunk);
      return true;
    }
  }
  task(ctx, 0, n, 0);
  return false;
}

typedef struct {
  KernelFn fn;
  char *const *bufs;
} KernelTask;

static void kernel_task(void *ctx, int64_t lo, int64_t hi, int tid) {
  (void)tid;
  const KernelTask *t = ctx;
  t->fn(t->bufs, lo, hi);
}

enum { ADAPT_MAX_GAP = 1 << 16 };

static void adapt_mean(double *m, double ns) { *m = *m == 0 ? ns : 0.75 * *m + 0.25 * ns; }

bool cpu_adapt_split(CpuAdapt *a) {
  if (a->serial_ns == 0) return false; /* try each way once, one thread first */
  if (a->split_ns == 0) return true;
  bool best = a->split_ns <= a->serial_ns;
  if (a->launches >= a->next_try) return !best; /* now and then, the other way again */
  return best;
}

void cpu_adapt_record(CpuAdapt *a, bool split, double ns) {
  bool before = a->split_ns != 0 && a->serial_ns != 0 && a->split_ns <= a->serial_ns;
  bool tried = a->split_ns != 0 && a->serial_ns != 0 && a->launches >= a->next_try;
  adapt_mean(split ? &a->split_ns : &a->serial_ns, ns);
  a->launches++;
  if (tried || a->gap == 0) {
    bool after = a->split_ns <= a->serial_ns;
    /* the other way lost again: try it less often; it won: watch closely. A try of the losing way
       costs what it loses, so the tries are at least 50 x (loser / winner - 1) launches apart: they
       cost at most 2% (on a loaded machine a split launch waited milliseconds for a worker, and
       tries every 256 launches of a 6 us kernel doubled CartPole's run) */
    uint32_t gap = a->gap == 0 || after != before ? 4 : a->gap * 2;
    double win = after ? a->split_ns : a->serial_ns, lose = after ? a->serial_ns : a->split_ns;
    if (win > 0 && lose > win && 50.0 * (lose / win - 1.0) > gap) gap = 50.0 * (lose / win - 1.0) < ADAPT_MAX_GAP ? (uint32_t)(50.0 * (lose / win - 1.0)) : ADAPT_MAX_GAP;
    a->gap = gap > ADAPT_MAX_GAP ? ADAPT_MAX_GAP : gap;
    a->next_try = a->launches + a->gap;
  }
}

void cpu_launch_part(CpuBackend *b, CpuKernel *k, int part, char *const *bufs) {
  KernelFn fn = k->fns[part];
  int64_t outer = k->outer[part], count = k->count[part];
  CpuAdapt *a = &k->adapt[part];
  /* threads can pay off for kernels that are large, or that took long on one thread */
  bool big = count >= CPU_PARALLEL_MIN || a->serial_ns >= CPU_PARALLEL_MIN_NS;
  int nt = cpu_threads(b);
  /* a kernel whose first launches were short never splits: it is no longer timed (a clock read
     costs about 20 ns on this kind of VM, as much as a small kernel) */
  if (!big && a->launches >= 8 && a->serial_ns < CPU_PARALLEL_MIN_NS / 4) {
    fn(bufs, 0, outer);
    return;
  }
  double t0 = cpu_now_ns();
  if (nt > 1 && big && outer >= 2 * nt && cpu_adapt_split(a)) {
    /* a few chunks per thread, so that a late or slow one costs little; multiples of 16 (one
     * AVX-512 vector of floats) when the loop is long enough */
    int64_t chunk = outer / (4 * nt);
    if (chunk >= 16) chunk -= chunk % 16;
    KernelTask t = {.fn = fn, .bufs = bufs};
    bool split = cpu_parallel(b, kernel_task, &t, outer, chunk);
    cpu_adapt_record(a, split, cpu_now_ns() - t0);
    return;
  }
  fn(bufs, 0, outer);
  cpu_adapt_record(a, false, cpu_now_ns() - t0);
}

/* Is slot sl free: nothing but the backend holds its memory (its last occupant is dead)? The
 * plan's liveness says when that is; the reference counts make sure of it, so a value still held
 * somewhere is never overwritten (the output then gets fresh memory). Every view of a slot is
 * made here, one at a time: the slot's own reference plus the cached view's. */
static bool slot_free(const CpuBackend *b, int sl) {
  if (sl < 0 || sl >= b->nslots || !b->slots[sl]) return false;
  const RtTensor *v = b->views[sl];
  return v ? v->refs == 1 && b->slots[sl]->refs == 2 : b->slots[sl]->refs == 1;
}

/* The output written into free slot sl, shaped s: the slot's cached view reshaped in place when
 * it has one (no allocation per launch), else a new view. Returns a new reference. */
static RtTensor *slot_output(CpuBackend *b, int sl, const IrShape *s, FxError *err) {
  RtTensor *m = b->slots[sl], *v = b->views[sl];
  int eb = ir_type_bytes(s->type);
  int64_t count = ir_shape_elements(s);
  if (eb <= 0 || count < 0 || (uint64_t)count * (uint64_t)eb > m->bytes) return NULL;
  if (v) {
    v->type = s->type;
    v->rank = s->rank;
    for (int d = 0; d < s->rank; d++) v->dims[d] = s->dims[d];
    v->count = count;
    v->bytes = (size_t)count * (size_t)eb;
    return rt_tensor_ref(v);
  }
  v = rt_tensor_view(s->type, s->rank, s->dims, m, err);
  if (!v) return NULL;
  b->views[sl] = v;
  return rt_tensor_ref(v);
}

/* One output of kernel k: in the memory slot the plan assigned it (for a loop's result, whichever
 * of its two slots the previous iteration did not write), else fresh memory. */
static RtTensor *output_array(CpuBackend *b, const CpuKernel *k, int o, const IrShape *s, FxError *err) {
  if (o < CPU_MAX_SLOTTED && s->type != IR_TUPLE && s->type != IR_TOKEN && !ir_type_is_complex(s->type)) {
    int sl = slot_free(b, k->slot[o]) ? k->slot[o] : slot_free(b, k->slot2[o]) ? k->slot2[o] : -1;
    if (sl >= 0) {
      RtTensor *t = slot_output(b, sl, s, err);
      if (t) {
        if (b->stats) b->stats->slot_outputs++;
        return t;
      }
      fx_error_clear(err); /* does not fit after all: fresh memory */
    }
  }
  return rt_tensor_for_shape_uninit(s, err);
}

static RtTensor *output_tensor(CpuBackend *b, const CpuKernel *k, const IrInstr *i, FxError *err) {
  if (i->shape.type != IR_TUPLE) return output_array(b, k, 0, &i->shape, err);
  int n = i->shape.ntuple;
  RtTensor *stackel[16];
  RtTensor **el = n <= 16 ? stackel : fx_calloc((size_t)n, sizeof *el);
  if (!el) {
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  int made = 0;
  for (; made < n; made++)
    if (!(el[made] = output_array(b, k, made, &i->shape.tuple[made], err))) break;
  RtTensor *r = made == n ? rt_tensor_tuple(el, n, err) : NULL;
  for (int q = 0; q < made; q++) rt_tensor_unref(el[q]);
  if (el != stackel) fx_free(el);
  return r;
}

static void free_slots(CpuBackend *b) {
  for (int q = 0; q < b->nslots; q++) {
    if (b->views) rt_tensor_unref(b->views[q]);
    if (b->slots) rt_tensor_unref(b->slots[q]);
  }
  fx_free(b->slots);
  fx_free(b->views);
  fx_free(b->slot_size);
  b->slots = NULL;
  b->views = NULL;
  b->slot_size = NULL;
  b->nslots = 0;
  b->slots_for = NULL;
  b->slots_total = 0;
}

/* Takes the kernel plan's buffer assignment for m: one allocation per slot, and each generated
 * kernel's outputs pointed at their slots; a loop body's results alternate between two slots
 * across iterations. Buffers that go to the caller (live-out) and outputs of interpreted kernels
 * keep fresh memory. Without a plan, every output is fresh. A slot is a tensor that the views
 * written into it reference, so a result that leaves the run keeps its memory.
 *
 * The assignment and the slots are kept for the next run of the same module (`run --repeat`),
 * as a compiled program keeps its buffer assignment: a slot that something outside the backend
 * still holds is replaced by fresh memory, the others are reused as they are. */
static bool setup_slots(CpuBackend *b, const IrModule *m, FxError *err) {
  if (b->slots_for == m && m) {
    for (int sl = 0; sl < b->nslots; sl++) {
      if (!b->slots[sl] || slot_free(b, sl)) continue;
      rt_tensor_unref(b->views[sl]);
      rt_tensor_unref(b->slots[sl]);
      b->views[sl] = NULL;
      b->slots[sl] = rt_tensor_new_uninit(IR_U8, 1, &b->slot_size[sl], err);
      if (!b->slots[sl]) return false;
    }
    if (b->stats) b->stats->slot_bytes += b->slots_total;
    return true;
  }
  free_slots(b);
  for (size_t q = 0; q < b->kernels.cap; q++)
    if (b->kernels.keys[q])
      for (int o = 0; o < CPU_MAX_SLOTTED; o++)
        ((CpuKernel *)b->kernels.vals[q])->slot[o] = ((CpuKernel *)b->kernels.vals[q])->slot2[o] = -1;
  if (b->interp_only) return true;
  FxError perr = {0};
  KernelPlan *p = plan_build(m, device_default(), &perr);
  if (!p) return true; /* no plan (e.g. out of memory): fresh memory everywhere still works */
  bool ok = true;
  if (p->nslots > 0) {
    b->slots = fx_calloc((size_t)p->nslots, sizeof *b->slots);
    b->views = fx_calloc((size_t)p->nslots, sizeof *b->views);
    b->slot_size = fx_calloc((size_t)p->nslots, sizeof *b->slot_size);
    if (!b->slots || !b->views || !b->slot_size) ok = fx_error_set(err, NULL, 0, 0, "out of memory");
    else b->nslots = p->nslots;
  }
  for (int q = 0; ok && q < p->nbuffers; q++) {
    const PlanBuffer *bf = &p->buffers[q];
    if (bf->live_out && bf->slot2 < 0) continue;
    int o = bf->output < 0 ? 0 : bf->output;
    CpuKernel *k = cpu_kernel(b, bf->producer);
    if (!k || k->how == K_INTERP || o >= CPU_MAX_SLOTTED) continue;
    int want[2] = {bf->slot, bf->slot2};
    for (int w = 0; ok && w < 2; w++) {
      int sl = want[w];
      if (sl < 0 || b->slots[sl]) continue;
      int64_t sz = p->slot_bytes[sl];
      b->slots[sl] = rt_tensor_new_uninit(IR_U8, 1, &sz, err);
      b->slot_size[sl] = sz;
      if (!b->slots[sl]) ok = false;
      else b->slots_total += sz;
    }
    k->slot[o] = bf->slot;
    k->slot2[o] = bf->slot2;
  }
  plan_free(p);
  if (!ok) {
    free_slots(b);
    return false;
  }
  b->slots_for = m;
  if (b->stats) b->stats->slot_bytes += b->slots_total;
  return true;
}


static bool cpu_hook(void *ctx, RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, bool *handled, FxError *err) {
  CpuBackend *b = ctx;
  *handled = false;
  if (i->op == IR_OP_WHILE && !b->interp_only && !b->no_cache && !b->host_loops) return cpu_loop_hook(b, x, i, ops, out, handled, err);
  CpuKernel *k = cpu_kernel(b, i);
  if (!k) return true; /* free ops, and instructions inside fused or called computations */
  double t0 = cpu_now_ns();
  bool ok = true;
  if (k->how == K_INTERP) {
    ok = rt_exec_instr(x, i, ops, out, err);
  } else {
    /* generated kernels and gemm write every element: no need to zero the outputs */
    RtTensor *r = output_tensor(b, k, i, err);
    if (!r) return false;
    if (k->how == K_BLAS || k->how == K_DIRECT) {
      /* split over the threads or not, as the kernel's times say (cpu_adapt_split) */
      bool split = cpu_adapt_split(&k->adapt[0]), done;
      b->serial = !split;
      double ts = cpu_now_ns();
      if (i->op == IR_OP_DOT) {
        CpuGemm gm;
        done = cpu_gemm_of_dot(i, &gm) && cpu_gemm(b, &gm, ops[0], ops[1], r, err);
      } else {
        IrConvDims cd;
        IrWindow cw;
        RtConvMap cm;
        done = cpu_conv_of(i, &cd, &cw, &cm) && cpu_conv(b, &cm, ops[0], ops[1], r, err);
      }
      b->serial = false;
      if (cpu_threads(b) > 1) cpu_adapt_record(&k->adapt[0], split, cpu_now_ns() - ts);
      if (!done) {
        rt_tensor_unref(r);
        if (!err->msg[0]) fx_error_set(err, NULL, 0, 0, "%s: its gemm could not run", i->name);
        return false;
      }
    } else {
      char *stackb[64];
      int nout = r->type == IR_TUPLE ? r->ntuple : 1;
      int nb = i->noperands + nout;
      char **bufs = nb <= 64 ? stackb : fx_calloc((size_t)nb, sizeof *bufs);
      if (!bufs) {
        rt_tensor_unref(r);
        return fx_error_set(err, NULL, 0, 0, "out of memory");
      }
      for (int j = 0; j < i->noperands; j++) bufs[j] = ops[j]->data;
      for (int o = 0; o < nout; o++) bufs[i->noperands + o] = r->type == IR_TUPLE ? r->tuple[o]->data : r->data;
      for (int p = 0; p < k->nparts; p++) cpu_launch_part(b, k, p, bufs);
      if (bufs != stackb) fx_free(bufs);
    }
    *out = r;
  }
  if (!ok) return false;
  *handled = true;
  double dt = cpu_now_ns() - t0;
  RtCounters *c = rt_exec_counters(x);
  int64_t rb = k->rbytes, wb = k->wbytes; /* the kernel plan's figures: one place counts bytes */
  c->launches++;
  c->bytes_read += rb;
  c->bytes_written += wb;
  RtKernelStat *s = cpu_stat_for(b->stats, k, i);
  if (s) {
    s->launches++;
    s->total_ns += dt;
    s->bytes += rb + wb;
    s->native = k->how != K_INTERP;
    s->how = k->how == K_GENERATED ? "generated" : k->how == K_BLAS ? "blas" : k->how == K_DIRECT ? "direct" : "interpreter";
    s->why = k->why[0] ? k->why : NULL;
  }
  return true;
}

/* The entry computation as one call, when it has a driver (cpu_loop.c). */
static bool cpu_comp_hook(void *ctx, RtExec *x, const IrComputation *c, RtTensor **args, int nargs, RtTensor **out,
                          bool *handled, FxError *err) {
  CpuBackend *b = ctx;
  *handled = false;
  if (b->interp_only || b->no_cache || b->host_loops) return true;
  return cpu_entry_hook(b, x, c, args, nargs, out, handled, err);
}

static bool cpu_run(void *vb, const IrModule *m, RtTensor **args, int nargs, const RtOptions *o, RtTensor **out,
                    RtRunStats *stats, FxError *err) {
  CpuBackend *b = vb;
  RtOptions ro = o ? *o : (RtOptions){0};
  /* for_loops: loops with a known trip count on the walker (host loops, the interp backend) run
     their body N times without the condition, as the compiled loops (cpu_loop.c) and the kernel
     plan do */
  RtHooks hooks = {.exec = cpu_hook, .computation = cpu_comp_hook, .ctx = b, .for_loops = true};
  ro.hooks = &hooks;
  ro.count_kernels = false;
  b->stats = stats;
  if (stats)
    for (size_t q = 0; q < b->kernels.cap; q++)
      if (b->kernels.keys[q]) ((CpuKernel *)b->kernels.vals[q])->stat = -1;
  double t0 = cpu_now_ns();
  RtCounters c = {0};
  bool ok = setup_slots(b, m, err);
  if (ok) ok = rt_interp_run(m, args, nargs, &ro, out, &c, err);
  if (stats) {
    stats->counters = c;
    stats->total_ns = cpu_now_ns() - t0;
  }
  b->stats = NULL;
  return ok;
}

/* ---------- lifetime ---------- */

static void *cpu_create_common(bool interp_only, FxError *err) {
  CpuBackend *b = fx_calloc(1, sizeof *b);
  if (!b) {
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  b->interp_only = interp_only;
  FxError why;
  fx_error_clear(&why);
  if (!interp_only && !cpu_resolve_cache_dir(b->cache, sizeof b->cache, &why)) {
    /* no cache, no compiled kernels: run on the interpreter's implementation and say so */
    b->no_cache = true;
    snprintf(b->note, sizeof b->note, "the kernel cache cannot be used (%s%s%.400s): every kernel runs on the interpreter's implementation",
             why.file[0] ? why.file : "", why.file[0] ? ": " : "", why.msg);
  }
  const char *cc = getenv("CC");
  snprintf(b->cc, sizeof b->cc, "%s", cc && *cc ? cc : "cc");
  snprintf(b->flags, sizeof b->flags, "-O3 -march=native");
  b->threads = cpu_default_threads();
  const char *lib = default_vecmath ? vecmath_library() : NULL;
  if (lib) {
    char nb[300];
    emit_vecmath_flags(nb, sizeof nb);
    snprintf(b->vflags, sizeof b->vflags, "-DFX_VECMATH=1 %s %s", nb, lib);
  }
  return b;
}

static void *cpu_create(FxError *err) { return cpu_create_common(false, err); }
static void *interp_create(FxError *err) { return cpu_create_common(true, err); }

static void cpu_destroy(void *vb) {
  CpuBackend *b = vb;
  if (!b) return;
  pool_stop(b->pool);
  cpu_loops_clear(b);
  fx_free(b->drivers);
  for (int q = 0; q < CPU_MAX_THREADS + 3; q++) fx_free(b->scratch[q]);
  free_slots(b);
  for (size_t q = 0; q < b->kernels.cap; q++)
    if (b->kernels.keys[q]) fx_free(b->kernels.vals[q]);
  ptrmap_free(&b->kernels);
  for (int h = 0; h < b->nhandles; h++) dlclose(b->handles[h]);
  fx_free(b->handles);
  emit_buf_free(&b->last_source);
  fx_free(b);
}

void cpu_set_options(void *vb, const CpuOptions *o) {
  CpuBackend *b = vb;
  if (o->cc) snprintf(b->cc, sizeof b->cc, "%s", o->cc);
  if (o->opt) snprintf(b->flags, sizeof b->flags, "%s", o->opt);
  b->host_loops = o->host_loops;
  if (o->threads > 0 && o->threads != b->threads) {
    b->threads = o->threads;
    pool_stop(b->pool); /* the next large launch starts one of the new size */
    b->pool = NULL;
  }
}

const char *cpu_cache_dir(void *vb) { return ((CpuBackend *)vb)->cache; }
const char *cpu_note(void *vb) { return ((CpuBackend *)vb)->note; }
const char *cpu_last_source(void *vb) {
  CpuBackend *b = vb;
  return b->last_source.s ? b->last_source.s : "";
}
void cpu_prepare_counts(void *vb, int *compiled, int *cached, int *kernels, int *interpreted) {
  CpuBackend *b = vb;
  if (compiled) *compiled = b->compiled;
  if (cached) *cached = b->cached;
  if (kernels) *kernels = b->nkernels;
  if (interpreted) *interpreted = b->ninterp;
}

const RtBackend rt_backend_cpu = {
    .name = "cpu", .create = cpu_create, .destroy = cpu_destroy, .prepare = cpu_prepare, .run = cpu_run,
};

/* The interpreter as a backend: every kernel runs on the interpreter's implementation, timed the
 * same way, so `profile` and `compare` work with --backend interp too. */
const RtBackend rt_backend_interp = {
    .name = "interp", .create = interp_create, .destroy = cpu_destroy, .prepare = cpu_prepare, .run = cpu_run,
};

const RtBackend *rt_backend_pick(const char *name, FxError *err) {
  if (strcmp(name, "auto") == 0) {
    const RtBackend *g = rt_backend_lookup("gpu");
    FxError why;
    fx_error_clear(&why);
    return g && rt_gpu_available(&why) ? g : &rt_backend_cpu;
  }
  const RtBackend *b = rt_backend_lookup(name);
  if (!b) fx_error_set(err, NULL, 0, 0, "unknown backend '%s' (interp, cpu, gpu or auto)", name);
  return b;
}

const RtBackend *rt_backend_lookup(const char *name) {
  static const RtBackend *const all[] = {&rt_backend_interp, &rt_backend_cpu, &rt_backend_gpu};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    if (strcmp(name, all[k]->name) == 0) return all[k];
  return NULL;
}
