/* device.h — device profiles: what the fusion rules and the cost model need to know of a device.
 *
 * Named profiles (rtx2080ti, the paper's card and the default; a100; h100; host). On a machine
 * with a GPU the runtime fills a profile from the live device. */
#ifndef FXPLAIN_DEVICE_H
#define FXPLAIN_DEVICE_H

#include <stdbool.h>

typedef struct {
  char name[64];
  bool is_gpu;
  int sm_count;                 /* [core_count] */
  int max_threads_per_block;    /* [threads_per_block_limit] */
  int shared_mem_per_block;     /* [shared_memory_per_block] bytes, without the opt-in carve-out:
                                   the budget of XLA's FusionFitsInBudget */
  int registers_per_sm;         /* [registers_per_core_limit] */
  int max_registers_per_thread; /* 255 on every architecture since Kepler (not in XLA's config) */
  double dram_gbps;             /* [memory_bandwidth] / 1e9, GB/s */
  double peak_gflops;           /* f32 */
  double launch_us;             /* kernel launch overhead */
  char arch[16];                /* "sm_75"; "" for host */
  /* The rest of what XLA's GpuDeviceInfo says of a GPU (its target config's field in brackets), so
   * a profile can describe the same GPU as XLA's target config (scripts/xla/NAME.txtpb, checked
   * by ctest -L xla). 0 where unknown (the host). */
  double clock_ghz;             /* [clock_rate_ghz] SM clock; peak_gflops = 2 * fpus * SMs * clock */
  int fpus_per_sm;              /* [fpus_per_core] f32 lanes per SM */
  int max_threads_per_sm;       /* [threads_per_core_limit] */
  int registers_per_block;      /* [registers_per_block_limit] */
  int shared_mem_per_sm;        /* [shared_memory_per_core] bytes */
  int shared_mem_per_block_optin; /* [shared_memory_per_block_optin] bytes, with the opt-in carve-out */
  int l2_cache_bytes;           /* [l2_cache_size] */
  int l1_cache_bytes_per_sm;    /* XLA's DeviceDescription::l1_cache_size_per_SM(): 2 KiB on every
                                   NVIDIA GPU (what its cost model assumes stays in L1), not the
                                   hardware's L1 */
} DeviceProfile;

const DeviceProfile *device_lookup(const char *name);
int device_count(void);
const DeviceProfile *device_at(int i);
const DeviceProfile *device_default(void); /* rtx2080ti */

#endif
