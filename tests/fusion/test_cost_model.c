/* test_cost_model.c — fxplain's GpuPerformanceModel against XLA's own numbers. Each expected value
 * below is what jaxlib 0.10.2's XLA:GPU logged for the same instruction (TF_CPP_VMODULE=
 * gpu_performance_model=8, deviceless, scripts/xla/h100.txtpb; scripts/xla_costs.py collects
 * them): ResNet-50's pre-fusion module for the transpose, reductions, broadcast and reduce-window,
 * and a module of two concatenates. Times are XLA's absl::Durations (quarters of a nanosecond). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "../../compiler/plan/plan.h"
#include "../../compiler/fusion/fusion.h"
#include "../../compiler/hlo/hlo.h"

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

/* A split-K reduce (f32[K,11,N] -> bf16[11,N], a kLoop fusion) feeding the RMS normalization the
 * softmax rewriter made a Triton fusion, as XLA's priority-fusion received it for the module
 * reduce(p0, dims={0}) -> convert -> x * rsqrt(mean(x^2)) (jaxlib 0.10.2, deviceless H100). */
static IrModule *split_k_module(int k, int n) {
  char text[4096];
  snprintf(text, sizeof text,
           "HloModule splitk\n"
           "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
           "reduce_convert {\n"
           "  p = f32[%d,11,%d]{2,1,0} parameter(0)\n  z = f32[] constant(0)\n"
           "  r0 = f32[11,%d]{1,0} reduce(p, z), dimensions={0}, to_apply=add_f32\n"
           "  ROOT c0 = bf16[11,%d]{1,0} convert(r0)\n}\n"
           "norm {\n"
           "  x = bf16[11,%d]{1,0} parameter(0)\n"
           "  sq = bf16[11,%d]{1,0} multiply(x, x)\n  sqf = f32[11,%d]{1,0} convert(sq)\n  z = f32[] constant(0)\n"
           "  r1 = f32[11]{0} reduce(sqf, z), dimensions={1}, to_apply=add_f32\n"
           "  k = f32[] constant(0.000868055562)\n  kb = f32[11]{0} broadcast(k), dimensions={}\n"
           "  m = f32[11]{0} multiply(r1, kb)\n  rs = f32[11]{0} rsqrt(m)\n  rsb = bf16[11]{0} convert(rs)\n"
           "  b = bf16[11,%d]{1,0} broadcast(rsb), dimensions={0}\n"
           "  ROOT out = bf16[11,%d]{1,0} multiply(x, b)\n}\n"
           "ENTRY main {\n"
           "  p0 = f32[%d,11,%d]{2,1,0} parameter(0)\n"
           "  fusion.2 = bf16[11,%d]{1,0} fusion(p0), kind=kLoop, calls=reduce_convert\n"
           "  ROOT triton_softmax.1 = bf16[11,%d]{1,0} fusion(fusion.2), kind=kCustom, calls=norm, "
           "backend_config={\"fusion_backend_config\":{\"kind\":\"__triton\",\"block_level_fusion_config\":"
           "{\"num_warps\":\"4\",\"output_tiles\":[{\"sizes\":[\"1\",\"128\"]}]}}}\n"
           "}\n",
           k, n, n, n, n, n, n, n, n, k, n, n, n);
  FxError err;
  fx_error_clear(&err);
  return hlo_parse(text, strlen(text), "splitk.hlo", &err);
}

/* TryFindTopKBestTilingsForFusion keeps a tiling only when every tile, padded to powers of two,
 * fits in 0.4 x 65536 registers; the reduce's operand tile is K x 1 x N (its reduced dimension
 * whole, the normalization's rows whole). XLA's verdicts on fusion.2 into triton_softmax.1:
 * K=16, N=1152 (16 x 2048 padded) and N=1025: "No valid tilings found"; K=8, N=1152 and K=16,
 * N=1024 or 512 fuse, with us_fused 1.60225, 2.0535 and 1.52675 (one launch, 1 us, and the best
 * tiling's time). */
TEST(triton_tiling_refuses_what_does_not_fit_in_registers) {
  const DeviceProfile *h100 = device_lookup("h100");
  static const struct {
    int k, n, verdict;
    double us_fused;
  } cases[] = {
      {16, 1152, 0, 0}, {16, 1025, 0, 0}, {12, 2048, 0, 0}, {8, 1152, 1, 1.60225}, {16, 1024, 1, 2.0535},
      {16, 512, 1, 1.52675},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    IrModule *m = split_k_module(cases[c].k, cases[c].n);
    CHECK(m != NULL);
    if (!m) continue;
    IrInstr *p = ir_module_find_instr(m, "fusion.2"), *t = ir_module_find_instr(m, "triton_softmax.1");
    CHECK(p && t && fusion_is_generic_triton(t));
    TritonTiling tt;
    int v = fusion_triton_tiling(h100, p, t, NULL, &tt);
    CHECK(v == cases[c].verdict);
    if (v == 0) CHECK(tt.too_big != NULL && tt.too_big_elems == 16 * 2048);
    /* The pair's fused time is the best tiling's (within 10%, the replay's tolerance). */
    if (v == 1) CHECK_NEAR(PERF_LAUNCH_US + perf_fused_exec_us(h100, p, t), cases[c].us_fused, 0.1 * cases[c].us_fused);
    ir_module_free(m);
  }
}

/* TritonEmitterConstraints::DeriveCustomConstraints: a tile along a concatenated dimension,
 * padded to a power of two, must divide every operand's size there (here 40 and 24). */
TEST(triton_tiling_concatenate_divides_its_operands) {
  const char *text =
      "HloModule cat\n"
      "tri {\n  a = f32[24,40]{1,0} parameter(0)\n  b = f32[24,24]{1,0} parameter(1)\n"
      "  ROOT c = f32[24,64]{1,0} concatenate(a, b), dimensions={1}\n}\n"
      "ENTRY main {\n  a = f32[24,40]{1,0} parameter(0)\n  b = f32[24,24]{1,0} parameter(1)\n"
      "  ROOT t = f32[24,64]{1,0} fusion(a, b), kind=kCustom, calls=tri, "
      "backend_config={\"fusion_backend_config\":{\"kind\":\"__triton\"}}\n}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "cat.hlo", &err);
  CHECK(m != NULL);
  if (!m) return;
  IrInstr *t = ir_module_find_instr(m, "t");
  TritonTiling tt;
  /* Tiles of 1, 2, 4 and 8 divide 40 and 24; 16, 32 and 64 do not. */
  CHECK(fusion_triton_tiling(device_lookup("h100"), t, NULL, NULL, &tt) == 1);
  int64_t ok[2] = {1, 8}, bad[2] = {1, 16};
  CHECK(fusion_triton_tiling(device_lookup("h100"), t, NULL, ok, &tt) == 1);
  CHECK(fusion_triton_tiling(device_lookup("h100"), t, NULL, bad, &tt) == 0);
  ir_module_free(m);
}

/* An RMS norm over rows of 512 as the Triton fusion XLA's softmax rewriter made, and a consumer
 * fusion (CONSUMER: its parameter p0 is the norm). */
static IrModule *norm_and_consumer(int rows, const char *consumer_params, const char *consumer, const char *operands,
                                   const char *out) {
  char text[4096];
  snprintf(text, sizeof text,
           "HloModule idx\n"
           "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
           "norm {\n  x = f32[%d,512]{1,0} parameter(0)\n  sq = f32[%d,512]{1,0} multiply(x, x)\n"
           "  z = f32[] constant(0)\n  r1 = f32[%d]{0} reduce(sq, z), dimensions={1}, to_apply=add_f32\n"
           "  rs = f32[%d]{0} rsqrt(r1)\n  b = f32[%d,512]{1,0} broadcast(rs), dimensions={0}\n"
           "  ROOT n = f32[%d,512]{1,0} multiply(x, b)\n}\n"
           "cons {\n%s%s}\n"
           "ENTRY main {\n  x = f32[%d,512]{1,0} parameter(0)\n  y = f32[1,1,41,1,512]{4,3,2,1,0} parameter(1)\n"
           "  t = f32[%d,512]{1,0} fusion(x), kind=kCustom, calls=norm, "
           "backend_config={\"fusion_backend_config\":{\"kind\":\"__triton\"}}\n"
           "  ROOT c = %s fusion(%s), kind=kLoop, calls=cons\n}\n",
           rows, rows, rows, rows, rows, rows, consumer_params, consumer, rows, rows, out, operands);
  FxError err;
  fx_error_clear(&err);
  return hlo_parse(text, strlen(text), "idx.hlo", &err);
}

/* SymbolicTileAnalysis::AnalyzeFusion must derive a symbolic tile for every instruction of the
 * fused computation; XLA's verdicts (jaxlib 0.10.2, H100) on fusing the norm into each consumer:
 *  - bitcast to [4,2,256], slice [.., 128:256], exp: "Failed to compute symbolic tile for (d0,
 *    d1, d2) -> (d0, d1 * 256 + d2 + 128)" (part of the minor dimension, all of the major);
 *  - bitcast of [41,512] to [1,1,41,1,512], concatenated along the unit dimension 1: "Failed to
 *    compute symbolic tile for ... (d0 * 41 + d1 * 41 + d2 - 41, d3 * 512 + d4)";
 *  - the two halves of each row sliced and concatenated the other way round (RoPE's rotation):
 *    fused. */
TEST(triton_symbolic_tiles_as_xla_derives_them) {
  const DeviceProfile *h100 = device_lookup("h100");
  static const struct {
    int rows;
    const char *params, *body, *operands, *out;
    int verdict;
  } cases[] = {
      {4, "  p0 = f32[4,512]{1,0} parameter(0)\n",
       "  bc = f32[4,2,256]{2,1,0} bitcast(p0)\n"
       "  sl = f32[4,2,128]{2,1,0} slice(bc), slice={[0:4], [0:2], [128:256]}\n"
       "  ROOT e = f32[4,2,128]{2,1,0} exponential(sl)\n",
       "t", "f32[4,2,128]{2,1,0}", 0},
      {41, "  p0 = f32[41,512]{1,0} parameter(0)\n  p1 = f32[1,1,41,1,512]{4,3,2,1,0} parameter(1)\n",
       "  bc = f32[1,1,41,1,512]{4,3,2,1,0} bitcast(p0)\n"
       "  ROOT cat = f32[1,2,41,1,512]{4,3,2,1,0} concatenate(p1, bc), dimensions={1}\n",
       "t, y", "f32[1,2,41,1,512]{4,3,2,1,0}", 0},
      {4, "  p0 = f32[4,512]{1,0} parameter(0)\n",
       "  hi = f32[4,256]{1,0} slice(p0), slice={[0:4], [256:512]}\n"
       "  lo = f32[4,256]{1,0} slice(p0), slice={[0:4], [0:256]}\n"
       "  rot = f32[4,512]{1,0} concatenate(hi, lo), dimensions={1}\n"
       "  ROOT e = f32[4,512]{1,0} exponential(rot)\n",
       "t", "f32[4,512]{1,0}", 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    IrModule *m = norm_and_consumer(cases[k].rows, cases[k].params, cases[k].body, cases[k].operands, cases[k].out);
    CHECK(m != NULL);
    if (!m) continue;
    IrInstr *t = ir_module_find_instr(m, "t"), *c = ir_module_find_instr(m, "c");
    CHECK(t && c);
    if (!t || !c) {
      ir_module_free(m);
      continue;
    }
    TritonTiling tt;
    int v = fusion_triton_tiling(h100, t, c, NULL, &tt);
    CHECK(v == cases[k].verdict);
    if (cases[k].verdict == 0) CHECK(tt.untileable != NULL && strcmp(tt.untileable->name, "bc") == 0);
    ir_module_free(m);
  }
}

int main(void) {
  RUN(estimates_equal_xlas_log_on_h100);
  RUN(a100_has_no_measured_op_profile);
  RUN(triton_tiling_refuses_what_does_not_fit_in_registers);
  RUN(triton_tiling_concatenate_divides_its_operands);
  RUN(triton_symbolic_tiles_as_xla_derives_them);
  return check_summary();
}
