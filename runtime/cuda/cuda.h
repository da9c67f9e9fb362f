/* cuda.h — the front door of the GPU backend: the CUDA Driver API loaded at run time
 * (cuda_driver.h), NVRTC compiling generated kernels and reading their register and spill counts
 * (cuda_nvrtc.h), the kernels' CUDA source (cuda_kernels.h), cuBLAS/cuDNN/cuRAND (cuda_libs.h) and
 * the backend that runs a module with them (cuda_backend.h). */
#ifndef FXPLAIN_CUDA_H
#define FXPLAIN_CUDA_H

#include "cuda_backend.h"
#include "cuda_driver.h"
#include "cuda_kernels.h"
#include "cuda_libs.h"
#include "cuda_nvrtc.h"

#include "cuda_report.h"

#endif
