/* emit.c — the kernel emitter (see emit.h): turns a fusion (or one unfused op) into the body of a
 * loop over its output elements, plus the C wrapper that cpu.c compiles.
 *
 * How a body is generated: like XLA's elemental emitter, each instruction knows how to produce
 * its value at a given multi-index, asking its operands for their values at the indices it needs
 * (a broadcast maps the index down, a transpose permutes it, a slice offsets it, a reduce loops
 * over the reduced dimensions). Values become SSA-like local variables; a value asked for twice at
 * the same index in the same scope is computed once (a memo keyed by instruction and index
 * variables). Loops and branches open scopes; values computed inside are forgotten when they
 * close. Reducers, comparators and map functions are scalar computations inlined with their
 * parameters bound to the accumulator and the element. Reads of kernel inputs are loads from
 * in<k>; index arithmetic uses the shapes' constant strides so the compiler can vectorize. */
#include "emit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* ---------- buffers ---------- */

void emit_buf_init(EmitBuf *b) { memset(b, 0, sizeof *b); }
void emit_buf_free(EmitBuf *b) {
  fx_free(b->s);
  memset(b, 0, sizeof *b);
}

void emit_printf(EmitBuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->cap ? b->s + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = true;
      return;
    }
    if ((size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t nc = b->cap ? b->cap * 2 : 4096;
    while (nc < b->len + (size_t)n + 1) nc *= 2;
    char *ns = fx_realloc(b->s, nc);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns;
    b->cap = nc;
  }
}

/* [A-Za-z0-9_]: a C identifier's characters. */
static bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

void emit_sanitize(const char *s, char *out, size_t n) {
  if (!n) return;
  size_t k = 0;
  if (s && (*s >= '0' && *s <= '9') && k + 1 < n) out[k++] = 'n';
  for (; s && *s && k + 1 < n; s++) out[k++] = ident_char(*s) ? *s : '_';
  out[k] = 0;
}

/* ---------- types ---------- */

const char *emit_storage_type(IrType t) {
  switch (t) {
  case IR_PRED: case IR_U8: return "uint8_t";
  case IR_S8: return "int8_t";
  case IR_S16: return "int16_t";
  case IR_U16: return "uint16_t";
  case IR_S32: return "int32_t";
  case IR_U32: return "uint32_t";
  case IR_S64: return "int64_t";
  case IR_U64: return "uint64_t";
  case IR_F16: case IR_BF16: return "uint16_t";
  case IR_F32: return "float";
  case IR_F64: return "double";
  default: return NULL;
  }
}

const char *emit_compute_type(IrType t) {
  if (t == IR_F16 || t == IR_BF16) return "float";
  return emit_storage_type(t);
}

static bool is_f(IrType t) { return ir_type_is_float(t); }
static bool is_u(IrType t) { return t == IR_U8 || t == IR_U16 || t == IR_U32 || t == IR_U64 || t == IR_PRED; }
static int bits_of(IrType t) { return t == IR_PRED ? 1 : ir_type_bytes(t) * 8; }
static const char *wide_u(IrType t) { return bits_of(t) > 32 ? "uint64_t" : "uint32_t"; }

/* ---------- the prelude ---------- */

/* Vector math. The CPU backend compiles the unit with -DFX_VECMATH=1 when a vector math library
 * with the GNU vector ABI is there (SLEEF's libsleefgnuabi: _ZGVeN16v_sinf and so on); these
 * declarations then tell the compiler that every listed function has vector variants, so a loop
 * whose body calls sinf/cosf/expf vectorizes at the widest SIMD -march=native allows (16 floats
 * with AVX-512) instead of calling libm once per element. SLEEF's u10 functions are within 1 ulp
 * of the exact result, as libm's are, but not always the same ulp: results stay within the
 * tolerance `--check` uses, not bit-identical to the interpreter's. Without the library the unit
 * compiles as before, scalar against libm. */
static const char *const vec_math_fns[] = {"sin", "cos", "tan", "exp", "expm1", "log", "log1p", "tanh", "erf", "cbrt"};
static const char *const vec_math_fns2[] = {"pow", "atan2"};

static void emit_vecmath_decls(EmitBuf *b) {
  /* The declarations and the optimize pragma are gcc's: with another compiler (clang) the unit
   * takes the scalar libm path. The pragma keeps gcc from sinking the work of a select's arms
   * into branches and from duplicating the blocks between two selects on the same predicate,
   * which the vectorizer then cannot if-convert back (the CartPole step kernel stayed scalar
   * without the first, its 10x unrolled kernel without the second). */
  emit_printf(b, "#if defined(FX_VECMATH) && FX_VECMATH && (!defined(__GNUC__) || defined(__clang__))\n"
                 "#undef FX_VECMATH\n"
                 "#endif\n"
                 "#if defined(FX_VECMATH) && FX_VECMATH\n"
                 "#pragma GCC optimize(\"no-tree-sink\", \"no-thread-jumps\")\n"
                 "#define FX_VDECL __attribute__((simd(\"notinbranch\"), const, nothrow))\n");
  for (size_t f = 0; f < sizeof vec_math_fns / sizeof *vec_math_fns; f++)
    emit_printf(b, "FX_VDECL float %sf(float); FX_VDECL double %s(double);\n", vec_math_fns[f], vec_math_fns[f]);
  for (size_t f = 0; f < sizeof vec_math_fns2 / sizeof *vec_math_fns2; f++)
    emit_printf(b, "FX_VDECL float %sf(float, float); FX_VDECL double %s(double, double);\n", vec_math_fns2[f],
                vec_math_fns2[f]);
  emit_printf(b, "#endif\n");
}

/* The compiler flags such a unit needs: -fno-builtin-sinf and the like keep gcc from merging a
 * sinf/cosf pair into one scalar sincosf call (which has no vector variant); -fopenmp-simd makes
 * the `omp simd` of emit_c_wrapper's elementwise loops count (the iterations are independent: each
 * writes its own element, the buffers are restrict). gcc and clang both take them. */
void emit_vecmath_flags(char *out, size_t n) {
  snprintf(out, n, "-fopenmp-simd -fno-builtin-sinf -fno-builtin-cosf -fno-builtin-sin -fno-builtin-cos");
}

void emit_prelude(EmitBuf *b, EmitTarget t) {
  if (t == EMIT_TARGET_C) {
    emit_printf(b,
                "/* generated by fxplain: kernels of one stage */\n"
                "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n"
                "#define FX_FN static inline __attribute__((unused))\n");
    emit_vecmath_decls(b);
  } else {
    emit_printf(b,
                "/* generated by fxplain: kernels of one stage */\n"
                "typedef signed char int8_t; typedef unsigned char uint8_t; typedef short int16_t;\n"
                "typedef unsigned short uint16_t; typedef int int32_t; typedef unsigned int uint32_t;\n"
                "typedef long long int64_t; typedef unsigned long long uint64_t;\n"
                "#define FX_FN static __device__ __forceinline__\n");
  }
  emit_printf(b, "%s",
              "FX_FN uint32_t fx_fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }\n"
              "FX_FN float fx_bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }\n"
              "FX_FN float fx_nanf(void) { return fx_bitsf(0x7fc00000u); }\n"
              "FX_FN float fx_inff(void) { return fx_bitsf(0x7f800000u); }\n"
              "FX_FN double fx_nan(void) { uint64_t u = 0x7ff8000000000000ull; double d; memcpy(&d, &u, 8); return d; }\n"
              "FX_FN double fx_inf(void) { uint64_t u = 0x7ff0000000000000ull; double d; memcpy(&d, &u, 8); return d; }\n"
              "FX_FN uint16_t fx_f2h(float f) {\n"
              "  uint32_t x = fx_fbits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;\n"
              "  if (ax >= 0x7f800000u) return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));\n"
              "  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);\n"
              "  if (ax < 0x38800000u) {\n"
              "    if (ax < 0x33000000u) return (uint16_t)sign;\n"
              "    uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u; int s = 126 - (int)e;\n"
              "    uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);\n"
              "    if (rem > half || (rem == half && (q & 1))) q++;\n"
              "    return (uint16_t)(sign | q);\n"
              "  }\n"
              "  return (uint16_t)(sign | ((ax + 0xc8000fffu + ((ax >> 13) & 1)) >> 13));\n"
              "}\n"
              "FX_FN float fx_h2f(uint16_t h) {\n"
              "  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;\n"
              "  if (e == 0) { float v = (float)m * 5.9604644775390625e-08f; return sign ? -v : v; }\n"
              "  if (e == 31) return fx_bitsf(sign | 0x7f800000u | (m << 13));\n"
              "  return fx_bitsf(sign | ((e + 112) << 23) | (m << 13));\n"
              "}\n"
              "FX_FN uint16_t fx_f2bf(float f) {\n"
              "  uint32_t x = fx_fbits(f);\n"
              "  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);\n"
              "  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);\n"
              "}\n"
              "FX_FN float fx_bf2f(uint16_t h) { return fx_bitsf((uint32_t)h << 16); }\n"
              "FX_FN float fx_rh(float x) { return fx_h2f(fx_f2h(x)); }\n"
              "FX_FN float fx_rbf(float x) { return fx_bf2f(fx_f2bf(x)); }\n"
              "FX_FN float fx_maxf(float x, float y) { return (x != x || y != y) ? fx_nanf() : x > y ? x : x < y ? y : (signbit(x) ? y : x); }\n"
              "FX_FN float fx_minf(float x, float y) { return (x != x || y != y) ? fx_nanf() : x < y ? x : x > y ? y : (signbit(x) ? x : y); }\n"
              "FX_FN double fx_maxd(double x, double y) { return (x != x || y != y) ? fx_nan() : x > y ? x : x < y ? y : (signbit(x) ? y : x); }\n"
              "FX_FN double fx_mind(double x, double y) { return (x != x || y != y) ? fx_nan() : x < y ? x : x > y ? y : (signbit(x) ? x : y); }\n"
              "FX_FN float fx_signf(float x) { return x != x ? x : x > 0 ? 1.0f : x < 0 ? -1.0f : x; }\n"
              "FX_FN double fx_signd(double x) { return x != x ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : x; }\n"
              "FX_FN int64_t fx_sdiv(int64_t a, int64_t b) { return b == 0 ? -1 : b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b; }\n"
              "FX_FN int64_t fx_srem(int64_t a, int64_t b) { return b == 0 ? a : b == -1 ? 0 : a % b; }\n"
              "FX_FN uint64_t fx_udiv(uint64_t a, uint64_t b) { return b == 0 ? ~0ull : a / b; }\n"
              "FX_FN uint64_t fx_urem(uint64_t a, uint64_t b) { return b == 0 ? a : a % b; }\n"
              "FX_FN uint64_t fx_mask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }\n"
              "FX_FN int64_t fx_sext(uint64_t v, int bits) { if (bits >= 64) return (int64_t)v; uint64_t m = 1ull << (bits - 1); v &= fx_mask(bits); return (int64_t)((v ^ m) - m); }\n"
              "FX_FN uint64_t fx_shl(uint64_t a, uint64_t s, int bits) { a &= fx_mask(bits); s &= fx_mask(bits); return s >= (uint64_t)bits ? 0 : a << s; }\n"
              "FX_FN uint64_t fx_shrl(uint64_t a, uint64_t s, int bits) { a &= fx_mask(bits); s &= fx_mask(bits); return s >= (uint64_t)bits ? 0 : a >> s; }\n"
              "FX_FN int64_t fx_shra(uint64_t a, uint64_t s, int bits) { int64_t v = fx_sext(a, bits); s &= fx_mask(bits); return s >= (uint64_t)bits ? (v < 0 ? -1 : 0) : v >> s; }\n"
              "FX_FN int64_t fx_f2i(double v, int bits) {\n"
              "  if (v != v) return 0; double lim = ldexp(1.0, bits - 1);\n"
              "  if (v <= -lim) return bits >= 64 ? (int64_t)(1ull << 63) : -(int64_t)(1ull << (bits - 1));\n"
              "  if (v >= lim) return bits >= 64 ? (int64_t)(~0ull >> 1) : (int64_t)((1ull << (bits - 1)) - 1);\n"
              "  return (int64_t)v;\n"
              "}\n"
              "FX_FN uint64_t fx_f2u(double v, int bits) {\n"
              "  if (v != v || v <= 0) return 0; double lim = bits >= 64 ? 18446744073709551615.0 : (double)((1ull << bits) - 1);\n"
              "  if (v >= lim) return fx_mask(bits);\n"
              "  return (uint64_t)v;\n"
              "}\n"
              "FX_FN int32_t fx_totalf(float f) { int32_t k = (int32_t)fx_fbits(f); return k < 0 ? (int32_t)((uint32_t)k ^ 0x7fffffffu) : k; }\n"
              "FX_FN int64_t fx_totald(double d) { int64_t k; memcpy(&k, &d, 8); return k < 0 ? (int64_t)((uint64_t)k ^ 0x7fffffffffffffffull) : k; }\n"
              "FX_FN uint64_t fx_ipow(uint64_t a, int64_t e, int is_signed) {\n"
              "  if (is_signed && e < 0) { int64_t s = (int64_t)a; return s == 1 ? 1 : s == -1 ? ((e & 1) ? ~0ull : 1) : 0; }\n"
              "  uint64_t acc = 1, base = a, x = (uint64_t)e; while (x) { if (x & 1) acc *= base; base *= base; x >>= 1; } return acc;\n"
              "}\n"
              "FX_FN int fx_popc(uint64_t u) { int n = 0; while (u) { u &= u - 1; n++; } return n; }\n"
              "FX_FN int fx_clz(uint64_t u, int bits) { int n = bits; while (u) { u >>= 1; n--; } return n; }\n"
              "FX_FN uint32_t fx_rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }\n"
              "FX_FN uint32_t fx_threefry(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, int word) {\n"
              "  uint32_t ks2 = 0x1BD11BDAu ^ k0 ^ k1, x0 = c0 + k0, x1 = c1 + k1;\n"
              "#define FX_TF_R(r) x0 += x1; x1 = fx_rotl(x1, r); x1 ^= x0;\n"
              "  FX_TF_R(13) FX_TF_R(15) FX_TF_R(26) FX_TF_R(6) x0 += k1; x1 += ks2 + 1u;\n"
              "  FX_TF_R(17) FX_TF_R(29) FX_TF_R(16) FX_TF_R(24) x0 += ks2; x1 += k0 + 2u;\n"
              "  FX_TF_R(13) FX_TF_R(15) FX_TF_R(26) FX_TF_R(6) x0 += k0; x1 += k1 + 3u;\n"
              "  FX_TF_R(17) FX_TF_R(29) FX_TF_R(16) FX_TF_R(24) x0 += k1; x1 += ks2 + 4u;\n"
              "  FX_TF_R(13) FX_TF_R(15) FX_TF_R(26) FX_TF_R(6) x0 += ks2; x1 += k0 + 5u;\n"
              "#undef FX_TF_R\n"
              "  return word ? x1 : x0;\n"
              "}\n"
              "FX_FN int64_t fx_clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }\n"
              "FX_FN float fx_rpf(float f, int eb, int mb) {\n"
              "  if (f != f) return f; uint32_t x = fx_fbits(f);\n"
              "  if (mb < 23) { uint32_t last = 1u << (23 - mb), half = (last >> 1) - 1; x = (x + half + ((x >> (23 - mb)) & 1)) & ~(last - 1); }\n"
              "  if (eb < 8) { uint32_t sign = x & 0x80000000u; int32_t e = (int32_t)((x >> 23) & 0xff) - 127, emax = (1 << (eb - 1)) - 1;\n"
              "    if (e > emax) x = sign | 0x7f800000u; else if (e < 1 - emax) x = sign; }\n"
              "  return fx_bitsf(x);\n"
              "}\n\n");
}

/* ---------- generation context ---------- */

typedef struct {
  char s[32];
} Val;

typedef struct {
  const IrInstr *instr;
  int which; /* tuple element for variadic reduces, else 0 */
  char key[160];
  Val v;
  int depth;
  int next; /* the previous entry in the same hash bucket, or -1 */
} Memo;

/* The memo is a stack (scopes pop it) with a hash index over it, so a lookup does not scan every
   value of a large kernel. Entries are popped newest first, so each is the head of its bucket. */
enum { MEMO_BUCKETS = 1 << 14 };

typedef struct {
  const IrInstr *param;
  Val v;
} Bind;

typedef struct {
  EmitBuf *b;
  const EmitKernel *k;
  EmitTarget t;
  int indent, depth, nvar;
  Memo *memo;
  int nmemo, capmemo;
  int *heads; /* MEMO_BUCKETS chain heads (indices into memo, -1 for none) */
  Bind binds[256];
  int nbinds;
  const IrComputation *fcomp; /* the fused computation, or NULL for a single op */
  int nest;                   /* gen_which calls in progress (see pregen) */
  FxError *err;
  bool fail;
  /* loop-invariant values (see "hoisting" below) */
  struct {
    size_t at;  /* where the loop's `for` line starts in b: values of lower levels go there */
    int indent;
  } loops[64];
  int nloops;       /* loops open: the level of the code being written */
  int floor;        /* no value moves above this level (a branch or an inlined computation) */
  int floors[256];  /* floor saved per open scope */
  int *vlevel;      /* per variable number: the level where it is defined, or LEVEL_MUTABLE */
  int capvlevel;
  const IrInstr *pick; /* a concatenate whose operand pick_k alone is generated (a wrapper that */
  int pick_k;          /* loops over each operand's range of the concatenated dim: no branches) */
  int part_rank;       /* the wrapper's index variables i0..: 0 when not writing a C wrapper's body */
  int tile_hint;       /* a wrapper index to tile with the innermost (a load read through a
                          transpose, see transposed_load), or -1 */
  char **jexpr;        /* per variable number: an index variable's expression (transposed_load) */
  int capjexpr;
} Gen;

/* A variable that changes within its scope (an accumulator, a branch's result, a loop counter
 * outside its loop): what reads it stays where it is. */
enum { LEVEL_MUTABLE = 1 << 20 };

static bool gen_fail(Gen *g, const IrInstr *i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool gen_fail(Gen *g, const IrInstr *i, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!g->fail) fx_error_set(g->err, NULL, 0, 0, "%s: %s", i ? i->name : "kernel", msg);
  g->fail = true;
  return false;
}

static void line(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(Gen *g, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  emit_printf(g->b, "%*s%s\n", g->indent, "", buf);
}

/* A scope that is not a loop (a branch): values inside stay inside it. */
static void open_scope(Gen *g) {
  if (g->depth >= 0 && g->depth < 256) g->floors[g->depth] = g->floor;
  g->floor = g->nloops;
  g->depth++;
  g->indent += 2;
}

static unsigned memo_hash(const IrInstr *i, int which, const char *key) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)i ^ ((uint64_t)(unsigned)which << 32);
  for (; *key; key++) h = (h ^ (unsigned char)*key) * 1099511628211ull;
  return (unsigned)(h ^ (h >> 29)) & (MEMO_BUCKETS - 1);
}

/* Forgets the values computed at scope depth >= the current one. */
static void memo_pop_scope(Gen *g) {
  while (g->nmemo > 0 && g->memo[g->nmemo - 1].depth >= g->depth) {
    Memo *m = &g->memo[--g->nmemo];
    if (g->heads) g->heads[memo_hash(m->instr, m->which, m->key)] = m->next;
  }
}

static void close_scope(Gen *g) {
  memo_pop_scope(g);
  g->depth--;
  g->indent -= 2;
  if (g->depth >= 0 && g->depth < 256) g->floor = g->floors[g->depth];
}

static void set_level(Gen *g, int var, int level) {
  if (var < 0) return;
  if (var >= g->capvlevel) {
    int nc = g->capvlevel ? g->capvlevel * 2 : 256;
    while (nc <= var) nc *= 2;
    int *nl = fx_realloc(g->vlevel, sizeof *nl * (size_t)nc);
    if (!nl) {
      g->b->oom = true;
      return;
    }
    g->vlevel = nl;
    g->capvlevel = nc;
  }
  g->vlevel[var] = level;
}

static int var_number(const Val *v) {
  const char *p = v->s;
  while (*p >= 'a' && *p <= 'z') p++;
  return *p >= '0' && *p <= '9' ? atoi(p) : -1;
}

/* Accumulators, branch results, lane arrays and loop counters change within their scope; other
 * variables are defined once where they are written (def, idxvar, gen_load may move them up). */
static Val newvar(Gen *g, const char *prefix) {
  Val v;
  int n = g->nvar++;
  snprintf(v.s, sizeof v.s, "%s%d", prefix, n);
  static const char *const mutable[] = {"acc", "b", "lv", "r", "l", "w", "u"};
  bool mut = false;
  for (size_t q = 0; q < sizeof mutable / sizeof *mutable; q++) mut = mut || strcmp(prefix, mutable[q]) == 0;
  set_level(g, n, mut ? LEVEL_MUTABLE : g->nloops);
  return v;
}

/* ---------- hoisting ----------
 *
 * A value computed inside a loop (a reduction's, a dot's, a window's) that does not depend on
 * the loop's variables is written before the loop instead, at the deepest loop level its
 * operands allow: the broadcast operands of a softmax's exp(x - max) are read once per row, not
 * once per element, and the compiler can vectorize the loop (gcc could not if-convert the
 * NaN select of a loop-invariant maximum inside it). The level of an expression is the highest
 * level of the variables it reads; kernel inputs, constant tables and the wrapper's indices are
 * level 0; anything the generator does not know (an output, a scratch array) keeps it in place.
 * Values never move out of a branch or an inlined computation (the floor). The memo still forgets
 * a moved value when the scope that made it closes, so a later use makes its own: it is defined
 * in an enclosing scope, never used outside where it is defined. */

/* Marks the start of a loop whose `for` line is written next. */
static void loop_begin(Gen *g) {
  if (g->nloops < 64) {
    g->loops[g->nloops].at = g->b->len;
    g->loops[g->nloops].indent = g->indent;
  }
  g->nloops++;
}

/* The loop's scope, after its `for` line: loop_var (may be NULL) is defined at the new level. */
static void loop_open(Gen *g, const Val *loop_var) {
  if (g->depth >= 0 && g->depth < 256) g->floors[g->depth] = g->floor;
  g->depth++;
  g->indent += 2;
  if (loop_var) set_level(g, var_number(loop_var), g->nloops);
}

static void loop_close(Gen *g, const Val *loop_var) {
  close_scope(g);
  g->nloops--;
  if (loop_var) set_level(g, var_number(loop_var), LEVEL_MUTABLE);
}

static bool keyword(const char *q, size_t n) {
  static const char *const kw[] = {"float", "double", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
                                   "uint32_t", "uint64_t", "int", "long", "unsigned", "char", "short", "signed", "const"};
  for (size_t k = 0; k < sizeof kw / sizeof *kw; k++)
    if (strlen(kw[k]) == n && strncmp(q, kw[k], n) == 0) return true;
  return false;
}

/* The level an expression can be computed at (see above). */
static int expr_level(Gen *g, const char *e) {
  int level = 0;
  size_t kn = strlen(g->k->name);
  for (const char *q = e; *q;) {
    if ((*q >= '0' && *q <= '9') || (*q == '.' && q[1] >= '0' && q[1] <= '9')) { /* a number, with its suffix */
      const char *s0 = q;
      while (*q && ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '.' || *q == '_' ||
                    ((*q == '+' || *q == '-') && q > s0 && (q[-1] == 'e' || q[-1] == 'E' || q[-1] == 'p' || q[-1] == 'P'))))
        q++;
      continue;
    }
    if (!ident_char(*q)) {
      q++;
      continue;
    }
    const char *s0 = q;
    while (ident_char(*q)) q++;
    size_t n = (size_t)(q - s0);
    const char *after = q;
    while (*after == ' ') after++;
    if (*after == '(' || keyword(s0, n)) continue; /* a function, a type */
    size_t a = 0;
    while (a < n && s0[a] >= 'a' && s0[a] <= 'z') a++;
    bool digits = a > 0 && a < n;
    for (size_t d = a; d < n && digits; d++) digits = s0[d] >= '0' && s0[d] <= '9';
    int lv = g->nloops; /* unknown: stays in place */
    if (digits && ((a == 1 && s0[0] == 'i') || (a == 2 && strncmp(s0, "in", 2) == 0))) lv = 0; /* indices, inputs */
    else if (digits) {
      static const char *const prefixes[] = {"v", "j", "acc", "r", "l", "lv", "b", "w", "u"};
      bool known = false;
      for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++) known = known || (strlen(prefixes[k]) == a && strncmp(s0, prefixes[k], a) == 0);
      int num = atoi(s0 + a);
      if (known && num < g->nvar && num < g->capvlevel) lv = g->vlevel[num];
    } else if (n > kn + 2 && strncmp(s0, g->k->name, kn) == 0 && s0[kn] == '_' && s0[kn + 1] == 'c') {
      lv = 0; /* a constant table */
    }
    if (lv > level) level = lv;
    if (level >= g->nloops) return g->nloops;
  }
  return level;
}

/* Writes the definition `text` of variable v, whose value is expression e: before the loop of the
 * level e allows, or here. */
static void define(Gen *g, const Val *v, const char *text, const char *e) {
  int lv = g->nloops > 0 ? expr_level(g, e) : 0;
  if (lv < g->floor) lv = g->floor;
  if (lv >= g->nloops || lv >= 64) {
    emit_printf(g->b, "%*s%s\n", g->indent, "", text);
    set_level(g, var_number(v), g->nloops);
    return;
  }
  char buf[2200];
  int n = snprintf(buf, sizeof buf, "%*s%s\n", g->loops[lv].indent, "", text);
  if (n < 0 || (size_t)n >= sizeof buf) { /* too long to move: stays */
    emit_printf(g->b, "%*s%s\n", g->indent, "", text);
    set_level(g, var_number(v), g->nloops);
    return;
  }
  EmitBuf *b = g->b;
  size_t at = g->loops[lv].at;
  emit_printf(b, "%s", buf); /* room at the end, then moved into place */
  if (b->oom) return;
  memmove(b->s + at + n, b->s + at, b->len - (size_t)n - at);
  memcpy(b->s + at, buf, (size_t)n);
  for (int q = lv; q < g->nloops && q < 64; q++) g->loops[q].at += (size_t)n;
  set_level(g, var_number(v), lv);
}

static void memo_key(char *key, size_t n, int rank, Val *idx) {
  size_t len = 0;
  key[0] = 0;
  for (int d = 0; d < rank && len < n; d++) len += (size_t)snprintf(key + len, n - len, "%s,", idx[d].s);
}

static Val *memo_find(Gen *g, const IrInstr *i, int which, const char *key) {
  if (!g->heads) return NULL;
  for (int k = g->heads[memo_hash(i, which, key)]; k >= 0; k = g->memo[k].next)
    if (g->memo[k].instr == i && g->memo[k].which == which && strcmp(g->memo[k].key, key) == 0) return &g->memo[k].v;
  return NULL;
}

static void memo_put(Gen *g, const IrInstr *i, int which, const char *key, Val v) {
  if (!g->heads) {
    g->heads = fx_malloc(sizeof *g->heads * MEMO_BUCKETS);
    if (!g->heads) {
      g->b->oom = true;
      return;
    }
    memset(g->heads, 0xff, sizeof *g->heads * MEMO_BUCKETS); /* all -1 */
  }
  if (g->nmemo == g->capmemo) {
    int nc = g->capmemo ? g->capmemo * 2 : 64;
    Memo *nm = fx_realloc(g->memo, sizeof *nm * (size_t)nc);
    if (!nm) {
      g->b->oom = true;
      return;
    }
    g->memo = nm;
    g->capmemo = nc;
  }
  Memo *m = &g->memo[g->nmemo++];
  m->instr = i;
  m->which = which;
  snprintf(m->key, sizeof m->key, "%s", key);
  m->v = v;
  m->depth = g->depth;
  unsigned h = memo_hash(i, which, m->key);
  m->next = g->heads[h];
  g->heads[h] = g->nmemo - 1;
}

/* An index expression materialized as a variable (or a literal). */
static Val idxvar(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static Val idxvar(Gen *g, const char *fmt, ...) {
  char expr[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(expr, sizeof expr, fmt, ap);
  va_end(ap);
  /* value numbering of index arithmetic: the same expression is the same index, so the values
     read through it are recognized as the same too */
  bool cse = strlen(expr) < sizeof ((Memo *)0)->key;
  Val *m = cse ? memo_find(g, NULL, -1, expr) : NULL;
  if (m) return *m;
  Val v = newvar(g, "j");
  char text[600];
  snprintf(text, sizeof text, "const int64_t %s = %s;", v.s, expr);
  define(g, &v, text, expr);
  if (cse) memo_put(g, NULL, -1, expr, v);
  int n = var_number(&v);
  if (g->part_rank > 0 && n >= 0) { /* kept for transposed_load */
    if (n >= g->capjexpr) {
      int nc = g->capjexpr ? g->capjexpr * 2 : 256;
      while (nc <= n) nc *= 2;
      char **nj = fx_realloc(g->jexpr, sizeof *nj * (size_t)nc);
      if (nj) {
        memset(nj + g->capjexpr, 0, sizeof *nj * (size_t)(nc - g->capjexpr));
        g->jexpr = nj;
        g->capjexpr = nc;
      }
    }
    if (n < g->capjexpr && !g->jexpr[n]) g->jexpr[n] = fx_strdup(expr);
  }
  return v;
}

static Val lit_idx(int64_t x) {
  Val v;
  snprintf(v.s, sizeof v.s, "%lldll", (long long)x);
  if (x < 0) snprintf(v.s, sizeof v.s, "(%lldll)", (long long)x);
  return v;
}

/* row-major linear offset expression of idx in dims */
static void linear(char *out, size_t n, int rank, const int64_t *dims, Val *idx) {
  int64_t st = 1;
  size_t len = 0;
  out[0] = 0;
  if (rank == 0) {
    snprintf(out, n, "0");
    return;
  }
  char parts[IR_MAX_RANK][64];
  for (int d = rank - 1; d >= 0; d--) {
    snprintf(parts[d], sizeof parts[d], st == 1 ? "%s" : "%s*%lldll", idx[d].s, (long long)st);
    st *= dims[d];
  }
  for (int d = 0; d < rank && len < n; d++) len += (size_t)snprintf(out + len, n - len, "%s%s", d ? " + " : "", parts[d]);
}

/* value -> storage conversion expression */
static void to_storage(char *out, size_t n, IrType t, const char *v) {
  if (t == IR_F16) snprintf(out, n, "fx_f2h(%s)", v);
  else if (t == IR_BF16) snprintf(out, n, "fx_f2bf(%s)", v);
  else snprintf(out, n, "%s", v);
}
static void from_storage(char *out, size_t n, IrType t, const char *v) {
  if (t == IR_F16) snprintf(out, n, "fx_h2f(%s)", v);
  else if (t == IR_BF16) snprintf(out, n, "fx_bf2f(%s)", v);
  else snprintf(out, n, "%s", v);
}

/* a value expression rounded to the element type (f16/bf16 round after every op) */
static Val def(Gen *g, IrType t, const char *expr) {
  /* value numbering: the same expression over the same (single-assignment) variables is the same
     value, e.g. a producer duplicated into one fusion as NAME.clone */
  bool cse = strlen(expr) < sizeof ((Memo *)0)->key;
  if (cse) {
    Val *m = memo_find(g, NULL, (int)t, expr);
    if (m) return *m;
  }
  Val v = newvar(g, "v");
  const char *ct = emit_compute_type(t);
  char text[2048];
  if (t == IR_F16) snprintf(text, sizeof text, "const float %s = fx_rh(%s);", v.s, expr);
  else if (t == IR_BF16) snprintf(text, sizeof text, "const float %s = fx_rbf(%s);", v.s, expr);
  else snprintf(text, sizeof text, "const %s %s = (%s)(%s);", ct, v.s, ct, expr);
  define(g, &v, text, expr);
  if (cse) memo_put(g, NULL, (int)t, expr, v);
  return v;
}

/* A 64-bit integer literal written exactly. */
static void literal_i64(char *out, size_t n, IrType t, int64_t v) {
  if (t == IR_U64) snprintf(out, n, "%lluull", (unsigned long long)(uint64_t)v);
  else if (v == INT64_MIN) snprintf(out, n, "(-9223372036854775807ll - 1)");
  else snprintf(out, n, "(%s)%lldll", emit_storage_type(t), (long long)v);
}

static void literal(char *out, size_t n, IrType t, double x) {
  if (is_f(t)) {
    if (x != x) snprintf(out, n, t == IR_F64 ? "fx_nan()" : "fx_nanf()");
    else if (isinf(x)) snprintf(out, n, x > 0 ? (t == IR_F64 ? "fx_inf()" : "fx_inff()") : (t == IR_F64 ? "(-fx_inf())" : "(-fx_inff())"));
    else if (t == IR_F64) snprintf(out, n, "%.17g", x);
    else {
      float f = (float)x;
      if (t == IR_F16) f = rt_f16_to_f32(rt_f32_to_f16(f));
      if (t == IR_BF16) f = rt_bf16_to_f32(rt_f32_to_bf16(f));
      snprintf(out, n, "%.9ef", (double)f);
    }
  } else {
    literal_i64(out, n, t, t == IR_U64 ? (int64_t)(uint64_t)x : (int64_t)x);
  }
}

/* The first value of a constant, written as a C literal; 64-bit integers exactly from the
   literal's text. */
static void literal_first(char *out, size_t n, const IrInstr *c) {
  IrType t = c->shape.type;
  int64_t one;
  if ((t == IR_S64 || t == IR_U64) && ir_literal_ints(c->literal, t == IR_U64, &one, 1) >= 1) literal_i64(out, n, t, one);
  else literal(out, n, t, c->literal->values[0]);
}

static int input_of(Gen *g, const IrInstr *i) {
  if (g->fcomp) return i->op == IR_OP_PARAMETER && i->parent == g->fcomp ? (int)i->param_number : -1;
  if (i == g->k->instr) return -1;
  for (int j = 0; j < g->k->instr->noperands; j++)
    if (g->k->instr->operands[j] == i) return j;
  return -1;
}

static bool gen(Gen *g, const IrInstr *i, Val *idx, Val *out);
static bool gen_which(Gen *g, const IrInstr *i, int which, Val *idx, Val *out);
static bool gen_dot(Gen *g, const IrInstr *i, Val *idx, Val *out);

/* `res = cond ? t : e` as an if/else in which each branch computes only its own value: t at
 * index tidx, e at eidx. */
static bool gen_if_else(Gen *g, const char *cond, const IrInstr *t, Val *tidx, const IrInstr *e, Val *eidx, Val res,
                        Val *out) {
  Val a;
  line(g, "if (%s) {", cond);
  open_scope(g);
  if (!gen(g, t, tidx, &a)) return false;
  line(g, "%s = %s;", res.s, a.s);
  close_scope(g);
  line(g, "} else {");
  open_scope(g);
  if (!gen(g, e, eidx, &a)) return false;
  line(g, "%s = %s;", res.s, a.s);
  close_scope(g);
  line(g, "}");
  *out = res;
  return true;
}

/* Inlines values (instructions of scalar computation c, n of them) with c's parameters bound to
 * args; fills outs, one per value. */
static bool inline_values(Gen *g, const IrComputation *c, IrInstr *const *values, int n, const Val *args, int nargs,
                          Val *outs) {
  if (g->nbinds + nargs > 256) return gen_fail(g, NULL, "scalar computation nests too deeply");
  int save = g->nbinds;
  for (int k = 0; k < c->nparams && k < nargs; k++) {
    if (!c->params[k]) continue;
    g->binds[g->nbinds].param = c->params[k];
    g->binds[g->nbinds].v = args[k];
    g->nbinds++;
  }
  /* values of the inlined computation are private to this use: a scope of their own, which they
     do not leave */
  int floor = g->floor;
  g->floor = g->nloops;
  g->depth++;
  bool ok = true;
  for (int k = 0; k < n && ok; k++) ok = gen(g, values[k], NULL, &outs[k]);
  memo_pop_scope(g);
  g->depth--;
  g->floor = floor;
  g->nbinds = save;
  return ok;
}

/* Inlines scalar computation c with its parameters bound to args; fills outs (one per root tuple
 * element, or one). */
static bool inline_scalar(Gen *g, const IrComputation *c, const Val *args, int nargs, Val *outs, int nouts) {
  if (!c || !c->root) return gen_fail(g, NULL, "a called computation has no root");
  if (c->root->op != IR_OP_TUPLE) return inline_values(g, c, &c->root, 1, args, nargs, outs);
  int n = nouts < c->root->noperands ? nouts : c->root->noperands;
  return inline_values(g, c, c->root->operands, n, args, nargs, outs);
}

/* ---------- per-op generation ---------- */

static const char *fname(IrOpcode op, bool dbl) { return ir_math_function(op, !dbl); }

/* Value a of type t read as the bits of type rt (same width): bitcast-convert, and a bitcast that
 * changes the element type (XLA's algebraic simplifier turns a same-width bitcast-convert into
 * one). */
static bool gen_reinterpret(Gen *g, const IrInstr *i, IrType t, IrType rt, Val a, Val *out) {
  if (ir_type_bytes(t) != ir_type_bytes(rt)) return gen_fail(g, i, "a bitcast between element widths is not generated");
  Val v = newvar(g, "v");
  char st[128], back[128];
  to_storage(st, sizeof st, t, a.s);
  line(g, "%s %s_s; { %s tmp_ = %s; memcpy(&%s_s, &tmp_, sizeof tmp_); }", emit_storage_type(rt), v.s,
       emit_storage_type(t), st, v.s);
  char sname[40];
  snprintf(sname, sizeof sname, "%s_s", v.s);
  from_storage(back, sizeof back, rt, sname);
  line(g, "const %s %s = %s;", emit_compute_type(rt), v.s, back);
  *out = v;
  return true;
}

static bool gen_unary(Gen *g, const IrInstr *i, Val a, Val *out) {
  IrType t = i->operands[0]->shape.type, rt = i->shape.type;
  char e[512];
  bool dbl = t == IR_F64;
  const char *ct = emit_compute_type(rt);
  if (i->op == IR_OP_CONVERT) {
    if (is_f(t) && is_f(rt)) snprintf(e, sizeof e, "(%s)(%s)", rt == IR_F64 ? "double" : "float", a.s);
    else if (is_f(t)) {
      if (rt == IR_PRED) snprintf(e, sizeof e, "(%s != 0)", a.s);
      else if (is_u(rt)) snprintf(e, sizeof e, "fx_f2u((double)%s, %d)", a.s, bits_of(rt));
      else snprintf(e, sizeof e, "fx_f2i((double)%s, %d)", a.s, bits_of(rt));
    } else if (is_f(rt)) {
      /* through double, as the reference does */
      snprintf(e, sizeof e, "(%s)(double)%s", rt == IR_F64 ? "double" : "float", a.s);
    } else if (rt == IR_PRED) snprintf(e, sizeof e, "(%s != 0)", a.s);
    else snprintf(e, sizeof e, "(%s)%s", ct, a.s);
    *out = def(g, rt, e);
    return true;
  }
  if (i->op == IR_OP_IS_FINITE) {
    snprintf(e, sizeof e, is_f(t) ? "isfinite(%s) != 0" : "1 || %s", a.s);
    *out = def(g, rt, e);
    return true;
  }
  if (i->op == IR_OP_BITCAST_CONVERT) return gen_reinterpret(g, i, t, rt, a, out);
  if (i->op == IR_OP_REDUCE_PRECISION) {
    int64_t eb = 8, mb = 23;
    ir_attr_int(i, "exponent_bits", &eb);
    ir_attr_int(i, "mantissa_bits", &mb);
    if (dbl) {
      *out = a;
      return true;
    }
    snprintf(e, sizeof e, "fx_rpf(%s, %d, %d)", a.s, (int)eb, (int)mb);
    *out = def(g, rt, e);
    return true;
  }
  if (is_f(t)) {
    const char *fn = fname(i->op, dbl);
    const char *one = dbl ? "1.0" : "1.0f";
    switch (i->op) {
    case IR_OP_NEGATE: snprintf(e, sizeof e, "-%s", a.s); break;
    case IR_OP_RSQRT: snprintf(e, sizeof e, "%s / %s(%s)", one, dbl ? "sqrt" : "sqrtf", a.s); break;
    case IR_OP_LOGISTIC: snprintf(e, sizeof e, "%s / (%s + %s(-%s))", one, one, dbl ? "exp" : "expf", a.s); break;
    case IR_OP_SIGN: snprintf(e, sizeof e, "%s(%s)", dbl ? "fx_signd" : "fx_signf", a.s); break;
    case IR_OP_COPY: case IR_OP_REAL: snprintf(e, sizeof e, "%s", a.s); break;
    default:
      if (!fn) return gen_fail(g, i, "%s is not generated for %s", ir_op_name(i->op), ir_type_name(t));
      snprintf(e, sizeof e, "%s(%s)", fn, a.s);
    }
    *out = def(g, rt, e);
    return true;
  }
  int bits = bits_of(t);
  switch (i->op) {
  case IR_OP_ABS: snprintf(e, sizeof e, "%s < 0 ? (%s)(0 - (%s)%s) : %s", a.s, ct, wide_u(t), a.s, a.s); break;
  case IR_OP_NEGATE: snprintf(e, sizeof e, "(%s)(0 - (%s)%s)", ct, wide_u(t), a.s); break;
  case IR_OP_NOT: snprintf(e, sizeof e, t == IR_PRED ? "!%s" : "~%s", a.s); break;
  case IR_OP_SIGN: snprintf(e, sizeof e, is_u(t) ? "%s != 0" : "(%s > 0) - (%s < 0)", a.s, a.s); break;
  case IR_OP_POPCNT: snprintf(e, sizeof e, "fx_popc((uint64_t)%s & fx_mask(%d))", a.s, bits); break;
  case IR_OP_CLZ: snprintf(e, sizeof e, "fx_clz((uint64_t)%s & fx_mask(%d), %d)", a.s, bits, bits); break;
  case IR_OP_COPY: snprintf(e, sizeof e, "%s", a.s); break;
  default: return gen_fail(g, i, "%s is not generated for %s", ir_op_name(i->op), ir_type_name(t));
  }
  *out = def(g, rt, e);
  return true;
}

static bool gen_binary_vals(Gen *g, const IrInstr *i, IrOpcode op, IrType t, Val a, Val b, Val *out) {
  char e[512];
  const char *ct = emit_compute_type(t);
  if (is_f(t)) {
    bool dbl = t == IR_F64;
    switch (op) {
    case IR_OP_ADD: snprintf(e, sizeof e, "%s + %s", a.s, b.s); break;
    case IR_OP_SUBTRACT: snprintf(e, sizeof e, "%s - %s", a.s, b.s); break;
    case IR_OP_MULTIPLY: snprintf(e, sizeof e, "%s * %s", a.s, b.s); break;
    case IR_OP_DIVIDE: snprintf(e, sizeof e, "%s / %s", a.s, b.s); break;
    case IR_OP_MAXIMUM: snprintf(e, sizeof e, "%s(%s, %s)", dbl ? "fx_maxd" : "fx_maxf", a.s, b.s); break;
    case IR_OP_MINIMUM: snprintf(e, sizeof e, "%s(%s, %s)", dbl ? "fx_mind" : "fx_minf", a.s, b.s); break;
    case IR_OP_POWER: snprintf(e, sizeof e, "%s(%s, %s)", dbl ? "pow" : "powf", a.s, b.s); break;
    case IR_OP_REMAINDER: snprintf(e, sizeof e, "%s(%s, %s)", dbl ? "fmod" : "fmodf", a.s, b.s); break;
    case IR_OP_ATAN2: snprintf(e, sizeof e, "%s(%s, %s)", dbl ? "atan2" : "atan2f", a.s, b.s); break;
    default: return gen_fail(g, i, "%s is not generated for %s", ir_op_name(op), ir_type_name(t));
    }
    *out = def(g, t, e);
    return true;
  }
  const char *wu = wide_u(t);
  int bits = bits_of(t);
  bool un = is_u(t);
  switch (op) {
  case IR_OP_ADD: snprintf(e, sizeof e, "(%s)%s + (%s)%s", wu, a.s, wu, b.s); break;
  case IR_OP_SUBTRACT: snprintf(e, sizeof e, "(%s)%s - (%s)%s", wu, a.s, wu, b.s); break;
  case IR_OP_MULTIPLY: snprintf(e, sizeof e, "(%s)%s * (%s)%s", wu, a.s, wu, b.s); break;
  case IR_OP_DIVIDE:
    snprintf(e, sizeof e, un ? "fx_udiv((uint64_t)%s, (uint64_t)%s)" : "fx_sdiv((int64_t)%s, (int64_t)%s)", a.s, b.s);
    break;
  case IR_OP_REMAINDER:
    snprintf(e, sizeof e, un ? "fx_urem((uint64_t)%s, (uint64_t)%s)" : "fx_srem((int64_t)%s, (int64_t)%s)", a.s, b.s);
    break;
  case IR_OP_MAXIMUM: snprintf(e, sizeof e, "%s > %s ? %s : %s", a.s, b.s, a.s, b.s); break;
  case IR_OP_MINIMUM: snprintf(e, sizeof e, "%s < %s ? %s : %s", a.s, b.s, a.s, b.s); break;
  case IR_OP_AND: snprintf(e, sizeof e, "%s & %s", a.s, b.s); break;
  case IR_OP_OR: snprintf(e, sizeof e, "%s | %s", a.s, b.s); break;
  case IR_OP_XOR: snprintf(e, sizeof e, "%s ^ %s", a.s, b.s); break;
  case IR_OP_SHL: snprintf(e, sizeof e, "fx_shl((uint64_t)%s, (uint64_t)%s, %d)", a.s, b.s, bits); break;
  case IR_OP_SHRL: snprintf(e, sizeof e, "fx_shrl((uint64_t)%s, (uint64_t)%s, %d)", a.s, b.s, bits); break;
  case IR_OP_SHRA: snprintf(e, sizeof e, "fx_shra((uint64_t)%s, (uint64_t)%s, %d)", a.s, b.s, bits); break;
  case IR_OP_POWER: snprintf(e, sizeof e, "fx_ipow((uint64_t)%s, (int64_t)%s, %d)", a.s, b.s, un ? 0 : 1); break;
  default: return gen_fail(g, i, "%s is not generated for %s", ir_op_name(op), ir_type_name(t));
  }
  (void)ct;
  *out = def(g, t, e);
  return true;
}

static bool gen_compare(Gen *g, const IrInstr *i, Val a, Val b, Val *out) {
  const char *d = ir_compare_direction(i);
  static const char *dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"}, *cops[] = {"==", "!=", "<", "<=", ">", ">="};
  int k = -1;
  for (int q = 0; d && q < 6; q++)
    if (strcmp(d, dirs[q]) == 0) k = q;
  if (k < 0) return gen_fail(g, i, "compare needs a direction");
  IrType t = i->operands[0]->shape.type;
  const char *ty = ir_attr_text(i, "type");
  char e[256];
  if (is_f(t) && ty && strcmp(ty, "TOTALORDER") == 0) {
    const char *fn = t == IR_F64 ? "fx_totald" : "fx_totalf";
    snprintf(e, sizeof e, "%s(%s) %s %s(%s)", fn, a.s, cops[k], fn, b.s);
  } else {
    snprintf(e, sizeof e, "%s %s %s", a.s, cops[k], b.s);
  }
  *out = def(g, IR_PRED, e);
  return true;
}

static const IrShape *oshape(const IrInstr *i, int k) { return &i->operands[k]->shape; }

/* value of a kernel input at idx */
/* Whether index expression e (expanding index variables through their expressions) mentions
 * wrapper index i<var>; with `bare`, only as a term of its own (not scaled): `i1 + i0*20ll` has
 * i1 bare. */
static bool index_mentions(const Gen *g, const char *e, int var, bool bare, int depth) {
  if (depth > 8) return !bare; /* too deep to tell: assume it does (no hint) */
  for (const char *q = e; *q;) {
    if (!ident_char(*q)) {
      q++;
      continue;
    }
    const char *s0 = q;
    while (ident_char(*q)) q++;
    size_t n = (size_t)(q - s0);
    bool term = (s0 == e || s0[-1] == ' ' || s0[-1] == '(') && (*q == 0 || *q == ' ' || *q == ')');
    if (n >= 2 && s0[0] == 'i' && s0[1] >= '0' && s0[1] <= '9' && atoi(s0 + 1) == var) {
      if (!bare || term) return true;
    } else if (n >= 2 && s0[0] == 'j' && s0[1] >= '0' && s0[1] <= '9') {
      int num = atoi(s0 + 1);
      if (num < g->capjexpr && g->jexpr && g->jexpr[num] && (!bare || term) && index_mentions(g, g->jexpr[num], var, bare, depth + 1))
        return true;
      if (!bare && !(num < g->capjexpr && g->jexpr && g->jexpr[num])) return true; /* unknown */
    }
  }
  return false;
}

/* A load of input `in` (rank r) at idx: when its innermost index does not move with the wrapper's
 * innermost index while another of its indices does, the kernel reads this input transposed;
 * the wrapper index that moves its innermost index one to one is noted as the one to tile with
 * (gpu_hlo's transpose seen through a reshape: out[i0][i1][i2] = in[i2][i0 * 20 + i1]). */
static void transposed_load(Gen *g, int r, Val *idx) {
  if (g->part_rank < 2 || g->tile_hint >= 0 || r < 2) return;
  int inner = g->part_rank - 1;
  if (index_mentions(g, idx[r - 1].s, inner, false, 0)) return;
  bool moves = false;
  for (int d = 0; d < r - 1 && !moves; d++) moves = index_mentions(g, idx[d].s, inner, false, 0);
  if (!moves) return;
  for (int a = 0; a < inner; a++)
    if (index_mentions(g, idx[r - 1].s, a, true, 0)) {
      g->tile_hint = a;
      return;
    }
}

static bool gen_load(Gen *g, const IrInstr *i, int in, Val *idx, Val *out) {
  const IrShape *s = &i->shape;
  transposed_load(g, s->rank, idx);
  char lin[600], ld[700], ref[700];
  linear(lin, sizeof lin, s->rank, s->dims, idx);
  snprintf(ref, sizeof ref, "in%d[%s]", in, lin);
  from_storage(ld, sizeof ld, s->type, ref);
  bool cse = strlen(ld) < sizeof ((Memo *)0)->key;
  Val *m = cse ? memo_find(g, NULL, 1000 + (int)s->type, ld) : NULL;
  if (m) {
    *out = *m;
    return true;
  }
  Val v = newvar(g, "v");
  char text[800];
  snprintf(text, sizeof text, "const %s %s = %s;", emit_compute_type(s->type), v.s, ld);
  define(g, &v, text, ld);
  if (cse) memo_put(g, NULL, 1000 + (int)s->type, ld, v);
  *out = v;
  return true;
}

/* Lanes for reducing with f: a reducer that is one associative, commutative op (add, multiply,
 * maximum, minimum, and, or) of its two parameters, on f32, f64 or an integer type, reduces the
 * operand's innermost (contiguous) dim in that many independent accumulators that the compiler
 * keeps in one vector register, combined at the end, as XLA:CPU's vectorized reductions do. The
 * sum of floats is then added in another order than the interpreter's one by one, within
 * `--check`'s tolerance. f16 and bf16 round after every step, so their sums and products stay
 * sequential; their maximum and minimum take lanes: the result is one of the elements whatever
 * the order (NaN if any is, +0 over -0), the interpreter's exactly. 0: no lanes. */
static int reduce_lanes(const IrInstr *i, const IrComputation *f) {
  if (i->noperands != 2 || !f || !f->root || f->nparams != 2 || f->ninstrs != 3) return 0;
  const IrInstr *r = f->root;
  static const IrOpcode ops[] = {IR_OP_ADD, IR_OP_MULTIPLY, IR_OP_MAXIMUM, IR_OP_MINIMUM, IR_OP_AND, IR_OP_OR};
  bool assoc = false;
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) assoc = assoc || r->op == ops[k];
  if (!assoc || r->noperands != 2 || r->shape.rank != 0) return 0;
  if (!((r->operands[0] == f->params[0] && r->operands[1] == f->params[1]) ||
        (r->operands[0] == f->params[1] && r->operands[1] == f->params[0])))
    return 0;
  IrType t = r->shape.type;
  bool half = t == IR_F16 || t == IR_BF16;
  if (half && r->op != IR_OP_MAXIMUM && r->op != IR_OP_MINIMUM) return 0;
  if (t != i->shape.type || ir_type_is_complex(t) || !emit_storage_type(t)) return 0;
  return ir_type_bytes(t) >= 8 ? 8 : 16;
}

/* The innermost reduced dim `last` of reduce i in `lanes` accumulators: lane l takes the elements
 * l, l + lanes, ...; the elements past the last full group go into acc, then the lanes do. */
static bool gen_reduce_lanes(Gen *g, const IrInstr *i, const IrComputation *f, Val *full, int last, int lanes, Val acc) {
  const IrShape *is = oshape(i, 0);
  IrType t = i->shape.type;
  const char *ct = emit_compute_type(t);
  int64_t n = is->dims[last];
  Val lv = newvar(g, "lv"), l = newvar(g, "l"), rv = newvar(g, "r"), e, args[2], res;
  line(g, "%s %s[%d];", ct, lv.s, lanes);
  /* the first group sets the lanes */
  loop_begin(g);
  line(g, "for (int64_t %s = 0; %s < %d; %s++) {", l.s, l.s, lanes, l.s);
  loop_open(g, &l);
  full[last] = l;
  if (!gen(g, i->operands[0], full, &e)) return false;
  line(g, "%s[%s] = %s;", lv.s, l.s, e.s);
  loop_close(g, &l);
  line(g, "}");
  line(g, "int64_t %s = %d;", rv.s, lanes);
  loop_begin(g);
  line(g, "for (; %s + %d <= %lldll; %s += %d) {", rv.s, lanes, (long long)n, rv.s, lanes);
  loop_open(g, &rv);
  loop_begin(g);
  line(g, "for (int64_t %s = 0; %s < %d; %s++) {", l.s, l.s, lanes, l.s);
  loop_open(g, &l);
  full[last] = idxvar(g, "%s + %s", rv.s, l.s);
  if (!gen(g, i->operands[0], full, &e)) return false;
  args[0] = newvar(g, "v");
  line(g, "const %s %s = %s[%s];", ct, args[0].s, lv.s, l.s);
  args[1] = e;
  if (!inline_scalar(g, f, args, 2, &res, 1)) return false;
  line(g, "%s[%s] = %s;", lv.s, l.s, res.s);
  loop_close(g, &l);
  line(g, "}");
  loop_close(g, &rv);
  line(g, "}");
  /* the rest, one by one */
  loop_begin(g);
  line(g, "for (; %s < %lldll; %s++) {", rv.s, (long long)n, rv.s);
  loop_open(g, &rv);
  full[last] = rv;
  if (!gen(g, i->operands[0], full, &e)) return false;
  args[0] = acc;
  args[1] = e;
  if (!inline_scalar(g, f, args, 2, &res, 1)) return false;
  line(g, "%s = %s;", acc.s, res.s);
  loop_close(g, &rv);
  line(g, "}");
  loop_begin(g);
  line(g, "for (int64_t %s = 0; %s < %d; %s++) {", l.s, l.s, lanes, l.s);
  loop_open(g, &l);
  args[0] = acc;
  args[1] = newvar(g, "v");
  line(g, "const %s %s = %s[%s];", ct, args[1].s, lv.s, l.s);
  if (!inline_scalar(g, f, args, 2, &res, 1)) return false;
  line(g, "%s = %s;", acc.s, res.s);
  loop_close(g, &l);
  line(g, "}");
  return true;
}

static bool gen_reduce(Gen *g, const IrInstr *i, int which, Val *idx, Val *out) {
  int n = i->noperands / 2;
  if (n < 1 || n > 8) return gen_fail(g, i, "reduce with %d inputs is not generated", n);
  const IrComputation *f = ir_attr_comp(i, "to_apply");
  int64_t rd[IR_MAX_RANK];
  int nr = ir_attr_dims(i, "dimensions", rd, IR_MAX_RANK);
  if (nr < 0) nr = 0;
  const IrShape *is = oshape(i, 0);
  bool red[IR_MAX_RANK] = {0};
  for (int k = 0; k < nr; k++) {
    if (rd[k] < 0 || rd[k] >= is->rank) return gen_fail(g, i, "reduce dimension out of range");
    red[rd[k]] = true;
  }
  Val acc[8], init[8];
  for (int k = 0; k < n; k++) {
    if (!gen(g, i->operands[n + k], NULL, &init[k])) return false;
    acc[k] = newvar(g, "acc");
    IrType t = oshape(i, k)->type;
    line(g, "%s %s = %s;", emit_compute_type(t), acc[k].s, init[k].s);
  }
  /* loops over the reduced dims, in the operand's order (the reference's order); the operand's
     innermost dim, when reduced with an associative reducer, in lanes (gen_reduce_lanes) */
  int last = is->rank - 1, lanes = g->t == EMIT_TARGET_C ? reduce_lanes(i, f) : 0; /* CUDA: a thread per output */
  if (lanes > 0 && (last < 0 || !red[last] || is->dims[last] < 2 * lanes)) lanes = 0;
  Val full[IR_MAX_RANK], loopv[IR_MAX_RANK];
  int kept = 0;
  int opened = 0;
  for (int d = 0; d < is->rank; d++) {
    if (red[d] && lanes > 0 && d == last) {
      full[d] = lit_idx(0); /* gen_reduce_lanes loops over it */
    } else if (red[d]) {
      Val r = newvar(g, "r");
      loop_begin(g);
      line(g, "for (int64_t %s = 0; %s < %lldll; %s++) {", r.s, r.s, (long long)is->dims[d], r.s);
      loop_open(g, &r);
      loopv[opened++] = r;
      full[d] = r;
    } else {
      full[d] = idx ? idx[kept] : lit_idx(0);
      kept++;
    }
  }
  Val args[16], res[8];
  if (lanes > 0) {
    if (!gen_reduce_lanes(g, i, f, full, last, lanes, acc[0])) return false;
  } else {
    for (int k = 0; k < n; k++) {
      args[k] = acc[k];
      if (!gen(g, i->operands[k], full, &args[n + k])) return false;
    }
    if (!inline_scalar(g, f, args, 2 * n, res, n)) return false;
    for (int k = 0; k < n; k++) line(g, "%s = %s;", acc[k].s, res[k].s);
  }
  for (int k = opened - 1; k >= 0; k--) {
    loop_close(g, &loopv[k]);
    line(g, "}");
  }
  for (int k = 0; k < n; k++) {
    char key[160];
    memo_key(key, sizeof key, i->shape.type == IR_TUPLE ? i->shape.tuple[0].rank : i->shape.rank, idx);
    /* acc vars are mutable; copy to a const value for users */
    IrType t = oshape(i, k)->type;
    Val v = newvar(g, "v");
    line(g, "const %s %s = %s;", emit_compute_type(t), v.s, acc[k].s);
    memo_put(g, i, k, key, v);
    if (k == which) *out = v;
  }
  return true;
}

static bool gen_reduce_window(Gen *g, const IrInstr *i, Val *idx, Val *out) {
  if (i->noperands != 2) return gen_fail(g, i, "variadic reduce-window is not generated");
  const IrShape *is = oshape(i, 0);
  IrWindow win;
  char why[400];
  if (!ir_attr_window(i, is->rank, &win, why, sizeof why)) return gen_fail(g, i, "%s", why);
  const int64_t *size = win.size, *stride = win.stride, *lo = win.pad_lo, *ld = win.lhs_dilate, *wd = win.rhs_dilate;
  for (int d = 0; d < is->rank; d++)
    if (win.reversal[d]) return gen_fail(g, i, "a reversed window is not generated");
  Val init, acc = newvar(g, "acc");
  if (!gen(g, i->operands[1], NULL, &init)) return false;
  IrType et = is->type;
  line(g, "%s %s = %s;", emit_compute_type(et), acc.s, init.s);
  Val pos[IR_MAX_RANK], wv[IR_MAX_RANK];
  for (int d = 0; d < is->rank; d++) {
    Val w = newvar(g, "w");
    loop_begin(g);
    line(g, "for (int64_t %s = 0; %s < %lldll; %s++) {", w.s, w.s, (long long)size[d], w.s);
    loop_open(g, &w);
    wv[d] = w;
    Val p = idxvar(g, "%s * %lldll + %s * %lldll - %lldll", idx[d].s, (long long)stride[d], w.s, (long long)wd[d],
                   (long long)lo[d]);
    if (ld[d] > 1) {
      line(g, "if (%s < 0 || %s %% %lldll != 0) continue;", p.s, p.s, (long long)ld[d]);
      pos[d] = idxvar(g, "%s / %lldll", p.s, (long long)ld[d]);
    } else {
      pos[d] = p;
    }
    line(g, "if (%s < 0 || %s >= %lldll) continue;", pos[d].s, pos[d].s, (long long)is->dims[d]);
  }
  Val args[2], res;
  args[0] = acc;
  if (!gen(g, i->operands[0], pos, &args[1])) return false;
  if (!inline_scalar(g, ir_attr_comp(i, "to_apply"), args, 2, &res, 1)) return false;
  line(g, "%s = %s;", acc.s, res.s);
  for (int d = is->rank - 1; d >= 0; d--) {
    loop_close(g, &wv[d]);
    line(g, "}");
  }
  Val v = newvar(g, "v");
  line(g, "const %s %s = %s;", emit_compute_type(et), v.s, acc.s);
  *out = v;
  return true;
}

/* Branch helper: result variable declared, then if/else arms assign it. */
static Val branch_var(Gen *g, IrType t) {
  Val v = newvar(g, "b");
  line(g, "%s %s;", emit_compute_type(t), v.s);
  return v;
}

static bool gen_pad(Gen *g, const IrInstr *i, Val *idx, Val *out) {
  const IrShape *is = oshape(i, 0);
  int r = is->rank;
  int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK], in[IR_MAX_RANK]; /* hi: the result shape accounts for it */
  if (r > 0 && ir_attr_padding(i, lo, hi, in, IR_MAX_RANK) != r) return gen_fail(g, i, "bad padding_config");
  Val res = branch_var(g, i->shape.type), src[IR_MAX_RANK];
  char cond[2048];
  size_t len = 0;
  cond[0] = 0;
  for (int d = 0; d < r; d++) {
    Val p = idxvar(g, "%s - %lldll", idx[d].s, (long long)lo[d]);
    if (in[d]) {
      src[d] = idxvar(g, "%s / %lldll", p.s, (long long)(in[d] + 1));
      len += (size_t)snprintf(cond + len, sizeof cond - len, "%s%s >= 0 && %s %% %lldll == 0 && %s < %lldll", d ? " && " : "",
                              p.s, p.s, (long long)(in[d] + 1), src[d].s, (long long)is->dims[d]);
    } else {
      src[d] = p;
      len += (size_t)snprintf(cond + len, sizeof cond - len, "%s%s >= 0 && %s < %lldll", d ? " && " : "", p.s, p.s,
                              (long long)is->dims[d]);
    }
  }
  return gen_if_else(g, r ? cond : "1", i->operands[0], src, i->operands[1], NULL, res, out);
}

static bool gen_concat(Gen *g, const IrInstr *i, Val *idx, Val *out) {
  int64_t dim;
  if (ir_attr_dims(i, "dimensions", &dim, 1) != 1 || dim < 0 || dim >= i->shape.rank)
    return gen_fail(g, i, "concatenate needs dimensions={d}");
  if (g->pick == i) { /* the wrapper's loop covers operand pick_k's range only */
    int64_t off = 0;
    for (int k = 0; k < g->pick_k; k++) off += oshape(i, k)->dims[dim];
    Val sub[IR_MAX_RANK];
    for (int d = 0; d < i->shape.rank; d++) sub[d] = idx[d];
    sub[dim] = off ? idxvar(g, "%s - %lldll", idx[dim].s, (long long)off) : idx[dim];
    return gen(g, i->operands[g->pick_k], sub, out);
  }
  Val res = branch_var(g, i->shape.type);
  int64_t off = 0;
  for (int k = 0; k < i->noperands; k++) {
    int64_t sz = oshape(i, k)->dims[dim];
    if (k + 1 < i->noperands) line(g, "%sif (%s < %lldll) {", k ? "else " : "", idx[dim].s, (long long)(off + sz));
    else line(g, "%s{", k ? "else " : "");
    open_scope(g);
    Val sub[IR_MAX_RANK], a;
    for (int d = 0; d < i->shape.rank; d++) sub[d] = idx[d];
    sub[dim] = idxvar(g, "%s - %lldll", idx[dim].s, (long long)off);
    if (!gen(g, i->operands[k], sub, &a)) return false;
    line(g, "%s = %s;", res.s, a.s);
    close_scope(g);
    line(g, "}");
    off += sz;
  }
  *out = res;
  return true;
}

static bool default_layout(const IrShape *s) {
  if (!s->has_layout) return true;
  for (int k = 0; k < s->rank; k++)
    if (s->minor_to_major[k] != s->rank - 1 - k) return false;
  return true;
}

/* Input indices [ga, ga_end) of a reshape group from output indices [gb, gb_end): the group's
 * output position linearized, then split over the input dims. Size-1 dims are 0; the group's
 * outermost dim of size > 1 needs no modulo. */
static void reshape_group(Gen *g, const IrShape *is, const IrShape *os, Val *idx, Val *sub, int ga, int gae, int gb, int gbe) {
  int nin = 0, nout = 0, lastin = -1, lastout = -1;
  for (int d = ga; d < gae; d++)
    if (is->dims[d] != 1) nin++, lastin = d;
  for (int d = gb; d < gbe; d++)
    if (os->dims[d] != 1) nout++, lastout = d;
  for (int d = ga; d < gae; d++) sub[d] = lit_idx(0);
  if (nin == 0) return;
  if (nin == 1 && nout == 1) { /* one dim of the same size on both sides */
    sub[lastin] = idx[lastout];
    return;
  }
  char lin[600];
  size_t len = 0;
  int64_t st = 1;
  lin[0] = 0;
  for (int d = gbe - 1; d >= gb; d--) {
    if (os->dims[d] == 1) continue;
    len += (size_t)snprintf(lin + len, len < sizeof lin ? sizeof lin - len : 0, st == 1 ? "%s%s" : "%s%s*%lldll",
                            len ? " + " : "", idx[d].s, (long long)st);
    st *= os->dims[d];
  }
  Val l = idxvar(g, "%s", lin);
  int first = ga;
  while (is->dims[first] == 1) first++;
  st = 1;
  for (int d = gae - 1; d >= ga; d--) {
    if (is->dims[d] == 1) continue;
    if (d == first && st == 1) sub[d] = l;
    else if (d == first) sub[d] = idxvar(g, "%s / %lldll", l.s, (long long)st);
    else if (st == 1) sub[d] = idxvar(g, "%s %% %lldll", l.s, (long long)is->dims[d]);
    else sub[d] = idxvar(g, "(%s / %lldll) %% %lldll", l.s, (long long)st, (long long)is->dims[d]);
    st *= is->dims[d];
  }
}

static bool gen_reshape(Gen *g, const IrInstr *i, Val *idx, Val *out) {
  const IrShape *is = oshape(i, 0), *os = &i->shape;
  if (i->op == IR_OP_BITCAST && (!default_layout(is) || !default_layout(&i->shape)))
    return gen_fail(g, i, "a bitcast between layouts is not generated");
  Val sub[IR_MAX_RANK];
  bool empty = false;
  for (int d = 0; d < is->rank; d++) empty = empty || is->dims[d] == 0;
  for (int d = 0; d < os->rank; d++) empty = empty || os->dims[d] == 0;
  if (!empty) {
    /* Dims in groups whose sizes multiply to the same on both sides ([1, 12, 128] -> [12, 128]:
       {1, 12} -> {12}, {128} -> {128}); each group maps on its own, most of them one dim to one
       dim, so a reshape that only adds or drops size-1 dims costs no division. */
    int a = 0, b = 0;
    while (a < is->rank || b < os->rank) {
      int ga = a, gb = b;
      int64_t pa = 1, pb = 1;
      if (a < is->rank) pa *= is->dims[a++];
      if (b < os->rank) pb *= os->dims[b++];
      while (pa != pb) {
        if (pa < pb && a < is->rank) pa *= is->dims[a++];
        else if (pb < pa && b < os->rank) pb *= os->dims[b++];
        else return gen_fail(g, i, "reshape between different element counts");
      }
      reshape_group(g, is, os, idx, sub, ga, a, gb, b);
    }
    return gen(g, i->operands[0], sub, out);
  }
  char lin[600];
  linear(lin, sizeof lin, i->shape.rank, i->shape.dims, idx);
  Val l = idxvar(g, "%s", lin);
  int64_t st = 1;
  for (int d = is->rank - 1; d >= 0; d--) {
    /* skip the arithmetic that is the identity: size-1 dims are 0, a stride of 1 divides nothing */
    if (is->dims[d] == 1) sub[d] = lit_idx(0);
    else if (d == 0 && st == 1) sub[d] = l;
    else if (d == 0) sub[d] = idxvar(g, "%s / %lldll", l.s, (long long)st);
    else if (st == 1) sub[d] = idxvar(g, "%s %% %lldll", l.s, (long long)is->dims[d]);
    else sub[d] = idxvar(g, "(%s / %lldll) %% %lldll", l.s, (long long)st, (long long)is->dims[d]);
    st *= is->dims[d];
  }
  return gen(g, i->operands[0], sub, out);
}

static bool gen_dus(Gen *g, const IrInstr *i, Val *idx, Val *out) {
  const IrShape *is = oshape(i, 0), *us = oshape(i, 1);
  int r = is->rank;
  if (i->noperands != 2 + r) return gen_fail(g, i, "dynamic-update-slice needs one index per dimension");
  Val st[IR_MAX_RANK], sub[IR_MAX_RANK];
  char cond[2048];
  size_t len = 0;
  cond[0] = 0;
  for (int d = 0; d < r; d++) {
    Val s;
    if (!gen(g, i->operands[2 + d], NULL, &s)) return false;
    st[d] = idxvar(g, "fx_clampi((int64_t)%s, 0, %lldll)", s.s, (long long)(is->dims[d] - us->dims[d]));
    sub[d] = idxvar(g, "%s - %s", idx[d].s, st[d].s);
    len += (size_t)snprintf(cond + len, sizeof cond - len, "%s%s >= 0 && %s < %lldll", d ? " && " : "", sub[d].s, sub[d].s,
                            (long long)us->dims[d]);
  }
  Val res = branch_var(g, i->shape.type);
  return gen_if_else(g, r ? cond : "1", i->operands[1], sub, i->operands[0], idx, res, out);
}

static bool gen_constant(Gen *g, const IrInstr *i, Val *idx, Val *out) {
  const IrLiteral *l = i->literal;
  IrType t = i->shape.type;
  char e[128];
  if (!emit_storage_type(t)) return gen_fail(g, i, "constants of type %s are not generated", ir_type_name(t));
  int64_t cnt = ir_shape_elements(&i->shape);
  if (!l || l->elided || !l->values || l->count < 1) {
    literal(e, sizeof e, t, 0.0); /* the reference fills elided literals with zeros */
    *out = def(g, t, e);
    return true;
  }
  if (l->count == 1 || cnt == 1 || i->shape.rank == 0) {
    literal_first(e, sizeof e, i);
    *out = def(g, t, e);
    return true;
  }
  if (l->count != cnt) return gen_fail(g, i, "constant literal has %lld values for %lld elements", (long long)l->count, (long long)cnt);
  char lin[600], ref[800], ld[860];
  linear(lin, sizeof lin, i->shape.rank, i->shape.dims, idx);
  snprintf(ref, sizeof ref, "%s_c%d[%s]", g->k->name, i->id, lin);
  from_storage(ld, sizeof ld, t, ref);
  Val v = newvar(g, "v");
  char text[1000];
  snprintf(text, sizeof text, "const %s %s = %s;", emit_compute_type(t), v.s, ld);
  define(g, &v, text, ld);
  *out = v;
  return true;
}

/* gather: each output element reads operand[start(batch index) + offset], starts clamped so the
 * whole slice is in bounds (XLA's semantics, as the interpreter's rt_op_gather) */
static bool gen_gather(Gen *g, const IrInstr *i, Val *idx, Val *out) {
  const IrShape *as = oshape(i, 0), *is = oshape(i, 1);
  IrGatherDims gd;
  ir_gather_dims(i, &gd);
  const int64_t *offd = gd.offset, *smap = gd.start_map, *ssz = gd.slice_sizes, *obd = gd.operand_batching;
  const int64_t *ibd = gd.indices_batching, *bdims = gd.batch, *wdims = gd.window, ivd = gd.index_vector_dim;
  int noff = gd.noffset, nsm = gd.nstart_map, nob = gd.noperand_batching, nib = gd.nindices_batching, nbd = gd.nbatch;
  if (gd.nslice_sizes != as->rank) return gen_fail(g, i, "gather slice_sizes do not match the operand");
  if (gd.nwindow != noff) return gen_fail(g, i, "gather offset_dims do not match the slice");
  Val sidx[IR_MAX_RANK];
  for (int d = 0, b = 0; d < is->rank; d++) {
    if (d == ivd) continue;
    if (b >= nbd) return gen_fail(g, i, "gather batch dimensions do not match the indices");
    sidx[d] = idx[bdims[b++]];
  }
  Val start[IR_MAX_RANK];
  for (int d = 0; d < as->rank; d++) start[d] = lit_idx(0);
  for (int k = 0; k < nsm; k++) {
    Val iv[IR_MAX_RANK], v;
    for (int d = 0; d < is->rank; d++) iv[d] = d == ivd ? lit_idx(k) : sidx[d];
    if (!gen(g, i->operands[1], is->rank ? iv : NULL, &v)) return false;
    int64_t od = smap[k];
    if (od < 0 || od >= as->rank) return gen_fail(g, i, "bad start_index_map");
    start[od] = idxvar(g, "fx_clampi((int64_t)%s, 0, %lldll)", v.s, (long long)(as->dims[od] - ssz[od]));
  }
  for (int k = 0; k < nob && k < nib; k++) start[obd[k]] = sidx[ibd[k]];
  Val sub[IR_MAX_RANK];
  for (int d = 0; d < as->rank; d++) sub[d] = start[d];
  for (int k = 0; k < noff; k++) sub[wdims[k]] = idxvar(g, "%s + %s", start[wdims[k]].s, idx[offd[k]].s);
  return gen(g, i->operands[0], as->rank ? sub : NULL, out);
}

static bool is_threefry(const IrInstr *i) {
  const char *t = i->op == IR_OP_CUSTOM_CALL ? ir_attr_text(i, "custom_call_target") : NULL;
  return t && (strcmp(t, "\"cuda_threefry2x32\"") == 0 || strcmp(t, "\"cu_threefry2x32\"") == 0 ||
               strcmp(t, "\"threefry2x32\"") == 0) &&
         i->noperands == 4 && i->shape.type == IR_TUPLE && i->shape.ntuple == 2;
}

/* JAX's threefry2x32 custom call, elementwise: both words at idx (scalar operands broadcast) */
static bool gen_threefry(Gen *g, const IrInstr *i, int which, Val *idx, Val *out) {
  Val a[4];
  for (int k = 0; k < 4; k++) {
    bool scalar = ir_shape_elements(oshape(i, k)) == 1;
    if (!gen(g, i->operands[k], scalar ? NULL : idx, &a[k])) return false;
  }
  char key[160];
  memo_key(key, sizeof key, i->shape.tuple[0].rank, idx);
  for (int w = 0; w < 2; w++) {
    Val v = newvar(g, "v");
    line(g, "const uint32_t %s = fx_threefry(%s, %s, %s, %s, %d);", v.s, a[0].s, a[1].s, a[2].s, a[3].s, w);
    memo_put(g, i, w, key, v);
    if (w == which) *out = v;
  }
  return true;
}

static bool gen_op(Gen *g, const IrInstr *i, int which, Val *idx, Val *out) {
  int in = input_of(g, i);
  if (in >= 0) return gen_load(g, i, in, idx, out);
  if (i->op == IR_OP_PARAMETER) {
    for (int k = g->nbinds - 1; k >= 0; k--)
      if (g->binds[k].param == i) {
        *out = g->binds[k].v;
        return true;
      }
    return gen_fail(g, i, "a parameter with no binding");
  }
  if (i->shape.type != IR_TUPLE && !emit_storage_type(i->shape.type))
    return gen_fail(g, i, "element type %s is not generated", ir_type_name(i->shape.type));
  const IrOpInfo *oi = ir_op_info(i->op);
  Val a[3];
  switch (i->op) {
  case IR_OP_CONSTANT: return gen_constant(g, i, idx, out);
  case IR_OP_DOT: return gen_dot(g, i, idx, out);
  case IR_OP_IOTA: {
    int64_t dim = 0;
    ir_attr_int(i, "iota_dimension", &dim);
    if (i->shape.rank == 0 || dim < 0 || dim >= i->shape.rank) return gen_fail(g, i, "bad iota_dimension");
    char e[64];
    snprintf(e, sizeof e, is_f(i->shape.type) ? "(double)%s" : "%s", idx[dim].s);
    *out = def(g, i->shape.type, e);
    return true;
  }
  case IR_OP_BROADCAST: {
    int64_t map[IR_MAX_RANK];
    int n = ir_attr_dims(i, "dimensions", map, IR_MAX_RANK);
    if (n < 0) n = 0;
    if (n != oshape(i, 0)->rank) return gen_fail(g, i, "broadcast dimensions do not match");
    Val sub[IR_MAX_RANK];
    for (int k = 0; k < n; k++) {
      if (map[k] < 0 || map[k] >= i->shape.rank) return gen_fail(g, i, "bad broadcast dimension");
      sub[k] = idx[map[k]];
    }
    return gen(g, i->operands[0], sub, out);
  }
  case IR_OP_TRANSPOSE: {
    int64_t perm[IR_MAX_RANK];
    int n = ir_attr_dims(i, "dimensions", perm, IR_MAX_RANK);
    if (n != i->shape.rank) return gen_fail(g, i, "bad transpose dimensions");
    Val sub[IR_MAX_RANK];
    for (int d = 0; d < n; d++) {
      if (perm[d] < 0 || perm[d] >= n) return gen_fail(g, i, "bad transpose dimensions");
      sub[perm[d]] = idx[d];
    }
    return gen(g, i->operands[0], sub, out);
  }
  case IR_OP_COPY:
    return gen(g, i->operands[0], idx, out);
  case IR_OP_RESHAPE:
    return gen_reshape(g, i, idx, out);
  case IR_OP_BITCAST: {
    IrType from = oshape(i, 0)->type, to = i->shape.type;
    if (from == to) return gen_reshape(g, i, idx, out);
    Val a;
    if (!gen_reshape(g, i, idx, &a)) return false;
    return gen_reinterpret(g, i, from, to, a, out);
  }
  case IR_OP_SLICE: {
    int64_t st[IR_MAX_RANK], li[IR_MAX_RANK], sd[IR_MAX_RANK];
    int n = ir_attr_slice(i, st, li, sd, IR_MAX_RANK);
    if (n != i->shape.rank) return gen_fail(g, i, "bad slice");
    Val sub[IR_MAX_RANK];
    for (int d = 0; d < n; d++) {
      if (st[d] == 0 && sd[d] == 1) sub[d] = idx[d];
      else sub[d] = idxvar(g, "%lldll + %s * %lldll", (long long)st[d], idx[d].s, (long long)sd[d]);
    }
    return gen(g, i->operands[0], sub, out);
  }
  case IR_OP_DYNAMIC_SLICE: {
    const IrShape *is = oshape(i, 0);
    if (i->noperands != 1 + is->rank) return gen_fail(g, i, "dynamic-slice needs one index per dimension");
    Val sub[IR_MAX_RANK];
    for (int d = 0; d < is->rank; d++) {
      Val s;
      if (!gen(g, i->operands[1 + d], NULL, &s)) return false;
      sub[d] = idxvar(g, "fx_clampi((int64_t)%s, 0, %lldll) + %s", s.s, (long long)(is->dims[d] - i->shape.dims[d]), idx[d].s);
    }
    return gen(g, i->operands[0], sub, out);
  }
  case IR_OP_DYNAMIC_UPDATE_SLICE: return gen_dus(g, i, idx, out);
  case IR_OP_PAD: return gen_pad(g, i, idx, out);
  case IR_OP_CONCATENATE: return gen_concat(g, i, idx, out);
  case IR_OP_REVERSE: {
    int64_t dims[IR_MAX_RANK];
    int n = ir_attr_dims(i, "dimensions", dims, IR_MAX_RANK);
    Val sub[IR_MAX_RANK];
    for (int d = 0; d < i->shape.rank; d++) sub[d] = idx[d];
    for (int k = 0; k < n; k++) {
      if (dims[k] < 0 || dims[k] >= i->shape.rank) return gen_fail(g, i, "bad reverse dimension");
      sub[dims[k]] = idxvar(g, "%lldll - %s", (long long)(i->shape.dims[dims[k]] - 1), idx[dims[k]].s);
    }
    return gen(g, i->operands[0], sub, out);
  }
  case IR_OP_REDUCE: return gen_reduce(g, i, which, idx, out);
  case IR_OP_GATHER: return gen_gather(g, i, idx, out);
  case IR_OP_CUSTOM_CALL:
    if (is_threefry(i)) return gen_threefry(g, i, which, idx, out);
    break;
  case IR_OP_REDUCE_WINDOW: return gen_reduce_window(g, i, idx, out);
  case IR_OP_GET_TUPLE_ELEMENT: {
    int64_t k;
    if (!ir_attr_int(i, "index", &k)) return gen_fail(g, i, "get-tuple-element needs index=");
    const IrInstr *src = i->operands[0];
    if (src->op == IR_OP_TUPLE && k < src->noperands) return gen(g, src->operands[k], idx, out);
    if (src->op == IR_OP_REDUCE || is_threefry(src)) return gen_which(g, src, (int)k, idx, out);
    return gen_fail(g, i, "get-tuple-element of %s is not generated", ir_op_name(src->op));
  }
  case IR_OP_MAP: {
    Val args[32];
    if (i->noperands > 32) return gen_fail(g, i, "map with too many operands");
    for (int k = 0; k < i->noperands; k++)
      if (!gen(g, i->operands[k], idx, &args[k])) return false;
    return inline_scalar(g, ir_attr_comp(i, "to_apply"), args, i->noperands, out, 1);
  }
  case IR_OP_SELECT: {
    for (int k = 0; k < 3; k++) {
      bool scalar = oshape(i, k)->rank == 0 && i->shape.rank > 0;
      if (!gen(g, i->operands[k], scalar ? NULL : idx, &a[k])) return false;
    }
    char e[200];
    snprintf(e, sizeof e, "%s ? %s : %s", a[0].s, a[1].s, a[2].s);
    *out = def(g, i->shape.type, e);
    return true;
  }
  case IR_OP_CLAMP: {
    for (int k = 0; k < 3; k++) {
      bool scalar = oshape(i, k)->rank == 0 && i->shape.rank > 0;
      if (!gen(g, i->operands[k], scalar ? NULL : idx, &a[k])) return false;
    }
    Val t1;
    if (!gen_binary_vals(g, i, IR_OP_MAXIMUM, i->shape.type, a[1], a[0], &t1)) return false;
    return gen_binary_vals(g, i, IR_OP_MINIMUM, i->shape.type, t1, a[2], out);
  }
  default: break;
  }
  if (oi->category == IR_CAT_UNARY) {
    if (!gen(g, i->operands[0], idx, &a[0])) return false;
    return gen_unary(g, i, a[0], out);
  }
  if (oi->category == IR_CAT_BINARY) {
    for (int k = 0; k < 2; k++)
      if (!gen(g, i->operands[k], idx, &a[k])) return false;
    if (i->op == IR_OP_COMPARE) return gen_compare(g, i, a[0], a[1], out);
    return gen_binary_vals(g, i, i->op, i->shape.type, a[0], a[1], out);
  }
  return gen_fail(g, i, "%s is not generated; it runs on the interpreter's implementation", ir_op_name(i->op));
}

/* ---------- chains without recursion ----------
 *
 * gen_op asks for its operands recursively, so a chain of N dependent instructions would nest N C
 * frames: a few thousand dependent adds overflowed the stack. Before an instruction is generated,
 * pregen walks the part of its operand graph that gen_op would reach through "pass-through" ops
 * (elementwise ops, compare, select, clamp, copy, convert, broadcast, transpose, slice, reverse:
 * the ones that ask for their operands first, in order, in the current scope, at indices known
 * from their own) with an explicit stack, and generates those instructions in the same post-order
 * the recursion would. Each is then in the memo, so gen_op's own recursive calls return at once
 * and the C stack stays one or two frames deep however long the chain. The remaining recursion
 * (through reduce, gather, pad, concatenate, dynamic slices, inlined computations) counts its
 * depth and stops with an error (the kernel then runs on the interpreter) past GEN_MAX_NEST. */
enum { GEN_MAX_NEST = 200 };

typedef struct {
  const IrInstr *i;
  int next;    /* the next operand to visit */
  bool noidx;  /* asked for at no index (a scalar) */
  Val idx[IR_MAX_RANK];
} PreFrame;

static int value_rank(const IrInstr *i) {
  return i->shape.type == IR_TUPLE ? (i->shape.ntuple ? i->shape.tuple[0].rank : 0) : i->shape.rank;
}

static bool is_memoized(Gen *g, const IrInstr *i, const Val *idx) {
  char key[160];
  memo_key(key, sizeof key, idx ? value_rank(i) : 0, (Val *)idx);
  return memo_find(g, i, 0, key) != NULL;
}

/* Whether pregen may walk through i; fills the index its operand k is asked for at (NULL in *sub_null
 * for a scalar operand). Mirrors gen_op for these ops exactly; anything unusual is left to gen_op. */
static bool pass_through(Gen *g, const IrInstr *i, int k, const Val *idx, Val *sub, bool *sub_null) {
  if (input_of(g, i) >= 0 || i->op == IR_OP_PARAMETER) return false;
  if (i->shape.type == IR_TUPLE || !emit_storage_type(i->shape.type) || !idx) return false;
  const IrOpInfo *oi = ir_op_info(i->op);
  const IrShape *os = oshape(i, k);
  *sub_null = false;
  switch (i->op) {
  case IR_OP_SELECT: case IR_OP_CLAMP:
    if (i->noperands != 3) return false;
    *sub_null = os->rank == 0 && i->shape.rank > 0;
    if (!*sub_null) memcpy(sub, idx, sizeof *sub * (size_t)i->shape.rank);
    return true;
  case IR_OP_COPY:
    memcpy(sub, idx, sizeof *sub * (size_t)i->shape.rank);
    return true;
  case IR_OP_BROADCAST: {
    int64_t map[IR_MAX_RANK];
    int n = ir_attr_dims(i, "dimensions", map, IR_MAX_RANK);
    if (n < 0 || n != os->rank) return false;
    for (int d = 0; d < n; d++) {
      if (map[d] < 0 || map[d] >= i->shape.rank) return false;
      sub[d] = idx[map[d]];
    }
    *sub_null = n == 0;
    return true;
  }
  case IR_OP_TRANSPOSE: {
    int64_t perm[IR_MAX_RANK];
    int n = ir_attr_dims(i, "dimensions", perm, IR_MAX_RANK);
    if (n != i->shape.rank) return false;
    for (int d = 0; d < n; d++) {
      if (perm[d] < 0 || perm[d] >= n) return false;
      sub[perm[d]] = idx[d];
    }
    return true;
  }
  case IR_OP_SLICE: {
    int64_t st[IR_MAX_RANK], li[IR_MAX_RANK], sd[IR_MAX_RANK];
    int n = ir_attr_slice(i, st, li, sd, IR_MAX_RANK);
    if (n != i->shape.rank) return false;
    for (int d = 0; d < n; d++) {
      if (st[d] == 0 && sd[d] == 1) sub[d] = idx[d];
      else sub[d] = idxvar(g, "%lldll + %s * %lldll", (long long)st[d], idx[d].s, (long long)sd[d]);
    }
    return true;
  }
  case IR_OP_REVERSE: {
    int64_t dims[IR_MAX_RANK];
    int n = ir_attr_dims(i, "dimensions", dims, IR_MAX_RANK);
    for (int d = 0; d < i->shape.rank; d++) sub[d] = idx[d];
    for (int q = 0; q < n; q++) {
      if (dims[q] < 0 || dims[q] >= i->shape.rank) return false;
      sub[dims[q]] = idxvar(g, "%lldll - %s", (long long)(i->shape.dims[dims[q]] - 1), idx[dims[q]].s);
    }
    return true;
  }
  default:
    if (oi->category == IR_CAT_UNARY && i->noperands == 1 && i->op != IR_OP_BITCAST_CONVERT) {
      memcpy(sub, idx, sizeof *sub * (size_t)i->shape.rank);
      return true;
    }
    if (oi->category == IR_CAT_BINARY && i->noperands == 2) {
      memcpy(sub, idx, sizeof *sub * (size_t)i->shape.rank);
      return true;
    }
    return false;
  }
}

static bool gen_which(Gen *g, const IrInstr *i, int which, Val *idx, Val *out);

/* Generates, without recursion, every instruction that gen_op(i) would reach through
 * pass-through ops (see above); i itself is left to the caller. */
static bool pregen(Gen *g, const IrInstr *root, const Val *idx) {
  Val probe[IR_MAX_RANK], none[1];
  bool pnull;
  if (!idx) idx = none; /* a rank-0 value: no index variables */
  if (root->noperands == 0 || !pass_through(g, root, 0, idx, probe, &pnull)) return true;
  PreFrame *st = NULL;
  int n = 0, cap = 0;
  bool ok = true;
#define PUSH(ins, ix, nul)                                                                         \
  do {                                                                                             \
    if (n == cap) {                                                                                \
      int nc = cap ? cap * 2 : 32;                                                                 \
      PreFrame *ns = fx_realloc(st, sizeof *ns * (size_t)nc);                                      \
      if (!ns) {                                                                                   \
        ok = gen_fail(g, root, "out of memory");                                                   \
        goto done;                                                                                 \
      }                                                                                            \
      st = ns;                                                                                     \
      cap = nc;                                                                                    \
    }                                                                                              \
    st[n].i = (ins);                                                                               \
    st[n].next = 0;                                                                                \
    st[n].noidx = (nul);                                                                           \
    if (!(nul)) memcpy(st[n].idx, (ix), sizeof(Val) * (size_t)value_rank(ins));                    \
    n++;                                                                                           \
  } while (0)
  PUSH(root, idx, false);
  while (n > 0 && ok) {
    PreFrame *f = &st[n - 1];
    Val sub[IR_MAX_RANK];
    bool snull;
    if (f->next < f->i->noperands && pass_through(g, f->i, f->next, f->idx, sub, &snull)) {
      const IrInstr *c = f->i->operands[f->next++];
      if (!snull && !is_memoized(g, c, sub)) PUSH(c, sub, false);
      else if (snull && !is_memoized(g, c, NULL)) {
        Val v; /* a scalar operand: generated directly (its own chain is walked in its call) */
        ok = gen_which(g, c, 0, NULL, &v);
      }
      continue;
    }
    /* all operands done (or not a pass-through op): generate it; the root is the caller's */
    const IrInstr *ins = f->i;
    Val fidx[IR_MAX_RANK];
    memcpy(fidx, f->idx, sizeof fidx);
    n--;
    if (n > 0 && !is_memoized(g, ins, fidx)) {
      Val v;
      ok = gen_which(g, ins, 0, fidx, &v);
    }
  }
#undef PUSH
done:
  fx_free(st);
  return ok && !g->fail;
}

static bool gen_which(Gen *g, const IrInstr *i, int which, Val *idx, Val *out) {
  if (g->fail) return false;
  if (g->b->oom) return gen_fail(g, i, "out of memory");
  int rank = i->shape.type == IR_TUPLE ? (i->shape.ntuple ? i->shape.tuple[0].rank : 0) : i->shape.rank;
  char key[160];
  memo_key(key, sizeof key, idx ? rank : 0, idx);
  Val *m = memo_find(g, i, which, key);
  if (m) {
    *out = *m;
    return true;
  }
  Val zero[IR_MAX_RANK];
  if (!idx && rank > 0) {
    /* scalars asked for at no index are rank 0; a non-scalar here is an emitter bug */
    if (ir_shape_elements(&i->shape) != 1) return gen_fail(g, i, "non-scalar value used as a scalar");
    for (int d = 0; d < rank; d++) zero[d] = lit_idx(0);
    idx = zero;
  }
  if (g->nest >= GEN_MAX_NEST) return gen_fail(g, i, "the kernel nests more than %d ops deep", GEN_MAX_NEST);
  g->nest++;
  bool ok = pregen(g, i, idx) && gen_op(g, i, which, idx, out);
  g->nest--;
  if (!ok) return false;
  if (i->op != IR_OP_REDUCE && !is_threefry(i)) memo_put(g, i, which, key, *out);
  return true;
}

static bool gen(Gen *g, const IrInstr *i, Val *idx, Val *out) { return gen_which(g, i, 0, idx, out); }

/* ---------- kernels ---------- */

static const IrInstr *kernel_root(const IrInstr *i) {
  const IrComputation *f = ir_fused_computation(i);
  return f ? f->root : i;
}

/* The instruction producing output o, and its tuple element (for variadic reduces). */
static const IrInstr *output_instr(const EmitKernel *k, int o, int *which) {
  const IrInstr *r = kernel_root(k->instr);
  *which = 0;
  if (k->out_tuple_index[o] < 0) return r;
  if (r->op == IR_OP_TUPLE) return r->operands[k->out_tuple_index[o]];
  *which = k->out_tuple_index[o];
  return r;
}

static bool check_supported(const IrComputation *c, const IrInstr *single, FxError *err, int depth);

static bool instr_supported(const IrInstr *i, FxError *err, int depth) {
  if (is_threefry(i)) return true;
  static const IrOpcode bad[] = {IR_OP_SCATTER, IR_OP_SORT,   IR_OP_DOT,         IR_OP_CONVOLUTION,
                                 IR_OP_RNG,     IR_OP_WHILE,   IR_OP_CALL,   IR_OP_CONDITIONAL, IR_OP_CUSTOM_CALL,
                                 IR_OP_FUSION,  IR_OP_COMPLEX, IR_OP_REAL,   IR_OP_IMAG,        IR_OP_TOPK,
                                 IR_OP_SELECT_AND_SCATTER, IR_OP_RNG_BIT_GENERATOR};
  if (i->op == IR_OP_CUSTOM_CALL) { /* named by its target: __cudnn$convForward, __gpu$TopK, ... */
    const char *t = ir_attr_text(i, "custom_call_target");
    return fx_error_set(err, NULL, 0, 0, "%s: custom-call %s is not generated; it runs on the interpreter's implementation",
                        i->name, t ? t : "(no target)");
  }
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    if (i->op == bad[k])
      return fx_error_set(err, NULL, 0, 0, "%s: %s is not generated; it runs on the interpreter's implementation", i->name,
                          ir_op_name(i->op));
  const IrOpInfo *oi = ir_op_info(i->op);
  if (oi->category == IR_CAT_LIBRARY || oi->category == IR_CAT_COLLECTIVE || (oi->category == IR_CAT_CONTROL && i->op != IR_OP_MAP))
    return fx_error_set(err, NULL, 0, 0, "%s: %s is not generated", i->name, ir_op_name(i->op));
  if (i->shape.type != IR_TUPLE && !emit_storage_type(i->shape.type))
    return fx_error_set(err, NULL, 0, 0, "%s: element type %s is not generated", i->name, ir_type_name(i->shape.type));
  if (i->op == IR_OP_CONSTANT && ir_shape_elements(&i->shape) > 65536)
    return fx_error_set(err, NULL, 0, 0, "%s: a constant of more than 65536 elements is not generated", i->name);
  if (i->op == IR_OP_BITCAST && i->noperands == 1 &&
      (!default_layout(&i->shape) || !default_layout(&i->operands[0]->shape)))
    return fx_error_set(err, NULL, 0, 0, "%s: a bitcast between layouts is not generated", i->name);
  IrComputation *called[8];
  int nc = ir_called_computations(i, called, 8);
  for (int k = 0; k < nc; k++)
    if (!check_supported(called[k], NULL, err, depth + 1)) return false;
  return true;
}

static bool check_supported(const IrComputation *c, const IrInstr *single, FxError *err, int depth) {
  if (depth > 8) return fx_error_set(err, NULL, 0, 0, "called computations nest too deeply");
  if (single) return instr_supported(single, err, depth);
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (i->op == IR_OP_PARAMETER) continue;
    if (i->op == IR_OP_TUPLE && i == c->root) continue;
    if (i->op == IR_OP_TUPLE) return fx_error_set(err, NULL, 0, 0, "%s: a tuple inside a kernel is not generated", i->name);
    if (!instr_supported(i, err, depth)) return false;
  }
  return true;
}

static int inplace_operand(const IrInstr *k, const IrInstr *root);
static bool kernel_setup(EmitKernel *k, const IrInstr *i, FxError *err);

bool emit_kernel_init(EmitKernel *k, const IrInstr *i, FxError *err) {
  memset(k, 0, sizeof *k);
  k->instr = i;
  char san[120];
  emit_sanitize(i->name, san, sizeof san);
  snprintf(k->name, sizeof k->name, "fx_%s_%d", san, i->id);
  const IrComputation *f = ir_fused_computation(i);
  if (i->op == IR_OP_FUSION && !f) return fx_error_set(err, NULL, 0, 0, "%s: fusion without a fused computation", i->name);
  if (i->op != IR_OP_FUSION && (i->op == IR_OP_PARAMETER || i->op == IR_OP_TUPLE || i->op == IR_OP_GET_TUPLE_ELEMENT))
    return fx_error_set(err, NULL, 0, 0, "%s: %s is not a kernel", i->name, ir_op_name(i->op));
  if (!check_supported(f, f ? NULL : i, err, 0)) return false;
  return kernel_setup(k, i, err);
}

/* emit_kernel_init past its checks: inputs, outputs and parts. */
static bool kernel_setup(EmitKernel *k, const IrInstr *i, FxError *err) {
  if (i->noperands > EMIT_MAX_BUFFERS) return fx_error_set(err, NULL, 0, 0, "%s: too many operands", i->name);
  k->ninputs = i->noperands;
  for (int j = 0; j < i->noperands; j++) {
    k->in_types[j] = i->operands[j]->shape.type;
    if (!emit_storage_type(k->in_types[j]))
      return fx_error_set(err, NULL, 0, 0, "%s: operand %d of type %s is not generated", i->name, j, ir_type_name(k->in_types[j]));
  }
  /* outputs */
  const IrShape *rs = &i->shape;
  if (rs->type == IR_TUPLE) {
    if (rs->ntuple > EMIT_MAX_BUFFERS) return fx_error_set(err, NULL, 0, 0, "%s: too many outputs", i->name);
    for (int o = 0; o < rs->ntuple; o++) {
      if (rs->tuple[o].type == IR_TUPLE) return fx_error_set(err, NULL, 0, 0, "%s: nested tuple outputs are not generated", i->name);
      k->out_types[o] = rs->tuple[o].type;
      k->out_shapes[o] = &rs->tuple[o];
      k->out_tuple_index[o] = o;
    }
    k->noutputs = rs->ntuple;
    const IrInstr *root = kernel_root(i);
    if (root->op != IR_OP_TUPLE && root->op != IR_OP_REDUCE && !is_threefry(root))
      return fx_error_set(err, NULL, 0, 0, "%s: a tuple result from %s is not generated", i->name, ir_op_name(root->op));
  } else {
    k->noutputs = 1;
    k->out_types[0] = rs->type;
    k->out_shapes[0] = rs;
    k->out_tuple_index[0] = -1;
  }
  /* parts: outputs grouped by dims; a variadic reduce's outputs always share one part */
  for (int o = 0; o < k->noutputs; o++) {
    const IrShape *s = k->out_shapes[o];
    int p = 0;
    for (; p < k->nparts; p++) {
      EmitPart *pp = &k->parts[p];
      if (pp->rank == s->rank && (s->rank == 0 || memcmp(pp->dims, s->dims, sizeof(int64_t) * (size_t)s->rank) == 0))
        break;
    }
    if (p == k->nparts) {
      if (k->nparts == EMIT_MAX_PARTS) return fx_error_set(err, NULL, 0, 0, "%s: too many output shapes", i->name);
      EmitPart *np = &k->parts[k->nparts++];
      np->rank = s->rank;
      if (s->rank) memcpy(np->dims, s->dims, sizeof(int64_t) * (size_t)s->rank); /* scalars: dims is NULL */
      np->count = ir_shape_elements(s);
      np->outer = 1;
      while (np->nsplit < np->rank && (np->nsplit == 0 || np->outer < EMIT_SPLIT_MIN)) np->outer *= np->dims[np->nsplit++];
    }
    k->parts[p].outputs[k->parts[p].noutputs++] = o;
  }
  const IrInstr *root = kernel_root(i);
  k->inplace_input = -1;
  if (root->op == IR_OP_DYNAMIC_UPDATE_SLICE && k->noutputs == 1 && i->shape.type != IR_TUPLE &&
      ir_shape_equal(&root->operands[0]->shape, &i->shape))
    k->inplace_input = inplace_operand(i, root);
  return true;
}


/* ---------- scatter and in-place updates ---------- */

/* The input (kernel operand number) that root's operand 0 reads directly, when nothing else in
 * the kernel reads it; -1 otherwise. */
static int inplace_operand(const IrInstr *k, const IrInstr *root) {
  const IrComputation *f = ir_fused_computation(k);
  const IrInstr *src = root->operands[0];
  if (!f) {
    for (int j = 1; j < root->noperands; j++)
      if (root->operands[j] == src) return -1;
    return 0;
  }
  if (src->op != IR_OP_PARAMETER || src->parent != f) return -1;
  for (int q = 0; q < f->ninstrs; q++) {
    const IrInstr *u = f->instrs[q];
    for (int j = 0; j < u->noperands; j++)
      if (u->operands[j] == src && !(u == root && j == 0)) return -1;
  }
  if (f->root != root) return -1;
  return (int)src->param_number;
}

static bool scatter_ok(const IrInstr *r, FxError *err) {
  int64_t ibd[IR_MAX_RANK];
  if (r->noperands != 3 || r->shape.type == IR_TUPLE || !emit_storage_type(r->shape.type) ||
      ir_attr_dims_or_empty(r, "input_batching_dims", ibd) > 0)
    return fx_error_set(err, NULL, 0, 0, "%s: a scatter of several operands or with batching dims is not generated", r->name);
  const IrComputation *f = ir_attr_comp(r, "to_apply");
  if (!f || !f->root) return fx_error_set(err, NULL, 0, 0, "%s: scatter needs to_apply=", r->name);
  if (!check_supported(f, NULL, err, 1)) return false;
  int64_t uwd[IR_MAX_RANK], iwd[IR_MAX_RANK];
  int nuw = ir_attr_dims_or_empty(r, "update_window_dims", uwd), niw = ir_attr_dims_or_empty(r, "inserted_window_dims", iwd);
  if (nuw < 0) nuw = 0;
  if (niw < 0) niw = 0;
  if (nuw + niw != r->operands[0]->shape.rank)
    return fx_error_set(err, NULL, 0, 0, "%s: scatter window dims do not match the operand", r->name);
  return true;
}

bool emit_scatter_kernel_init(EmitKernel *k, const IrInstr *i, FxError *err) {
  const IrComputation *f = ir_fused_computation(i);
  const IrInstr *root = f ? f->root : i;
  if (!root || root->op != IR_OP_SCATTER) return fx_error_set(err, NULL, 0, 0, "%s: not a scatter", i->name);
  if (!scatter_ok(root, err)) return false;
  if (f)
    for (int q = 0; q < f->ninstrs; q++) {
      const IrInstr *c = f->instrs[q];
      if (c == root || c->op == IR_OP_PARAMETER) continue;
      if (!instr_supported(c, err, 0)) return false;
    }
  memset(k, 0, sizeof *k);
  k->instr = i;
  snprintf(k->name, sizeof k->name, "fx_scatter_%d", i->id);
  if (i->noperands > EMIT_MAX_BUFFERS) return fx_error_set(err, NULL, 0, 0, "%s: too many operands", i->name);
  k->ninputs = i->noperands;
  for (int j = 0; j < i->noperands; j++) {
    k->in_types[j] = i->operands[j]->shape.type;
    if (!emit_storage_type(k->in_types[j]))
      return fx_error_set(err, NULL, 0, 0, "%s: operand %d of type %s is not generated", i->name, j, ir_type_name(k->in_types[j]));
  }
  k->noutputs = 1;
  k->out_types[0] = i->shape.type;
  k->out_shapes[0] = &i->shape;
  k->out_tuple_index[0] = -1;
  k->nparts = 1;
  k->parts[0].count = k->parts[0].outer = 1; /* one call does it all, in order */
  k->parts[0].noutputs = 1;
  k->scatter = true;
  k->inplace_input = inplace_operand(i, root);
  return true;
}

/* Phase 2 of a scatter: every update, in row-major order of the updates. */
static bool gen_scatter_updates(Gen *g, const IrInstr *r) {
  const IrInstr *ind = r->operands[1], *upd = r->operands[2];
  const IrShape *as = &r->shape, *is = &ind->shape, *us = &upd->shape;
  int64_t uwd[IR_MAX_RANK], iwd[IR_MAX_RANK], sdod[IR_MAX_RANK];
  int nuw = ir_attr_dims_or_empty(r, "update_window_dims", uwd), niw = ir_attr_dims_or_empty(r, "inserted_window_dims", iwd);
  int nsd = ir_attr_dims_or_empty(r, "scatter_dims_to_operand_dims", sdod);
  if (nuw < 0) nuw = 0;
  if (niw < 0) niw = 0;
  if (nsd < 0) nsd = 0;
  int64_t ivd = is->rank;
  ir_attr_int(r, "index_vector_dim", &ivd);
  Val u[IR_MAX_RANK];
  for (int d = 0; d < us->rank; d++) {
    u[d] = newvar(g, "u");
    loop_begin(g);
    line(g, "for (int64_t %s = 0; %s < %lldll; %s++) {", u[d].s, u[d].s, (long long)us->dims[d], u[d].s);
    loop_open(g, &u[d]);
  }
  /* the scatter dims of the update index, in order, are the index tensor's dims but ivd */
  Val sdv[IR_MAX_RANK];
  int nsc = 0;
  for (int d = 0; d < us->rank; d++)
    if (!ir_dims_contain(uwd, nuw, d)) sdv[nsc++] = u[d];
  char start[IR_MAX_RANK][40];
  for (int d = 0; d < as->rank; d++) snprintf(start[d], sizeof start[d], "0ll");
  for (int k = 0; k < nsd; k++) {
    Val ix[IR_MAX_RANK], v;
    for (int d = 0, b = 0; d < is->rank; d++) ix[d] = d == ivd ? lit_idx(k) : sdv[b++];
    if (!gen(g, ind, is->rank ? ix : NULL, &v)) return false;
    Val sv = idxvar(g, "(int64_t)%s", v.s);
    if (sdod[k] >= 0 && sdod[k] < as->rank) snprintf(start[sdod[k]], sizeof start[sdod[k]], "%s", sv.s);
  }
  char cond[2048];
  size_t len = 0;
  cond[0] = 0;
  Val pos[IR_MAX_RANK];
  for (int d = 0, w = 0; d < as->rank; d++) {
    if (ir_dims_contain(iwd, niw, d)) {
      len += (size_t)snprintf(cond + len, sizeof cond - len, "%s%s >= 0 && %s < %lldll", len ? " && " : "", start[d], start[d],
                              (long long)as->dims[d]);
      pos[d] = idxvar(g, "%s", start[d]);
    } else {
      int64_t ud = uwd[w++];
      len += (size_t)snprintf(cond + len, sizeof cond - len, "%s%s >= 0 && %s + %lldll <= %lldll", len ? " && " : "", start[d],
                              start[d], (long long)us->dims[ud], (long long)as->dims[d]);
      pos[d] = idxvar(g, "%s + %s", start[d], u[ud].s);
    }
  }
  if (len >= sizeof cond - 1) return gen_fail(g, r, "scatter index expression too long");
  line(g, "if (%s) {", len ? cond : "1");
  open_scope(g);
  char lin[600], cur[700], st[700];
  linear(lin, sizeof lin, as->rank, as->dims, pos);
  char at[640];
  snprintf(at, sizeof at, "out0[%s]", lin);
  from_storage(cur, sizeof cur, as->type, at);
  Val args[2], res;
  args[0] = newvar(g, "v");
  line(g, "const %s %s = %s;", emit_compute_type(as->type), args[0].s, cur);
  if (!gen(g, upd, us->rank ? u : NULL, &args[1])) return false;
  if (!inline_scalar(g, ir_attr_comp(r, "to_apply"), args, 2, &res, 1)) return false;
  to_storage(st, sizeof st, as->type, res.s);
  line(g, "out0[%s] = %s;", lin, st);
  close_scope(g);
  line(g, "}");
  for (int d = us->rank - 1; d >= 0; d--) {
    loop_close(g, &u[d]);
    line(g, "}");
  }
  return true;
}

/* The slice of an in-place dynamic-update-slice: the update's elements at the clamped start. */
static bool gen_dus_inplace(Gen *g, const IrInstr *r) {
  const IrShape *as = &r->shape, *us = &r->operands[1]->shape;
  int rank = as->rank;
  if (r->noperands != 2 + rank) return gen_fail(g, r, "dynamic-update-slice needs one index per dimension");
  Val st[IR_MAX_RANK], u[IR_MAX_RANK], pos[IR_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    Val s;
    if (!gen(g, r->operands[2 + d], NULL, &s)) return false;
    st[d] = idxvar(g, "fx_clampi((int64_t)%s, 0, %lldll)", s.s, (long long)(as->dims[d] - us->dims[d]));
  }
  for (int d = 0; d < rank; d++) {
    u[d] = newvar(g, "u");
    loop_begin(g);
    line(g, "for (int64_t %s = 0; %s < %lldll; %s++) {", u[d].s, u[d].s, (long long)us->dims[d], u[d].s);
    loop_open(g, &u[d]);
    pos[d] = idxvar(g, "%s + %s", st[d].s, u[d].s);
  }
  Val v;
  if (!gen(g, r->operands[1], rank ? u : NULL, &v)) return false;
  char lin[600], sto[700];
  linear(lin, sizeof lin, rank, as->dims, pos);
  to_storage(sto, sizeof sto, as->type, v.s);
  line(g, "out0[%s] = %s;", lin, sto);
  for (int d = rank - 1; d >= 0; d--) {
    loop_close(g, &u[d]);
    line(g, "}");
  }
  return true;
}

/* A wrapper's buffer declarations, without restrict (an in-place variant's output is an input). */
static void plain_decls(EmitBuf *b, const EmitKernel *k) {
  for (int j = 0; j < k->ninputs; j++)
    emit_printf(b, "  const %s *in%d = (const %s *)bufs[%d];\n", emit_storage_type(k->in_types[j]), j,
                emit_storage_type(k->in_types[j]), j);
  emit_printf(b, "  %s *out0 = (%s *)bufs[%d];\n", emit_storage_type(k->out_types[0]), emit_storage_type(k->out_types[0]),
              k->ninputs);
  emit_printf(b, "  (void)bufs;\n");
}

static void gen_init(Gen *g, EmitBuf *b, const EmitKernel *k, int indent, FxError *err) {
  memset(g, 0, sizeof *g);
  g->b = b;
  g->k = k;
  g->t = EMIT_TARGET_C;
  g->indent = indent;
  g->err = err;
  g->fcomp = ir_fused_computation(k->instr);
}

static bool gen_done(Gen *g, bool ok) {
  fx_free(g->vlevel);
  fx_free(g->memo);
  fx_free(g->heads);
  if (ok && g->b->oom) ok = fx_error_set(g->err, NULL, 0, 0, "out of memory generating %s", g->k->name);
  return ok && !g->fail;
}

/* The scatter kernel's wrapper: the operand copied into the output, then the updates. */
static bool emit_scatter_wrapper(EmitBuf *b, const EmitKernel *k, FxError *err) {
  const IrInstr *r = kernel_root(k->instr);
  const IrShape *as = &r->shape;
  emit_printf(b, "void %s_p0(char *const *bufs, int64_t lo, int64_t hi) {\n", k->name);
  plain_decls(b, k);
  emit_printf(b, "  (void)lo; (void)hi;\n");
  Gen g;
  gen_init(&g, b, k, 2 + 2 * as->rank, err);
  Val idx[IR_MAX_RANK], v;
  for (int d = 0; d < as->rank; d++) {
    snprintf(idx[d].s, sizeof idx[d].s, "i%d", d);
    emit_printf(b, "%*sfor (int64_t i%d = 0; i%d < %lldll; i%d++) {\n", 2 + 2 * d, "", d, d, (long long)as->dims[d], d);
  }
  bool ok = gen(&g, r->operands[0], as->rank ? idx : NULL, &v);
  if (ok) {
    char lin[600], st[700];
    linear(lin, sizeof lin, as->rank, as->dims, idx);
    to_storage(st, sizeof st, as->type, v.s);
    line(&g, "out0[%s] = %s;", lin, st);
  }
  for (int d = as->rank - 1; d >= 0; d--) emit_printf(b, "%*s}\n", 2 + 2 * d, "");
  g.indent = 2;
  memo_pop_scope(&g);
  if (ok) ok = gen_scatter_updates(&g, r);
  emit_printf(b, "}\n\n");
  return gen_done(&g, ok);
}

bool emit_inplace(EmitBuf *b, const EmitKernel *k, FxError *err) {
  const IrInstr *r = kernel_root(k->instr);
  if (k->inplace_input < 0 || (r->op != IR_OP_SCATTER && r->op != IR_OP_DYNAMIC_UPDATE_SLICE))
    return fx_error_set(err, NULL, 0, 0, "%s: no in-place variant", k->instr->name);
  emit_printf(b, "void %s_ip(char *const *bufs) {\n", k->name);
  plain_decls(b, k);
  Gen g;
  gen_init(&g, b, k, 2, err);
  bool ok = r->op == IR_OP_SCATTER ? gen_scatter_updates(&g, r) : gen_dus_inplace(&g, r);
  emit_printf(b, "}\n\n");
  return gen_done(&g, ok);
}

bool emit_dot_kernel_init(EmitKernel *k, const IrInstr *i, FxError *err) {
  IrDotDims dd;
  if (i->op != IR_OP_DOT || i->noperands != 2 || !ir_dot_dims(i, &dd) || dd.nlhs_batch != dd.nrhs_batch ||
      dd.nlhs_contract != dd.nrhs_contract)
    return fx_error_set(err, NULL, 0, 0, "%s: not a dot", i->name);
  IrType t = i->shape.type;
  if (!ir_type_is_float(t) || !emit_storage_type(t) || ir_type_is_complex(t) || !emit_storage_type(i->operands[0]->shape.type) ||
      !emit_storage_type(i->operands[1]->shape.type) || !ir_type_is_float(i->operands[0]->shape.type) ||
      !ir_type_is_float(i->operands[1]->shape.type))
    return fx_error_set(err, NULL, 0, 0, "%s: a dot of %s is not generated", i->name, ir_type_name(t));
  /* element by element is for small dots (in loops); a large one runs on the interpreter's
     blocked dot, faster than this naive loop */
  int64_t macs = ir_shape_elements(&i->shape);
  for (int c = 0; c < dd.nlhs_contract; c++) macs *= i->operands[0]->shape.dims[dd.lhs_contract[c]];
  if (macs > EMIT_DOT_MAX_MACS)
    return fx_error_set(err, NULL, 0, 0, "%s: a dot of %lld multiply-adds is not generated (at most %d)", i->name,
                        (long long)macs, EMIT_DOT_MAX_MACS);
  memset(k, 0, sizeof *k);
  k->instr = i;
  snprintf(k->name, sizeof k->name, "fx_dot_%d", i->id);
  return kernel_setup(k, i, err);
}

/* A dot, element by element: the contracting dims looped over, the products summed in double as
 * the interpreter sums them, rounded to the result type once. */
static bool gen_dot(Gen *g, const IrInstr *i, Val *idx, Val *out) {
  IrDotDims dd;
  if (!ir_dot_dims(i, &dd)) return gen_fail(g, i, "bad dot dimension numbers");
  const IrShape *as = oshape(i, 0), *bs = oshape(i, 1);
  bool ua[IR_MAX_RANK] = {0}, ub[IR_MAX_RANK] = {0};
  Val ai[IR_MAX_RANK], bi[IR_MAX_RANK];
  int q = 0;
  for (int k = 0; k < dd.nlhs_batch; k++, q++) {
    ai[dd.lhs_batch[k]] = bi[dd.rhs_batch[k]] = idx[q];
    ua[dd.lhs_batch[k]] = ub[dd.rhs_batch[k]] = true;
  }
  for (int k = 0; k < dd.nlhs_contract; k++) ua[dd.lhs_contract[k]] = ub[dd.rhs_contract[k]] = true;
  for (int d = 0; d < as->rank; d++)
    if (!ua[d]) ai[d] = idx[q++];
  for (int d = 0; d < bs->rank; d++)
    if (!ub[d]) bi[d] = idx[q++];
  Val acc = newvar(g, "acc");
  line(g, "double %s = 0;", acc.s);
  Val rv[IR_MAX_RANK];
  for (int k = 0; k < dd.nlhs_contract; k++) {
    Val r = newvar(g, "r");
    loop_begin(g);
    line(g, "for (int64_t %s = 0; %s < %lldll; %s++) {", r.s, r.s, (long long)as->dims[dd.lhs_contract[k]], r.s);
    loop_open(g, &r);
    rv[k] = r;
    ai[dd.lhs_contract[k]] = bi[dd.rhs_contract[k]] = r;
  }
  Val x, y;
  if (!gen(g, i->operands[0], as->rank ? ai : NULL, &x) || !gen(g, i->operands[1], bs->rank ? bi : NULL, &y)) return false;
  line(g, "%s += (double)%s * (double)%s;", acc.s, x.s, y.s);
  for (int k = dd.nlhs_contract - 1; k >= 0; k--) {
    loop_close(g, &rv[k]);
    line(g, "}");
  }
  char e[64];
  snprintf(e, sizeof e, "(%s)%s", emit_compute_type(i->shape.type), acc.s);
  *out = def(g, i->shape.type, e);
  return true;
}

bool emit_sort_kernel_init(EmitKernel *k, const IrInstr *i, FxError *err) {
  memset(k, 0, sizeof *k);
  k->instr = i;
  k->inplace_input = -1;
  snprintf(k->name, sizeof k->name, "fx_sort_%d", i->id);
  /* sort-iota-fusion's kCustom fusion: a sort of the fusion's parameters and of iotas */
  const IrInstr *sort = i;
  if (i->op == IR_OP_FUSION) {
    const IrComputation *fc = ir_fused_computation(i);
    sort = fc && fc->root && fc->root->op == IR_OP_SORT ? fc->root : NULL;
    for (int q = 0; sort && q < fc->ninstrs; q++) {
      const IrInstr *x = fc->instrs[q];
      if (x != sort && x->op != IR_OP_PARAMETER && x->op != IR_OP_IOTA) sort = NULL;
    }
    if (!sort) return fx_error_set(err, NULL, 0, 0, "%s: not a fusion of a sort and its iotas", i->name);
  }
  int n = sort->noperands;
  const IrComputation *cmp = ir_attr_comp(sort, "to_apply");
  int64_t dim = 0;
  if (sort->op != IR_OP_SORT || n < 1 || n > 16 || !cmp || !cmp->root)
    return fx_error_set(err, NULL, 0, 0, "%s: not a sort with a comparator", i->name);
  const IrShape *s0 = &sort->operands[0]->shape;
  if (ir_attr_dims(sort, "dimensions", &dim, 1) != 1 || dim < 0 || dim >= (s0->rank ? s0->rank : 1) || s0->rank == 0)
    return fx_error_set(err, NULL, 0, 0, "%s: a sort needs dimensions={d} within its operands' rank", i->name);
  for (int j = 0; j < n; j++) {
    const IrInstr *o = sort->operands[j];
    const IrShape *s = &o->shape;
    if (s->type == IR_TUPLE || !emit_storage_type(s->type) || !ir_shape_same_dims(s, s0) || !default_layout(s))
      return fx_error_set(err, NULL, 0, 0, "%s: sort operand %d is not generated", i->name, j);
    int64_t d = 0;
    if (o->op == IR_OP_IOTA && sort != i) {
      if (!ir_attr_int(o, "iota_dimension", &d) || d < 0 || d >= s->rank || !ir_type_is_int(s->type))
        return fx_error_set(err, NULL, 0, 0, "%s: sort operand %d is an iota that is not generated", i->name, j);
      k->sort_src[j] = -1 - (int)d;
    } else {
      k->sort_src[j] = sort == i ? j : (int)o->param_number;
    }
    k->out_types[j] = s->type;
    k->out_shapes[j] = n > 1 ? &sort->shape.tuple[j] : &sort->shape;
    k->out_tuple_index[j] = n > 1 ? j : -1;
  }
  k->ninputs = sort == i ? n : i->noperands;
  for (int j = 0; j < k->ninputs; j++) k->in_types[j] = i->operands[j]->shape.type;
  if ((n > 1 && (sort->shape.type != IR_TUPLE || sort->shape.ntuple != n)) || (n == 1 && sort->shape.type == IR_TUPLE))
    return fx_error_set(err, NULL, 0, 0, "%s: the sort's result does not match its operands", i->name);
  if (!check_supported(cmp, NULL, err, 1)) return false;
  int64_t len = s0->dims[dim], stride = 1, count = ir_shape_elements(s0);
  for (int d = (int)dim + 1; d < s0->rank; d++) stride *= s0->dims[d];
  if (len < 1 || len > EMIT_SORT_MAX_LEN)
    return fx_error_set(err, NULL, 0, 0, "%s: a sort of lines of %lld elements is not generated (at most %d)", i->name,
                        (long long)len, EMIT_SORT_MAX_LEN);
  k->noutputs = n;
  k->sort_len = len;
  k->sort_stride = stride;
  k->nparts = 1;
  EmitPart *p = &k->parts[0];
  p->rank = 1;
  p->dims[0] = p->count = p->outer = count / len;
  p->nsplit = 1;
  p->noutputs = n;
  for (int j = 0; j < n; j++) p->outputs[j] = j;
  return true;
}

/* The value of sort operand j at flat position `pos` (a C expression) as storage text: a load of
 * its input, or an iota's coordinate along its dimension. */
static void sort_operand_at(char *out, size_t n, const EmitKernel *k, const IrShape *s, int j, const char *pos) {
  const char *st = emit_storage_type(k->out_types[j]);
  if (k->sort_src[j] >= 0) {
    snprintf(out, n, "((const %s *)bufs[%d])[%s]", st, k->sort_src[j], pos);
    return;
  }
  int d = -1 - k->sort_src[j];
  int64_t inner = 1;
  for (int q = d + 1; q < s->rank; q++) inner *= s->dims[q];
  snprintf(out, n, "((%s)(((%s) / %lldll) %% %lldll))", st, pos, (long long)inner, (long long)s->dims[d]);
}

/* Whether b computes a with each pair of comparator parameters swapped (parameter 2i read where a
 * reads 2i + 1 and the reverse), instruction by instruction. */
static bool swapped_copy(const IrInstr *a, const IrInstr *b, int depth) {
  if (a == b) return a->op != IR_OP_PARAMETER;
  if (depth > 64 || a->op != b->op || a->noperands != b->noperands || !ir_shape_equal(&a->shape, &b->shape)) return false;
  if (a->op == IR_OP_PARAMETER) return a->param_number == (b->param_number ^ 1);
  if (a->op == IR_OP_CONSTANT) return a->literal && b->literal && a->literal->text && b->literal->text &&
                                      strcmp(a->literal->text, b->literal->text) == 0;
  if (a->nattrs != b->nattrs) return false;
  for (int k = 0; k < a->nattrs; k++) {
    const char *t = ir_attr_text(b, a->attrs[k].key);
    if (a->attrs[k].kind != IR_ATTR_TEXT || !t || strcmp(t, a->attrs[k].text) != 0) return false;
  }
  for (int k = 0; k < a->noperands; k++)
    if (!swapped_copy(a->operands[k], b->operands[k], depth + 1)) return false;
  return true;
}

/* stable-sort-expander's tie-breaker: a comparator select(cmp(a, b) == cmp(b, a), i_a < i_b,
 * cmp(a, b)) whose i is an iota along the sorted dimension, and cmp a strict (LT or GT) comparison,
 * orders exactly as cmp does in a stable sort (equal keys keep their index order, which the iota
 * is). Returns cmp(a, b) for the stable merge sort to compare with alone, or NULL. */
static IrInstr *stable_core(const EmitKernel *k, const IrInstr *sort, const IrComputation *cmp, int64_t dim) {
  const IrInstr *r = cmp->root;
  if (!r || r->op != IR_OP_SELECT || r->noperands != 3) return NULL;
  const IrInstr *same = r->operands[0], *tie = r->operands[1];
  IrInstr *core = r->operands[2];
  const char *sd = ir_compare_direction(same), *td = ir_compare_direction(tie), *cd = ir_compare_direction(core);
  if (same->op != IR_OP_COMPARE || !sd || strcmp(sd, "EQ") != 0 || same->operands[0] != core) return NULL;
  if (core->op != IR_OP_COMPARE || !cd || (strcmp(cd, "LT") != 0 && strcmp(cd, "GT") != 0)) return NULL;
  if (tie->op != IR_OP_COMPARE || !td || strcmp(td, "LT") != 0) return NULL;
  const IrInstr *pl = tie->operands[0], *pr = tie->operands[1];
  if (pl->op != IR_OP_PARAMETER || pr->op != IR_OP_PARAMETER || pl->param_number % 2 != 0 ||
      pr->param_number != pl->param_number + 1)
    return NULL;
  int t = (int)(pl->param_number / 2);
  if (t >= sort->noperands) return NULL;
  const IrInstr *o = sort->operands[t];
  int64_t d = -1;
  bool iota = k->sort_src[t] == -1 - (int)dim ||
              (o->op == IR_OP_IOTA && ir_attr_int(o, "iota_dimension", &d) && d == dim);
  if (!iota || !swapped_copy(core, same->operands[1], 0)) return NULL;
  return core;
}

/* The sort kernel's wrapper (see emit_sort_kernel_init): a comparator function over two positions
 * of a line, and per line an insertion sort of runs of 16 then a bottom-up merge, both stable
 * (an element moves before another only when the comparator says it goes first). */
static bool emit_sort_wrapper(EmitBuf *b, const EmitKernel *k, FxError *err) {
  const IrInstr *i = k->instr;
  if (i->op == IR_OP_FUSION) i = ir_fused_computation(i)->root;
  const IrComputation *cmp = ir_attr_comp(i, "to_apply");
  const IrShape *s0 = &i->operands[0]->shape;
  int n = k->noutputs, nin = k->ninputs;
  long long len = (long long)k->sort_len, stride = (long long)k->sort_stride;
  emit_printf(b, "static inline int %s_less(char *const *bufs, int64_t base, int64_t a, int64_t c) {\n", k->name);
  Gen g;
  memset(&g, 0, sizeof g);
  g.b = b;
  g.k = k;
  g.t = EMIT_TARGET_C;
  g.indent = 2;
  g.err = err;
  Val args[32], res;
  for (int j = 0; j < n; j++) {
    char pos[96], ld[200], v[260];
    for (int side = 0; side < 2; side++) {
      snprintf(pos, sizeof pos, "base + %s * %lldll", side ? "c" : "a", stride);
      sort_operand_at(ld, sizeof ld, k, s0, j, pos);
      from_storage(v, sizeof v, k->out_types[j], ld);
      args[2 * j + side] = newvar(&g, "v");
      line(&g, "const %s %s = %s;", emit_compute_type(k->out_types[j]), args[2 * j + side].s, v);
    }
  }
  int64_t dim = 0;
  ir_attr_dims(i, "dimensions", &dim, 1);
  IrInstr *core = stable_core(k, i, cmp, dim);
  bool ok = core ? inline_values(&g, cmp, &core, 1, args, 2 * n, &res) : inline_scalar(&g, cmp, args, 2 * n, &res, 1);
  if (ok) line(&g, "return %s != 0;", res.s);
  fx_free(g.memo);
  fx_free(g.heads);
  fx_free(g.vlevel);
  if (!ok || g.fail) return false;
  emit_printf(b, "}\n");
  emit_printf(b, "void %s_p0(char *const *bufs, int64_t lo, int64_t hi) {\n", k->name);
  emit_printf(b, "  int32_t fx_v0[%lld], fx_t0[%lld];\n", len, len);
  emit_printf(b, "  for (int64_t ln = lo; ln < hi; ln++) {\n");
  emit_printf(b, "    const int64_t base = (ln / %lldll) * %lldll + ln %% %lldll;\n", stride, stride * len, stride);
  emit_printf(b, "    int32_t *v = fx_v0, *t = fx_t0;\n");
  emit_printf(b, "    for (int32_t q = 0; q < %lld; q++) v[q] = q;\n", len);
  emit_printf(b, "    for (int64_t s = 0; s < %lldll; s += 16) {\n", len);
  emit_printf(b, "      const int64_t e = s + 16 < %lldll ? s + 16 : %lldll;\n", len, len);
  emit_printf(b, "      for (int64_t p = s + 1; p < e; p++) {\n");
  emit_printf(b, "        const int32_t cur = v[p];\n        int64_t q = p;\n");
  emit_printf(b, "        while (q > s && %s_less(bufs, base, cur, v[q - 1])) { v[q] = v[q - 1]; q--; }\n", k->name);
  emit_printf(b, "        v[q] = cur;\n      }\n    }\n");
  emit_printf(b, "    for (int64_t w = 16; w < %lldll; w *= 2) {\n", len);
  emit_printf(b, "      for (int64_t s = 0; s < %lldll; s += 2 * w) {\n", len);
  emit_printf(b, "        const int64_t m = s + w < %lldll ? s + w : %lldll, e = s + 2 * w < %lldll ? s + 2 * w : %lldll;\n", len,
              len, len, len);
  emit_printf(b, "        int64_t a = s, c = m, o = s;\n");
  emit_printf(b, "        while (a < m && c < e) t[o++] = %s_less(bufs, base, v[c], v[a]) ? v[c++] : v[a++];\n", k->name);
  emit_printf(b, "        while (a < m) t[o++] = v[a++];\n        while (c < e) t[o++] = v[c++];\n      }\n");
  emit_printf(b, "      int32_t *x = v; v = t; t = x;\n    }\n");
  for (int j = 0; j < n; j++) {
    const char *st = emit_storage_type(k->out_types[j]);
    char pos[96], ld[200];
    snprintf(pos, sizeof pos, "base + v[q] * %lldll", stride);
    sort_operand_at(ld, sizeof ld, k, s0, j, pos);
    emit_printf(b, "    for (int64_t q = 0; q < %lldll; q++)\n", len);
    emit_printf(b, "      ((%s *)bufs[%d])[base + q * %lldll] = %s;\n", st, nin + j, stride, ld);
  }
  emit_printf(b, "  }\n}\n\n");
  return !b->oom;
}

bool emit_globals(EmitBuf *b, const EmitKernel *k, EmitTarget t, FxError *err) {
  (void)err;
  const IrComputation *f = ir_fused_computation(k->instr);
  int n = f ? f->ninstrs : 1;
  for (int q = 0; q < n; q++) {
    const IrInstr *c = f ? f->instrs[q] : k->instr;
    if (c->op != IR_OP_CONSTANT || !c->literal || c->literal->elided || !c->literal->values) continue;
    int64_t cnt = ir_shape_elements(&c->shape);
    if (cnt <= 1 || c->literal->count != cnt) continue;
    int64_t *iv = NULL; /* 64-bit integers exactly, from the literal's text */
    if (c->shape.type == IR_S64 || c->shape.type == IR_U64) {
      iv = fx_malloc(sizeof(int64_t) * (size_t)cnt);
      if (!iv) {
        b->oom = true;
        return false;
      }
      if (ir_literal_ints(c->literal, c->shape.type == IR_U64, iv, cnt) != cnt) {
        fx_free(iv);
        iv = NULL;
      }
    }
    emit_printf(b, "static %sconst %s %s_c%d[%lld] = {", t == EMIT_TARGET_CUDA ? "__device__ " : "",
                emit_storage_type(c->shape.type), k->name, c->id, (long long)cnt);
    for (int64_t e = 0; e < cnt; e++) {
      double v = c->literal->values[e];
      char lit[64];
      IrType ty = c->shape.type;
      if (ty == IR_F16) snprintf(lit, sizeof lit, "0x%04x", rt_f32_to_f16((float)v));
      else if (ty == IR_BF16) snprintf(lit, sizeof lit, "0x%04x", rt_f32_to_bf16((float)v));
      else if (ty == IR_S64 || ty == IR_U64) literal_i64(lit, sizeof lit, ty, iv ? iv[e] : (int64_t)v);
      else literal(lit, sizeof lit, ty, v);
      emit_printf(b, "%s%s", e ? "," : "", lit);
      if (e % 16 == 15) emit_printf(b, "\n");
    }
    emit_printf(b, "};\n");
    fx_free(iv);
  }
  return !b->oom;
}

static bool body_pick(EmitBuf *b, const EmitKernel *k, int part, EmitTarget t, int indent, const IrInstr *pick, int pick_k,
                      int *tile_hint, FxError *err) {
  if (part < 0 || part >= k->nparts) return fx_error_set(err, NULL, 0, 0, "no part %d", part);
  Gen g;
  memset(&g, 0, sizeof g);
  g.b = b;
  g.k = k;
  g.t = t;
  g.indent = indent;
  g.err = err;
  g.fcomp = ir_fused_computation(k->instr);
  g.pick = pick;
  g.pick_k = pick_k;
  g.part_rank = tile_hint ? k->parts[part].rank : 0;
  g.tile_hint = -1;
  const EmitPart *p = &k->parts[part];
  Val idx[IR_MAX_RANK];
  for (int d = 0; d < p->rank; d++) snprintf(idx[d].s, sizeof idx[d].s, "i%d", d);
  bool ok = true;
  for (int q = 0; q < p->noutputs && ok; q++) {
    int o = p->outputs[q], which;
    const IrInstr *src = output_instr(k, o, &which);
    Val v;
    ok = gen_which(&g, src, which, idx, &v);
    if (ok) {
      char lin[600], st[700];
      linear(lin, sizeof lin, p->rank, p->dims, idx);
      to_storage(st, sizeof st, k->out_types[o], v.s);
      line(&g, "out%d[%s] = %s;", o, lin, st);
    }
  }
  fx_free(g.memo);
  fx_free(g.heads);
  fx_free(g.vlevel);
  for (int q = 0; q < g.capjexpr; q++) fx_free(g.jexpr[q]);
  fx_free(g.jexpr);
  if (tile_hint) *tile_hint = g.tile_hint;
  if (ok && b->oom) ok = fx_error_set(err, NULL, 0, 0, "out of memory generating %s", k->name);
  return ok;
}

bool emit_body(EmitBuf *b, const EmitKernel *k, int part, EmitTarget t, int indent, FxError *err) {
  return body_pick(b, k, part, t, indent, NULL, 0, NULL, err);
}

/* ---------- lanes: several elements' bodies interleaved ---------- */

/* Library math calls the compiler cannot vectorize: a body that makes them runs one element at a
 * time, and when it is long (an unrolled loop body: ten dependent steps of one element) the
 * processor cannot look far enough ahead to overlap the next element's work with the latency of
 * this one's chain. Interleaving the statements of a few elements, statement by statement, puts
 * independent work side by side. */
static const char *const libm_calls[] = {
    "sinf", "cosf", "tanf", "expf", "expm1f", "logf", "log1pf", "tanhf", "erff", "cbrtf", "powf", "fmodf", "atan2f",
    "sin",  "cos",  "tan",  "exp",  "expm1",  "log",  "log1p",  "tanh",  "erf",  "cbrt",  "pow",  "fmod",  "atan2"};


/* Whether the body text is straight-line code (no scopes) that calls a library math function. */
static bool body_wants_lanes(const char *s) {
  if (strchr(s, '{') || strchr(s, '}')) return false;
  for (const char *q = s; *q; q++) {
    if (!ident_char(*q) || (q > s && ident_char(q[-1]))) continue;
    size_t n = 0;
    while (ident_char(q[n])) n++;
    if (q[n] == '(')
      for (size_t c = 0; c < sizeof libm_calls / sizeof *libm_calls; c++)
        if (strlen(libm_calls[c]) == n && strncmp(q, libm_calls[c], n) == 0) return true;
    q += n - 1;
  }
  return false;
}

/* Whether identifier q[0..n) is one of the body's variables (v12, j3, acc4, r5, w6, b7: emit's
 * prefixes and a number). */
static bool body_var(const char *q, size_t n) {
  size_t a = 0;
  while (a < n && q[a] >= 'a' && q[a] <= 'z') a++;
  if (a == 0 || a == n) return false;
  for (size_t d = a; d < n; d++)
    if (q[d] < '0' || q[d] > '9') return false;
  static const char *const prefixes[] = {"v", "j", "acc", "r", "w", "b"};
  for (size_t c = 0; c < sizeof prefixes / sizeof *prefixes; c++)
    if (strlen(prefixes[c]) == a && strncmp(q, prefixes[c], a) == 0) return true;
  return false;
}

/* One line of the body for lane `lane`: variables get the suffix _lane, the lane index variable
 * `ivar` becomes (ivar + lane); numbers (1.5e+00f, 0x1p-3) pass unchanged. */
static void lane_line(EmitBuf *b, const char *q, const char *end, int lane, const char *ivar) {
  while (q < end) {
    if ((*q >= '0' && *q <= '9') || (*q == '.' && q + 1 < end && q[1] >= '0' && q[1] <= '9')) {
      const char *e = q;
      while (e < end && (ident_char(*e) || *e == '.' ||
                         ((*e == '+' || *e == '-') && (e[-1] == 'e' || e[-1] == 'E' || e[-1] == 'p' || e[-1] == 'P'))))
        e++;
      emit_printf(b, "%.*s", (int)(e - q), q);
      q = e;
    } else if (ident_char(*q)) {
      const char *e = q;
      while (e < end && ident_char(*e)) e++;
      size_t n = (size_t)(e - q);
      if (strlen(ivar) == n && strncmp(q, ivar, n) == 0) emit_printf(b, "(%s + %d)", ivar, lane);
      else if (body_var(q, n)) emit_printf(b, "%.*s_%d", (int)n, q, lane);
      else emit_printf(b, "%.*s", (int)n, q);
      q = e;
    } else {
      emit_printf(b, "%c", *q);
      q++;
    }
  }
}

/* The body `body` (lines at indent `ind`) for `lanes` consecutive values of the innermost index
 * `ivar`, statement by statement: line 1 of every lane, then line 2, ... */
static void emit_lanes(EmitBuf *b, const char *body, int lanes, const char *ivar) {
  for (const char *q = body; *q;) {
    const char *e = strchr(q, '\n');
    if (!e) e = q + strlen(q);
    for (int l = 0; l < lanes; l++) {
      lane_line(b, q, e, l, ivar);
      emit_printf(b, "\n");
    }
    q = *e ? e + 1 : e;
  }
}

#define EMIT_LANES 4

/* ---------- reductions of outer dims: the loops swapped ----------
 *
 * A part that computes one reduce of one operand whose innermost dim is kept (a sum over the
 * spatial positions of [1, 7, 7, 2048], a mean over the rows of [4096, 1024]) would, element by
 * element, run each output's reduction loops inside the loop over the innermost output dim: the
 * compiler cannot vectorize that (an inner loop nest). The wrapper swaps them instead: per tile of
 * COLUMN_TILE outputs along the innermost dim, accumulators are set to the init value, the
 * reduction loops run outside and the tile's outputs inside (contiguous, vectorized), then the
 * accumulators are stored. Each output still takes its operand's elements in the same order, so
 * the results are the element-by-element loop's, bit for bit. */
enum { COLUMN_TILE = 256 };

/* The reduce that part p computes and stores as it is, when it reduces dims other than its
 * operand's innermost; NULL otherwise. */
static const IrInstr *column_reduce(const EmitKernel *k, const EmitPart *p) {
  if (p->noutputs != 1 || p->rank < 1 || k->sort_len || k->scatter) return NULL;
  int which;
  const IrInstr *r = output_instr(k, p->outputs[0], &which);
  if (!r || r->op != IR_OP_REDUCE || r->noperands != 2 || r->shape.type == IR_TUPLE || r->shape.rank != p->rank) return NULL;
  const IrShape *is = oshape(r, 0);
  int64_t rd[IR_MAX_RANK];
  int nr = ir_attr_dims(r, "dimensions", rd, IR_MAX_RANK);
  if (nr < 1 || is->rank < 2) return NULL;
  for (int q = 0; q < nr; q++)
    if (rd[q] < 0 || rd[q] >= is->rank || rd[q] == is->rank - 1) return NULL;
  if (!ir_attr_comp(r, "to_apply") || !emit_storage_type(r->shape.type)) return NULL;
  return r;
}

/* The loops of column reduce r for the innermost output index `ivar` over [lo, hi), at indent
 * `ind`, the outer index variables already set. */
static bool emit_column_reduce(EmitBuf *b, const EmitKernel *k, int part, const IrInstr *r, const char *ivar,
                               const char *lo, const char *hi, int ind, FxError *err) {
  const EmitPart *p = &k->parts[part];
  int o = p->outputs[0];
  Gen g;
  gen_init(&g, b, k, ind, err);
  IrType t = r->shape.type;
  const char *ct = emit_compute_type(t);
  const IrShape *is = oshape(r, 0);
  int64_t rd[IR_MAX_RANK];
  int nr = ir_attr_dims(r, "dimensions", rd, IR_MAX_RANK);
  bool red[IR_MAX_RANK] = {0};
  for (int q = 0; q < nr; q++) red[rd[q]] = true;
  Val idx[IR_MAX_RANK], full[IR_MAX_RANK], init, e, args[2], res;
  for (int d = 0; d < p->rank; d++) snprintf(idx[d].s, sizeof idx[d].s, "i%d", d);
  line(&g, "for (int64_t fx_t0 = %s; fx_t0 < %s; fx_t0 += %d) {", lo, hi, COLUMN_TILE);
  open_scope(&g);
  line(&g, "const int64_t fx_t1 = fx_t0 + %d < %s ? fx_t0 + %d : %s;", COLUMN_TILE, hi, COLUMN_TILE, hi);
  line(&g, "%s fx_acc[%d];", ct, COLUMN_TILE);
  line(&g, "for (int64_t %s = fx_t0; %s < fx_t1; %s++) {", ivar, ivar, ivar);
  open_scope(&g);
  bool ok = gen(&g, r->operands[1], NULL, &init);
  if (ok) line(&g, "fx_acc[%s - fx_t0] = %s;", ivar, init.s);
  close_scope(&g);
  line(&g, "}");
  int kept = 0, opened = 0;
  for (int d = 0; ok && d < is->rank; d++) {
    if (!red[d]) {
      full[d] = idx[kept++];
      continue;
    }
    Val rv = newvar(&g, "r");
    line(&g, "for (int64_t %s = 0; %s < %lldll; %s++) {", rv.s, rv.s, (long long)is->dims[d], rv.s);
    open_scope(&g);
    opened++;
    full[d] = rv;
  }
  if (ok) {
    line(&g, "#pragma GCC ivdep");
    line(&g, "for (int64_t %s = fx_t0; %s < fx_t1; %s++) {", ivar, ivar, ivar);
    open_scope(&g);
    ok = gen(&g, r->operands[0], full, &e);
    snprintf(args[0].s, sizeof args[0].s, "fx_acc[%s - fx_t0]", ivar);
    args[1] = e;
    if (ok) ok = inline_scalar(&g, ir_attr_comp(r, "to_apply"), args, 2, &res, 1);
    if (ok) line(&g, "fx_acc[%s - fx_t0] = %s;", ivar, res.s);
    close_scope(&g);
    line(&g, "}");
  }
  for (int q = 0; q < opened; q++) {
    close_scope(&g);
    line(&g, "}");
  }
  if (ok) {
    char lin[600], acc[40], st[700];
    line(&g, "for (int64_t %s = fx_t0; %s < fx_t1; %s++) {", ivar, ivar, ivar);
    linear(lin, sizeof lin, p->rank, p->dims, idx);
    snprintf(acc, sizeof acc, "fx_acc[%s - fx_t0]", ivar);
    to_storage(st, sizeof st, k->out_types[o], acc);
    line(&g, "  out%d[%s] = %s;", o, lin, st);
    line(&g, "}");
  }
  close_scope(&g);
  line(&g, "}");
  return gen_done(&g, ok);
}

/* Transposes: a part that reads an input through a transpose moving its innermost dim (Gemma 3's
 * bf16[262144, 1152] embedding to [1152, 262144]) walks the input with a stride of a whole row
 * per output element: every read a cache miss. The wrapper tiles such a part instead: TRANSPOSE_TILE
 * x TRANSPOSE_TILE blocks of (the output dim that is the input's innermost, the output's
 * innermost), so that a block's input rows stay in cache while its output rows are written. The
 * iterations are independent, so the order changes nothing but the time. */
enum { TRANSPOSE_TILE = 32 };

/* The output dim of part p to tile with its innermost (a transpose in the kernel whose result has
 * the part's dims reads its input's innermost dim at that output dim), or -1. */
static int transpose_tile_dim(const EmitKernel *k, const EmitPart *p) {
  if (p->rank < 2 || k->sort_len || k->scatter) return -1;
  const IrComputation *f = ir_fused_computation(k->instr);
  int n = f ? f->ninstrs : 1;
  for (int q = 0; q < n; q++) {
    const IrInstr *t = f ? f->instrs[q] : k->instr;
    if (t->op != IR_OP_TRANSPOSE || t->shape.rank != p->rank) continue;
    if (memcmp(t->shape.dims, p->dims, sizeof(int64_t) * (size_t)p->rank) != 0) continue;
    int64_t perm[IR_MAX_RANK];
    if (ir_attr_dims(t, "dimensions", perm, IR_MAX_RANK) != p->rank) continue;
    for (int a = 0; a < p->rank - 1; a++)
      if (perm[a] == p->rank - 1 && p->dims[a] > 1 && a >= p->nsplit - 1) return a;
  }
  return -1;
}

/* Concatenates: a part whose output is a concatenate (of dynamic slices, of a rotary embedding's
 * halves) would test, per element, which operand the element comes from: a chain of branches in
 * the innermost loop that keeps it scalar (64 slices: 64 tests for the last). The wrapper runs the
 * loop nest once per operand instead, the concatenated dim looping over that operand's range only,
 * with the concatenate generating that operand alone. The dim must be one the nest loops over
 * (not one decomposed from the flattened range the threads split). */
enum { CONCAT_MAX_SPLIT = 64 };

static const IrInstr *concat_split(const EmitKernel *k, const EmitPart *p, int *dim) {
  if (p->noutputs != 1 || p->rank < 1 || k->sort_len || k->scatter) return NULL;
  int which;
  const IrInstr *r = output_instr(k, p->outputs[0], &which);
  int64_t d;
  if (!r || r->op != IR_OP_CONCATENATE || r->noperands < 2 || r->noperands > CONCAT_MAX_SPLIT || r->shape.rank != p->rank ||
      memcmp(r->shape.dims, p->dims, sizeof(int64_t) * (size_t)p->rank) != 0)
    return NULL;
  if (ir_attr_dims(r, "dimensions", &d, 1) != 1 || d < 0 || d >= p->rank || d < p->nsplit - 1) return NULL;
  *dim = (int)d;
  return r;
}

/* Writes `e` clipped to [lo, hi) of a cut (or e itself when the cut is another dim's). */
static void cut_bound(char *out, size_t n, const char *e, bool low, bool cut, int64_t v) {
  if (!cut) snprintf(out, n, "%s", e);
  else if (low) snprintf(out, n, "(%s > %lldll ? %s : %lldll)", e, (long long)v, e, (long long)v);
  else snprintf(out, n, "(%s < %lldll ? %s : %lldll)", e, (long long)v, e, (long long)v);
}

/* The loop nest of part p and its body (pick: a concatenate's operand alone, see above), dim
 * cut_dim (-1: none) limited to [cut_lo, cut_hi). */
static bool emit_nest(EmitBuf *b, const EmitKernel *k, int part, const IrInstr *pick, int pick_k, int cut_dim, int64_t cut_lo,
                      int64_t cut_hi, FxError *err) {
  const EmitPart *p = &k->parts[part];
  /* the body's indent; the closing loop below counts down */
  int ind = p->rank == 0 ? 4 : p->nsplit >= 2 ? 6 + 2 * (p->rank - p->nsplit) : 2 + 2 * p->rank;
  const IrInstr *colr = column_reduce(k, p);
  int tile = colr || cut_dim >= 0 ? -1 : transpose_tile_dim(k, p), hint = -1;
  if (tile >= 0) ind += 4; /* the two block loops */
  EmitBuf body;
  emit_buf_init(&body);
  if ((!colr && !body_pick(&body, k, part, EMIT_TARGET_C, ind, pick, pick_k, &hint, err)) || body.oom) {
    if (body.oom) fx_error_set(err, NULL, 0, 0, "out of memory generating kernel source");
    emit_buf_free(&body);
    return false;
  }
  /* a load the body reads transposed (through a reshape, say) names the dim to tile too */
  if (tile < 0 && !colr && cut_dim < 0 && hint >= p->nsplit - 1 && hint < p->rank - 1 && p->dims[hint] > 1) tile = hint;
  const char *text = body.s ? body.s : "";
  int closes = 1;
  if (p->rank == 0) {
    emit_printf(b, "  {\n%s", text);
  } else {
    /* The split dims 0..ns-1: one dim loops over [lo, hi) itself; several are walked as the
       flattened range [lo, hi), one contiguous run of dim ns-1 at a time (the dims before it
       decomposed once per run). Then the middle dims fully, and the innermost loop. */
    int inner = p->rank - 1, ns = p->nsplit, in = 2;
    char ivar[16], lo[80], hi[80];
    snprintf(ivar, sizeof ivar, "i%d", inner);
    if (ns >= 2) {
      int64_t dl = p->dims[ns - 1];
      emit_printf(b, "  for (int64_t fx_f = lo; fx_f < hi;) {\n");
      emit_printf(b, "    int64_t fx_row = fx_f / %lldll;\n", (long long)dl);
      emit_printf(b, "    const int64_t fx_c0 = fx_f - fx_row * %lldll;\n", (long long)dl);
      emit_printf(b, "    const int64_t fx_c1 = hi - fx_f < %lldll - fx_c0 ? fx_c0 + (hi - fx_f) : %lldll;\n", (long long)dl,
                  (long long)dl);
      emit_printf(b, "    fx_f += fx_c1 - fx_c0;\n");
      for (int d = ns - 2; d >= 1; d--)
        emit_printf(b, "    const int64_t i%d = fx_row %% %lldll; fx_row /= %lldll;\n", d, (long long)p->dims[d],
                    (long long)p->dims[d]);
      emit_printf(b, "    const int64_t i0 = fx_row; (void)i0;\n");
      in = 4;
      closes++;
    }
    for (int d = ns - 1; d < inner; d++) {
      char dlo[80], dhi[80], e0[32], e1[32];
      if (d == ns - 1 && ns >= 2) snprintf(e0, sizeof e0, "fx_c0"), snprintf(e1, sizeof e1, "fx_c1");
      else if (d == 0) snprintf(e0, sizeof e0, "lo"), snprintf(e1, sizeof e1, "hi");
      else snprintf(e0, sizeof e0, "0"), snprintf(e1, sizeof e1, "%lldll", (long long)p->dims[d]);
      cut_bound(dlo, sizeof dlo, e0, true, d == cut_dim, cut_lo);
      cut_bound(dhi, sizeof dhi, e1, false, d == cut_dim, cut_hi);
      if (d == tile) { /* the blocks of (this dim, the innermost), then this dim within its block */
        emit_printf(b, "%*sfor (int64_t fx_ab = %s; fx_ab < %s; fx_ab += %d) {\n", in, "", dlo, dhi, TRANSPOSE_TILE);
        emit_printf(b, "%*s  const int64_t fx_ae = fx_ab + %d < %s ? fx_ab + %d : %s;\n", in, "", TRANSPOSE_TILE, dhi,
                    TRANSPOSE_TILE, dhi);
        emit_printf(b, "%*s  for (int64_t fx_ib = 0; fx_ib < %lldll; fx_ib += %d) {\n", in, "", (long long)p->dims[inner],
                    TRANSPOSE_TILE);
        emit_printf(b, "%*s    const int64_t fx_ie = fx_ib + %d < %lldll ? fx_ib + %d : %lldll;\n", in, "", TRANSPOSE_TILE,
                    (long long)p->dims[inner], TRANSPOSE_TILE, (long long)p->dims[inner]);
        in += 4;
        closes += 2;
        snprintf(dlo, sizeof dlo, "fx_ab");
        snprintf(dhi, sizeof dhi, "fx_ae");
      }
      emit_printf(b, "%*sfor (int64_t i%d = %s; i%d < %s; i%d++) {\n", in, "", d, dlo, d, dhi, d);
      in += 2;
      closes++;
    }
    char e0[32], e1[32];
    if (inner == ns - 1) {
      snprintf(e0, sizeof e0, "%s", ns >= 2 ? "fx_c0" : "lo");
      snprintf(e1, sizeof e1, "%s", ns >= 2 ? "fx_c1" : "hi");
    } else if (tile >= 0) {
      snprintf(e0, sizeof e0, "fx_ib");
      snprintf(e1, sizeof e1, "fx_ie");
    } else {
      snprintf(e0, sizeof e0, "0");
      snprintf(e1, sizeof e1, "%lldll", (long long)p->dims[inner]);
    }
    cut_bound(lo, sizeof lo, e0, true, inner == cut_dim, cut_lo);
    cut_bound(hi, sizeof hi, e1, false, inner == cut_dim, cut_hi);
    if (colr) {
      /* the reduction loops outside, the tile of outputs inside: a block with no loop left open */
      if (!emit_column_reduce(b, k, part, colr, ivar, lo, hi, in, err)) {
        emit_buf_free(&body);
        return false;
      }
      closes--;
    } else if (body_wants_lanes(text) && p->dims[inner] >= EMIT_LANES) {
      /* With vector math the compiler vectorizes the plain loop (lanes would only stand in its
       * way); without it, EMIT_LANES elements interleaved, then the rest one by one */
      emit_printf(b, "#if defined(FX_VECMATH) && FX_VECMATH\n%*s_Pragma(\"omp simd\")\n", in, "");
      emit_printf(b, "%*sfor (int64_t %s = %s; %s < %s; %s++) {\n%s", in, "", ivar, lo, ivar, hi, ivar, text);
      emit_printf(b, "#else\n");
      emit_printf(b, "%*sint64_t %s = %s;\n", in, "", ivar, lo);
      emit_printf(b, "%*sfor (; %s + %d <= %s; %s += %d) {\n", in, "", ivar, EMIT_LANES, hi, ivar, EMIT_LANES);
      emit_lanes(b, text, EMIT_LANES, ivar);
      emit_printf(b, "%*s}\n", in, "");
      emit_printf(b, "%*sfor (; %s < %s; %s++) {\n%s", in, "", ivar, hi, ivar, text);
      emit_printf(b, "#endif\n"); /* either branch leaves one loop open, closed below */
    } else {
      /* The iterations are independent (each writes its own elements; the buffers are restrict).
       * gcc honours restrict on these locals only partly: with more than a few inputs it wanted
       * more run-time alias checks than it makes (10) and left the loop scalar (ResNet's
       * batch-norm epilogue, 12 inputs). ivdep tells it there is no dependence to check. */
      emit_printf(b, "%*s#pragma GCC ivdep\n", in, "");
      emit_printf(b, "%*sfor (int64_t %s = %s; %s < %s; %s++) {\n%s", in, "", ivar, lo, ivar, hi, ivar, text);
    }
    ind = in + 2;
  }
  emit_buf_free(&body);
  for (int c = 0; c < closes; c++) {
    ind -= 2;
    emit_printf(b, "%*s}\n", ind, "");
  }
  return !b->oom;
}

bool emit_c_wrapper(EmitBuf *b, const EmitKernel *k, int part, FxError *err) {
  if (k->sort_len > 0) return emit_sort_wrapper(b, k, err);
  if (k->scatter) return emit_scatter_wrapper(b, k, err);
  const EmitPart *p = &k->parts[part];
  emit_printf(b, "void %s_p%d(char *const *bufs, int64_t lo, int64_t hi) {\n", k->name, part);
  for (int j = 0; j < k->ninputs; j++)
    emit_printf(b, "  const %s *restrict in%d = (const %s *)bufs[%d];\n", emit_storage_type(k->in_types[j]), j,
                emit_storage_type(k->in_types[j]), j);
  for (int q = 0; q < p->noutputs; q++) {
    int o = p->outputs[q];
    emit_printf(b, "  %s *restrict out%d = (%s *)bufs[%d];\n", emit_storage_type(k->out_types[o]), o,
                emit_storage_type(k->out_types[o]), k->ninputs + o);
  }
  emit_printf(b, "  (void)bufs; (void)lo; (void)hi;\n");
  int cd;
  const IrInstr *cat = concat_split(k, p, &cd);
  bool ok = true;
  if (cat) { /* the nest once per operand, over its range of the concatenated dim */
    int64_t off = 0;
    for (int q = 0; ok && q < cat->noperands; q++) {
      int64_t sz = cat->operands[q]->shape.dims[cd];
      if (sz > 0) ok = emit_nest(b, k, part, cat, q, cd, off, off + sz, err);
      off += sz;
    }
  } else {
    ok = emit_nest(b, k, part, NULL, 0, -1, 0, 0, err);
  }
  emit_printf(b, "}\n\n");
  return ok && !b->oom;
}
