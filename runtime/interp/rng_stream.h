/* rng_stream.h — the random streams every backend draws: cuRAND's Philox4_32_10 device generator,
 * reproduced on the host operation for operation, and XLA's rng-bit-generator algorithms.
 *
 * Where it sits: runtime/, with no dependency on the rest of fxplain (plain C on fixed-width
 * integers and floats), so a test compiled by nvcc can link it next to cuRAND's own headers and
 * compare the two bit for bit. The interpreter's `rng` (rng_ops.c) and the GPU backend's cuRAND
 * kernel (cuda_libs.c, cuda_rng_source) both follow the layout described at rt_rng_layout below,
 * so the interpreter, the CPU backend and the GPU draw the same numbers for the same seed.
 *
 * What matches cuRAND bit for bit (on the host, and on the device where noted):
 *   - rt_philox4x32_10: curand_Philox4x32_10 (10 rounds, the Random123 constants);
 *   - RtPhilox with rt_philox_init / rt_philox_next4: curand_init(seed, subsequence, offset) and
 *     curand4 on a curandStatePhilox4_32_10_t;
 *   - rt_curand_uniform / rt_curand_uniform_double_hq: curand_uniform4 / curand_uniform2_double's
 *     conversions (exact on the device too: the arithmetic is exact or correctly rounded);
 *   - rt_curand_box_muller / rt_curand_box_muller_double: curand_normal4 / curand_normal2_double
 *     as cuRAND computes them on the host (sinf/cosf/logf of the C library). On the device cuRAND
 *     uses __sincosf and sincospi, so device normals differ from these in the last bits. */
#ifndef FXPLAIN_RNG_STREAM_H
#define FXPLAIN_RNG_STREAM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Philox4x32 with 10 rounds: out = Philox(ctr, key), ctr and key as cuRAND's uint4 / uint2
 * (x, y, z, w). */
void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Threefry-2x32 with 20 rounds (Random123's, as JAX's threefry2x32 and XLA's rng-bit-generator
 * use it): out = Threefry(key, counter). Also declared in runtime.h. */
void rt_threefry2x32(uint32_t key0, uint32_t key1, uint32_t ctr0, uint32_t ctr1, uint32_t out[2]);

/* The part of curandStatePhilox4_32_10_t that curand4 uses. */
typedef struct {
  uint32_t ctr[4];
  uint32_t output[4];
  uint32_t key[2];
  unsigned state; /* which word of output comes next (cuRAND's STATE) */
} RtPhilox;

/* curand_init(seed, subsequence, offset, &s): key = seed, counter = (offset / 4, subsequence),
 * offset % 4 words of the first block skipped. */
void rt_philox_init(RtPhilox *s, uint64_t seed, uint64_t subsequence, uint64_t offset);
/* curand4(&s): the next four 32-bit words. */
void rt_philox_next4(RtPhilox *s, uint32_t out[4]);

/* curand_uniform's conversion: x * 2^-32 + 2^-33 in float, in (0, 1]. */
float rt_curand_uniform(uint32_t x);
/* curand_uniform2_double's conversion of two words: 53 bits, in (0, 1]. */
double rt_curand_uniform_double_hq(uint32_t x, uint32_t y);
/* cuRAND's Box-Muller (host path) of two words into two normal floats. */
void rt_curand_box_muller(uint32_t x, uint32_t y, float out[2]);
/* cuRAND's double Box-Muller (host path) of four words into two normal doubles. */
void rt_curand_box_muller_double(uint32_t x0, uint32_t x1, uint32_t y0, uint32_t y1, double out[2]);

/* ---------- HLO `rng`: the layout shared by the interpreter and the GPU kernel ----------
 * Instruction `instr_id` in a run seeded with `seed` draws with the 64-bit cuRAND seed
 * rt_rng_key(seed, instr_id). Its d-th execution (d = 0, 1, ... per run) fills its n elements in
 * groups of RT_RNG_PER(type) consecutive elements; group g is one cuRAND thread that calls
 * curand_init(key, g, 4 * d, &state) and then
 *   f32 (and f16/bf16, rounded from f32): curand_uniform4 / curand_normal4 — 4 elements;
 *   f64: curand_uniform2_double / curand_normal2_double — 2 elements;
 *   integers: curand4 — 2 elements, element 2g+h taking the 64 bits (w[2h] << 32) | w[2h+1].
 * Then uniform floats map to fma(b - a, u, a), and a value that is not below b (u = 1, or
 * rounding) becomes a, so values lie in [a, b); normal floats are fma(b, z, a) (mean a, standard
 * deviation b); integers are a + bits % (b - a) (a when b <= a). */
uint64_t rt_rng_key(uint64_t seed, int instr_id);
/* Elements per cuRAND thread: 4 for 32-bit (and narrower) floats, 2 for f64 and integers. */
int rt_rng_per_thread(int is_float, int bytes);
/* One thread's elements (the same code as the GPU kernel's thread body, in C). out receives
 * min(per, n - per * g) values: floats of the element type widened to double, or integers. */
void rt_rng_thread_f32(uint64_t key, uint64_t g, uint64_t draw, int normal, float a, float b, float out[4]);
void rt_rng_thread_f64(uint64_t key, uint64_t g, uint64_t draw, int normal, double a, double b, double out[2]);
void rt_rng_thread_int(uint64_t key, uint64_t g, uint64_t draw, int64_t a, int64_t b, int64_t out[2]);

/* ---------- HLO `rng-bit-generator` (XLA's RngBitGeneratorExpander semantics) ---------- */
typedef enum { RT_RBG_PHILOX, RT_RBG_THREE_FRY } RtRbgAlgorithm;
/* Fills n elements of `bits` (each `bytes` = 1, 2, 4 or 8 wide, little-endian words as XLA's
 * unsigned results) from the u64 state (nstate words: Philox takes 2 or 3, ThreeFry 2) and writes
 * the new state into new_state (nstate words). dims/rank: the output's shape (ThreeFry's 32-bit
 * and narrower path splits it in halves as XLA does). Returns 0, or -1 when the state size does
 * not fit the algorithm. */
int rt_rng_bit_generator(RtRbgAlgorithm alg, const uint64_t *state, int nstate, int rank, const int64_t *dims,
                         int bytes, void *bits, uint64_t *new_state);

#ifdef __cplusplus
}
#endif

#endif
