// curand_match.cu — proves, without a GPU, that fxplain's host reproduction of cuRAND's
// Philox4_32_10 stream (runtime/interp/rng_stream.c) and the GPU backend's rng kernels
// (runtime/cuda/cuda_libs.c, cuda_rng_source) draw the same numbers.
//
// cuRAND's device API is header code; its functions are `QUALIFIERS` (static __device__ by
// default). Defining QUALIFIERS as __host__ __device__ before the header makes nvcc compile
// cuRAND's own code for the CPU, and FX_RNG_QUALIFIERS does the same for the generated kernels'
// thread body (the text rng_dump wrote, included verbatim). Everything below is compared bit for
// bit: the Philox block function, curand_init/curand4 state handling (subsequences, offsets that
// are not multiples of 4, carries), the uniform and normal conversions (cuRAND's host path), and
// every generated kernel's thread against rt_rng_thread_*.
//
// What this does not prove: the device's own arithmetic. Uniform values are exact or correctly
// rounded operations (exact on the device too); cuRAND's device Box-Muller uses __sincosf and
// sincospi, so device normals differ in the last bits (the GPU test, `ctest -L gpu`, measures it).
//
// Built and run by curand_match.sh (ctest nvrtc.curand_match). Prints one line per check.
#define QUALIFIERS static inline __host__ __device__
#define FX_RNG_QUALIFIERS static inline __host__ __device__
#include <curand_kernel.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/interp/rng_stream.h"

#define fx_rng fx_rng_f32_uniform
#define fx_rng_thread fx_rng_thread_f32_uniform
#include "rng_f32_uniform.cuh"
#undef fx_rng
#undef fx_rng_thread
#define fx_rng fx_rng_f32_normal
#define fx_rng_thread fx_rng_thread_f32_normal
#include "rng_f32_normal.cuh"
#undef fx_rng
#undef fx_rng_thread
#define fx_rng fx_rng_f64_uniform
#define fx_rng_thread fx_rng_thread_f64_uniform
#include "rng_f64_uniform.cuh"
#undef fx_rng
#undef fx_rng_thread
#define fx_rng fx_rng_f64_normal
#define fx_rng_thread fx_rng_thread_f64_normal
#include "rng_f64_normal.cuh"
#undef fx_rng
#undef fx_rng_thread
#define fx_rng fx_rng_s32_uniform
#define fx_rng_thread fx_rng_thread_s32_uniform
#include "rng_s32_uniform.cuh"
#undef fx_rng
#undef fx_rng_thread
#define fx_rng fx_rng_u64_uniform
#define fx_rng_thread fx_rng_thread_u64_uniform
#include "rng_u64_uniform.cuh"
#undef fx_rng
#undef fx_rng_thread

static uint64_t sm_state = 0x853c49e6748fea9bull;
static uint64_t next64() { // splitmix64
  uint64_t z = (sm_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// Interesting values more often than uniform bits would give them.
static uint64_t pick64() {
  switch (next64() % 6) {
  case 0: return 0;
  case 1: return ~0ull - (next64() % 4);
  case 2: return 0xffffffffull - (next64() % 4);
  case 3: return next64() % 1000;
  default: return next64();
  }
}

static int failures = 0;
static long checks = 0;
#define SAME(cond, ...)                  \
  do {                                   \
    checks++;                            \
    if (!(cond)) {                       \
      if (failures++ < 10) {             \
        printf("MISMATCH: " __VA_ARGS__); \
        printf("\n");                    \
      }                                  \
    }                                    \
  } while (0)

static bool same_f(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }
static bool same_d(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

int main() {
  // 1. The block function.
  for (int i = 0; i < 200000; i++) {
    uint64_t a = next64(), b = next64(), c = next64();
    uint4 ctr = make_uint4((unsigned)a, (unsigned)(a >> 32), (unsigned)b, (unsigned)(b >> 32));
    uint2 key = make_uint2((unsigned)c, (unsigned)(c >> 32));
    uint4 want = curand_Philox4x32_10(ctr, key);
    uint32_t c4[4] = {ctr.x, ctr.y, ctr.z, ctr.w}, k2[2] = {key.x, key.y}, got[4];
    rt_philox4x32_10(c4, k2, got);
    SAME(got[0] == want.x && got[1] == want.y && got[2] == want.z && got[3] == want.w, "philox block %d", i);
  }
  printf("philox4x32_10: 200000 blocks identical to curand_Philox4x32_10\n");

  // 2. curand_init + curand4 (and the conversions on the same state).
  for (int i = 0; i < 20000; i++) {
    uint64_t seed = pick64(), sub = pick64(), off = pick64();
    curandStatePhilox4_32_10_t s;
    curand_init(seed, sub, off, &s);
    RtPhilox r;
    rt_philox_init(&r, seed, sub, off);
    for (int d = 0; d < 4; d++) {
      uint4 w = curand4(&s);
      uint32_t g[4];
      rt_philox_next4(&r, g);
      SAME(g[0] == w.x && g[1] == w.y && g[2] == w.z && g[3] == w.w,
           "curand4 seed %llx sub %llx off %llx step %d", (unsigned long long)seed, (unsigned long long)sub,
           (unsigned long long)off, d);
    }
  }
  printf("curand_init/curand4: 20000 (seed, subsequence, offset) states x 4 draws identical\n");

  // 3. Conversions: uniform float/double, Box-Muller float/double (cuRAND's host path).
  for (int i = 0; i < 200000; i++) {
    uint64_t seed = next64(), sub = next64() % 100000, off = next64() % 64;
    curandStatePhilox4_32_10_t s;
    curand_init(seed, sub, off, &s);
    RtPhilox r;
    rt_philox_init(&r, seed, sub, off);
    uint32_t w[4];
    rt_philox_next4(&r, w);
    switch (i % 4) {
    case 0: {
      float4 u = curand_uniform4(&s);
      SAME(same_f(u.x, rt_curand_uniform(w[0])) && same_f(u.y, rt_curand_uniform(w[1])) &&
               same_f(u.z, rt_curand_uniform(w[2])) && same_f(u.w, rt_curand_uniform(w[3])),
           "curand_uniform4 %d", i);
      break;
    }
    case 1: {
      float4 z = curand_normal4(&s);
      float a[2], b[2];
      rt_curand_box_muller(w[0], w[1], a);
      rt_curand_box_muller(w[2], w[3], b);
      SAME(same_f(z.x, a[0]) && same_f(z.y, a[1]) && same_f(z.z, b[0]) && same_f(z.w, b[1]), "curand_normal4 %d", i);
      break;
    }
    case 2: {
      double2 u = curand_uniform2_double(&s);
      SAME(same_d(u.x, rt_curand_uniform_double_hq(w[0], w[1])) && same_d(u.y, rt_curand_uniform_double_hq(w[2], w[3])),
           "curand_uniform2_double %d", i);
      break;
    }
    default: {
      double2 z = curand_normal2_double(&s);
      double a[2];
      rt_curand_box_muller_double(w[0], w[1], w[2], w[3], a);
      SAME(same_d(z.x, a[0]) && same_d(z.y, a[1]), "curand_normal2_double %d", i);
      break;
    }
    }
  }
  // The extremes of the uniform conversion.
  uint32_t edge[] = {0u, 1u, 0x7fffffffu, 0x80000000u, 0xffffff7fu, 0xffffff80u, 0xffffffffu};
  for (unsigned e = 0; e < sizeof edge / sizeof edge[0]; e++) {
    float want = edge[e] * CURAND_2POW32_INV + (CURAND_2POW32_INV / 2.0f);
    SAME(same_f(rt_curand_uniform(edge[e]), want), "uniform of %08x", edge[e]);
  }
  printf("conversions: curand_uniform4, curand_normal4, curand_uniform2_double, curand_normal2_double identical "
         "(200000 draws)\n");

  // 4. The generated kernels' thread bodies against the interpreter's rt_rng_thread_*.
  const float fa[] = {-1.0f, 0.0f, 3.5f, -1e30f, 1.0f, 2.0f};
  const float fb[] = {1.0f, 1.0f, 3.5f, 1e30f, 2.0f, 1.0f};
  int nk = 0;
  for (int i = 0; i < 60000; i++) {
    uint64_t key = pick64(), g = next64() % (1ull << 40), draw = next64() % 5000;
    int c = i % 6;
    long long n = (long long)(g * 4 + 1 + next64() % 4);
    switch (i % 6) {
    case 0: case 1: {
      float out[4] = {0, 0, 0, 0}, want[4];
      float *base = out - g * 4; // the kernel indexes out[g * 4 + j]
      if (c == 0) fx_rng_thread_f32_uniform(base, n, (long long)g, key, draw, fa[i % 6], fb[i % 6]);
      else fx_rng_thread_f32_normal(base, n, (long long)g, key, draw, fa[i % 6], fb[i % 6]);
      rt_rng_thread_f32(key, g, draw, c == 1, fa[i % 6], fb[i % 6], want);
      bool ok = true;
      for (long long j = 0; j < 4 && (long long)g * 4 + j < n; j++) ok = ok && same_f(out[j], want[j]);
      SAME(ok, "f32 %s thread key %llx g %llu draw %llu", c ? "normal" : "uniform", (unsigned long long)key,
           (unsigned long long)g, (unsigned long long)draw);
      break;
    }
    case 2: case 3: {
      double out[2] = {0, 0}, want[2];
      n = (long long)(g * 2 + 1 + next64() % 2);
      double *base = out - g * 2;
      double a = fa[i % 6], b = fb[i % 6];
      if (c == 2) fx_rng_thread_f64_uniform(base, n, (long long)g, key, draw, a, b);
      else fx_rng_thread_f64_normal(base, n, (long long)g, key, draw, a, b);
      rt_rng_thread_f64(key, g, draw, c == 3, a, b, want);
      bool ok = true;
      for (long long j = 0; j < 2 && (long long)g * 2 + j < n; j++) ok = ok && same_d(out[j], want[j]);
      SAME(ok, "f64 %s thread %d", c == 3 ? "normal" : "uniform", i);
      break;
    }
    default: {
      n = (long long)(g * 2 + 1 + next64() % 2);
      long long a = (long long)(next64() % 2000) - 1000, b = a + (long long)(next64() % 3000) - 500;
      int64_t want[2];
      rt_rng_thread_int(key, g, draw, a, b, want);
      bool ok = true;
      if (c == 4) {
        int out[2] = {0, 0};
        fx_rng_thread_s32_uniform(out - g * 2, n, (long long)g, key, draw, a, b);
        for (long long j = 0; j < 2 && (long long)g * 2 + j < n; j++) ok = ok && out[j] == (int)want[j];
      } else {
        unsigned long long out[2] = {0, 0};
        fx_rng_thread_u64_uniform(out - g * 2, n, (long long)g, key, draw, a, b);
        for (long long j = 0; j < 2 && (long long)g * 2 + j < n; j++) ok = ok && out[j] == (unsigned long long)want[j];
      }
      SAME(ok, "integer thread %d", i);
      break;
    }
    }
    nk++;
  }
  printf("generated kernels (f32/f64 uniform and normal, s32, u64): %d threads identical to the interpreter's\n", nk);
  printf("%ld checks, %d mismatches\n", checks, failures);
  return failures ? 1 : 0;
}
