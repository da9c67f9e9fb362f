/* rng_stream.c — cuRAND's Philox4_32_10 device generator reproduced on the host, the `rng` layout
 * every backend shares, and XLA's rng-bit-generator algorithms (Philox4x32-10 and
 * Threefry-2x32-20 over a u64 state). See rng_stream.h for what matches what; the proof is
 * tests/gpu/curand_match.cu, which runs cuRAND's own header code on the host next to this file.
 * Plain C (no fxplain headers) so that test can link it alone. */
#include "rng_stream.h"

#include <math.h>
#include <string.h>

/* cuRAND's constants (curand_philox4x32_x.h, curand_globals.h). */
#define PHILOX_W32_0 0x9E3779B9u
#define PHILOX_W32_1 0xBB67AE85u
#define PHILOX_M4x32_0 0xD2511F53u
#define PHILOX_M4x32_1 0xCD9E8D57u
#define CURAND_2POW32_INV (2.3283064e-10f)
#define CURAND_2POW32_INV_2PI (2.3283064e-10f * 6.2831855f)
#define CURAND_2POW53_INV_DOUBLE (1.1102230246251565e-16)
#define CURAND_PI_DOUBLE (3.1415926535897932)

static void philox_round(uint32_t c[4], const uint32_t k[2]) {
  uint64_t p0 = (uint64_t)PHILOX_M4x32_0 * c[0];
  uint64_t p1 = (uint64_t)PHILOX_M4x32_1 * c[2];
  uint32_t r0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k[0];
  uint32_t r1 = (uint32_t)p1;
  uint32_t r2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k[1];
  uint32_t r3 = (uint32_t)p0;
  c[0] = r0, c[1] = r1, c[2] = r2, c[3] = r3;
}

void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  uint32_t k[2] = {key[0], key[1]};
  for (int r = 0; r < 10; r++) {
    if (r > 0) k[0] += PHILOX_W32_0, k[1] += PHILOX_W32_1;
    philox_round(c, k);
  }
  memcpy(out, c, sizeof c);
}

/* Philox_State_Incr(s, n): the 128-bit counter += n. */
static void ctr_add(uint32_t c[4], uint64_t n) {
  uint32_t nlo = (uint32_t)n, nhi = (uint32_t)(n >> 32);
  c[0] += nlo;
  if (c[0] < nlo) nhi++;
  c[1] += nhi;
  if (nhi <= c[1]) return;
  if (++c[2]) return;
  ++c[3];
}

void rt_philox_init(RtPhilox *s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  memset(s, 0, sizeof *s);
  s->key[0] = (uint32_t)seed;
  s->key[1] = (uint32_t)(seed >> 32);
  /* skipahead_sequence: the high 64 bits of the counter. */
  uint32_t nlo = (uint32_t)subsequence, nhi = (uint32_t)(subsequence >> 32);
  s->ctr[2] += nlo;
  if (s->ctr[2] < nlo) nhi++;
  s->ctr[3] += nhi;
  /* skipahead(offset) */
  s->state += (unsigned)(offset & 3);
  uint64_t n = offset / 4;
  if (s->state > 3) {
    n += 1;
    s->state -= 4;
  }
  ctr_add(s->ctr, n);
  rt_philox4x32_10(s->ctr, s->key, s->output);
}

void rt_philox_next4(RtPhilox *s, uint32_t out[4]) {
  uint32_t tmp[4];
  memcpy(tmp, s->output, sizeof tmp);
  ctr_add(s->ctr, 1);
  rt_philox4x32_10(s->ctr, s->key, s->output);
  /* The four words from position `state` of the old block on into the new one. */
  for (unsigned j = 0; j < 4; j++) {
    unsigned p = s->state + j;
    out[j] = p < 4 ? tmp[p] : s->output[p - 4];
  }
}

float rt_curand_uniform(uint32_t x) {
  float f = (float)x;
  float m = f * CURAND_2POW32_INV;
  return m + (CURAND_2POW32_INV / 2.0f);
}

double rt_curand_uniform_double_hq(uint32_t x, uint32_t y) {
  uint64_t z = (uint64_t)x ^ ((uint64_t)y << (53 - 32));
  double m = (double)z * CURAND_2POW53_INV_DOUBLE;
  return m + (CURAND_2POW53_INV_DOUBLE / 2.0);
}

void rt_curand_box_muller(uint32_t x, uint32_t y, float out[2]) {
  float u = (float)x * CURAND_2POW32_INV;
  u = u + (CURAND_2POW32_INV / 2);
  float v = (float)y * CURAND_2POW32_INV_2PI;
  v = v + (CURAND_2POW32_INV_2PI / 2);
  float l = logf(u);
  float s = sqrtf(-2.0f * l);
  float sx = sinf(v), cy = cosf(v);
  out[0] = sx * s;
  out[1] = cy * s;
}

void rt_curand_box_muller_double(uint32_t x0, uint32_t x1, uint32_t y0, uint32_t y1, double out[2]) {
  uint64_t zx = (uint64_t)x0 ^ ((uint64_t)x1 << (53 - 32));
  double u = (double)zx * CURAND_2POW53_INV_DOUBLE;
  u = u + (CURAND_2POW53_INV_DOUBLE / 2.0);
  uint64_t zy = (uint64_t)y0 ^ ((uint64_t)y1 << (53 - 32));
  double v = (double)zy * (CURAND_2POW53_INV_DOUBLE * 2.0);
  v = v + CURAND_2POW53_INV_DOUBLE;
  double s = sqrt(-2.0 * log(u));
  double a = v * CURAND_PI_DOUBLE;
  out[0] = sin(a) * s;
  out[1] = cos(a) * s;
}

/* ---------- HLO rng ---------- */

uint64_t rt_rng_key(uint64_t seed, int instr_id) {
  return seed ^ ((uint64_t)((uint32_t)instr_id * 0x9E3779B9u) << 32);
}

int rt_rng_per_thread(int is_float, int bytes) { return is_float && bytes <= 4 ? 4 : 2; }

void rt_rng_thread_f32(uint64_t key, uint64_t g, uint64_t draw, int normal, float a, float b, float out[4]) {
  RtPhilox s;
  rt_philox_init(&s, key, g, 4 * draw);
  uint32_t w[4];
  rt_philox_next4(&s, w);
  if (normal) {
    float z[4];
    rt_curand_box_muller(w[0], w[1], z);
    rt_curand_box_muller(w[2], w[3], z + 2);
    for (int j = 0; j < 4; j++) out[j] = fmaf(b, z[j], a);
  } else {
    float span = b - a;
    for (int j = 0; j < 4; j++) {
      float r = fmaf(span, rt_curand_uniform(w[j]), a);
      out[j] = r < b ? r : a;
    }
  }
}

void rt_rng_thread_f64(uint64_t key, uint64_t g, uint64_t draw, int normal, double a, double b, double out[2]) {
  RtPhilox s;
  rt_philox_init(&s, key, g, 4 * draw);
  uint32_t w[4];
  rt_philox_next4(&s, w);
  if (normal) {
    double z[2];
    rt_curand_box_muller_double(w[0], w[1], w[2], w[3], z);
    for (int j = 0; j < 2; j++) out[j] = fma(b, z[j], a);
  } else {
    double span = b - a;
    for (int j = 0; j < 2; j++) {
      double r = fma(span, rt_curand_uniform_double_hq(w[2 * j], w[2 * j + 1]), a);
      out[j] = r < b ? r : a;
    }
  }
}

void rt_rng_thread_int(uint64_t key, uint64_t g, uint64_t draw, int64_t a, int64_t b, int64_t out[2]) {
  RtPhilox s;
  rt_philox_init(&s, key, g, 4 * draw);
  uint32_t w[4];
  rt_philox_next4(&s, w);
  uint64_t span = b > a ? (uint64_t)b - (uint64_t)a : 0;
  for (int j = 0; j < 2; j++) {
    uint64_t bits = ((uint64_t)w[2 * j] << 32) | w[2 * j + 1];
    out[j] = (int64_t)((uint64_t)a + (span ? bits % span : 0));
  }
}

/* ---------- rng-bit-generator ---------- */

static void put_bits(void *bits, int bytes, int64_t e, uint64_t v) {
  switch (bytes) {
  case 1: ((uint8_t *)bits)[e] = (uint8_t)v; break;
  case 2: ((uint16_t *)bits)[e] = (uint16_t)v; break;
  case 4: ((uint32_t *)bits)[e] = (uint32_t)v; break;
  default: ((uint64_t *)bits)[e] = v; break;
  }
}

/* Threefry2x32 with 20 rounds (Random123's threefry2x32_20, as XLA's): rotations 13 15 26 6 and
 * 17 29 16 24 in turn, the key injected after every 4 rounds. Written out round by round: it is
 * the inner loop of every random input and of rng-bit-generator. */
#define TF_ROUND(r) x0 += x1, x1 = (x1 << (r)) | (x1 >> (32 - (r))), x1 ^= x0
#define TF_INJECT(a, b, s) x0 += (a), x1 += (b) + (uint32_t)(s)
void rt_threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t out[2]) {
  const uint32_t k2 = 0x1BD11BDAu ^ k0 ^ k1;
  uint32_t x0 = c0 + k0, x1 = c1 + k1;
  TF_ROUND(13), TF_ROUND(15), TF_ROUND(26), TF_ROUND(6), TF_INJECT(k1, k2, 1);
  TF_ROUND(17), TF_ROUND(29), TF_ROUND(16), TF_ROUND(24), TF_INJECT(k2, k0, 2);
  TF_ROUND(13), TF_ROUND(15), TF_ROUND(26), TF_ROUND(6), TF_INJECT(k0, k1, 3);
  TF_ROUND(17), TF_ROUND(29), TF_ROUND(16), TF_ROUND(24), TF_INJECT(k1, k2, 4);
  TF_ROUND(13), TF_ROUND(15), TF_ROUND(26), TF_ROUND(6), TF_INJECT(k2, k0, 5);
  out[0] = x0;
  out[1] = x1;
}
#undef TF_ROUND
#undef TF_INJECT

/* XLA's ThreeFryBitGenerator: key = state[0], counter = state[1] + element index. 64-bit
 * elements take both output words; narrower ones split the shape in halves along its first even
 * dimension (else its largest), the two output words filling the two halves' interleaved
 * positions (element 2j+h of the split dimension is word h of half element j). */
static void threefry_bits(const uint64_t *state, int rank, const int64_t *dims, int bytes, void *bits,
                          uint64_t *new_state) {
  uint64_t key = state[0], ctr = state[1];
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  new_state[0] = key;
  if (bytes == 8) {
    for (int64_t e = 0; e < n; e++) {
      uint64_t c = ctr + (uint64_t)e;
      uint32_t o[2];
      rt_threefry2x32(k0, k1, (uint32_t)c, (uint32_t)(c >> 32), o);
      put_bits(bits, 8, e, (uint64_t)o[0] | ((uint64_t)o[1] << 32));
    }
    new_state[1] = ctr + (uint64_t)n;
    return;
  }
  if (rank == 0) { /* half shape [1]: one block, its first word */
    uint32_t o[2];
    rt_threefry2x32(k0, k1, (uint32_t)ctr, (uint32_t)(ctr >> 32), o);
    put_bits(bits, bytes, 0, o[0]);
    new_state[1] = ctr + 1;
    return;
  }
  int split = -1;
  for (int d = 0; d < rank && split < 0; d++)
    if (dims[d] % 2 == 0) split = d;
  if (split < 0)
    for (int d = 0; d < rank; d++)
      if (split < 0 || dims[d] > dims[split]) split = d;
  int64_t half_split = (dims[split] + 1) / 2, outer = 1, inner = 1;
  for (int d = 0; d < split; d++) outer *= dims[d];
  for (int d = split + 1; d < rank; d++) inner *= dims[d];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < dims[split]; i++)
      for (int64_t q = 0; q < inner; q++) {
        int64_t j = i / 2, h = i % 2;
        uint64_t c = ctr + (uint64_t)((o * half_split + j) * inner + q);
        uint32_t w[2];
        rt_threefry2x32(k0, k1, (uint32_t)c, (uint32_t)(c >> 32), w);
        put_bits(bits, bytes, (o * dims[split] + i) * inner + q, w[h]);
      }
  new_state[1] = ctr + (uint64_t)(outer * half_split * inner);
}

/* XLA's PhiloxBitGenerator: key = state[0]; the 128-bit counter is (state[1], state[2]) low word
 * first, or (state[1], state[0]) for a two-word state. Block i = Philox(counter + i, key) gives
 * elements 4i..4i+3 (32-bit and narrower, truncated) or 2i, 2i+1 (64-bit, words 2h | 2h+1 << 32). */
static void philox_bits(const uint64_t *state, int nstate, int64_t n, int bytes, void *bits, uint64_t *new_state) {
  uint64_t key = state[0], lo = state[1], hi = nstate >= 3 ? state[2] : state[0];
  uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
  int per = bytes == 8 ? 2 : 4;
  int64_t blocks = (n + per - 1) / per;
  for (int64_t i = 0; i < blocks; i++) {
    uint64_t clo = lo + (uint64_t)i, chi = hi + (clo < lo);
    uint32_t c[4] = {(uint32_t)clo, (uint32_t)(clo >> 32), (uint32_t)chi, (uint32_t)(chi >> 32)}, o[4];
    rt_philox4x32_10(c, k, o);
    for (int j = 0; j < per && i * per + j < n; j++) {
      uint64_t v = bytes == 8 ? (uint64_t)o[2 * j] | ((uint64_t)o[2 * j + 1] << 32) : o[j];
      put_bits(bits, bytes, i * per + j, v);
    }
  }
  uint64_t nlo = lo + (uint64_t)blocks, nhi = hi + (nlo < lo);
  new_state[0] = key;
  new_state[1] = nlo;
  if (nstate >= 3) new_state[2] = nhi;
}

int rt_rng_bit_generator(RtRbgAlgorithm alg, const uint64_t *state, int nstate, int rank, const int64_t *dims,
                         int bytes, void *bits, uint64_t *new_state) {
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return -1;
  if (alg == RT_RBG_THREE_FRY) {
    if (nstate != 2) return -1;
    threefry_bits(state, rank, dims, bytes, bits, new_state);
    return 0;
  }
  if (nstate < 2 || nstate > 3) return -1;
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  philox_bits(state, nstate, n, bytes, bits, new_state);
  return 0;
}
