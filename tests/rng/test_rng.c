/* test_rng.c — random numbers: the interpreter's `rng` follows cuRAND's Philox4_32_10 layout
 * (rng_stream.h) element for element, the CPU backend draws the same bits, and
 * `rng-bit-generator` gives XLA's Philox and ThreeFry results (Random123 known answers, the
 * counter and state updates, ThreeFry's split halves, narrow types, errors). The proof that
 * the stream is cuRAND's own is tests/gpu/curand_match.cu (ctest nvrtc.curand_match). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../compiler/hlo/hlo.h"
#include "../../runtime/backend.h"
#include "../../runtime/interp/rng_stream.h"
#include "../../runtime/runtime.h"
#include "../../repl/session.h"
#include "../check.h"

static char dir[64];

static IrModule *parse(const char *text) {
  FxError e = {0};
  IrModule *m = hlo_parse(text, strlen(text), "rng.hlo", &e);
  if (!m) fprintf(stderr, "%s:%d:%d: %s\n", e.file, e.line, e.col, e.msg);
  return m;
}

static RtTensor *run(IrModule *m, RtTensor **args, int nargs, uint64_t seed, FxError *e) {
  RtTensor *r = NULL;
  RtOptions o = {.seed = seed};
  if (!rt_interp_run(m, args, nargs, &o, &r, NULL, e)) return NULL;
  return r;
}

static const IrInstr *root(const IrModule *m) { return m->entry->root; }

/* ---------- rng ---------- */

TEST(rng_uniform_f32_is_curands_philox_stream) {
  IrModule *m = parse("HloModule r\nENTRY main {\n  lo = f32[] constant(-2)\n  hi = f32[] constant(3)\n"
                      "  ROOT r = f32[3,5] rng(lo, hi), distribution=rng_uniform\n}\n");
  CHECK(m != NULL);
  if (!m) return;
  FxError e = {0};
  RtTensor *r = run(m, NULL, 0, 7, &e);
  CHECK(r != NULL && r->count == 15);
  if (!r) return;
  uint64_t key = rt_rng_key(7, root(m)->id);
  const float *v = r->data;
  for (int g = 0; g < 4; g++) {
    float want[4];
    rt_rng_thread_f32(key, (uint64_t)g, 0, 0, -2.0f, 3.0f, want);
    for (int j = 0; j < 4 && g * 4 + j < 15; j++) CHECK(memcmp(&v[g * 4 + j], &want[j], 4) == 0);
  }
  /* Composed by hand: element 5 is word 1 of Philox(counter (0, 0, g = 1, 0), key), through
   * curand_uniform's conversion, mapped to [a, b) with one fused multiply-add. */
  uint32_t ctr[4] = {0, 0, 1, 0}, k[2] = {(uint32_t)key, (uint32_t)(key >> 32)}, w[4];
  rt_philox4x32_10(ctr, k, w);
  float u = (float)w[1] * 0x1p-32f + 0x1p-33f;
  CHECK(v[5] == fmaf(5.0f, u, -2.0f));
  for (int i = 0; i < 15; i++) CHECK(v[i] >= -2.0f && v[i] < 3.0f);
  /* Another seed draws other numbers; the same seed the same ones. */
  RtTensor *r2 = run(m, NULL, 0, 8, &e), *r3 = run(m, NULL, 0, 7, &e);
  CHECK(r2 && r3 && memcmp(r2->data, r->data, r->bytes) != 0 && memcmp(r3->data, r->data, r->bytes) == 0);
  rt_tensor_unref(r);
  rt_tensor_unref(r2);
  rt_tensor_unref(r3);
  ir_module_free(m);
}

TEST(rng_normal_f64_and_integers_follow_the_layout) {
  IrModule *m = parse("HloModule r\nENTRY main {\n  mu = f64[] constant(1.5)\n  sd = f64[] constant(0.25)\n"
                      "  n = f64[7] rng(mu, sd), distribution=rng_normal\n"
                      "  lo = s32[] constant(-10)\n  hi = s32[] constant(20)\n"
                      "  i = s32[5] rng(lo, hi), distribution=rng_uniform\n"
                      "  ROOT t = (f64[7], s32[5]) tuple(n, i)\n}\n");
  CHECK(m != NULL);
  if (!m) return;
  FxError e = {0};
  RtTensor *r = run(m, NULL, 0, 99, &e);
  CHECK(r != NULL && r->type == IR_TUPLE && r->ntuple == 2);
  if (!r) return;
  const IrInstr *n = ir_module_find_instr(m, "n"), *i = ir_module_find_instr(m, "i");
  const double *nv = r->tuple[0]->data;
  const int32_t *iv = r->tuple[1]->data;
  double sum = 0;
  for (int g = 0; g < 4; g++) {
    double want[2];
    int64_t wi[2];
    rt_rng_thread_f64(rt_rng_key(99, n->id), (uint64_t)g, 0, 1, 1.5, 0.25, want);
    rt_rng_thread_int(rt_rng_key(99, i->id), (uint64_t)g, 0, -10, 20, wi);
    for (int j = 0; j < 2 && g * 2 + j < 7; j++) {
      CHECK(memcmp(&nv[g * 2 + j], &want[j], 8) == 0);
      sum += nv[g * 2 + j];
    }
    for (int j = 0; j < 2 && g * 2 + j < 5; j++) CHECK(iv[g * 2 + j] == wi[j]);
  }
  CHECK(fabs(sum / 7 - 1.5) < 0.5);
  for (int k = 0; k < 5; k++) CHECK(iv[k] >= -10 && iv[k] < 20);
  rt_tensor_unref(r);
  ir_module_free(m);
}

/* An rng drawn again (here in each trip of a while loop) continues its stream: the d-th draw uses
 * offset 4 d, so trips differ. */
TEST(rng_in_a_loop_draws_fresh_numbers) {
  IrModule *m = parse("HloModule r\n"
                      "cond {\n  p = (s32[], f32[4]) parameter(0)\n  c = s32[] get-tuple-element(p), index=0\n"
                      "  two = s32[] constant(2)\n  ROOT lt = pred[] compare(c, two), direction=LT\n}\n"
                      "body {\n  p = (s32[], f32[4]) parameter(0)\n  c = s32[] get-tuple-element(p), index=0\n"
                      "  one = s32[] constant(1)\n  c1 = s32[] add(c, one)\n"
                      "  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n"
                      "  r = f32[4] rng(lo, hi), distribution=rng_uniform\n"
                      "  ROOT t = (s32[], f32[4]) tuple(c1, r)\n}\n"
                      "ENTRY main {\n  z = s32[] constant(0)\n  f = f32[] constant(0)\n  b = f32[4] broadcast(f), dimensions={}\n"
                      "  init = (s32[], f32[4]) tuple(z, b)\n"
                      "  w = (s32[], f32[4]) while(init), condition=cond, body=body\n"
                      "  ROOT out = f32[4] get-tuple-element(w), index=1\n}\n");
  CHECK(m != NULL);
  if (!m) return;
  FxError e = {0};
  RtTensor *r = run(m, NULL, 0, 5, &e);
  CHECK(r != NULL);
  if (!r) return;
  const IrInstr *ri = ir_module_find_instr(m, "r");
  float d0[4], d1[4];
  rt_rng_thread_f32(rt_rng_key(5, ri->id), 0, 0, 0, 0.0f, 1.0f, d0);
  rt_rng_thread_f32(rt_rng_key(5, ri->id), 0, 1, 0, 0.0f, 1.0f, d1);
  CHECK(memcmp(r->data, d1, sizeof d1) == 0); /* the second trip's draw */
  CHECK(memcmp(d0, d1, sizeof d0) != 0);
  rt_tensor_unref(r);
  ir_module_free(m);
}

/* The CPU backend draws the same bits as the interpreter (rng feeding a generated kernel). */
TEST(cpu_backend_draws_the_same_bits) {
  IrModule *m = parse("HloModule r\nENTRY main {\n  x = f32[1000] parameter(0)\n"
                      "  lo = f32[] constant(-1)\n  hi = f32[] constant(1)\n"
                      "  u = f32[1000] rng(lo, hi), distribution=rng_uniform\n"
                      "  mu = f32[] constant(0)\n  sd = f32[] constant(2)\n"
                      "  z = f32[1000] rng(mu, sd), distribution=rng_normal\n"
                      "  a = f32[1000] add(u, z)\n  ROOT y = f32[1000] multiply(a, x)\n}\n");
  CHECK(m != NULL);
  if (!m) return;
  FxError e = {0};
  void *be = rt_backend_cpu.create(&e);
  CHECK(be != NULL);
  if (!be) return;
  CpuOptions o = {.opt = "-O1"};
  cpu_set_options(be, &o);
  CHECK(rt_backend_cpu.prepare(be, (const IrModule *const *)&m, 1, &e));
  int64_t n = 1000;
  RtTensor *x = rt_tensor_new(IR_F32, 1, &n, &e);
  rt_tensor_fill_random(x, 1, 0);
  RtTensor *got = NULL, *want = NULL;
  RtOptions ro = {.seed = 11};
  RtRunStats st = {0};
  CHECK(rt_backend_cpu.run(be, m, &x, 1, &ro, &got, &st, &e));
  CHECK(rt_interp_run(m, &x, 1, &ro, &want, NULL, &e));
  CHECK(got && want && got->bytes == want->bytes && memcmp(got->data, want->data, got->bytes) == 0);
  rt_run_stats_free(&st);
  rt_tensor_unref(got);
  rt_tensor_unref(want);
  rt_tensor_unref(x);
  rt_backend_cpu.destroy(be);
  ir_module_free(m);
}

/* ---------- rng-bit-generator ---------- */

static RtTensor *rbg(const char *shape, const char *alg, const uint64_t *state, int nstate, FxError *e) {
  char text[512];
  snprintf(text, sizeof text,
           "HloModule b\nENTRY main {\n  s = u64[%d] parameter(0)\n  ROOT r = (u64[%d], %s) rng-bit-generator(s), "
           "algorithm=%s\n}\n",
           nstate, nstate, shape, alg);
  IrModule *m = parse(text);
  if (!m) return NULL;
  int64_t ns = nstate;
  RtTensor *st = rt_tensor_new(IR_U64, 1, &ns, e);
  memcpy(st->data, state, sizeof(uint64_t) * (size_t)nstate);
  RtTensor *r = run(m, &st, 1, 0, e);
  rt_tensor_unref(st);
  ir_module_free(m);
  return r;
}

TEST(rng_bit_generator_philox_known_answers) {
  FxError e = {0};
  /* State (key, counter low, counter high) = 0: Philox4x32-10 of counter 0 under key 0. */
  uint64_t s0[3] = {0, 0, 0};
  RtTensor *r = rbg("u32[6]", "rng_philox", s0, 3, &e);
  CHECK(r != NULL);
  if (!r) return;
  const uint32_t *b = r->tuple[1]->data;
  const uint64_t *ns = r->tuple[0]->data;
  CHECK(b[0] == 0x6627e8d5u && b[1] == 0xe169c58du && b[2] == 0xbc57ac4cu && b[3] == 0x9b00dbd8u);
  uint32_t c1[4] = {1, 0, 0, 0}, k0[2] = {0, 0}, w[4];
  rt_philox4x32_10(c1, k0, w);
  CHECK(b[4] == w[0] && b[5] == w[1]);              /* the second block, truncated */
  CHECK(ns[0] == 0 && ns[1] == 2 && ns[2] == 0);    /* two blocks drawn */
  rt_tensor_unref(r);
  /* All ones: the counter carries into its high word. */
  uint64_t s1[3] = {~0ull, ~0ull, ~0ull};
  r = rbg("u32[4]", "rng_default", s1, 3, &e);
  CHECK(r != NULL);
  if (!r) return;
  b = r->tuple[1]->data;
  ns = r->tuple[0]->data;
  CHECK(b[0] == 0x408f276du && b[1] == 0x41c83b0eu && b[2] == 0xa20bc7c6u && b[3] == 0x6d5451fdu);
  CHECK(ns[0] == ~0ull && ns[1] == 0 && ns[2] == 0);
  rt_tensor_unref(r);
  /* Random123's third vector as 64-bit words: pairs of 32-bit outputs, low word first. */
  uint64_t s2[3] = {0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull};
  r = rbg("u64[2]", "rng_philox", s2, 3, &e);
  CHECK(r != NULL);
  if (!r) return;
  const uint64_t *b64 = r->tuple[1]->data;
  CHECK(b64[0] == 0x94fdccebd16cfe09ull && b64[1] == 0x24126ea15001e420ull);
  CHECK(((uint64_t *)r->tuple[0]->data)[1] == 0x85a308d3243f6a89ull);
  rt_tensor_unref(r);
  /* A two-word state: the key doubles as the counter's high word; u8 keeps the low byte. */
  uint64_t s3[2] = {0, 0};
  r = rbg("u8[3]", "rng_philox", s3, 2, &e);
  CHECK(r != NULL);
  if (!r) return;
  const uint8_t *b8 = r->tuple[1]->data;
  CHECK(b8[0] == 0xd5 && b8[1] == 0x8d && b8[2] == 0x4c);
  CHECK(((uint64_t *)r->tuple[0]->data)[1] == 1);
  rt_tensor_unref(r);
}

TEST(rng_bit_generator_three_fry) {
  FxError e = {0};
  /* u64: both words of Threefry-2x32-20 (Random123's known answer for key 0, counter 0). */
  uint64_t s0[2] = {0, 0};
  RtTensor *r = rbg("u64[3]", "rng_three_fry", s0, 2, &e);
  CHECK(r != NULL);
  if (!r) return;
  const uint64_t *b64 = r->tuple[1]->data;
  CHECK(b64[0] == 0x99ba4efe6b200159ull);
  uint32_t o[2];
  rt_threefry2x32(0, 0, 2, 0, o);
  CHECK(b64[2] == ((uint64_t)o[1] << 32 | o[0]));
  CHECK(((uint64_t *)r->tuple[0]->data)[1] == 3);
  rt_tensor_unref(r);
  /* u32[3,2]: the first even dimension (1) is split; element (i, 2j + h) is word h of
   * counter + (i, j) in the half shape [3, 1]. */
  uint64_t key = 0x0370734413198a2eull, ctr = 0x85a308d3243f6a88ull;
  uint64_t s1[2] = {key, ctr};
  r = rbg("u32[3,2]", "rng_three_fry", s1, 2, &e);
  CHECK(r != NULL);
  if (!r) return;
  const uint32_t *b = r->tuple[1]->data;
  rt_threefry2x32(0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u, o);
  CHECK(b[0] == 0xc4923a9cu && b[1] == 0x483df7a0u && o[0] == 0xc4923a9cu);
  for (int i = 0; i < 3; i++) {
    uint64_t c = ctr + (uint64_t)i;
    rt_threefry2x32(0x13198a2eu, 0x03707344u, (uint32_t)c, (uint32_t)(c >> 32), o);
    CHECK(b[2 * i] == o[0] && b[2 * i + 1] == o[1]);
  }
  CHECK(((uint64_t *)r->tuple[0]->data)[1] == ctr + 3);
  rt_tensor_unref(r);
  /* u16[3]: no even dimension, so the largest (0) is split into halves of 2: elements 0 and 1
   * are the words of counter + 0, element 2 word 0 of counter + 1; two counters used. */
  r = rbg("u16[3]", "rng_three_fry", s0, 2, &e);
  CHECK(r != NULL);
  if (!r) return;
  const uint16_t *b16 = r->tuple[1]->data;
  CHECK(b16[0] == 0x0159 && b16[1] == 0x4efe);
  rt_threefry2x32(0, 0, 1, 0, o);
  CHECK(b16[2] == (uint16_t)o[0]);
  CHECK(((uint64_t *)r->tuple[0]->data)[1] == 2);
  rt_tensor_unref(r);
}

/* Vectors from XLA itself (jax.lax.rng_bit_generator on XLA:CPU, jax 0.10.2, which passes a
 * u64[2] state); tests/rng/rbg_xla.py checks random cases live where jax is installed. */
TEST(rng_bit_generator_matches_xla_vectors) {
  FxError e = {0};
  uint64_t s0[2] = {0x299f31d0a4093822ull, ~0ull};
  RtTensor *r = rbg("u32[5]", "rng_philox", s0, 2, &e);
  CHECK(r != NULL);
  if (!r) return;
  static const uint32_t want0[5] = {0x8afac528u, 0xe12e7e89u, 0x1a09595du, 0x3b9f5a98u, 0x3b4df466u};
  CHECK(memcmp(r->tuple[1]->data, want0, sizeof want0) == 0);
  CHECK(((uint64_t *)r->tuple[0]->data)[0] == 0x299f31d0a4093822ull && ((uint64_t *)r->tuple[0]->data)[1] == 1);
  rt_tensor_unref(r);
  uint64_t s1[2] = {0x299f31d0a4093822ull, 0x85a308d3243f6a88ull};
  r = rbg("u64[3]", "rng_default", s1, 2, &e);
  CHECK(r != NULL);
  if (!r) return;
  static const uint64_t want1[3] = {0xd58bd60f43df0ae0ull, 0xd9fa643194bb9ecaull, 0x1a6eb51c388823edull};
  CHECK(memcmp(r->tuple[1]->data, want1, sizeof want1) == 0);
  CHECK(((uint64_t *)r->tuple[0]->data)[1] == 0x85a308d3243f6a8aull);
  rt_tensor_unref(r);
  uint64_t s2[2] = {5, 7};
  r = rbg("u8[2,3]", "rng_philox", s2, 2, &e);
  CHECK(r != NULL);
  if (!r) return;
  static const uint8_t want2[6] = {0xf1, 0xa8, 0xa7, 0x39, 0x3c, 0xb1};
  CHECK(memcmp(r->tuple[1]->data, want2, sizeof want2) == 0);
  CHECK(((uint64_t *)r->tuple[0]->data)[1] == 9);
  rt_tensor_unref(r);
  uint64_t s3[2] = {9, 11};
  r = rbg("u32[5]", "rng_three_fry", s3, 2, &e);
  CHECK(r != NULL);
  if (!r) return;
  static const uint32_t want3[5] = {0xc7d3c300u, 0x4d23541cu, 0x5aab96b1u, 0x184ac9edu, 0xf7864784u};
  CHECK(memcmp(r->tuple[1]->data, want3, sizeof want3) == 0);
  CHECK(((uint64_t *)r->tuple[0]->data)[1] == 0xe);
  rt_tensor_unref(r);
  uint64_t s4[2] = {0x0370734413198a2eull, 0x85a308d3243f6a88ull};
  r = rbg("u32[2,3]", "rng_three_fry", s4, 2, &e);
  CHECK(r != NULL);
  if (!r) return;
  static const uint32_t want4[6] = {0xc4923a9cu, 0xc2a0aee5u, 0x7bac4da8u, 0x483df7a0u, 0x2d80089bu, 0xf906f7fcu};
  CHECK(memcmp(r->tuple[1]->data, want4, sizeof want4) == 0);
  CHECK(((uint64_t *)r->tuple[0]->data)[1] == 0x85a308d3243f6a8bull);
  rt_tensor_unref(r);
}

TEST(rng_bit_generator_errors_are_located) {
  FxError e = {0};
  uint64_t s[3] = {0, 0, 0};
  RtTensor *r = rbg("u32[4]", "rng_three_fry", s, 3, &e);
  CHECK(r == NULL);
  CHECK_STR(e.msg, "r: rng_three_fry takes a u64[2] state (key, counter)");
  CHECK(e.line == 4 && e.col > 0);
}

/* `run` shows u64 values (rng-bit-generator's state and bits) as unsigned numbers. */
/* rng-get-and-update-state: XLA's 128-bit state per instruction, from 0x7012395, returned as
 * {low, high} before adding delta; in a loop each trip sees the next state. */
TEST(rng_get_and_update_state_in_a_loop) {
  static const char *text =
      "HloModule rgus\n"
      "body {\n"
      "  p = (s32[], u64[2]) parameter(0)\n"
      "  i = s32[] get-tuple-element(p), index=0\n"
      "  one = s32[] constant(1)\n"
      "  n = s32[] add(i, one)\n"
      "  st = u64[2] rng-get-and-update-state(), delta=5\n"
      "  ROOT t = (s32[], u64[2]) tuple(n, st)\n"
      "}\n"
      "cond {\n"
      "  p = (s32[], u64[2]) parameter(0)\n"
      "  i = s32[] get-tuple-element(p), index=0\n"
      "  lim = s32[] constant(3)\n"
      "  ROOT lt = pred[] compare(i, lim), direction=LT\n"
      "}\n"
      "ENTRY main {\n"
      "  z = s32[] constant(0)\n"
      "  s0 = u64[2] constant({0, 0})\n"
      "  init = (s32[], u64[2]) tuple(z, s0)\n"
      "  w = (s32[], u64[2]) while(init), condition=cond, body=body\n"
      "  first = u64[2] rng-get-and-update-state(), delta=9223372036854775807\n"
      "  again = u64[2] rng-get-and-update-state(), delta=1\n"
      "  last = u64[2] get-tuple-element(w), index=1\n"
      "  ROOT r = (u64[2], u64[2], u64[2]) tuple(last, first, again)\n"
      "}\n";
  IrModule *m = parse(text);
  CHECK(m != NULL);
  if (!m) return;
  FxError e = {0};
  RtTensor *r = run(m, NULL, 0, 1, &e);
  CHECK(r != NULL);
  if (r) {
    const uint64_t *last = r->tuple[0]->data, *first = r->tuple[1]->data, *again = r->tuple[2]->data;
    CHECK(last[0] == 0x7012395ull + 2 * 5 && last[1] == 0); /* the third trip */
    CHECK(first[0] == 0x7012395ull && first[1] == 0);         /* each instruction has its own state */
    CHECK(again[0] == 0x7012395ull && again[1] == 0);
  }
  rt_tensor_unref(r);
  ir_module_free(m);
}

TEST(run_prints_u64_bits_unsigned) {
  const char *text = "HloModule u\nENTRY main {\n  s = u64[2] constant({5, 7})\n"
                     "  ROOT r = (u64[2], u64[2]) rng-bit-generator(s), algorithm=rng_philox\n}\n";
  Session s;
  memset(&s, 0, sizeof s);
  IrModule *m = parse(text);
  CHECK(m != NULL);
  if (!m) return;
  CHECK(explain_engine_init(&s.eng));
  explain_engine_set_input(&s.eng, m); /* the engine owns m, its stages and their plans */
  s.err = stderr;
  char *buf = NULL;
  size_t len = 0;
  s.out = open_memstream(&buf, &len);
  FxError err = {0};
  char *argv[] = {"run", "--backend", "interp"};
  CHECK(repl_command_lookup("run")->run(&s, 3, argv, &err));
  fclose(s.out);
  uint64_t state[2] = {5, 7}, ns[2], bits[2];
  int64_t dims[1] = {2};
  CHECK(rt_rng_bit_generator(RT_RBG_PHILOX, state, 2, 1, dims, 8, bits, ns) == 0);
  CHECK(bits[0] > (1ull << 63) || bits[1] > (1ull << 63)); /* the case this test is about */
  char want[160];
  snprintf(want, sizeof want, "out.1: u64[2]  min %.6g  max %.6g  mean %.6g  first %llu %llu\n",
           (double)(bits[0] < bits[1] ? bits[0] : bits[1]), (double)(bits[0] < bits[1] ? bits[1] : bits[0]),
           ((double)bits[0] + (double)bits[1]) / 2, (unsigned long long)bits[0], (unsigned long long)bits[1]);
  CHECK_CONTAINS(buf, "out.0: u64[2]  min 5  max 8  mean 6.5  first 5 8\n");
  CHECK_CONTAINS(buf, want);
  free(buf);
  explain_engine_fini(&s.eng);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/fxrngXXXXXX");
  if (!mkdtemp(dir)) return 1;
  setenv("FXPLAIN_CACHE_DIR", dir, 1);
  RUN(rng_uniform_f32_is_curands_philox_stream);
  RUN(rng_normal_f64_and_integers_follow_the_layout);
  RUN(rng_in_a_loop_draws_fresh_numbers);
  RUN(cpu_backend_draws_the_same_bits);
  RUN(rng_bit_generator_philox_known_answers);
  RUN(rng_bit_generator_three_fry);
  RUN(rng_bit_generator_matches_xla_vectors);
  RUN(rng_bit_generator_errors_are_located);
  RUN(rng_get_and_update_state_in_a_loop);
  RUN(run_prints_u64_bits_unsigned);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
