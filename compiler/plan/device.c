/* device.c — the named device profiles the fusion rules and the cost model read.
 *
 * Figures are the vendors' published numbers (boost clocks, FP32 non-tensor peak, default
 * shared memory per block without the opt-in carve-out, which is what XLA's fusion limits use):
 *   rtx2080ti  Turing TU102, the paper's card: 68 SMs, 4352 cores at 1545 MHz -> 13.45 TFLOP/s,
 *              352-bit GDDR6 at 14 Gbit/s -> 616 GB/s, 5.5 MiB L2, 64 KiB shared memory per SM.
 *   a100       A100-SXM4-40GB: 108 SMs, 19.5 TFLOP/s FP32, HBM2 1555 GB/s.
 *   h100       H100-SXM5-80GB: 132 SMs, 66.9 TFLOP/s FP32, HBM3 3350 GB/s.
 * a100 and h100 are exactly the GPUs of XLA's own target configs scripts/xla/a100.txtpb and
 * h100.txtpb (XLA's specs a100_sxm_40 and h100_sxm), with which real XLA:GPU makes the references
 * (scripts/xla_reference.py): every figure XLA has is XLA's (bandwidth 1555.2 and 3352.32 GB/s;
 * peak = 2 x fpus_per_core x core_count x clock_rate_ghz), so fxplain's cost model and XLA's
 * price a kernel on the same numbers. ctest xla_driver.profiles_match_target_configs checks it.
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
     .arch = "sm_75",
     .clock_ghz = 1.545,
     .fpus_per_sm = 64,
     .max_threads_per_sm = 1024,
     .registers_per_block = 65536,
     .shared_mem_per_sm = 64 * 1024,
     .shared_mem_per_block_optin = 64 * 1024,
     .l2_cache_bytes = 5632 * 1024,
     .l1_cache_bytes_per_sm = 2 * 1024},
    {.name = "a100",
     .is_gpu = true,
     .sm_count = 108,
     .max_threads_per_block = 1024,
     .shared_mem_per_block = 48 * 1024,
     .registers_per_sm = 65536,
     .max_registers_per_thread = 255,
     .dram_gbps = 1555.2,
     .peak_gflops = 19491.84,
     .launch_us = 4.0,
     .arch = "sm_80",
     .clock_ghz = 1.41,
     .fpus_per_sm = 64,
     .max_threads_per_sm = 2048,
     .registers_per_block = 65536,
     .shared_mem_per_sm = 167936,
     .shared_mem_per_block_optin = 166912,
     .l2_cache_bytes = 40 * 1024 * 1024,
     .l1_cache_bytes_per_sm = 2 * 1024},
    {.name = "h100",
     .is_gpu = true,
     .sm_count = 132,
     .max_threads_per_block = 1024,
     .shared_mem_per_block = 48 * 1024,
     .registers_per_sm = 65536,
     .max_registers_per_thread = 255,
     .dram_gbps = 3352.32,
     .peak_gflops = 66908.16,
     .launch_us = 3.0,
     .arch = "sm_90",
     .clock_ghz = 1.98,
     .fpus_per_sm = 128,
     .max_threads_per_sm = 2048,
     .registers_per_block = 65536,
     .shared_mem_per_sm = 233472,
     .shared_mem_per_block_optin = 232448,
     .l2_cache_bytes = 50 * 1024 * 1024,
     .l1_cache_bytes_per_sm = 2 * 1024},
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
