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
  int sm_count;
  int max_threads_per_block;
  int shared_mem_per_block;     /* bytes */
  int registers_per_sm;
  int max_registers_per_thread;
  double dram_gbps;             /* GB/s */
  double peak_gflops;           /* f32 */
  double launch_us;             /* kernel launch overhead */
  char arch[16];                /* "sm_75"; "" for host */
} DeviceProfile;

const DeviceProfile *device_lookup(const char *name);
int device_count(void);
const DeviceProfile *device_at(int i);
const DeviceProfile *device_default(void); /* rtx2080ti */

#endif
