/* kernel_report.h — what a backend says about a stage's kernels, as plain records: the source it
 * generated for them and what its compiler reports of each (registers, spills, shared memory,
 * stack, the block it launches with, occupancy). runtime/ fills them (cuda_report.c: CUDA through
 * NVRTC) and explain/ prints them (format_kernels.c), as passes report PassDecision records that
 * explain/ files: the records are here so that neither of the two needs the other. */
#ifndef FXPLAIN_KERNEL_REPORT_H
#define FXPLAIN_KERNEL_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"

/* One kernel (or one part of a generated kernel that launches in parts). Strings live in the
 * report's arena. */
typedef struct {
  const char *kernel;   /* the kernel's instruction */
  const char *label;    /* its name as the source spells it (sanitized) */
  const char *runs_as;  /* "generated", "rng", "cuBLAS", "cuDNN", "host" */
  bool generated;       /* the emitter's body in the unit */
  bool rng;             /* cuRAND's kernel, its own unit (source below; launched as symbol) */
  bool host;            /* not generated: runs on the host's implementation */
  const char *why;      /* not generated: why ("" when nothing to say) */
  const char *source;   /* rng: its unit; one kernel asked for: its part of the unit; else NULL */
  int64_t threads;      /* rng: threads launched */
  /* Resources (KernelResourceReport only). */
  int part, nparts;
  const char *symbol;
  bool compiled;        /* the figures below are the compiler's */
  int registers, spill_stores, spill_loads, shared_bytes, stack_bytes;
  int block;            /* threads per block it launches with */
  double occupancy;
  const char *occupancy_limit;
} KernelRecord;

/* `kernels --source [NAME]` and `kernels --resources`: every kernel of the stage (or the one
 * asked for), in the order the unit holds them. */
typedef struct {
  Arena arena;
  int stage;
  const char *unit;      /* the whole translation unit (all kernels asked for) */
  const char *arch;      /* resources: the architecture compiled for */
  const char *compiler;  /* resources: the compiler's version */
  const char *device;    /* resources: the device profile occupancy is for */
  int nkernels;          /* kernels of the stage */
  KernelRecord *rows;
  int nrows;
} KernelReport;

static inline void kernel_report_free(KernelReport *r) { arena_free(&r->arena); }

#endif
