/* device.c — the named device profiles the fusion rules and the cost model read.
 *
 * Figures are the vendors' published numbers (boost clocks, FP32 non-tensor peak, default
 * shared memory per block without the opt-in carve-out, which is what XLA's fusion limits use):
 *   rtx2080ti  Turing TU102, the paper's card: 68 SMs, 4352 cores at 1545 MHz -> 13.45 TFLOP/s,
 *              352-bit GDDR6 at 14 Gbit/s -> 616 GB/s.
 *   a100       A100-SXM4-40GB: 108 SMs, 19.5 TFLOP/s FP32, HBM2 1555 GB/s.
 *   h100       H100-SXM5-80GB: 132 SMs, 66.9 TFLOP/s FP32, HBM3 3350 GB/s.
 *   host       a typical 8-core x86-64 desktop: AVX2 FMA, 2 x 8 lanes x 2 flops x 3.0 GHz x 8 cores
 *              -> 768 GFLOP/s; dual-channel DDR4-3200 -> 51.2 GB/s. "Kernels" there are parallel
 *              loops; the launch overhead is a thread-pool dispatch. The per-block limits are kept
 *              at GPU values so the fusion rules behave the same on every profile.
 * Launch overhead: the host-side cost of one kernel launch measured with empty kernels (about
 * 5 us on Turing with CUDA 10-era drivers, 3-4 us on Ampere and Hopper). */
#include <string.h>
#include <strings.h>

#include "device.h"

static const DeviceProfile profiles[] = {
    {.name = "rtx2080ti",
     .is_gpu = true,
     .sm_count = 68,
     .max_threads_per_block = 1024,
     .shared_mem_per_block = 48 * 1024,
     .registers_per_sm = 65536,
     .max_registers_per_thread = 255,
     .dram_gbps = 616.0,
     .peak_gflops = 13450.0,
     .launch_us = 5.0,
     .arch = "sm_75"},
    {.name = "a100",
     .is_gpu = true,
     .sm_count = 108,
     .max_threads_per_block = 1024,
     .shared_mem_per_block = 48 * 1024,
     .registers_per_sm = 65536,
     .max_registers_per_thread = 255,
     .dram_gbps = 1555.0,
     .peak_gflops = 19500.0,
     .launch_us = 4.0,
     .arch = "sm_80"},
    {.name = "h100",
     .is_gpu = true,
     .sm_count = 132,
     .max_threads_per_block = 1024,
     .shared_mem_per_block = 48 * 1024,
     .registers_per_sm = 65536,
     .max_registers_per_thread = 255,
     .dram_gbps = 3350.0,
     .peak_gflops = 66900.0,
     .launch_us = 3.0,
     .arch = "sm_90"},
    {.name = "host",
     .is_gpu = false,
     .sm_count = 8,
     .max_threads_per_block = 1024,
     .shared_mem_per_block = 48 * 1024,
     .registers_per_sm = 65536,
     .max_registers_per_thread = 255,
     .dram_gbps = 51.2,
     .peak_gflops = 768.0,
     .launch_us = 1.0,
     .arch = ""},
};

const DeviceProfile *device_lookup(const char *name) {
  if (!name) return NULL;
  for (size_t k = 0; k < sizeof profiles / sizeof profiles[0]; k++)
    if (strcasecmp(profiles[k].name, name) == 0) return &profiles[k];
  return NULL;
}

int device_count(void) { return (int)(sizeof profiles / sizeof profiles[0]); }
const DeviceProfile *device_at(int i) { return i >= 0 && i < device_count() ? &profiles[i] : NULL; }
const DeviceProfile *device_default(void) { return &profiles[0]; }
