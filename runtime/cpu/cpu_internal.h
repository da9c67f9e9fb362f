/* cpu_internal.h — what the CPU backend's files share: the backend's state, its kernels, the
 * launcher (threads), and the compiled while loops (cpu_loop.c). Private to runtime/cpu/.
 *
 * cpu.c prepares a stage (every kernel generated into one C unit, compiled, loaded), runs it (the
 * interpreter's walker with a hook that takes over every kernel) and launches kernels over the
 * thread pool; cpu_loop.c plans the while loops whose kernels are all generated, writes a C
 * driver for each into the same unit, and runs them; cpu_blas.c runs dots and convolutions on
 * BLAS. */
#ifndef FXPLAIN_CPU_INTERNAL_H
#define FXPLAIN_CPU_INTERNAL_H

#include "../../compiler/ir/ir.h"
#include "../backend.h"
#include "../emit.h"
#include "../interp/interp_internal.h"

typedef void (*KernelFn)(char *const *bufs, int64_t lo, int64_t hi);

/* How a kernel runs: generated C, a BLAS call (gemm, im2col + gemm), a direct convolution
 * (cpu_blas.c's depthwise loop), or the interpreter's implementation. */
typedef enum { K_GENERATED, K_BLAS, K_DIRECT, K_INTERP } KernelHow;

#define CPU_MAX_SLOTTED 8 /* outputs of one kernel that can live in plan slots */

/* Whether a kernel's launches split over the threads, learnt from their times: on a shared
 * machine a worker that the scheduler runs late makes a split launch slower than one thread, and
 * on a quiet one the split wins. The launcher tries both ways (one thread first), then takes the
 * faster by the mean of recent launches, trying the other way again now and then (less often each
 * time it loses, and the more it loses by). */
typedef struct {
  double serial_ns, split_ns; /* moving means of a launch's wall time each way (0: not tried) */
  uint32_t launches, next_try, gap;
} CpuAdapt;

typedef struct {
  const IrInstr *instr;
  KernelHow how;
  char sym[40];         /* fx_<hash> */
  int nparts;
  KernelFn fns[EMIT_MAX_PARTS];
  int64_t outer[EMIT_MAX_PARTS], count[EMIT_MAX_PARTS];
  CpuAdapt adapt[EMIT_MAX_PARTS]; /* per part (a BLAS call: the first): threads or not */
  int stat;             /* index into the run's stats, -1 before the first launch */
  char why[200];        /* why it is interpreted */
  int64_t rbytes, wbytes; /* per launch, from the kernel plan (plan_kernel_bytes) */
  int slot[CPU_MAX_SLOTTED];  /* per output: the plan's memory slot during a run; -1: fresh memory */
  int slot2[CPU_MAX_SLOTTED]; /* a loop body's result: the slot it alternates with; -1: none */
  void (*ip)(char *const *bufs); /* the in-place variant (emit_inplace), or NULL */
  int ip_input;                  /* the input it updates, or -1 (no in-place variant) */
  int unit;                      /* the prepare whose unit holds its code (CpuBackend.unit) */
} CpuKernel;

typedef struct CpuPool CpuPool;

typedef struct {
  char cache[512];
  char cc[128], flags[256];
  char vflags[512]; /* vector math: -DFX_VECMATH=1, the -fno-builtin-* flags and the library; "" for libm */
  int threads;
  CpuPool *pool; /* the workers large kernels split over; started at the first such launch */
  bool serial;    /* cpu_parallel runs on the calling thread (the launch at hand was chosen serial) */
  /* kernels keyed by instruction */
  PtrMap kernels; /* IrInstr* -> CpuKernel* */
  void **handles;
  int nhandles, caphandles;
  EmitBuf last_source;
  int compiled, cached, nkernels, ninterp;
  int unit;             /* prepares so far: the number of the unit being generated */
  /* during a run */
  RtRunStats *stats;
  bool interp_only;
  bool no_cache;        /* the cache directory is unusable: every kernel runs on the interpreter */
  char note[700];       /* why kernels fell back to the interpreter (cpu_note), or "" */
  RtTensor **slots;     /* the run's buffer slots (from the kernel plan's assignment); NULL: unused */
  RtTensor **views;     /* per slot: the view last written into it (reused while nobody else holds it) */
  int64_t *slot_size;   /* per slot: its bytes */
  int nslots;
  const IrModule *slots_for; /* the module the slots and the kernels' slot numbers are for (kept
                                from run to run of it; NULL: none) */
  int64_t slots_total;  /* the slots' bytes */
  bool host_loops;      /* CpuOptions.host_loops */
  PtrMap loops;         /* while IrInstr* -> CpuLoop* (planned at prepare, or at its first run), or the
                           marker of a loop that runs on the host; an entry IrComputation* -> its plan */
  uint64_t *drivers;    /* hashes of the drivers in the unit being generated (each written once) */
  int ndrivers, capdrivers;
  void *scratch[CPU_MAX_THREADS + 3]; /* cpu_scratch's buffers, kept from call to call */
  size_t scratch_cap[CPU_MAX_THREADS + 3];
} CpuBackend;

/* cpu.c */
CpuKernel *cpu_kernel(CpuBackend *b, const IrInstr *i);
/* A piece of parallel work: [lo, hi) of its range, on thread tid (0: the calling thread; below
 * cpu_threads(b)), so that a task can use scratch memory its caller made per thread. */
typedef void (*CpuTask)(void *ctx, int64_t lo, int64_t hi, int tid);
/* Runs task over [0, n) in chunks of `chunk` claimed one at a time by the calling thread and the
 * pool's workers (started at the first use; `set threads`), or all on the calling thread when
 * there is one thread or one chunk. Returns whether the pool took part. */
bool cpu_parallel(CpuBackend *b, CpuTask task, void *ctx, int64_t n, int64_t chunk);
int cpu_threads(const CpuBackend *b);
/* Scratch memory of at least `bytes`, kept by the backend from call to call (a fresh allocation of
 * a few hundred KB each time cost page faults on every run): slot t < CPU_MAX_THREADS is thread
 * t's, CPU_SCRATCH_A.. are the caller's. Contents are not kept. NULL when out of memory. */
enum { CPU_SCRATCH_A = CPU_MAX_THREADS, CPU_SCRATCH_C, CPU_SCRATCH_K };
void *cpu_scratch(CpuBackend *b, int slot, size_t bytes);
/* Whether the next launch whose times a tracks should split over the threads; and its time. */
bool cpu_adapt_split(CpuAdapt *a);
void cpu_adapt_record(CpuAdapt *a, bool split, double ns);
/* Launches part `part` of generated kernel k over bufs (inputs then outputs): on the calling
 * thread, or split over the pool when it is large or was slow on one thread. */
void cpu_launch_part(CpuBackend *b, CpuKernel *k, int part, char *const *bufs);
/* The statistics row of kernel (or loop) i in s, made at its first use; NULL without stats. */
RtKernelStat *cpu_stat_for(RtRunStats *s, CpuKernel *k, const IrInstr *i);
double cpu_now_ns(void);

/* cpu_blas.c: dots and convolutions. Each takes its operands and a description rather than an
 * instruction, so that a custom call that is a gemm or a convolution can run through them too.
 *
 * A gemm: for q < batch, r[q] = op(a[q]) x op(b[q]), row-major m x k by k x n, lhs stored [k, m]
 * when trans_a, rhs stored [n, k] when trans_b; f32 on sgemm, f64 on dgemm, bf16 and f16 in double
 * (summed in double, rounded once, as the interpreter). Groups: with ga > 1 the lhs of each batch
 * is [ga][k][m] (free dims on both sides of its contracting dim), with gb > 1 the rhs is
 * [gb][k][n], and the result [ga][m][gb][n]: a product per (lhs group, rhs group). 0 or 1: none. */
typedef struct {
  int64_t batch, m, n, k;
  bool trans_a, trans_b;
  int64_t ga, gb;
} CpuGemm;
/* Dot i as a gemm (batch dims leading on both sides, one contracting dim anywhere after them, the
 * free dims before and after it collapsed), when its dims and types allow one. */
bool cpu_gemm_of_dot(const IrInstr *i, CpuGemm *g);
bool cpu_gemm_types_ok(IrType a, IrType b, IrType r);
/* r = a x bt as g says, split over the backend's threads when large. */
bool cpu_gemm(CpuBackend *b, const CpuGemm *g, const RtTensor *a, const RtTensor *bt, RtTensor *r, FxError *err);
/* BLAS's own threads off (OpenBLAS's, when it is OpenBLAS): the backend's pool splits the work. */
void cpu_blas_single_threaded(void);
/* Convolution i's description (dims and window parsed into d and w, which c points to). */
bool cpu_conv_of(const IrInstr *i, IrConvDims *d, IrWindow *w, RtConvMap *c);
/* Whether cpu_conv computes a convolution of these shapes (float types, one batch group), and
 * whether it does so directly (depthwise: one input and one output feature per group, features
 * contiguous) rather than as im2col + gemm. */
bool cpu_conv_ok(const RtConvMap *c, const IrShape *in, const IrShape *k, const IrShape *r);
bool cpu_conv_is_depthwise(const RtConvMap *c, const IrShape *in, const IrShape *k, const IrShape *r);
bool cpu_conv(CpuBackend *b, const RtConvMap *c, const RtTensor *in, const RtTensor *k, RtTensor *r, FxError *err);

/* cpu_loop.c: compiled while loops.
 *
 * cpu_loops_plan (prepare, after the kernels are generated into `unit`) plans every while loop of
 * the computations comps[0..n) whose condition and body are generated kernels and free ops, and
 * appends to unit one C driver per outermost such loop; cpu_loops_bind (after the unit is
 * loaded) finds the drivers in it. cpu_loops_clear forgets every plan. cpu_loop_hook runs while
 * loop w from its state ops[0] into *out when it has a plan (*handled), else leaves it to the
 * host (*handled false). */
bool cpu_loops_plan(CpuBackend *b, const IrComputation *const *comps, int n, EmitBuf *unit, FxError *err);
/* The same for a module's entry computation as a whole (cpu_loop.c, "the entry computation"): its
 * plan and driver at prepare, and its run (*handled) when the walker is about to walk it. */
bool cpu_entry_plan(CpuBackend *b, const IrComputation *entry, EmitBuf *unit, FxError *err);
bool cpu_entry_hook(CpuBackend *b, RtExec *x, const IrComputation *c, RtTensor **args, int nargs, RtTensor **out,
                    bool *handled, FxError *err);
void cpu_loops_bind(CpuBackend *b, void *handle);
void cpu_loops_clear(CpuBackend *b);
bool cpu_loop_hook(CpuBackend *b, RtExec *x, const IrInstr *w, RtTensor **ops, RtTensor **out, bool *handled, FxError *err);

#endif
