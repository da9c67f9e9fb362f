/* rng_ops.c — the interpreter's random-number instructions: HLO `rng` (uniform and normal) on
 * cuRAND's Philox4_32_10 stream, and `rng-bit-generator` with XLA's algorithms.
 *
 * Where it sits: runtime/, called from interp.c's walker (rt_exec_instr) for the interpreter and
 * for every backend that runs these instructions on the host. The stream itself lives in
 * rng_stream.c; the GPU backend's kernel (cuda_libs.c) calls cuRAND's device functions with the
 * same seed, subsequence and offset, so the interpreter, the CPU backend and the GPU agree. */
#include <string.h>

#include "interp_internal.h"
#include "rng_stream.h"

static bool instr_error(const IrInstr *i, FxError *err, const char *msg) {
  return fx_error_set(err, i->loc.file, i->loc.line, i->loc.col, "%s: %s", i->name, msg);
}

/* rng(a, b), distribution=rng_uniform: [a, b); rng_normal: mean a, standard deviation b. The
 * layout (which cuRAND thread, subsequence and offset draw which element) is rt_rng_layout's,
 * in rng_stream.h. */
bool rt_op_rng(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  const char *dist = ir_attr_text(i, "distribution");
  bool normal = dist && strstr(dist, "normal");
  if (i->noperands != 2) return instr_error(i, err, "rng takes two operands");
  if (!ir_shape_is_array(&i->shape)) return instr_error(i, err, "expected an array shape");
  IrType t = i->shape.type;
  bool fl = ir_type_is_float(t);
  if (!fl && !ir_type_is_int(t)) return instr_error(i, err, "rng produces floating-point or integer arrays");
  if (normal && !fl) return instr_error(i, err, "rng_normal produces floating-point arrays");
  if (ops[0]->count < 1 || ops[1]->count < 1) return instr_error(i, err, "rng's bounds must be scalars");
  RtTensor *r = rt_tensor_new_uninit(t, i->shape.rank, i->shape.dims, err);
  if (!r) return false;
  uint64_t key = rt_rng_key(rt_exec_seed(x), i->id);
  uint64_t draw = rt_exec_rng_counter(x, i);
  int per = rt_rng_per_thread(fl, ir_type_bytes(t));
  for (int64_t g = 0; g * per < r->count; g++) {
    int64_t base = g * per;
    int m = r->count - base < per ? (int)(r->count - base) : per;
    if (t == IR_F64) {
      double v[2];
      rt_rng_thread_f64(key, (uint64_t)g, draw, normal, rt_get_f(ops[0], 0), rt_get_f(ops[1], 0), v);
      for (int j = 0; j < m; j++) rt_set_f(r, base + j, v[j]);
    } else if (fl) {
      float v[4];
      rt_rng_thread_f32(key, (uint64_t)g, draw, normal, (float)rt_get_f(ops[0], 0), (float)rt_get_f(ops[1], 0), v);
      for (int j = 0; j < m; j++) rt_set_f(r, base + j, v[j]);
    } else {
      int64_t v[2];
      rt_rng_thread_int(key, (uint64_t)g, draw, rt_get_i(ops[0], 0), rt_get_i(ops[1], 0), v);
      for (int j = 0; j < m; j++) rt_set_i(r, base + j, v[j]);
    }
  }
  *out = r;
  return true;
}

/* rng-bit-generator(state), algorithm=rng_default|rng_philox|rng_three_fry: (new state, bits).
 * rng_default is Philox, as XLA's CPU and GPU compilers choose. */
bool rt_op_rng_bit_generator(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  const char *alg = ir_attr_text(i, "algorithm");
  RtRbgAlgorithm a = RT_RBG_PHILOX;
  if (alg && strstr(alg, "three_fry")) a = RT_RBG_THREE_FRY;
  else if (alg && !strstr(alg, "philox") && !strstr(alg, "default"))
    return instr_error(i, err, "rng-bit-generator's algorithm is rng_default, rng_philox or rng_three_fry");
  if (i->noperands != 1 || ops[0]->type != IR_U64 || ops[0]->rank != 1)
    return instr_error(i, err, "rng-bit-generator takes a u64[N] state");
  const IrShape *s = &i->shape;
  if (s->type != IR_TUPLE || s->ntuple != 2 || !ir_shape_is_array(&s->tuple[1]))
    return instr_error(i, err, "rng-bit-generator returns a (state, bits) tuple");
  IrType bt = s->tuple[1].type;
  int bytes = ir_type_bytes(bt);
  if (bt == IR_PRED || ir_type_is_complex(bt) || bt == IR_S4 || bt == IR_U4 ||
      (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8))
    return instr_error(i, err, "rng-bit-generator produces 8-, 16-, 32- or 64-bit elements");
  int nstate = (int)ops[0]->count;
  if (a == RT_RBG_THREE_FRY ? nstate != 2 : nstate < 2 || nstate > 3)
    return instr_error(i, err,
                       a == RT_RBG_THREE_FRY ? "rng_three_fry takes a u64[2] state (key, counter)"
                                             : "rng_philox takes a u64[2] or u64[3] state (key, counter)");
  RtTensor *r = rt_tensor_for_shape_uninit(s, err);
  if (!r) return false;
  if (r->tuple[0]->count != nstate || r->tuple[0]->type != IR_U64) {
    rt_tensor_unref(r);
    return instr_error(i, err, "rng-bit-generator's new state must have the state operand's shape");
  }
  if (rt_rng_bit_generator(a, ops[0]->data, nstate, r->tuple[1]->rank, r->tuple[1]->dims, bytes, r->tuple[1]->data,
                           r->tuple[0]->data) != 0) {
    rt_tensor_unref(r);
    return instr_error(i, err, "rng-bit-generator: this state does not fit the algorithm");
  }
  *out = r;
  return true;
}
