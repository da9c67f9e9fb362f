/* test_sort_rewrites.c — XLA:GPU's sort passes and the batched-indexing normalizer of the priority
 * pipeline: sort-rewriter (which sorts become CUB calls on which GPU, and why the others do not),
 * stable-sort-expander (the iota tie-breaker), sort-iota-fusion, batched-gather-scatter-normalizer.
 * Every rewrite is run on the interpreter against the module before it, on keys full of what
 * orders badly (NaN and -NaN, -0 and +0, infinities, repeated values): the CUB calls must give the
 * same bits, and an argsort the same permutation (stable, -0 equal to 0, NaNs last). tests/xla/programs
 * holds real XLA's kernels for JAX programs of these kinds (ctest -R xla.programs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pass_check.h"

/* JAX's comparator for jnp.sort / jnp.argsort of type T (NumPy's order: -0 as 0, NaNs last), with
 * `extra` more operands of type U (ignored), comparing with direction DIR. */
static const char *numpy_comparator(char *buf, size_t n, const char *t, int extra, const char *u, const char *dir) {
  size_t len = (size_t)snprintf(buf, n,
                                "cmp {\n"
                                "  a = %s[] parameter(0)\n"
                                "  b = %s[] parameter(1)\n",
                                t, t);
  for (int k = 0; k < extra; k++)
    len += (size_t)snprintf(buf + len, n - len, "  p%d = %s[] parameter(%d)\n  q%d = %s[] parameter(%d)\n", k, u,
                            2 + 2 * k, k, u, 3 + 2 * k);
  snprintf(buf + len, n - len,
           "  nan = %s[] constant(nan)\n"
           "  zero = %s[] constant(0)\n"
           "  ne_a = pred[] compare(a, a), direction=NE\n"
           "  eq_a = pred[] compare(a, zero), direction=EQ\n"
           "  za = %s[] select(eq_a, zero, a)\n"
           "  ca = %s[] select(ne_a, nan, za)\n"
           "  ne_b = pred[] compare(b, b), direction=NE\n"
           "  eq_b = pred[] compare(b, zero), direction=EQ\n"
           "  zb = %s[] select(eq_b, zero, b)\n"
           "  cb = %s[] select(ne_b, nan, zb)\n"
           "  ROOT r = pred[] compare(ca, cb), direction=%s, type=TOTALORDER\n"
           "}\n",
           t, t, t, t, t, t, dir);
  return buf;
}

/* jnp.sort of T[rows, n] rows. */
static char *sort_text(const char *t, int64_t rows, int64_t n) {
  static char buf[4096];
  char cmp[2048];
  snprintf(buf, sizeof buf,
           "HloModule s\n%s"
           "ENTRY main {\n"
           "  x = %s[%lld,%lld]{1,0} parameter(0)\n"
           "  ROOT s = %s[%lld,%lld]{1,0} sort(x), dimensions={1}, is_stable=true, to_apply=cmp\n"
           "}\n",
           numpy_comparator(cmp, sizeof cmp, t, 0, NULL, "LT"), t, (long long)rows, (long long)n, t, (long long)rows,
           (long long)n);
  return buf;
}

/* jnp.argsort of T[1, n], ascending (LT) or descending (GT): the keys and an iota of indices. */
static char *argsort_text(const char *t, int64_t n, const char *dir) {
  static char buf[4096];
  char cmp[2048];
  snprintf(buf, sizeof buf,
           "HloModule a\n%s"
           "ENTRY main {\n"
           "  x = %s[1,%lld]{1,0} parameter(0)\n"
           "  i = s32[1,%lld]{1,0} iota(), iota_dimension=1\n"
           "  s = (%s[1,%lld]{1,0}, s32[1,%lld]{1,0}) sort(x, i), dimensions={1}, is_stable=true, to_apply=cmp\n"
           "  ROOT r = s32[1,%lld]{1,0} get-tuple-element(s), index=1\n"
           "}\n",
           numpy_comparator(cmp, sizeof cmp, t, 1, "s32", dir), t, (long long)n, (long long)n, t, (long long)n,
           (long long)n, (long long)n);
  return buf;
}

/* lax.sort_key_val with the keys second (the comparator reads parameters 2 and 3), s32 keys in
 * the default order, direction DIR. */
static char *key_val_text(int64_t n, const char *dir) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "HloModule kv\n"
           "cmp {\n"
           "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
           "  ROOT r = pred[] compare(c, d), direction=%s\n"
           "}\n"
           "ENTRY main {\n"
           "  v = f32[1,%lld]{1,0} parameter(0)\n"
           "  k = s32[1,%lld]{1,0} parameter(1)\n"
           "  ROOT s = (f32[1,%lld]{1,0}, s32[1,%lld]{1,0}) sort(v, k), dimensions={1}, to_apply=cmp\n"
           "}\n",
           dir, (long long)n, (long long)n, (long long)n, (long long)n);
  return buf;
}

/* Keys that order badly: NaN, -NaN, -0, +0, infinities, and repeats among random values. */
static void fill_hostile(RtTensor *t, uint64_t seed, uint64_t stream) {
  rt_tensor_fill_random(t, seed, stream);
  for (int64_t e = 0; e < t->count; e++) {
    uint32_t bits;
    int m = (int)(e % 29);
    if (t->type == IR_S32) {
      if (e % 5 == 0 && e >= 5) memcpy((int32_t *)t->data + e, (int32_t *)t->data + e - 5, 4);
      if (m == 3) ((int32_t *)t->data)[e] = INT32_MIN;
      if (m == 4) ((int32_t *)t->data)[e] = INT32_MAX;
      continue;
    }
    float f;
    memcpy(&f, (char *)t->data + e * (t->type == IR_F32 ? 4 : 2), t->type == IR_F32 ? 4 : 2);
    if (t->type != IR_F32) {
      uint16_t h;
      memcpy(&h, (char *)t->data + e * 2, 2);
      bits = (uint32_t)h << 16;
    } else {
      memcpy(&bits, &f, 4);
    }
    if (m == 0) bits = 0x7fc00000u;          /* NaN */
    else if (m == 1) bits = 0xffc00000u;     /* -NaN */
    else if (m == 2 || m == 11) bits = 0x80000000u; /* -0 */
    else if (m == 5 || m == 17) bits = 0;    /* +0 */
    else if (m == 7) bits = 0x7f800000u;     /* inf */
    else if (m == 8) bits = 0xff800000u;     /* -inf */
    else if (m == 13 && e >= 13) {           /* a repeat */
      if (t->type == IR_F32) memcpy(&bits, (char *)t->data + (e - 13) * 4, 4);
      else {
        uint16_t h;
        memcpy(&h, (char *)t->data + (e - 13) * 2, 2);
        bits = (uint32_t)h << 16;
      }
    }
    if (t->type == IR_F32) memcpy((char *)t->data + e * 4, &bits, 4);
    else {
      uint16_t h = (uint16_t)(bits >> 16);
      memcpy((char *)t->data + e * 2, &h, 2);
    }
  }
}

static bool same_bits(const RtTensor *a, const RtTensor *b) {
  if (!a || !b || a->type != b->type || a->count != b->count || a->ntuple != b->ntuple) return false;
  if (a->type == IR_TUPLE) {
    for (int k = 0; k < a->ntuple; k++)
      if (!same_bits(a->tuple[k], b->tuple[k])) return false;
    return true;
  }
  return a->bytes == b->bytes && memcmp(a->data, b->data, a->bytes) == 0;
}

/* The rewritten module gives the original's bits on hostile keys. */
static void check_same_bits(const char *text, const IrModule *rewritten) {
  IrModule *orig = hlo_ok(text);
  if (!orig) return;
  RtTensor *want = interp_filled(orig, fill_hostile, 5), *got = interp_filled(rewritten, fill_hostile, 5);
  CHECK(want && got);
  CHECK(same_bits(want, got));
  rt_tensor_unref(want);
  rt_tensor_unref(got);
  ir_module_free(orig);
}



static const char *const REWRITER[] = {"sort-rewriter"};

TEST(numpy_sort_of_long_rows_becomes_cub_pairs_with_synthetic_keys) {
  Seen s;
  const char *text = sort_text("f32", 1, 30000);
  IrModule *m = run_named_passes(hlo_ok(text), "h100", REWRITER, 1, &s);
  if (!m) return;
  IrInstr *call = find_call(m->entry, PLAN_CC_CUB_SORT_PAIRS);
  CHECK(call != NULL && count_op_in(m->entry, IR_OP_SORT) == 0 && s.accepted == 1);
  if (call) {
    /* (u32 keys, the f32 values, the scratch buffer); the keys select(x < 0, not(bits), bits ^ sign) */
    CHECK(call->shape.ntuple == 3 && call->shape.tuple[0].type == IR_U32 && call->shape.tuple[1].type == IR_F32 &&
          call->shape.tuple[2].type == IR_U8);
    CHECK(call->operands[0]->op == IR_OP_SELECT && strcmp(call->operands[1]->name, "x") == 0);
    CHECK_CONTAINS(ir_attr_text(call, "backend_config"), "descending = false, batch_size = 1 : i64");
    const char *lib = NULL, *what = NULL;
    CHECK(plan_library_call(call, &lib, &what) && strcmp(lib, "CUB") == 0);
  }
  CHECK_CONTAINS(s.last_accepted, "NumPy's order: keys synthesized");
  CHECK_CONTAINS(s.last_accepted, "thresholds for H100");
  check_same_bits(text, m);
  ir_module_free(m);
}

TEST(argsort_packs_key_and_index_and_stays_stable) {
  const char *dirs[] = {"LT", "GT"};
  for (int q = 0; q < 2; q++) {
    Seen s;
    const char *text = argsort_text("f32", 30000, dirs[q]);
    IrModule *m = run_named_passes(hlo_ok(text), "h100", REWRITER, 1, &s);
    if (!m) return;
    IrInstr *call = find_call(m->entry, PLAN_CC_CUB_SORT_PAIRS);
    CHECK(call != NULL && s.accepted == 1);
    if (call) {
      /* f32 key (32 bits) + s32 index (32 bits): packed into u64 */
      CHECK(call->shape.tuple[1].type == IR_U64 && call->operands[1]->op == IR_OP_OR);
      CHECK_CONTAINS(ir_attr_text(call, "backend_config"), q ? "descending = true" : "descending = false");
    }
    CHECK_CONTAINS(s.last_accepted, "key and index packed");
    check_same_bits(text, m); /* the same permutation: ties by index, -0 == 0, NaNs last */
    ir_module_free(m);
  }
  /* bf16 keys with s32 indices: 48 bits, still u64 */
  Seen s;
  const char *text = argsort_text("bf16", 30000, "LT");
  IrModule *m = run_named_passes(hlo_ok(text), "h100", REWRITER, 1, &s);
  if (!m) return;
  IrInstr *call = find_call(m->entry, PLAN_CC_CUB_SORT_PAIRS);
  CHECK(call != NULL && call->shape.tuple[0].type == IR_U16 && call->shape.tuple[1].type == IR_U64);
  check_same_bits(text, m);
  ir_module_free(m);
}

TEST(integer_keys_in_the_default_order_and_keys_second) {
  const char *dirs[] = {"LT", "GT"};
  for (int q = 0; q < 2; q++) {
    Seen s;
    const char *text = key_val_text(30000, dirs[q]);
    IrModule *m = run_named_passes(hlo_ok(text), "h100", REWRITER, 1, &s);
    if (!m) return;
    IrInstr *call = find_call(m->entry, PLAN_CC_CUB_SORT_PAIRS);
    CHECK(call != NULL && s.accepted == 1);
    /* the keys (operand 1 of the sort) go first to CUB, as they are; the results come back swapped */
    if (call) CHECK(strcmp(call->operands[0]->name, "k") == 0 && strcmp(call->operands[1]->name, "v") == 0);
    check_same_bits(text, m);
    ir_module_free(m);
  }
}

TEST(float_keys_in_the_default_order_go_to_cub_as_they_are) {
  /* a plain less-than of f32 keys: CUB radix-sorts their bits (negatives reversed), which orders
     every value the comparator orders (-0 and NaN aside, where a plain comparison has no order) */
  static const char *const text =
      "HloModule f\n"
      "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
      "ENTRY main {\n  x = f32[1,30000]{1,0} parameter(0)\n"
      "  ROOT s = f32[1,30000]{1,0} sort(x), dimensions={1}, to_apply=cmp\n}\n";
  Seen s;
  IrModule *m = run_named_passes(hlo_ok(text), "h100", REWRITER, 1, &s);
  if (!m) return;
  IrInstr *call = find_call(m->entry, PLAN_CC_CUB_SORT_KEYS);
  CHECK(call != NULL && call->shape.ntuple == 2 && strcmp(call->operands[0]->name, "x") == 0);
  CHECK_CONTAINS(s.last_accepted, "f32 keys");
  check_same_values(text, m, 9); /* random values of both signs */
  ir_module_free(m);
}

TEST(thresholds_differ_per_gpu) {
  /* bf16 argsort of 65,536: CUB on H100 (16-bit, one row, more than 512), not on A100 (needs more
     than 65,536); XLA's own kernels for both are in tests/xla/programs */
  struct {
    const char *dev;
    bool cub;
    const char *why;
  } cases[] = {{"h100", true, "H100"}, {"a100", false, "A100"}, {"rtx2080ti", true, "16,384"}, {"host", false, NULL}};
  for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
    Seen s;
    IrModule *m = run_named_passes(hlo_ok(argsort_text("bf16", 65536, "LT")), cases[q].dev, REWRITER, 1, &s);
    if (!m) return;
    CHECK((find_call(m->entry, PLAN_CC_CUB_SORT_PAIRS) != NULL) == cases[q].cub);
    CHECK(count_op_in(m->entry, IR_OP_SORT) == (cases[q].cub ? 0 : 1));
    if (cases[q].why) CHECK_CONTAINS(s.last, cases[q].why);
    else CHECK(s.accepted == 0 && s.rejected == 0); /* the host: XLA:GPU's pass does not run */
    ir_module_free(m);
  }
}

TEST(sorts_cub_cannot_take_stay_sorts_with_the_reason) {
  static const char *const three =
      "HloModule t\n"
      "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = f32[] parameter(2)\n  d = f32[] parameter(3)\n"
      "  e = f32[] parameter(4)\n  f = f32[] parameter(5)\n  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
      "ENTRY main {\n  x = f32[1,30000]{1,0} parameter(0)\n"
      "  ROOT s = (f32[1,30000]{1,0}, f32[1,30000]{1,0}, f32[1,30000]{1,0}) sort(x, x, x), dimensions={1}, to_apply=cmp\n}\n";
  static const char *const columns =
      "HloModule c\n"
      "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
      "ENTRY main {\n  x = f32[30000,2]{1,0} parameter(0)\n"
      "  ROOT s = f32[30000,2]{1,0} sort(x), dimensions={0}, to_apply=cmp\n}\n";
  static const char *const crossed =
      "HloModule x\n"
      "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = f32[] parameter(2)\n  d = f32[] parameter(3)\n"
      "  ROOT r = pred[] compare(a, c), direction=LT\n}\n"
      "ENTRY main {\n  x = f32[1,30000]{1,0} parameter(0)\n"
      "  ROOT s = (f32[1,30000]{1,0}, f32[1,30000]{1,0}) sort(x, x), dimensions={1}, to_apply=cmp\n}\n";
  static const char *const equal =
      "HloModule e\n"
      "cmp {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT r = pred[] compare(a, b), direction=EQ\n}\n"
      "ENTRY main {\n  x = s32[1,30000]{1,0} parameter(0)\n"
      "  ROOT s = s32[1,30000]{1,0} sort(x), dimensions={1}, to_apply=cmp\n}\n";
  static const char *const empty =
      "HloModule z\n"
      "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
      "ENTRY main {\n  x = f32[4,0]{1,0} parameter(0)\n"
      "  ROOT s = f32[4,0]{1,0} sort(x), dimensions={1}, to_apply=cmp\n}\n";
  struct {
    const char *text, *why;
  } cases[] = {
      {sort_text("f32", 8, 256), "too small for CUB to be faster"},
      {empty, "nothing to sort"},
      {three, "one or two operands"},
      {columns, "not the minor one"},
      {crossed, "does not compare the two values of one operand"},
      {equal, "not a less-than or greater-than"},
  };
  for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
    Seen s;
    IrModule *m = run_named_passes(hlo_ok(cases[q].text), "h100", REWRITER, 1, &s);
    if (!m) return;
    CHECK(count_op_in(m->entry, IR_OP_SORT) == 1 && s.accepted == 0 && s.rejected == 1);
    CHECK_CONTAINS(s.last, cases[q].why);
    ir_module_free(m);
  }
}

TEST(a_stable_sort_gets_an_iota_tie_breaker) {
  static const char *const passes[] = {"stable-sort-expander"};
  Seen s;
  const char *text = sort_text("f32", 4, 64);
  IrModule *m = run_named_passes(hlo_ok(text), "h100", passes, 1, &s);
  if (!m) return;
  IrInstr *sort = NULL;
  for (int k = 0; k < m->entry->ninstrs; k++)
    if (m->entry->instrs[k]->op == IR_OP_SORT) sort = m->entry->instrs[k];
  CHECK(sort != NULL && s.accepted == 1);
  if (sort) {
    IrComputation *cmp = ir_attr_comp(sort, "to_apply");
    CHECK(sort->noperands == 2 && sort->operands[1]->op == IR_OP_IOTA && ir_attr_text(sort, "is_stable") == NULL);
    CHECK(cmp && cmp->nparams == 4 && cmp->root->op == IR_OP_SELECT && cmp->params[2]->shape.type == IR_S32);
    CHECK(cmp && strcmp(cmp->name, "cmp") != 0); /* a copy: the original has two parameters */
  }
  CHECK_CONTAINS(s.last_accepted, "not stable");
  check_same_bits(text, m);
  ir_module_free(m);
  /* an argsort's own iota along the sorted dimension breaks the ties: no new operand */
  text = argsort_text("f32", 64, "LT");
  m = run_named_passes(hlo_ok(text), "h100", passes, 1, &s);
  if (!m) return;
  CHECK(count_op_in(m->entry, IR_OP_IOTA) == 1 && s.accepted == 1);
  CHECK_CONTAINS(s.last_accepted, "its own operand i");
  check_same_bits(text, m);
  ir_module_free(m);
}

TEST(a_sort_and_its_iotas_become_one_kcustom_fusion) {
  static const char *const passes[] = {"stable-sort-expander", "sort-iota-fusion"};
  Seen s;
  const char *text = argsort_text("f32", 64, "LT");
  IrModule *m = run_named_passes(hlo_ok(text), "h100", passes, 2, &s);
  if (!m) return;
  IrInstr *f = NULL;
  for (int k = 0; k < m->entry->ninstrs; k++)
    if (m->entry->instrs[k]->op == IR_OP_FUSION) f = m->entry->instrs[k];
  CHECK(f != NULL && count_op_in(m->entry, IR_OP_IOTA) == 0 && count_op_in(m->entry, IR_OP_SORT) == 0);
  if (f) {
    CHECK(strcmp(ir_fusion_kind(f), "kCustom") == 0 && f->noperands == 1);
    CHECK(ir_fused_computation(f)->root->op == IR_OP_SORT && count_op_in(ir_fused_computation(f), IR_OP_IOTA) == 1);
  }
  CHECK_CONTAINS(s.last_accepted, "SortIotaFusion");
  check_same_bits(text, m);
  ir_module_free(m);
}

TEST(batched_gather_and_scatter_become_ordinary_ones) {
  static const char *const passes[] = {"batched-gather-scatter-normalizer"};
  /* as JAX writes jax.vmap(lambda x, i: x[i]) and jax.vmap(lambda x, i, u: x.at[i].add(u)) */
  static const char *const gather =
      "HloModule g\n"
      "ENTRY main {\n  x = f32[16,64]{1,0} parameter(0)\n  i = s32[16,8]{1,0} parameter(1)\n"
      "  r = s32[16,8,1]{2,1,0} reshape(i)\n"
      "  ROOT g = f32[16,8]{1,0} gather(x, r), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, "
      "operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}\n}\n";
  static const char *const scatter =
      "HloModule s\n"
      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
      "ENTRY main {\n  x = f32[8,128]{1,0} parameter(0)\n  i = s32[8,4]{1,0} parameter(1)\n  u = f32[8,4]{1,0} parameter(2)\n"
      "  r = s32[8,4,1]{2,1,0} reshape(i)\n"
      "  ROOT s = f32[8,128]{1,0} scatter(x, r, u), update_window_dims={}, inserted_window_dims={1}, "
      "scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, "
      "to_apply=add\n}\n";
  const char *texts[] = {gather, scatter};
  const char *maps[] = {"start_index_map", "scatter_dims_to_operand_dims"};
  const char *folded[] = {"collapsed_slice_dims", "inserted_window_dims"};
  for (int q = 0; q < 2; q++) {
    Seen s;
    IrModule *m = run_named_passes(hlo_ok(texts[q]), "h100", passes, 1, &s);
    if (!m) return;
    IrInstr *x = m->entry->root;
    CHECK(s.accepted == 1 && x->op == (q ? IR_OP_SCATTER : IR_OP_GATHER));
    CHECK(ir_attr_text(x, q ? "input_batching_dims" : "operand_batching_dims") == NULL);
    CHECK(strcmp(ir_attr_text(x, maps[q]), "{0,1}") == 0 && strcmp(ir_attr_text(x, folded[q]), "{0,1}") == 0);
    IrInstr *idx = x->operands[1];
    CHECK(idx->op == IR_OP_CONCATENATE && idx->shape.dims[2] == 2 && idx->operands[0]->op == IR_OP_IOTA);
    check_same_values(texts[q], m, 3);
    ir_module_free(m);
  }
}

int main(void) {
  RUN(numpy_sort_of_long_rows_becomes_cub_pairs_with_synthetic_keys);
  RUN(argsort_packs_key_and_index_and_stays_stable);
  RUN(integer_keys_in_the_default_order_and_keys_second);
  RUN(float_keys_in_the_default_order_go_to_cub_as_they_are);
  RUN(thresholds_differ_per_gpu);
  RUN(sorts_cub_cannot_take_stay_sorts_with_the_reason);
  RUN(a_stable_sort_gets_an_iota_tie_breaker);
  RUN(a_sort_and_its_iotas_become_one_kcustom_fusion);
  RUN(batched_gather_and_scatter_become_ordinary_ones);
  return check_summary();
}
