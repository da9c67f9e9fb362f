/* philox.h — the counter-based random stream both backends draw `rng` from.
 *
 * Philox4x32-10 (Salmon et al., SC'11), exactly as cuRAND's device API computes it
 * (curand_Philox4x32_10 in curand_philox4x32_x.h): element i of a stream with seed s is lane i%4
 * of Philox(counter = {lo(i/4), hi(i/4), 0, 0}, key = {lo(s), hi(s)}) — what curand() returns
 * after curand_init(s, 0, i, &state). Because the value of element i depends only on (seed, i),
 * the CPU backend and the GPU kernel (cuda_libs.c emits it with cuRAND's own Philox) produce the
 * same bits in any order and any thread layout. Uniform floats are formed exactly (24 bits times
 * 2^-24, then lo + (hi - lo) * u with separate rounding), so CPU and GPU agree bit for bit; normal
 * samples use Box–Muller on elements 2j and 2j+1 and agree to within libm's last bits. */
#ifndef FXPLAIN_PHILOX_H
#define FXPLAIN_PHILOX_H

#include <stdint.h>

/* One Philox4x32-10 block. */
void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* The 32 random bits of element `index` of the stream `seed`. */
uint32_t rt_philox_bits(uint64_t seed, uint64_t index);
/* Uniform in [lo, hi): element index of the stream, as the GPU computes it. */
float rt_philox_uniform_f32(uint64_t seed, uint64_t index, float lo, float hi);
double rt_philox_uniform_f64(uint64_t seed, uint64_t index, double lo, double hi);
/* Normal(mu, sigma): element index of the stream (Box–Muller over elements 2j, 2j+1). */
float rt_philox_normal_f32(uint64_t seed, uint64_t index, float mu, float sigma);
/* Fills out[0..n) with elements offset..offset+n of the stream. */
void rt_philox_fill_uniform_f32(uint64_t seed, uint64_t offset, float lo, float hi, float *out, int64_t n);

#endif
