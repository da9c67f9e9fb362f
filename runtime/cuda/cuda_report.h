/* cuda_report.h — a stage's kernels as CUDA, reported as plain records (compiler/plan/kernel_report.h):
 * the source NVRTC compiles, and what ptxas says of each kernel with its block size and occupancy
 * on a device profile. Used by `kernels --source` and `kernels --resources`. */
#ifndef FXPLAIN_CUDA_REPORT_H
#define FXPLAIN_CUDA_REPORT_H

#include "../../compiler/plan/plan.h"
#include "../../compiler/ir/ir.h"

/* The CUDA of m's kernels (stage `stage`): the whole unit, each rng kernel's own unit and each
 * kernel not generated; or, with only, that kernel alone (its part of the unit, or how it runs).
 * False with err filled when the unit cannot be built or only is not a kernel of the stage. Free
 * with kernel_report_free. */
bool cuda_report_source(const IrModule *m, int stage, const char *only, KernelReport *out, FxError *err);
/* Every kernel of m compiled with NVRTC for `set gpu_arch`, else d's architecture: one row per
 * part, with ptxas' figures, the block it launches with and its occupancy on d. False with err
 * filled (no NVRTC, a kernel that does not compile). */
bool cuda_report_resources(const IrModule *m, int stage, const DeviceProfile *d, KernelReport *out, FxError *err);

#endif
