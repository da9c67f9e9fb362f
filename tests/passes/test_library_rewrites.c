/* test_library_rewrites.c — the XLA:GPU library and layout rewrites of the priority pipeline
 * (conv-rewriter, cudnn-fused-convolution-rewriter, layout-assignment, layout-normalization): the
 * HLO each pass gets, what it must produce (the shapes of XLA's own pre-fusion modules, jaxlib
 * 0.10.2, h100: resnet50's `(f32[1,112,112,64], u8[0]) custom-call(data, transpose(filter),
 * bias), dim_labels=b01f_o01i->b01f, custom_call_target="__cudnn$convBiasActivationForward"`, the
 * depthwise convolution's NCHW input transposed to NHWC and back), what they decide, and that the
 * rewritten module still computes what the original did (the interpreter runs the cuDNN calls).
 * Layout-assignment's GEMM operands: a transposed weight only a GEMM reads becomes a bitcast
 * ({0,1}, Gemma 3's MLP weights), one something else constrains still moves data. And
 * topk-specializer: the corpus' top-10 of 50,000 logits becomes XLA's __gpu$TopK call. */
#include <stdlib.h>
#include <string.h>

#include "pass_check.h"

/* A ResNet block's convolution as JAX writes it: a zero pad, the convolution (NHWC input, HWIO
 * filter), the bias broadcast through size-1 reshapes, then a ReLU. */
static const char *CONV_BIAS_RELU =
    "HloModule block\n"
    "ENTRY main {\n"
    "  x = f32[1,6,6,3]{3,2,1,0} parameter(0)\n"
    "  k = f32[3,3,3,4]{3,2,1,0} parameter(1)\n"
    "  b = f32[4]{0} parameter(2)\n"
    "  zero = f32[] constant(0)\n"
    "  padded = f32[1,8,8,3]{3,2,1,0} pad(x, zero), padding=0_0x1_1x1_1x0_0\n"
    "  conv = f32[1,6,6,4]{3,2,1,0} convolution(padded, k), window={size=3x3}, dim_labels=b01f_01io->b01f\n"
    "  b4 = f32[1,1,1,4]{3,2,1,0} reshape(b)\n"
    "  b2 = f32[1,4]{1,0} reshape(b4)\n"
    "  bb = f32[1,6,6,4]{3,2,1,0} broadcast(b2), dimensions={0,3}\n"
    "  biased = f32[1,6,6,4]{3,2,1,0} add(conv, bb)\n"
    "  zeros = f32[1,6,6,4]{3,2,1,0} broadcast(zero), dimensions={}\n"
    "  ROOT relu = f32[1,6,6,4]{3,2,1,0} maximum(biased, zeros)\n"
    "}\n";

/* The corpus' depthwise convolution, smaller: bf16, NCHW, a constant filter. */
static const char *DEPTHWISE =
    "HloModule dw\n"
    "ENTRY main {\n"
    "  x = bf16[1,8,5,5]{3,2,1,0} parameter(0)\n"
    "  c = bf16[] constant(0.125)\n"
    "  w = bf16[8,1,3,3]{3,2,1,0} broadcast(c), dimensions={}\n"
    "  ROOT conv = bf16[1,8,5,5]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, "
    "feature_group_count=8\n"
    "}\n";

/* A residual add onto the convolution (a side input) and a scale by a constant. */
static const char *SIDE_INPUT =
    "HloModule side\n"
    "ENTRY main {\n"
    "  x = f32[2,4,4,3]{3,2,1,0} parameter(0)\n"
    "  k = f32[1,1,3,3]{3,2,1,0} parameter(1)\n"
    "  r = f32[2,4,4,3]{3,2,1,0} parameter(2)\n"
    "  conv = f32[2,4,4,3]{3,2,1,0} convolution(x, k), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
    "  half = f32[] constant(0.5)\n"
    "  hb = f32[2,4,4,3]{3,2,1,0} broadcast(half), dimensions={}\n"
    "  scaled = f32[2,4,4,3]{3,2,1,0} multiply(conv, hb)\n"
    "  ROOT sum = f32[2,4,4,3]{3,2,1,0} add(scaled, r)\n"
    "}\n";

/* What JAX writes around a matmul: a transpose whose layout makes it a relabelling, and reshapes. */
static const char *LAYOUT_HINTS =
    "HloModule hints\n"
    "ENTRY main {\n"
    "  k = bf16[1,12,128,64]{3,2,1,0} parameter(0)\n"
    "  t = bf16[1,12,64,128]{2,3,1,0} transpose(k), dimensions={0,1,3,2}\n"
    "  s = bf16[12,64,128]{2,1,0} reshape(t)\n"
    "  u = bf16[1,12,64,128,1]{4,3,2,1,0} broadcast(s), dimensions={1,2,3}\n"
    "  ROOT e = bf16[1,12,64,128,1]{4,3,2,1,0} exponential(u)\n"
    "}\n";

/* Gemma 3's MLP weight as JAX reads it (`...F,NHF->...NH`): transposed and flattened for the
 * matmul, and nothing else reads it. XLA's pre-fusion module: bitcast(w) : bf16[64,96]{0,1} into
 * the GEMM fusion, no transpose. */
static const char *TRANSPOSED_WEIGHT =
    "HloModule mlp\n"
    "ENTRY main {\n"
    "  x = bf16[11,64]{1,0} parameter(0)\n"
    "  w = bf16[2,48,64]{2,1,0} parameter(1)\n"
    "  wt = bf16[64,2,48]{2,1,0} transpose(w), dimensions={2,0,1}\n"
    "  wr = bf16[64,96]{1,0} reshape(wt)\n"
    "  d = bf16[11,96]{1,0} dot(x, wr), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ROOT e = bf16[11,96]{1,0} exponential(d)\n"
    "}\n";

/* Transposes a GEMM does not leave free: one an add also reads, one a batched dot reads
 * (SetDotOperandLayout constrains a side with batch dimensions). */
static const char *TRANSPOSE_NOT_FREE =
    "HloModule notfree\n"
    "ENTRY main {\n"
    "  x = f32[11,64]{1,0} parameter(0)\n"
    "  w = f32[96,64]{1,0} parameter(1)\n"
    "  wt = f32[64,96]{1,0} transpose(w), dimensions={1,0}\n"
    "  d = f32[11,96]{1,0} dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  a = f32[64,96]{1,0} add(wt, wt)\n"
    "  q = f32[2,8,16]{2,1,0} parameter(2)\n"
    "  k = f32[2,8,16]{2,1,0} parameter(3)\n"
    "  kt = f32[2,16,8]{2,1,0} transpose(k), dimensions={0,2,1}\n"
    "  s = f32[2,8,8]{2,1,0} dot(q, kt), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
    "rhs_contracting_dims={1}\n"
    "  ROOT r = (f32[11,96]{1,0}, f32[64,96]{1,0}, f32[2,8,8]{2,1,0}) tuple(d, a, s)\n"
    "}\n";

/* Gemma 4's optimizer step: a scaled weight, transposed and converted, then reduced. The
 * parameter's layout propagates forward through the transpose (a bitcast) and the convert, and the
 * reduce sums the physical major dimension: XLA's module has reduce(...), dimensions={0} and no
 * transpose. */
static const char *TRANSPOSED_THEN_REDUCED =
    "HloModule tred\n"
    "ENTRY main {\n"
    "  w = bf16[48,16]{1,0} parameter(0)\n"
    "  sc = bf16[48] parameter(1)\n"
    "  b = bf16[48,16]{1,0} broadcast(sc), dimensions={0}\n"
    "  m = bf16[48,16]{1,0} multiply(b, w)\n"
    "  t = bf16[16,48]{1,0} transpose(m), dimensions={1,0}\n"
    "  c = f32[16,48]{1,0} convert(t)\n"
    "  z = f32[] constant(0)\n"
    "  ROOT r = f32[16]{0} reduce(c, z), dimensions={1}, to_apply=add\n"
    "}\n"
    "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n";

/* A value transposed and then reshaped by dropping a size-1 dimension, read by a plain matrix
 * product (Gemma 3's keys). In XLA's AlignLayouts a size-1 dimension joins the part after it
 * ([1,256] -> [256]), so the reshape takes the transpose's layout and the GEMM reads the
 * concatenate's bytes as [256,11]{0,1}: no transpose, no copy (real XLA's module on this input). */
static const char *UNIT_RESHAPE_TO_GEMM =
    "HloModule ug\n"
    "ENTRY main {\n"
    "  p0 = bf16[1,11,128] parameter(0)\n"
    "  p1 = bf16[1,11,128] parameter(1)\n"
    "  a = bf16[44,256] parameter(2)\n"
    "  c = bf16[1,11,256] concatenate(p0, p1), dimensions={2}\n"
    "  t = bf16[1,256,11] transpose(c), dimensions={0,2,1}\n"
    "  r = bf16[256,11] reshape(t)\n"
    "  ROOT d = bf16[44,11] dot(a, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n";

/* XLA's argsort: a reshape that adds a size-1 dimension to a row-major value, concatenated into a
 * gather's indices. AlignLayouts joins the new dimension to the part before it (512 -> 512,1), so
 * the reshape stays row-major from whichever side its layout comes, and the concatenate needs no
 * transpose (laying the dimension outermost, as a strip-the-ones rule would, makes one). */
static const char *UNIT_INDEX_RESHAPE =
    "HloModule co\n"
    "ENTRY main {\n"
    "  x = f32[64,32] parameter(0)\n"
    "  s = s32[64,32] parameter(1)\n"
    "  one = s32[] constant(1)\n"
    "  ob = s32[64,32] broadcast(one), dimensions={}\n"
    "  s2 = s32[64,32] add(s, ob)\n"
    "  r = s32[64,32,1] reshape(s2)\n"
    "  io = s32[64,32,1] iota(), iota_dimension=0\n"
    "  c = s32[64,32,2] concatenate(io, r), dimensions={2}\n"
    "  g = f32[64,32] gather(x, c), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, "
    "index_vector_dim=2, slice_sizes={1,1}\n"
    "  z = s32[] constant(0)\n"
    "  zb = s32[64,32,1] broadcast(z), dimensions={}\n"
    "  ge = pred[64,32,1] compare(r, zb), direction=GE\n"
    "  pr = pred[64,32] reshape(ge)\n"
    "  nan = f32[] constant(nan)\n"
    "  nb = f32[64,32] broadcast(nan), dimensions={}\n"
    "  ROOT sel = f32[64,32] select(pr, g, nb)\n"
    "}\n";

/* Gemma 4's rotary embedding: halves of a row-major value each get a size-1 dimension and are
 * concatenated along it. XLA's AlignLayouts joins that dimension to the 128 after it, so
 * [1,1,8,1,128] is row-major ({4,3,2,1,0}, as real XLA lays it out); putting it outermost
 * ({4,2,3,1,0}) would make the concatenate, whose dimension there has size 2, a transposed
 * value, and the multiply and the reshape back would need transposes. */
static const char *ROTARY_HALVES =
    "HloModule rh\n"
    "ENTRY main {\n"
    "  x = bf16[1,1,8,256] parameter(0)\n"
    "  w = bf16[256,256] parameter(1)\n"
    "  sp1 = bf16[1,1,8,128] slice(x), slice={[0:1], [0:1], [0:8], [128:256]}\n"
    "  ng = bf16[1,1,8,128] negate(sp1)\n"
    "  b1 = bf16[1,1,8,1,128] reshape(ng)\n"
    "  sp0 = bf16[1,1,8,128] slice(x), slice={[0:1], [0:1], [0:8], [0:128]}\n"
    "  b0 = bf16[1,1,8,1,128] reshape(sp0)\n"
    "  cc = bf16[1,1,8,2,128] concatenate(b1, b0), dimensions={3}\n"
    "  io = f32[256] iota(), iota_dimension=0\n"
    "  sn = f32[256] sine(io)\n"
    "  snb = bf16[256] convert(sn)\n"
    "  sb = bf16[1,1,8,256] broadcast(snb), dimensions={3}\n"
    "  sr = bf16[1,1,8,2,128] reshape(sb)\n"
    "  m = bf16[1,1,8,2,128] multiply(cc, sr)\n"
    "  mr = bf16[1,1,8,256] reshape(m)\n"
    "  a = bf16[1,1,8,256] add(x, mr)\n"
    "  ar = bf16[8,256] reshape(a)\n"
    "  ROOT d = bf16[8,256] dot(ar, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n";

/* Gemma 2's key/value cache: one value read by two batched GEMMs that want it in different layouts
 * (q.K reads it [4,31,256], the attention-weighted values [4,256,31]), each through a transpose and
 * a reshape that transpose folding cannot remove. XLA makes the GEMMs' constraints in reverse post
 * order so that the earliest propagates first: v is laid out for d1, and d2 reads a copy. Real XLA's
 * layout assignment on this module gives exactly these layouts. */
static const char *TWO_GEMMS_ONE_VALUE =
    "HloModule gemms\n"
    "ENTRY main {\n"
    "  a = f32[1,31,4,256] parameter(0)\n"
    "  b = f32[1,31,4,256] parameter(1)\n"
    "  q = f32[4,256,2] parameter(2)\n"
    "  pw = f32[4,31,2] parameter(3)\n"
    "  v = f32[1,31,4,256] add(a, b)\n"
    "  tk = f32[1,4,31,256] transpose(v), dimensions={0,2,1,3}\n"
    "  k = f32[4,31,256] reshape(tk)\n"
    "  d1 = f32[4,31,2] dot(k, q), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
    "rhs_contracting_dims={1}\n"
    "  tv = f32[1,4,256,31] transpose(v), dimensions={0,2,3,1}\n"
    "  vt = f32[4,256,31] reshape(tv)\n"
    "  d2 = f32[4,256,2] dot(vt, pw), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
    "rhs_contracting_dims={1}\n"
    "  ROOT r = (f32[4,31,2], f32[4,256,2]) tuple(d1, d2)\n"
    "}\n";

/* A weight reduced along its middle dimension, in a loop and outside one (Gemma 2's attention
 * weights). XLA's layout assignment lets the parameter's layout reach the multiply first, depth
 * first, and only then what the reduce would prefer (a row reduction: its operand's constraint
 * waits, breadth first); so the reduce reads a copy, and MoveCopyToUsers removes it: a column
 * reduction of the weight as it lies, no transpose. */
static const char *REDUCED_WHERE_IT_LIES =
    "HloModule rw\n"
    "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
    "body {\n"
    "  p = (s32[], f32[2,64,8], f32[2,8]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  w = f32[2,64,8] get-tuple-element(p), index=1\n"
    "  acc = f32[2,8] get-tuple-element(p), index=2\n"
    "  c2 = f32[] constant(2)\n"
    "  b = f32[2,64,8] broadcast(c2), dimensions={}\n"
    "  m = f32[2,64,8] multiply(w, b)\n"
    "  z = f32[] constant(0)\n"
    "  r = f32[2,8] reduce(m, z), dimensions={1}, to_apply=add\n"
    "  a2 = f32[2,8] add(acc, r)\n"
    "  one = s32[] constant(1)\n"
    "  i2 = s32[] add(i, one)\n"
    "  ROOT t = (s32[], f32[2,64,8], f32[2,8]) tuple(i2, w, a2)\n"
    "}\n"
    "cond {\n"
    "  p = (s32[], f32[2,64,8], f32[2,8]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(3)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
    "}\n"
    "ENTRY main {\n"
    "  w0 = f32[2,64,8]{2,1,0} parameter(0)\n"
    "  e = f32[2,64,8] exponential(w0)\n"
    "  zf = f32[] constant(0)\n"
    "  re = f32[2,8] reduce(e, zf), dimensions={1}, to_apply=add\n"
    "  z0 = s32[] constant(0)\n"
    "  t0 = (s32[], f32[2,64,8], f32[2,8]) tuple(z0, w0, re)\n"
    "  wl = (s32[], f32[2,64,8], f32[2,8]) while(t0), condition=cond, body=body\n"
    "  ROOT out = f32[2,8] get-tuple-element(wl), index=2\n"
    "}\n";

/* Copies layout assignment made, read by operations that work in any layout: MoveCopyToUsers
 * moves each below them (slice, dynamic-slice, unary and binary elementwise, concatenate) or drops
 * it (reduce). */
static const char *COPIES_TO_USERS =
    "HloModule mc\n"
    "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
    "ENTRY main {\n"
    "  x = f32[8,16]{0,1} parameter(0)\n"
    "  y = f32[8,16]{0,1} parameter(1)\n"
    "  i = s32[] parameter(2)\n"
    "  cx = f32[8,16]{1,0} copy(x)\n"
    "  cy = f32[8,16]{1,0} copy(y)\n"
    "  sl = f32[4,16]{1,0} slice(cx), slice={[0:4], [0:16]}\n"
    "  ds = f32[2,16]{1,0} dynamic-slice(cx, i, i), dynamic_slice_sizes={2,16}\n"
    "  e = f32[8,16]{1,0} exponential(cy)\n"
    "  a = f32[8,16]{1,0} add(cx, cy)\n"
    "  cc = f32[16,16]{1,0} concatenate(cx, cy), dimensions={0}\n"
    "  z = f32[] constant(0)\n"
    "  r = f32[16]{0} reduce(cx, z), dimensions={0}, to_apply=add\n"
    "  ROOT t = (f32[4,16]{1,0}, f32[2,16]{1,0}, f32[8,16]{1,0}, f32[8,16]{1,0}, f32[16,16]{1,0}, f32[16]{0}) "
    "tuple(sl, ds, e, a, cc, r)\n"
    "}\n";

/* A reshape no layout makes a bitcast of its operand's: x's layout comes from the transpose
 * (a bitcast of p), and [8,6] -> [48] of a column-major [8,6] moves data: the reshape reads it
 * row-major (one copy) and is a bitcast then. */
static const char *RESHAPE_NEEDS_A_COPY =
    "HloModule rcopy\n"
    "ENTRY main {\n"
    "  p = f32[6,8]{1,0} parameter(0)\n"
    "  t = f32[8,6]{1,0} transpose(p), dimensions={1,0}\n"
    "  e = f32[8,6]{1,0} exponential(t)\n"
    "  ROOT r = f32[48]{0} reshape(e)\n"
    "}\n";

/* A bias vector added to a transposed value: the broadcast takes the layout its reader needs
 * (a broadcast can change layout), so nothing copies it; and two transposes in a row, as a copy
 * into a layout and a transpose out of it make them, are one (HandleTranspose). */
static const char *BIAS_ON_TRANSPOSED =
    "HloModule bias\n"
    "ENTRY main {\n"
    "  p = f32[6,8]{1,0} parameter(0)\n"
    "  v = f32[8] parameter(1)\n"
    "  t = f32[8,6]{1,0} transpose(p), dimensions={1,0}\n"
    "  b = f32[8,6]{1,0} broadcast(v), dimensions={0}\n"
    "  a = f32[8,6]{1,0} add(t, b)\n"
    "  ROOT r = f32[6,8]{1,0} transpose(a), dimensions={1,0}\n"
    "}\n";

/* A KV-cache-like loop: each step writes a transposed row block into the cache with a
 * dynamic-update-slice and reads one back with a dynamic-slice. x's layout flows through the
 * transpose into the update, the cache (a dynamic-update-slice cannot change layout) and so the
 * loop's state: the body runs twice (its state free, then fixed to what its result got), the loop
 * carries the cache in that layout and the entry copies its initial value into it once. */
static const char *LOOP_STATE_LAYOUT =
    "HloModule kv\n"
    "cond {\n  s = (s32[], f32[6,8], f32[4,8,6], f32[1,8,6]) parameter(0)\n"
    "  i = s32[] get-tuple-element(s), index=0\n  n = s32[] constant(4)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
    "body {\n  s = (s32[], f32[6,8], f32[4,8,6], f32[1,8,6]) parameter(0)\n"
    "  i = s32[] get-tuple-element(s), index=0\n  x = f32[6,8] get-tuple-element(s), index=1\n"
    "  cache = f32[4,8,6] get-tuple-element(s), index=2\n"
    "  xt = f32[8,6] transpose(x), dimensions={1,0}\n  e = f32[8,6] exponential(xt)\n"
    "  u = f32[1,8,6] reshape(e)\n  z = s32[] constant(0)\n"
    "  c2 = f32[4,8,6] dynamic-update-slice(cache, u, i, z, z)\n"
    "  r = f32[1,8,6] dynamic-slice(c2, i, z, z), dynamic_slice_sizes={1,8,6}\n"
    "  h = f32[1,4,6] slice(r), slice={[0:1], [2:6], [0:6]}\n"
    "  h2 = f32[1,8,6] concatenate(h, h), dimensions={1}\n"
    "  a = f32[1,8,6] add(r, h2)\n"
    "  one = s32[] constant(1)\n  i2 = s32[] add(i, one)\n"
    "  ROOT t = (s32[], f32[6,8], f32[4,8,6], f32[1,8,6]) tuple(i2, x, c2, a)\n}\n"
    "ENTRY main {\n  x0 = f32[6,8] parameter(0)\n  c0 = f32[4,8,6] parameter(1)\n"
    "  z = s32[] constant(0)\n  zf = f32[] constant(0)\n  a0 = f32[1,8,6] broadcast(zf), dimensions={}\n"
    "  init = (s32[], f32[6,8], f32[4,8,6], f32[1,8,6]) tuple(z, x0, c0, a0)\n"
    "  w = (s32[], f32[6,8], f32[4,8,6], f32[1,8,6]) while(init), condition=cond, body=body\n"
    "  ROOT out = f32[4,8,6] get-tuple-element(w), index=2\n}\n";

/* A matrix broadcast along a new dimension, added to a value laid out by a transpose: the
 * broadcast is made in its reader's layout and its operand read in the same order
 * (GetBroadcastLayoutFromOutput), so the small operand moves, not the broadcast result. */
static const char *BROADCAST_OF_A_MATRIX =
    "HloModule bm\n"
    "ENTRY main {\n"
    "  p = f32[3,6,8]{2,1,0} parameter(0)\n"
    "  y = f32[8,6]{1,0} parameter(1)\n"
    "  t = f32[8,6,3]{2,1,0} transpose(p), dimensions={2,1,0}\n"
    "  b = f32[8,6,3]{2,1,0} broadcast(y), dimensions={0,1}\n"
    "  a = f32[8,6,3]{2,1,0} add(t, b)\n"
    "  ROOT r = f32[3,6,8]{2,1,0} transpose(a), dimensions={2,1,0}\n"
    "}\n";

/* GEMM results read through a transpose: p's only reader is the transpose (so the dot writes it
 * transposed), d2's is too but no GEMM writes the batch most minor, and d3 has another reader. */
static const char *TRANSPOSED_RESULT =
    "HloModule tres\n"
    "ENTRY main {\n"
    "  q = f32[2,8,16]{2,1,0} parameter(0)\n"
    "  k = f32[2,16,4]{2,1,0} parameter(1)\n"
    "  p = f32[2,8,4]{2,1,0} dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
    "rhs_contracting_dims={1}\n"
    "  pt = f32[2,4,8]{2,1,0} transpose(p), dimensions={0,2,1}\n"
    "  d2 = f32[2,8,4]{2,1,0} dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
    "rhs_contracting_dims={1}\n"
    "  t2 = f32[8,4,2]{2,1,0} transpose(d2), dimensions={1,2,0}\n"
    "  d3 = f32[2,8,4]{2,1,0} dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
    "rhs_contracting_dims={1}\n"
    "  t3 = f32[2,4,8]{2,1,0} transpose(d3), dimensions={0,2,1}\n"
    "  e3 = f32[2,8,4]{2,1,0} exponential(d3)\n"
    "  ROOT r = (f32[2,4,8]{2,1,0}, f32[8,4,2]{2,1,0}, f32[2,4,8]{2,1,0}, f32[2,8,4]{2,1,0}) tuple(pt, t2, t3, e3)\n"
    "}\n";

/* The corpus' top-k (topk_logits_k10_1x50000_bf16), with the row length and k as parameters. */
static char *topk_text(const char *type, int64_t n, int64_t k, const char *largest) {
  static char buf[600];
  snprintf(buf, sizeof buf,
           "HloModule topk\n"
           "ENTRY main {\n"
           "  x = %s[2,%lld]{1,0} parameter(0)\n"
           "  t = (%s[2,%lld]{1,0}, s32[2,%lld]{1,0}) topk(x), k=%lld, largest=%s\n"
           "  v = %s[2,%lld]{1,0} get-tuple-element(t), index=0\n"
           "  i = s32[2,%lld]{1,0} get-tuple-element(t), index=1\n"
           "  ROOT r = (%s[2,%lld]{1,0}, s32[2,%lld]{1,0}) tuple(v, i)\n"
           "}\n",
           type, (long long)n, type, (long long)k, (long long)k, (long long)k, largest, type, (long long)k, (long long)k,
           type, (long long)k, (long long)k);
  return buf;
}

static const char *const CONV_PASSES[] = {"conv-rewriter", "cudnn-fused-convolution-rewriter", "layout-assignment",
                                          "layout-normalization"};

/* The seed of the arguments the interpreter checks a rewrite on. */
static const uint64_t INPUT_SEED = 11;


TEST(convolution_becomes_a_cudnn_call_with_its_pad_folded) {
  Seen s;
  IrModule *m = run_named_passes(hlo_ok(CONV_BIAS_RELU), "h100", CONV_PASSES, 1, &s);
  if (!m) return;
  IrInstr *call = find_call(m->entry, PLAN_CC_CUDNN_CONV);
  CHECK(call != NULL);
  CHECK(count_op_in(m->entry, IR_OP_CONVOLUTION) == 0 && count_op_in(m->entry, IR_OP_PAD) == 0);
  if (call) {
    /* the pad is the window's padding now; the result is (result, scratch) */
    CHECK_STR(ir_attr_text(call, "window"), "{size=3x3 pad=1_1x1_1}");
    CHECK(strcmp(call->operands[0]->name, "x") == 0);
    CHECK(call->shape.type == IR_TUPLE && call->shape.ntuple == 2 && call->shape.tuple[1].type == IR_U8 &&
          call->shape.tuple[1].dims[0] == 0);
    CHECK(call->nusers == 1 && call->users[0]->op == IR_OP_GET_TUPLE_ELEMENT);
  }
  CHECK(s.accepted == 1);
  CHECK_CONTAINS(s.last, "FoldConvInputPad");
  check_same_values(CONV_BIAS_RELU, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(bias_and_relu_go_into_the_cudnn_call) {
  Seen s;
  IrModule *m = run_named_passes(hlo_ok(CONV_BIAS_RELU), "h100", CONV_PASSES, 2, &s);
  if (!m) return;
  IrInstr *call = find_call(m->entry, PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION);
  CHECK(call != NULL);
  /* the add and the maximum are gone: the root reads the call's result */
  CHECK(count_op_in(m->entry, IR_OP_ADD) == 0 && count_op_in(m->entry, IR_OP_MAXIMUM) == 0);
  if (call) {
    PlanConvConfig c;
    CHECK(plan_conv_config(call, &c));
    CHECK_STR(c.activation, "kRelu");
    /* the bias is b itself, found through its size-1 reshapes */
    CHECK(call->noperands == 3 && strcmp(call->operands[2]->name, "b") == 0);
  }
  CHECK(s.accepted == 3); /* the rewrite, the bias, the ReLU */
  check_same_values(CONV_BIAS_RELU, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(scale_and_side_input) {
  Seen s;
  IrModule *m = run_named_passes(hlo_ok(SIDE_INPUT), "h100", CONV_PASSES, 2, &s);
  if (!m) return;
  IrInstr *call = find_call(m->entry, PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION);
  CHECK(call != NULL);
  if (call) {
    PlanConvConfig c;
    CHECK(plan_conv_config(call, &c));
    CHECK(c.conv_result_scale == 0.5 && c.side_input_scale == 1);
    CHECK(call->noperands == 4 && strcmp(call->operands[3]->name, "r") == 0);
  }
  CHECK(count_op_in(m->entry, IR_OP_MULTIPLY) == 0 && count_op_in(m->entry, IR_OP_ADD) == 0);
  check_same_values(SIDE_INPUT, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(resnet_layouts_on_hopper_transpose_the_filter) {
  Seen s;
  IrModule *m = run_named_passes(hlo_ok(CONV_BIAS_RELU), "h100", CONV_PASSES, 4, &s);
  if (!m) return;
  IrInstr *call = find_call(m->entry, PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION);
  CHECK(call != NULL);
  if (call) {
    /* XLA's: the NHWC input as it is, the HWIO filter transposed into OHWI */
    CHECK_STR(ir_attr_text(call, "dim_labels"), "b01f_o01i->b01f");
    CHECK(strcmp(call->operands[0]->name, "x") == 0);
    const IrInstr *t = call->operands[1];
    CHECK(t->op == IR_OP_TRANSPOSE && strcmp(t->operands[0]->name, "k") == 0);
    int64_t perm[4];
    CHECK(ir_attr_dims(t, "dimensions", perm, 4) == 4 && perm[0] == 3 && perm[1] == 0 && perm[2] == 1 && perm[3] == 2);
    CHECK(t->shape.dims[0] == 4 && t->shape.dims[3] == 3);
  }
  CHECK(count_op_in(m->entry, IR_OP_COPY) == 0);
  check_same_values(CONV_BIAS_RELU, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(depthwise_bf16_nchw_goes_through_nhwc_and_keeps_no_bias) {
  Seen s;
  IrModule *m = run_named_passes(hlo_ok(DEPTHWISE), "h100", CONV_PASSES, 4, &s);
  if (!m) return;
  /* depthwise: a plain forward convolution (the fused kernels are slower for those) */
  IrInstr *call = find_call(m->entry, PLAN_CC_CUDNN_CONV);
  CHECK(call != NULL && !find_call(m->entry, PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION));
  if (call) {
    CHECK_STR(ir_attr_text(call, "dim_labels"), "b01f_o01i->b01f");
    CHECK(call->operands[0]->op == IR_OP_TRANSPOSE); /* the NCHW image into NHWC */
    CHECK(call->operands[1]->op == IR_OP_BROADCAST); /* the constant filter is made in OHWI */
    CHECK(call->operands[1]->shape.dims[1] == 3 && call->operands[1]->shape.dims[3] == 1);
  }
  /* and the result transposed back for the program's NCHW result */
  const IrInstr *root = m->entry->root;
  CHECK(root->op == IR_OP_TRANSPOSE && root->operands[0]->op == IR_OP_GET_TUPLE_ELEMENT);
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 2);
  check_same_values(DEPTHWISE, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(before_hopper_f32_convolutions_run_in_nchw) {
  Seen s;
  IrModule *m = run_named_passes(hlo_ok(CONV_BIAS_RELU), "a100", CONV_PASSES, 4, &s);
  if (!m) return;
  IrInstr *call = find_call(m->entry, PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION);
  CHECK(call != NULL);
  if (call) CHECK_STR(ir_attr_text(call, "dim_labels"), "bf01_oi01->bf01");
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 3); /* input and filter in, result out */
  check_same_values(CONV_BIAS_RELU, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(no_cudnn_on_the_host) {
  Seen s;
  IrModule *m = run_named_passes(hlo_ok(CONV_BIAS_RELU), "host", CONV_PASSES, 4, &s);
  if (!m) return;
  CHECK(count_op_in(m->entry, IR_OP_CONVOLUTION) == 1 && s.accepted == 0);
  ir_module_free(m);
}

TEST(layout_hints_are_dropped_and_reshapes_become_bitcasts) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(LAYOUT_HINTS), "h100", passes, 2, &s);
  if (!m) return;
  /* JAX's {2,3,1,0} on t is dropped: the result is row-major, so the layouts propagate back from
     it and the transpose moves data once; the reshape and the size-1 broadcast are bitcasts */
  IrInstr *u = ir_computation_find_instr(m->entry, "u");
  CHECK(u && u->op == IR_OP_BITCAST);
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 1 && count_op_in(m->entry, IR_OP_COPY) == 0);
  CHECK(count_op_in(m->entry, IR_OP_RESHAPE) == 0 && count_op_in(m->entry, IR_OP_BROADCAST) == 0);
  check_same_values(LAYOUT_HINTS, m, INPUT_SEED);
  ir_module_free(m);
}

static bool layout_is(const IrShape *s, const int *m2m) {
  if (!s->has_layout) return false;
  for (int k = 0; k < s->rank; k++)
    if (s->minor_to_major[k] != m2m[k]) return false;
  return true;
}

TEST(a_transposed_weight_only_a_gemm_reads_is_a_bitcast) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(TRANSPOSED_WEIGHT), "h100", passes, 2, &s);
  if (!m) return;
  /* w's layout propagates forward: the transpose and the reshape keep its bytes where they are,
     and the GEMM reads them as [64,96]{0,1} through one bitcast */
  IrInstr *d = ir_computation_find_instr(m->entry, "d");
  CHECK(d && d->op == IR_OP_DOT);
  if (d && d->op == IR_OP_DOT) {
    static const int wr_m2m[] = {0, 1};
    const IrInstr *b = d->operands[1];
    CHECK(b->op == IR_OP_BITCAST && strcmp(b->operands[0]->name, "w") == 0 && layout_is(&b->shape, wr_m2m));
  }
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 0 && count_op_in(m->entry, IR_OP_COPY) == 0);
  CHECK_CONTAINS(s.last, "becomes a bitcast");
  check_same_values(TRANSPOSED_WEIGHT, m, INPUT_SEED);
  /* the GEMM fusion reads the weight through one bitcast outside it, as XLA's does */
  static const char *const gemm[] = {"triton-gemm-rewriter", "hoist-fused-bitcasts"};
  m = run_named_passes(m, "h100", gemm, 2, &s);
  if (!m) return;
  const IrInstr *f = m->entry->root;
  const IrComputation *fc = f && f->op == IR_OP_FUSION ? ir_fused_computation(f) : NULL;
  CHECK(fc != NULL && f->noperands == 2);
  if (fc && f->noperands == 2) {
    static const int kn[] = {0, 1};
    const IrInstr *b = f->operands[1];
    CHECK(b->op == IR_OP_BITCAST && strcmp(b->operands[0]->name, "w") == 0 && layout_is(&b->shape, kn));
    CHECK(count_op_in(fc, IR_OP_BITCAST) == 0 && count_op_in(fc, IR_OP_TRANSPOSE) == 0 && count_op_in(fc, IR_OP_DOT) == 1);
  }
  check_same_values(TRANSPOSED_WEIGHT, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_transpose_something_else_constrains_moves_data) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(TRANSPOSE_NOT_FREE), "h100", passes, 2, &s);
  if (!m) return;
  /* the add reads wt row-major (the result is row-major), and the batched dot reads k's transpose
     row-major (SetDotOperandLayout): each is one transpose that moves data */
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 2 && count_op_in(m->entry, IR_OP_COPY) == 0);
  IrInstr *a = ir_computation_find_instr(m->entry, "a"), *sd = ir_computation_find_instr(m->entry, "s");
  CHECK(a && sd);
  if (a && sd) {
    CHECK(a->operands[0]->op == IR_OP_TRANSPOSE && ir_shape_default_layout(&a->operands[0]->shape));
    CHECK(sd->operands[1]->op == IR_OP_TRANSPOSE && ir_shape_default_layout(&sd->operands[1]->shape));
  }
  check_same_values(TRANSPOSE_NOT_FREE, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_gemm_result_only_a_transpose_reads_is_written_transposed) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(TRANSPOSED_RESULT), "h100", passes, 2, &s);
  if (!m) return;
  IrInstr *p = ir_computation_find_instr(m->entry, "p"), *pt = ir_computation_find_instr(m->entry, "pt");
  IrInstr *d2 = ir_computation_find_instr(m->entry, "d2"), *d3 = ir_computation_find_instr(m->entry, "d3");
  CHECK(p && pt && d2 && d3);
  if (p && pt && d2 && d3) {
    /* p [2,8,4] written batch, then columns, then rows (major to minor 0,2,1): pt's order */
    static const int p_m2m[] = {1, 2, 0};
    CHECK(layout_is(&p->shape, p_m2m) && pt->op == IR_OP_BITCAST && ir_shape_default_layout(&pt->shape));
    /* {1,2,0} would put the batch most minor: no GEMM writes that; the exponential reads d3 too */
    CHECK(ir_shape_default_layout(&d2->shape) && ir_shape_default_layout(&d3->shape));
    CHECK(d2->nusers == 1 && d2->users[0]->op == IR_OP_TRANSPOSE);
    CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 2);
  }
  check_same_values(TRANSPOSED_RESULT, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_transposed_value_is_reduced_where_it_lies) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(TRANSPOSED_THEN_REDUCED), "h100", passes, 2, &s);
  if (!m) return;
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 0 && count_op_in(m->entry, IR_OP_COPY) == 0);
  const IrInstr *r = m->entry->root;
  CHECK(r->op == IR_OP_REDUCE);
  if (r->op == IR_OP_REDUCE) {
    /* the convert computes on [48,16] (physical order) and the reduce sums its dimension 0 */
    const IrInstr *c = r->operands[0];
    CHECK(c->op == IR_OP_CONVERT && c->shape.dims[0] == 48 && c->shape.dims[1] == 16 &&
          ir_shape_default_layout(&c->shape));
    CHECK_STR(ir_attr_text(r, "dimensions"), "{0}");
  }
  check_same_values(TRANSPOSED_THEN_REDUCED, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_reduce_reads_a_weight_where_its_parameter_laid_it) {
  Seen s;
  static const char *const la[] = {"layout-assignment"};
  IrModule *m = run_named_passes(hlo_ok(REDUCED_WHERE_IT_LIES), "h100", la, 1, &s);
  if (!m) return;
  /* layout assignment alone: each reduce reads a copy in the row-reduction layout */
  IrComputation *body = ir_module_find_computation(m, "body");
  CHECK(body && count_op_in(body, IR_OP_COPY) == 1 && count_op_in(m->entry, IR_OP_COPY) == 1);
  IrInstr *r = body ? ir_computation_find_instr(body, "r") : NULL;
  CHECK(r && r->operands[0]->op == IR_OP_COPY);
  IrInstr *w = body ? ir_computation_find_instr(body, "w") : NULL;
  CHECK(w && ir_shape_default_layout(&w->shape)); /* the state keeps the parameter's layout */
  ir_module_free(m);
  static const char *const passes[] = {"layout-assignment", "move-copy-to-users", "layout-normalization"};
  m = run_named_passes(hlo_ok(REDUCED_WHERE_IT_LIES), "h100", passes, 3, &s);
  if (!m) return;
  body = ir_module_find_computation(m, "body");
  CHECK(body && count_op_in(body, IR_OP_COPY) == 0 && count_op_in(body, IR_OP_TRANSPOSE) == 0);
  CHECK(count_op_in(m->entry, IR_OP_COPY) == 0 && count_op_in(m->entry, IR_OP_TRANSPOSE) == 0);
  r = body ? ir_computation_find_instr(body, "r") : NULL;
  CHECK(r && r->operands[0]->op == IR_OP_MULTIPLY);
  if (r) CHECK_STR(ir_attr_text(r, "dimensions"), "{1}");
  CHECK_CONTAINS(s.last, "a reduction reads its operand in any layout");
  check_same_values(REDUCED_WHERE_IT_LIES, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_gemm_reads_through_a_reshape_of_size_one_dimensions) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "move-copy-to-users", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(UNIT_RESHAPE_TO_GEMM), "h100", passes, 3, &s);
  if (!m) return;
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 0 && count_op_in(m->entry, IR_OP_COPY) == 0);
  const IrInstr *d = m->entry->root;
  static const int cm[] = {0, 1};
  CHECK(d->op == IR_OP_DOT && d->noperands == 2);
  if (d->op == IR_OP_DOT && d->noperands == 2) {
    const IrInstr *b = d->operands[1];
    CHECK(b->op == IR_OP_BITCAST && layout_is(&b->shape, cm));
    /* the bitcasts lead straight to the concatenate */
    while (b->op == IR_OP_BITCAST) b = b->operands[0];
    CHECK(b->op == IR_OP_CONCATENATE);
  }
  check_same_values(UNIT_RESHAPE_TO_GEMM, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_reshape_adding_a_size_one_dimension_keeps_its_operands_order) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "move-copy-to-users", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(UNIT_INDEX_RESHAPE), "h100", passes, 3, &s);
  if (!m) return;
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 0 && count_op_in(m->entry, IR_OP_COPY) == 0);
  IrInstr *c = ir_computation_find_instr(m->entry, "c");
  CHECK(c && c->op == IR_OP_CONCATENATE && ir_shape_default_layout(&c->shape) && c->shape.dims[2] == 2);
  check_same_values(UNIT_INDEX_RESHAPE, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_size_one_dimension_added_to_a_row_major_value_stays_row_major) {
  Seen s;
  static const char *const la[] = {"layout-assignment"};
  IrModule *m = run_named_passes(hlo_ok(ROTARY_HALVES), "h100", la, 1, &s);
  if (!m) return;
  static const char *const names[] = {"b0", "b1", "cc", "m", "sr"};
  for (int k = 0; k < 5; k++) {
    IrInstr *i = ir_computation_find_instr(m->entry, names[k]);
    CHECK(i && ir_shape_default_layout(&i->shape));
  }
  CHECK(count_op_in(m->entry, IR_OP_COPY) == 0);
  ir_module_free(m);
  static const char *const passes[] = {"layout-assignment", "move-copy-to-users", "layout-normalization"};
  m = run_named_passes(hlo_ok(ROTARY_HALVES), "h100", passes, 3, &s);
  if (!m) return;
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 0 && count_op_in(m->entry, IR_OP_COPY) == 0);
  check_same_values(ROTARY_HALVES, m, INPUT_SEED);
  ir_module_free(m);
}

/* XLA's own choices (tests/passes/align_layouts_xla.txt, read from its layout-assignment log):
 * simp_reshape_layout gives every one of them. */
static int parse_dims(const char *t, int64_t *d) {
  int n = 0;
  if (strcmp(t, "-") == 0) return 0;
  for (const char *c = t; *c && n < IR_MAX_RANK;) {
    d[n++] = strtoll(c, NULL, 10);
    c = strchr(c, ',');
    if (!c) break;
    c++;
  }
  return n;
}

TEST(reshapes_are_laid_out_as_xla_laid_them_out) {
  FILE *f = fopen("tests/passes/align_layouts_xla.txt", "r");
  CHECK(f != NULL);
  if (!f) return;
  char line[512], kind[8], a[128], al[128], b[128], want[128];
  int cases = 0, agree = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || sscanf(line, "%7s %127s %127s %127s %127s", kind, a, al, b, want) != 5) continue;
    int64_t ad[IR_MAX_RANK], alay[IR_MAX_RANK], bd[IR_MAX_RANK], w[IR_MAX_RANK];
    int na = parse_dims(a, ad), nal = parse_dims(al, alay), nb = parse_dims(b, bd), nw = parse_dims(want, w);
    cases++;
    if (na != nal || nb != nw) continue;
    IrShape in = {.type = IR_F32, .rank = na, .dims = ad}, out = {.type = IR_F32, .rank = nb, .dims = bd};
    int major[IR_MAX_RANK], got[IR_MAX_RANK];
    for (int k = 0; k < na; k++) major[k] = (int)alay[na - 1 - k];
    bool same = simp_reshape_layout(&in, major, &out, got);
    for (int k = 0; same && k < nb; k++) same = got[k] == (int)w[k];
    if (same) agree++;
    else fprintf(stderr, "  %s [%s]{%s} -> [%s]: XLA {%s}\n", kind, a, al, b, want);
  }
  fclose(f);
  CHECK(cases == 106);
  CHECK(agree == cases);
}

TEST(the_earliest_gemm_lays_out_a_value_two_gemms_read) {
  Seen s;
  static const char *const la[] = {"layout-assignment"};
  IrModule *m = run_named_passes(hlo_ok(TWO_GEMMS_ONE_VALUE), "h100", la, 1, &s);
  if (!m) return;
  static const int vlay[] = {3, 1, 2, 0}, tklay[] = {3, 2, 1, 0};
  IrInstr *v = ir_computation_find_instr(m->entry, "v"), *tk = ir_computation_find_instr(m->entry, "tk");
  IrInstr *d1 = ir_computation_find_instr(m->entry, "d1"), *d2 = ir_computation_find_instr(m->entry, "d2");
  CHECK(v && layout_is(&v->shape, vlay));
  CHECK(tk && layout_is(&tk->shape, tklay)); /* a bitcast: q.K reads k where it lies */
  CHECK(d1 && d1->operands[0]->op == IR_OP_RESHAPE);
  CHECK(d2 && d2->operands[0]->op == IR_OP_COPY);
  ir_module_free(m);
  static const char *const passes[] = {"layout-assignment", "move-copy-to-users", "layout-normalization"};
  m = run_named_passes(hlo_ok(TWO_GEMMS_ONE_VALUE), "h100", passes, 3, &s);
  if (!m) return;
  check_same_values(TWO_GEMMS_ONE_VALUE, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(copies_move_below_what_works_in_any_layout) {
  Seen s;
  static const char *const passes[] = {"move-copy-to-users"};
  IrModule *m = run_named_passes(hlo_ok(COPIES_TO_USERS), "h100", passes, 1, &s);
  if (!m) return;
  static const int col[] = {0, 1};
  const IrInstr *t = m->entry->root;
  CHECK(t->noperands == 6);
  if (t->noperands != 6) return;
  /* slice, dynamic-slice, exponential, add, concatenate: each runs on the parameter as it lies
     (column-major) and a copy after it makes the row-major result its reader was given */
  for (int k = 0; k < 5; k++) {
    const IrInstr *c = t->operands[k];
    CHECK(c->op == IR_OP_COPY && ir_shape_default_layout(&c->shape));
    if (c->op != IR_OP_COPY) continue;
    const IrInstr *op = c->operands[0];
    CHECK(layout_is(&op->shape, col));
    for (int q = 0; q < op->noperands; q++)
      if (op->operands[q]->shape.rank == 2) CHECK(op->operands[q]->op == IR_OP_PARAMETER);
  }
  CHECK_STR(t->operands[0]->operands[0]->name, "sl"); /* the moved slice keeps its name */
  /* the reduce reads x itself */
  CHECK(t->operands[5]->op == IR_OP_REDUCE && t->operands[5]->operands[0]->op == IR_OP_PARAMETER);
  CHECK(count_op_in(m->entry, IR_OP_COPY) == 5);
  check_same_values(COPIES_TO_USERS, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(layout_assignment_says_where_a_layout_came_from) {
  Seen s;
  static const char *const passes[] = {"layout-assignment"};
  IrModule *m = run_named_passes(hlo_ok(TRANSPOSED_THEN_REDUCED), "h100", passes, 1, &s);
  if (!m) return;
  /* t and c are laid out (the parameter's order): one decision each, the convert's last */
  CHECK(s.accepted == 2);
  CHECK_STR(s.last, "c gets layout {0,1} from its operand t: a convert cannot change layout");
  ir_module_free(m);
}

TEST(a_reshape_no_layout_makes_a_bitcast_reads_row_major) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(RESHAPE_NEEDS_A_COPY), "h100", passes, 2, &s);
  if (!m) return;
  /* the exponential runs on p's bytes ([6,8] physical), one transpose makes the row-major [8,6]
     the reshape reads, and the reshape is a bitcast */
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 1 && count_op_in(m->entry, IR_OP_COPY) == 0);
  CHECK(m->entry->root->op == IR_OP_BITCAST && m->entry->root->operands[0]->op == IR_OP_TRANSPOSE);
  check_same_values(RESHAPE_NEEDS_A_COPY, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_vector_broadcast_takes_its_readers_layout) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(BIAS_ON_TRANSPOSED), "h100", passes, 2, &s);
  if (!m) return;
  /* p's layout flows through t (a bitcast), the add and r (a bitcast back): no data moves; the
     bias is broadcast along p's physical dimension 1 */
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 0 && count_op_in(m->entry, IR_OP_COPY) == 0);
  const IrInstr *a = ir_computation_find_instr(m->entry, "a");
  CHECK(a && a->op == IR_OP_ADD && a->shape.dims[0] == 6 && a->shape.dims[1] == 8);
  if (a && a->op == IR_OP_ADD) {
    const IrInstr *b = a->operands[1];
    CHECK(b->op == IR_OP_BROADCAST && strcmp(ir_attr_text(b, "dimensions"), "{1}") == 0);
  }
  check_same_values(BIAS_ON_TRANSPOSED, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_loop_carries_its_state_in_the_layout_its_body_gives_it) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(LOOP_STATE_LAYOUT), "h100", passes, 2, &s);
  if (!m) return;
  IrInstr *w = NULL;
  for (int k = 0; k < m->entry->ninstrs; k++)
    if (m->entry->instrs[k]->op == IR_OP_WHILE) w = m->entry->instrs[k];
  CHECK(w && w->shape.type == IR_TUPLE && w->shape.ntuple == 4);
  if (w && w->shape.type == IR_TUPLE && w->shape.ntuple == 4) {
    /* the cache in the update's layout (x's bytes, transposed by a bitcast), x row-major: the
       state elements take layouts in their order, as XLA's buffers do */
    CHECK(!ir_shape_default_layout(&w->shape.tuple[2]) && ir_shape_default_layout(&w->shape.tuple[1]));
    IrComputation *body = ir_attr_comp(w, "body");
    /* in the body nothing moves data but the copy back of x's row block: the transpose is a
       bitcast, the dynamic-update-slice and dynamic-slice work on physical shapes */
    CHECK(body && count_op_in(body, IR_OP_COPY) == 0);
    CHECK(body && count_op_in(body, IR_OP_DYNAMIC_UPDATE_SLICE) == 1);
  }
  check_same_values(LOOP_STATE_LAYOUT, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_matrix_broadcast_moves_its_operand_not_its_result) {
  Seen s;
  static const char *const passes[] = {"layout-assignment", "layout-normalization"};
  IrModule *m = run_named_passes(hlo_ok(BROADCAST_OF_A_MATRIX), "h100", passes, 2, &s);
  if (!m) return;
  /* one transpose, of y's 48 elements; the add and the broadcast work on p's physical order */
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 1 && count_op_in(m->entry, IR_OP_COPY) == 0);
  for (int k = 0; k < m->entry->ninstrs; k++) {
    const IrInstr *i = m->entry->instrs[k];
    if (i->op == IR_OP_TRANSPOSE) CHECK(ir_shape_elements(&i->shape) == 48 && strcmp(i->operands[0]->name, "y") == 0);
  }
  check_same_values(BROADCAST_OF_A_MATRIX, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(small_topk_becomes_xlas_topk_kernel) {
  Seen s;
  static const char *const passes[] = {"topk-specializer"};
  const char *text = topk_text("bf16", 2048, 10, "true");
  IrModule *m = run_named_passes(hlo_ok(text), "h100", passes, 1, &s);
  if (!m) return;
  IrInstr *call = find_call(m->entry, PLAN_CC_GPU_TOPK);
  CHECK(call != NULL && count_op_in(m->entry, IR_OP_TOPK) == 0);
  if (call) {
    CHECK(call->noperands == 1 && strcmp(call->operands[0]->name, "x") == 0);
    CHECK(call->shape.type == IR_TUPLE && call->shape.ntuple == 2 && call->shape.tuple[0].dims[1] == 10);
    const char *lib = NULL, *what = NULL;
    CHECK(plan_library_call(call, &lib, &what));
  }
  CHECK(s.accepted == 1);
  CHECK_CONTAINS(s.last, "__gpu$TopK");
  check_same_values(text, m, INPUT_SEED); /* the interpreter runs the call as the topk it was */
  ir_module_free(m);
}

/* A topk XLA's kernel cannot take is what XLA's TopkDecomposer makes of it: a stable sort of the
 * values and an iota of their positions, and slices of the first k (on the host: a topk). */
TEST(topk_xlas_kernel_cannot_take_becomes_a_sort) {
  static const char *const passes[] = {"topk-specializer"};
  struct {
    const char *type, *largest, *dev, *why;
    int64_t n, k;
  } cases[] = {
      {"bf16", "true", "h100", "larger than 16", 2048, 17},
      {"f32", "true", "h100", "fewer than 1,024", 512, 4},
      {"f16", "true", "h100", "f32 and bf16", 2048, 4},
      {"f32", "false", "h100", "smallest", 2048, 4},
      {"f32", "true", "host", NULL, 2048, 4},
  };
  for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
    Seen s;
    IrModule *m = run_named_passes(hlo_ok(topk_text(cases[q].type, cases[q].n, cases[q].k, cases[q].largest)), cases[q].dev,
                             passes, 1, &s);
    if (!m) return;
    CHECK(find_call(m->entry, PLAN_CC_GPU_TOPK) == NULL);
    if (cases[q].why) {
      CHECK(count_op_in(m->entry, IR_OP_TOPK) == 0 && count_op_in(m->entry, IR_OP_SORT) == 1 &&
            count_op_in(m->entry, IR_OP_IOTA) == 1 && count_op_in(m->entry, IR_OP_SLICE) == 2 && s.accepted == 1);
      CHECK_CONTAINS(s.last, "a stable sort of its input and an iota of positions");
      CHECK_CONTAINS(s.last, cases[q].why);
      check_same_values(topk_text(cases[q].type, cases[q].n, cases[q].k, cases[q].largest), m, INPUT_SEED);
    } else {
      CHECK(count_op_in(m->entry, IR_OP_TOPK) == 1 && s.accepted == 0);
    }
    ir_module_free(m);
  }
}

int main(void) {
  RUN(convolution_becomes_a_cudnn_call_with_its_pad_folded);
  RUN(bias_and_relu_go_into_the_cudnn_call);
  RUN(scale_and_side_input);
  RUN(resnet_layouts_on_hopper_transpose_the_filter);
  RUN(depthwise_bf16_nchw_goes_through_nhwc_and_keeps_no_bias);
  RUN(before_hopper_f32_convolutions_run_in_nchw);
  RUN(no_cudnn_on_the_host);
  RUN(layout_hints_are_dropped_and_reshapes_become_bitcasts);
  RUN(a_reduce_reads_a_weight_where_its_parameter_laid_it);
  RUN(copies_move_below_what_works_in_any_layout);
  RUN(a_gemm_reads_through_a_reshape_of_size_one_dimensions);
  RUN(a_reshape_adding_a_size_one_dimension_keeps_its_operands_order);
  RUN(a_size_one_dimension_added_to_a_row_major_value_stays_row_major);
  RUN(reshapes_are_laid_out_as_xla_laid_them_out);
  RUN(the_earliest_gemm_lays_out_a_value_two_gemms_read);
  RUN(a_transposed_weight_only_a_gemm_reads_is_a_bitcast);
  RUN(a_transpose_something_else_constrains_moves_data);
  RUN(a_gemm_result_only_a_transpose_reads_is_written_transposed);
  RUN(a_transposed_value_is_reduced_where_it_lies);
  RUN(layout_assignment_says_where_a_layout_came_from);
  RUN(a_reshape_no_layout_makes_a_bitcast_reads_row_major);
  RUN(a_vector_broadcast_takes_its_readers_layout);
  RUN(a_loop_carries_its_state_in_the_layout_its_body_gives_it);
  RUN(a_matrix_broadcast_moves_its_operand_not_its_result);
  RUN(small_topk_becomes_xlas_topk_kernel);
  RUN(topk_xlas_kernel_cannot_take_becomes_a_sort);
  return check_summary();
}
