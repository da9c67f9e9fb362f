/* philox.c — Philox4x32-10 on the host; see philox.h for the stream's definition. The GPU side
 * is the same arithmetic in CUDA C (cuda_libs.c: cuda_rng_source). */
#include "philox.h"

#include <math.h>

#define PHILOX_W32_0 0x9E3779B9u
#define PHILOX_W32_1 0xBB67AE85u
#define PHILOX_M4x32_0 0xD2511F53u
#define PHILOX_M4x32_1 0xCD9E8D57u

static void round4(uint32_t c[4], const uint32_t k[2]) {
  uint64_t p0 = (uint64_t)PHILOX_M4x32_0 * c[0];
  uint64_t p1 = (uint64_t)PHILOX_M4x32_1 * c[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t r0 = hi1 ^ c[1] ^ k[0], r2 = hi0 ^ c[3] ^ k[1];
  c[0] = r0;
  c[1] = lo1;
  c[2] = r2;
  c[3] = lo0;
}

void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  uint32_t k[2] = {key[0], key[1]};
  for (int r = 0; r < 10; r++) {
    if (r) {
      k[0] += PHILOX_W32_0;
      k[1] += PHILOX_W32_1;
    }
    round4(c, k);
  }
  for (int i = 0; i < 4; i++) out[i] = c[i];
}

uint32_t rt_philox_bits(uint64_t seed, uint64_t index) {
  uint64_t block = index / 4;
  uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0, 0};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t out[4];
  rt_philox4x32_10(ctr, key, out);
  return out[index % 4];
}

float rt_philox_uniform_f32(uint64_t seed, uint64_t index, float lo, float hi) {
  /* 24 random bits scaled by 2^-24: exact in float, in [0, 1). */
  volatile float u = (float)(rt_philox_bits(seed, index) >> 8) * 0x1p-24f;
  volatile float span = hi - lo;
  volatile float prod = span * u; /* volatile: no fused multiply-add, as on the GPU (__fmul_rn) */
  return lo + prod;
}

double rt_philox_uniform_f64(uint64_t seed, uint64_t index, double lo, double hi) {
  /* 53 random bits from elements 2i and 2i+1. */
  uint64_t bits = ((uint64_t)(rt_philox_bits(seed, 2 * index) >> 5) << 26) | (rt_philox_bits(seed, 2 * index + 1) >> 6);
  volatile double u = (double)bits * 0x1p-53;
  volatile double span = hi - lo;
  volatile double prod = span * u;
  return lo + prod;
}

float rt_philox_normal_f32(uint64_t seed, uint64_t index, float mu, float sigma) {
  uint64_t j = index / 2;
  /* (0, 1]: never log(0). */
  double u1 = ((double)(rt_philox_bits(seed, 2 * j) >> 8) + 1.0) * 0x1p-24;
  double u2 = (double)(rt_philox_bits(seed, 2 * j + 1) >> 8) * 0x1p-24;
  double r = sqrt(-2.0 * log(u1));
  double z = (index % 2 == 0) ? r * cos(6.283185307179586 * u2) : r * sin(6.283185307179586 * u2);
  return (float)(mu + sigma * z);
}

void rt_philox_fill_uniform_f32(uint64_t seed, uint64_t offset, float lo, float hi, float *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = rt_philox_uniform_f32(seed, offset + (uint64_t)i, lo, hi);
}
