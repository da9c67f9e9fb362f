/* test_cost_model.c — fxplain's GpuPerformanceModel against XLA's own numbers. Each expected value
 * below is what jaxlib 0.10.2's XLA:GPU logged for the same instruction (TF_CPP_VMODULE=
 * gpu_performance_model=8, deviceless, scripts/xla/h100.txtpb; scripts/xla_costs.py collects
 * them): ResNet-50's pre-fusion module for the transpose, reductions, broadcast and reduce-window,
 * and a module of two concatenates. Times are XLA's absl::Durations (quarters of a nanosecond). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "device.h"
#include "fusion_analysis.h"
#include "hlo.h"

static const char *MODULE =
    "HloModule costs\n"
    "\n"
    "add_f32 {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n"
    "}\n"
    "\n"
    "max_f32 {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT m = f32[] maximum(a, b)\n"
    "}\n"
    "\n"
    "ENTRY main {\n"
    "  w = f32[7,7,3,64]{3,2,1,0} parameter(0)\n"
    "  logits = f32[2048,1000]{1,0} parameter(1)\n"
    "  pooled = f32[49,2048]{1,0} parameter(2)\n"
    "  scale = f32[64]{0} parameter(3)\n"
    "  padded = f32[1,114,114,64]{3,2,1,0} parameter(4)\n"
    "  zero = f32[] constant(0)\n"
    "  ninf = f32[] constant(-inf)\n"
    "  transpose.5 = f32[64,7,7,3]{3,2,1,0} transpose(w), dimensions={3,0,1,2}\n"
    "  reduce.10 = f32[1000]{0} reduce(logits, zero), dimensions={0}, to_apply=add_f32\n"
    "  reduce.4 = f32[2048]{0} reduce(pooled, zero), dimensions={0}, to_apply=add_f32\n"
    "  broadcast.322 = f32[1,112,112,64]{3,2,1,0} broadcast(scale), dimensions={3}\n"
    "  pool = f32[1,56,56,64]{3,2,1,0} reduce-window(padded, ninf), window={size=1x3x3x1 stride=1x2x2x1}, "
    "to_apply=max_f32\n"
    "  a = f32[4,1,1,31,256]{4,3,2,1,0} parameter(5)\n"
    "  b = f32[4,1,1,31,256]{4,3,2,1,0} parameter(6)\n"
    "  c1 = f32[4,1,2,31,256]{4,3,2,1,0} concatenate(a, b), dimensions={2}\n"
    "  ROOT t = (f32[64,7,7,3]{3,2,1,0}, f32[1000]{0}, f32[2048]{0}, f32[1,112,112,64]{3,2,1,0}, "
    "f32[1,56,56,64]{3,2,1,0}, f32[4,1,2,31,256]{4,3,2,1,0}) tuple(transpose.5, reduce.10, reduce.4, broadcast.322, "
    "pool, c1)\n"
    "}\n";

typedef struct {
  const char *name;
  double flops, bytes_read, bytes_written;
  long long blocks;
  double read_us, write_us, compute_us, exec_us;
} XlaLogged;

/* From XLA's log (gpu_performance_model.cc: "Runtime data for HLO: NAME"). */
static const XlaLogged logged[] = {
    {"transpose.5", 0, 37632, 37632, 10, 0.0595, 0.01125, 0, 0.07075},
    {"reduce.10", 14329000, 8196000, 4000, 16, 8.08475, 0.00125, 1.76675, 8.17425},
    {"reduce.4", 688128, 409600, 8192, 32, 0.202, 0.0025, 0.0425, 0.2065},
    {"broadcast.322", 0, 3211264, 3211264, 1568, 0.048, 0.958, 0, 1.006},
    {"pool", 4816896, 7225348, 802816, 1568, 1.45775, 0.2395, 0.072, 1.70075},
    {"c1", 25395200, 253952, 253952, 248, 0.076, 0.07575, 0.3795, 0.387},
};

TEST(estimates_equal_xlas_log_on_h100) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(MODULE, strlen(MODULE), "costs.hlo", &err);
  CHECK(m != NULL);
  if (!m) return;
  const DeviceProfile *h100 = device_lookup("h100");
  CHECK(h100 != NULL);
  for (size_t k = 0; k < sizeof logged / sizeof logged[0]; k++) {
    const XlaLogged *x = &logged[k];
    IrInstr *i = ir_module_find_instr(m, x->name);
    CHECK(i != NULL);
    if (!i) continue;
    PerfEstimate e;
    perf_estimate(h100, i, &e);
    CHECK_NEAR(e.flops, x->flops, 0.5);
    CHECK_NEAR(e.bytes_read, x->bytes_read, 4.5); /* XLA's float sums */
    CHECK_NEAR(e.bytes_written, x->bytes_written, 0.5);
    CHECK(e.blocks == x->blocks);
    CHECK_NEAR(e.read_us, x->read_us, 0.00026);
    CHECK_NEAR(e.write_us, x->write_us, 0.00026);
    CHECK_NEAR(e.compute_us, x->compute_us, 0.00026);
    CHECK_NEAR(e.exec_us, x->exec_us, 0.00026);
  }
  ir_module_free(m);
}

TEST(a100_has_no_measured_op_profile) {
  /* XLA's A100 log counts 3 flops an element for an add (reduce.4: 294912 = 3 x (100352 - 2048))
   * where its H100 log counts 7. */
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(MODULE, strlen(MODULE), "costs.hlo", &err);
  CHECK(m != NULL);
  if (!m) return;
  IrInstr *r = ir_module_find_instr(m, "reduce.4");
  PerfEstimate e;
  perf_estimate(device_lookup("a100"), r, &e);
  CHECK_NEAR(e.flops, 294912, 0.5);
  perf_estimate(device_lookup("h100"), r, &e);
  CHECK_NEAR(e.flops, 688128, 0.5);
  ir_module_free(m);
}

int main(void) {
  RUN(estimates_equal_xlas_log_on_h100);
  RUN(a100_has_no_measured_op_profile);
  return check_summary();
}
