/* test_gemm_fusion.c — XLA:GPU's dot passes before fusion as fxplain runs them in the priority
 * pipeline: dot_dimension_sorter, dot_decomposer, dot-strength-reduction, transpose-folding,
 * splitk-rewriter and triton-gemm-rewriter (GemmFusion). Each case is the HLO the pass gets and
 * what XLA itself made of it (jaxlib 0.10.2, deviceless h100, per-pass dumps): the attention
 * block's two matrix multiplications with the transpose of k and the 1/sqrt(d) scale inside the
 * first GEMM, a dense layer's bias and ReLU inside its GEMM, a long contraction split 32 ways
 * (f32[6272,192] x f32[6272,192]: XLA's f32[32,192,192] GEMM and reduce), Gemma's
 * `BTNH,NHD->BTD` whose contracting dimensions are sorted so no transpose is made, a
 * vector-matrix product that becomes a multiply and a reduce, and the small dot that stays a dot.
 * And the passes around them: dot-merger (two projections of one activation become one GEMM over
 * the weights concatenated, as XLA's xnn.parallel_dots and Gemma's q/k/v), gemv-rewriter (a large
 * vector-matrix product gets a size-1 dimension) and hoist-fused-bitcasts (the split-K and
 * attention GEMMs' bitcasts move out of the fusion, as in XLA's dumps).
 * Each rewritten module must still compute what the original did. */
#include <stdlib.h>
#include <string.h>

#include "../passes/pass_check.h"
#include "../../compiler/plan/plan.h"

static const char *ATTENTION =
    "HloModule attention\n"
    "max_bf16 {\n"
    "  a = bf16[] parameter(0)\n"
    "  b = bf16[] parameter(1)\n"
    "  ROOT m = bf16[] maximum(a, b)\n"
    "}\n"
    "ENTRY main {\n"
    "  q = bf16[2,8,16]{2,1,0} parameter(0)\n"
    "  k = bf16[1,2,8,16]{3,2,1,0} parameter(1)\n"
    "  kt = bf16[1,2,16,8]{2,3,1,0} transpose(k), dimensions={0,1,3,2}\n"
    "  ks = bf16[2,16,8]{2,1,0} reshape(kt)\n"
    "  s = bf16[2,8,8]{2,1,0} dot(q, ks), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
    "rhs_contracting_dims={1}\n"
    "  c = bf16[] constant(0.25)\n"
    "  cb = bf16[2,8,8]{2,1,0} broadcast(c), dimensions={}\n"
    "  scaled = bf16[2,8,8]{2,1,0} multiply(s, cb)\n"
    "  ninf = bf16[] constant(-inf)\n"
    "  mx = bf16[2,8]{1,0} reduce(scaled, ninf), dimensions={2}, to_apply=max_bf16\n"
    "  mb = bf16[2,8,8]{2,1,0} broadcast(mx), dimensions={0,1}\n"
    "  ROOT d = bf16[2,8,8]{2,1,0} subtract(scaled, mb)\n"
    "}\n";

static const char *DENSE =
    "HloModule dense\n"
    "ENTRY main {\n"
    "  x = f32[3616,5]{1,0} parameter(0)\n"
    "  w = f32[5,8]{1,0} parameter(1)\n"
    "  b = f32[8]{0} parameter(2)\n"
    "  d = f32[3616,8]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  bb = f32[3616,8]{1,0} broadcast(b), dimensions={1}\n"
    "  a = f32[3616,8]{1,0} add(d, bb)\n"
    "  z = f32[] constant(0)\n"
    "  zb = f32[3616,8]{1,0} broadcast(z), dimensions={}\n"
    "  ROOT r = f32[3616,8]{1,0} maximum(a, zb)\n"
    "}\n";

static const char *WEIGHT_GRAD =
    "HloModule grad\n"
    "ENTRY main {\n"
    "  a = f32[6272,192]{1,0} parameter(0)\n"
    "  b = f32[6272,192]{1,0} parameter(1)\n"
    "  ROOT d = f32[192,192]{1,0} dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
    "}\n";

/* The same contraction with b stored transposed and flattened for the matmul: layout-assignment
 * makes b's transpose and reshape bitcasts (f32[6272,192]{0,1}), and the split stays a bitcast. */
static const char *WEIGHT_GRAD_TRANSPOSED =
    "HloModule grad_t\n"
    "ENTRY main {\n"
    "  a = f32[6272,192]{1,0} parameter(0)\n"
    "  b0 = f32[192,32,196]{2,1,0} parameter(1)\n"
    "  bt = f32[32,196,192]{2,1,0} transpose(b0), dimensions={1,2,0}\n"
    "  b = f32[6272,192]{1,0} reshape(bt)\n"
    "  ROOT d = f32[192,192]{1,0} dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
    "}\n";

static const char *ATTN_VEC =
    "HloModule attn_vec\n"
    "ENTRY main {\n"
    "  x = bf16[1,11,4,256]{3,2,1,0} parameter(0)\n"
    "  w = bf16[4,256,1152]{2,1,0} parameter(1)\n"
    "  ROOT d = bf16[1,11,1152]{2,1,0} dot(x, w), lhs_contracting_dims={3,2}, rhs_contracting_dims={1,0}\n"
    "}\n";

static const char *VECTOR =
    "HloModule vec\n"
    "ENTRY main {\n"
    "  v = f32[2048]{0} parameter(0)\n"
    "  w = f32[2048,1000]{1,0} parameter(1)\n"
    "  ROOT d = f32[1000]{0} dot(v, w), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
    "}\n";

static const char *TINY =
    "HloModule tiny\n"
    "ENTRY main {\n"
    "  a = f32[3616,6,8]{2,1,0} parameter(0)\n"
    "  ROOT d = f32[3616,6,6]{2,1,0} dot(a, a), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
    "rhs_contracting_dims={2}\n"
    "}\n";

/* Three projections of one activation, and a fourth dot that reads the first's result (and its
 * weight: it cannot merge with it). */
static const char *PROJECTIONS =
    "HloModule proj\n"
    "ENTRY main {\n"
    "  x = f32[32,64]{1,0} parameter(0)\n"
    "  wq = f32[64,128]{1,0} parameter(1)\n"
    "  wk = f32[64,64]{1,0} parameter(2)\n"
    "  wv = f32[64,64]{1,0} parameter(3)\n"
    "  q = f32[32,128]{1,0} dot(x, wq), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  k = f32[32,64]{1,0} dot(x, wk), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  v = f32[32,64]{1,0} dot(x, wv), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  s = f32[32,64]{1,0} dot(q, wq), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
    "  ROOT t = (f32[32,64]{1,0}, f32[32,64]{1,0}, f32[32,64]{1,0}) tuple(k, v, s)\n"
    "}\n";

/* XLA's TryMergeLHSWithRHSOperand example: a reads x as its left operand, b reads it transposed
 * as its right one (rank 2, no batch dimensions, DotDecomposer's contracting {1} x {0}). */
static const char *LHS_RHS =
    "HloModule lhs_rhs\n"
    "ENTRY main {\n"
    "  x = f32[24,16]{1,0} parameter(0)\n"
    "  wa = f32[16,8]{1,0} parameter(1)\n"
    "  wb = f32[12,16]{1,0} parameter(2)\n"
    "  a = f32[24,8]{1,0} dot(x, wa), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  xt = f32[16,24]{1,0} transpose(x), dimensions={1,0}\n"
    "  b = f32[12,24]{1,0} dot(wb, xt), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ea = f32[24,8]{1,0} exponential(a)\n"
    "  eb = f32[12,24]{1,0} exponential(b)\n"
    "  ROOT t = (f32[24,8]{1,0}, f32[12,24]{1,0}) tuple(ea, eb)\n"
    "}\n";

static const char *GEMV =
    "HloModule gemv\n"
    "ENTRY main {\n"
    "  v = f32[4096]{0} parameter(0)\n"
    "  w = f32[4096,2500]{1,0} parameter(1)\n"
    "  ROOT d = f32[2500]{0} dot(v, w), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
    "}\n";

/* A GEMM whose result is reshaped before its reader. */
static const char *RESHAPED =
    "HloModule reshaped\n"
    "ENTRY main {\n"
    "  x = f32[64,32]{1,0} parameter(0)\n"
    "  w = f32[32,48]{1,0} parameter(1)\n"
    "  d = f32[64,48]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  r = f32[4,16,48]{2,1,0} reshape(d)\n"
    "  ROOT e = f32[4,16,48]{2,1,0} exponential(r)\n"
    "}\n";

/* Runs the priority pipeline's passes from the first through `last` (simplification included,
 * fusion not) on text for device dev. */
static IrModule *run_to(const char *text, const char *dev, const char *last, Seen *seen) {
  IrModule *m = hlo_ok(text);
  memset(seen, 0, sizeof *seen);
  PassSettings ps;
  pass_settings_default(&ps);
  const Pipeline *p = pipeline_lookup("priority");
  for (int k = 0; k < p->npasses && m; k++) {
    DecisionSink quiet = {0}, sink = {seen_emit, seen};
    bool mine = strcmp(p->passes[k]->name, last) == 0;
    m = run_stage(p->passes[k], m, device_lookup(dev), mine ? &sink : &quiet, &ps);
    if (mine) break;
  }
  return m;
}

/* The seed of the arguments the interpreter checks a rewrite on. */
static const uint64_t INPUT_SEED = 7;

static IrInstr *only_gemm(const IrComputation *c, int *count) {
  IrInstr *g = NULL;
  *count = 0;
  for (int k = 0; k < c->ninstrs; k++)
    if (plan_fusion_backend(c->instrs[k]) == PLAN_FB_TRITON_GEMM) {
      g = c->instrs[k];
      (*count)++;
    }
  return g;
}

static bool body_has(const IrInstr *fusion, IrOpcode op) {
  const IrComputation *fc = ir_fused_computation(fusion);
  for (int k = 0; fc && k < fc->ninstrs; k++)
    if (fc->instrs[k]->op == op) return true;
  return false;
}

TEST(attention_scores_take_the_transpose_and_the_scale) {
  Seen s;
  IrModule *m = run_to(ATTENTION, "h100", "triton-gemm-rewriter", &s);
  if (!m) return;
  int n;
  IrInstr *g = only_gemm(m->entry, &n);
  CHECK(n == 1 && g != NULL);
  if (g) {
    CHECK(strcmp(g->name, "gemm_fusion_s") == 0);
    /* XLA's gemm_fusion_dot_general.2: transpose(k), the dot and multiply(dot, broadcast(0.125)) */
    CHECK(body_has(g, IR_OP_TRANSPOSE) && body_has(g, IR_OP_DOT) && body_has(g, IR_OP_MULTIPLY));
    CHECK(g->noperands == 2);
    /* the scaled scores have two readers: nothing past the multiply */
    CHECK(!body_has(g, IR_OP_REDUCE) && !body_has(g, IR_OP_SUBTRACT));
  }
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 0 && count_op_in(m->entry, IR_OP_DOT) == 0);
  CHECK_CONTAINS(s.last_accepted, "one Triton GEMM kernel");
  ir_module_free(m);
  /* a transpose that feeds the dot directly is folded into it instead (transpose-folding) */
  static const char *FOLDED =
      "HloModule folded\n"
      "ENTRY main {\n"
      "  q = f32[64,32]{1,0} parameter(0)\n"
      "  k = f32[48,32]{1,0} parameter(1)\n"
      "  kt = f32[32,48]{1,0} transpose(k), dimensions={1,0}\n"
      "  ROOT s = f32[64,48]{1,0} dot(q, kt), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "}\n";
  m = run_to(FOLDED, "h100", "transpose-folding", &s);
  if (!m) return;
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 0);
  int64_t rc[2];
  CHECK(ir_attr_dims(m->entry->root, "rhs_contracting_dims", rc, 2) == 1 && rc[0] == 1);
  CHECK(strcmp(m->entry->root->operands[1]->name, "k") == 0);
  check_same_values(FOLDED, m, INPUT_SEED);
  ir_module_free(m);
  m = run_to(ATTENTION, "h100", "triton-gemm-rewriter", &s);
  if (!m) return;
  CHECK(s.rejected >= 1); /* the reduce and the subtract: "has 2 users" */
  check_same_values(ATTENTION, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(dense_layer_bias_and_relu_are_the_gemm_epilogue) {
  Seen s;
  IrModule *m = run_to(DENSE, "h100", "triton-gemm-rewriter", &s);
  if (!m) return;
  int n;
  IrInstr *g = only_gemm(m->entry, &n);
  CHECK(n == 1 && g == m->entry->root);
  if (g) CHECK(body_has(g, IR_OP_ADD) && body_has(g, IR_OP_MAXIMUM) && g->noperands == 3);
  check_same_values(DENSE, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(no_triton_gemm_before_ampere) {
  Seen s;
  IrModule *m = run_to(DENSE, "rtx2080ti", "triton-gemm-rewriter", &s);
  if (!m) return;
  int n;
  only_gemm(m->entry, &n);
  CHECK(n == 0 && count_op_in(m->entry, IR_OP_DOT) == 1 && s.accepted == 0);
  ir_module_free(m);
}

TEST(a_long_contraction_is_split_32_ways) {
  Seen s;
  IrModule *m = run_to(WEIGHT_GRAD, "h100", "splitk-rewriter", &s);
  if (!m) return;
  /* XLA: f32[32,192,192] dot of the operands bitcast to [32,196,192], and a reduce of dim 0 */
  CHECK(m->entry->root->op == IR_OP_REDUCE);
  const IrInstr *dot = m->entry->root->operands[0];
  CHECK(dot->op == IR_OP_DOT && dot->shape.rank == 3 && dot->shape.dims[0] == 32 && dot->shape.dims[1] == 192);
  CHECK(dot->operands[0]->op == IR_OP_BITCAST && dot->operands[0]->shape.dims[0] == 32 &&
        dot->operands[0]->shape.dims[1] == 196);
  CHECK_CONTAINS(s.last_accepted, "split 32 ways");
  check_same_values(WEIGHT_GRAD, m, INPUT_SEED);
  ir_module_free(m);
}

/* A dot in a loop body and one in the entry: splitting the first adds its reduce's adder to the
 * module's computations (before the body), which once hid the entry from the pass; Gemma 2's
 * prefill projections, in its entry, were left unsplit while XLA split them 4 ways. */
static const char *const TWO_PLACES =
    "HloModule two_places\n\n"
    "cond {\n  s = (s32[], f32[11,1152], f32[1152,1024], f32[11,1024]) parameter(0)\n"
    "  i = s32[] get-tuple-element(s), index=0\n  n = s32[] constant(2)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n}\n\n"
    "body {\n  s = (s32[], f32[11,1152], f32[1152,1024], f32[11,1024]) parameter(0)\n"
    "  i = s32[] get-tuple-element(s), index=0\n  a = f32[11,1152] get-tuple-element(s), index=1\n"
    "  b = f32[1152,1024] get-tuple-element(s), index=2\n  one = s32[] constant(1)\n  i2 = s32[] add(i, one)\n"
    "  d = f32[11,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ROOT t = (s32[], f32[11,1152], f32[1152,1024], f32[11,1024]) tuple(i2, a, b, d)\n}\n\n"
    "ENTRY main {\n  a0 = f32[11,1152] parameter(0)\n  b0 = f32[1152,1024] parameter(1)\n"
    "  z = s32[] constant(0)\n  zf = f32[] constant(0)\n  d0 = f32[11,1024] broadcast(zf), dimensions={}\n"
    "  init = (s32[], f32[11,1152], f32[1152,1024], f32[11,1024]) tuple(z, a0, b0, d0)\n"
    "  w = (s32[], f32[11,1152], f32[1152,1024], f32[11,1024]) while(init), condition=cond, body=body\n"
    "  dl = f32[11,1024] get-tuple-element(w), index=3\n"
    "  de = f32[11,1024] dot(a0, b0), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ROOT r = f32[11,1024] add(dl, de)\n}\n";

TEST(every_computation_is_split_even_after_a_split_adds_one) {
  Seen s;
  IrModule *m = run_to(TWO_PLACES, "h100", "splitk-rewriter", &s);
  if (!m) return;
  IrComputation *body = NULL;
  for (int c = 0; c < m->ncomps; c++)
    if (strcmp(m->comps[c]->name, "body") == 0) body = m->comps[c];
  CHECK(body != NULL);
  if (body) CHECK(count_op_in(body, IR_OP_REDUCE) == 1);
  CHECK(count_op_in(m->entry, IR_OP_REDUCE) == 1);
  CHECK(s.accepted == 2);
  check_same_values(TWO_PLACES, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_split_of_an_operand_in_a_layout_stays_a_bitcast) {
  Seen s;
  IrModule *m = run_to(WEIGHT_GRAD_TRANSPOSED, "h100", "splitk-rewriter", &s);
  if (!m) return;
  CHECK(m->entry->root->op == IR_OP_REDUCE && count_op_in(m->entry, IR_OP_TRANSPOSE) == 0);
  const IrInstr *dot = m->entry->root->operands[0];
  CHECK(dot->op == IR_OP_DOT && dot->noperands == 2);
  if (dot->op == IR_OP_DOT && dot->noperands == 2) {
    /* b is [6272,192]{0,1}: its split [32,196,192] keeps the 192 most major, {1,0,2} */
    const IrShape *r = &dot->operands[1]->shape;
    CHECK(dot->operands[1]->op == IR_OP_BITCAST && r->rank == 3 && r->dims[0] == 32 && r->dims[1] == 196);
    CHECK(r->has_layout && r->minor_to_major[0] == 1 && r->minor_to_major[1] == 0 && r->minor_to_major[2] == 2);
  }
  CHECK_CONTAINS(s.last_accepted, "split 32 ways");
  check_same_values(WEIGHT_GRAD_TRANSPOSED, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(sorted_contracting_dimensions_need_no_transpose) {
  Seen s;
  IrModule *m = run_to(ATTN_VEC, "h100", "dot_decomposer", &s);
  if (!m) return;
  /* {3,2} x {1,0} sorts to {2,3} x {0,1}: the decomposer only reshapes */
  CHECK(count_op_in(m->entry, IR_OP_TRANSPOSE) == 0);
  CHECK(count_op_in(m->entry, IR_OP_DOT) == 1);
  check_same_values(ATTN_VEC, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(vector_times_matrix_becomes_multiply_and_reduce) {
  Seen s;
  IrModule *m = run_to(VECTOR, "h100", "dot-strength-reduction", &s);
  if (!m) return;
  CHECK(count_op_in(m->entry, IR_OP_DOT) == 0 && count_op_in(m->entry, IR_OP_REDUCE) == 1 &&
        count_op_in(m->entry, IR_OP_MULTIPLY) == 1);
  CHECK_CONTAINS(s.last_accepted, "DotStrengthReduction");
  check_same_values(VECTOR, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_tiny_dot_stays_a_dot) {
  Seen s;
  IrModule *m = run_to(TINY, "h100", "triton-gemm-rewriter", &s);
  if (!m) return;
  int n;
  only_gemm(m->entry, &n);
  /* (6 + 6) x 8 = 96 < 100: XLA's dlrm keeps dot_general.9 a plain dot */
  CHECK(n == 0 && count_op_in(m->entry, IR_OP_DOT) == 1);
  ir_module_free(m);
}

TEST(projections_of_one_activation_become_one_gemm) {
  Seen s;
  IrModule *m = run_to(PROJECTIONS, "h100", "dot-merger", &s);
  if (!m) return;
  /* q, k and v: one dot over concatenate(wq, wk, wv) (flat, as XLA's simplifier leaves it) and
     three slices; s reads q, so it stays a dot of its own although it shares wq with it */
  CHECK(count_op_in(m->entry, IR_OP_DOT) == 2 && count_op_in(m->entry, IR_OP_CONCATENATE) == 1 &&
        count_op_in(m->entry, IR_OP_SLICE) == 3);
  for (int k = 0; k < m->entry->ninstrs; k++) {
    const IrInstr *c = m->entry->instrs[k];
    if (c->op == IR_OP_CONCATENATE) CHECK(c->noperands == 3 && c->shape.dims[1] == 256);
  }
  CHECK(s.accepted == 2);
  CHECK_CONTAINS(s.last_accepted, "one GEMM");
  check_same_values(PROJECTIONS, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(an_operand_read_left_and_transposed_right_merges) {
  Seen s;
  IrModule *m = run_to(LHS_RHS, "h100", "dot-merger", &s);
  if (!m) return;
  /* one dot(x, concatenate(wa, transpose(wb))) : [24, 20]; a is its slice [:, 0:8], b the
     transpose of its slice [:, 8:20] */
  CHECK(count_op_in(m->entry, IR_OP_DOT) == 1 && count_op_in(m->entry, IR_OP_CONCATENATE) == 1 &&
        count_op_in(m->entry, IR_OP_SLICE) == 2);
  for (int k = 0; k < m->entry->ninstrs; k++) {
    const IrInstr *d = m->entry->instrs[k];
    if (d->op != IR_OP_DOT) continue;
    CHECK(d->shape.rank == 2 && d->shape.dims[0] == 24 && d->shape.dims[1] == 20);
    CHECK(d->operands[0]->op == IR_OP_PARAMETER && d->operands[1]->op == IR_OP_CONCATENATE);
    CHECK(d->operands[1]->operands[1]->op == IR_OP_TRANSPOSE);
  }
  CHECK(s.accepted == 1);
  CHECK_CONTAINS(s.last_accepted, "transposed");
  check_same_values(LHS_RHS, m, INPUT_SEED);
  ir_module_free(m);
}

TEST(a_large_vector_matrix_product_gets_a_unit_dimension) {
  Seen s;
  IrModule *m = run_to(GEMV, "h100", "gemv-rewriter", &s);
  if (!m) return;
  /* (1 + 2500) x 4096 is past DotStrengthReduction's 10,000,000: XLA's GemvRewriter makes it
     dot(bitcast(v): [4096,1], w) : [1,2500] */
  CHECK(m->entry->root->op == IR_OP_BITCAST);
  const IrInstr *d = m->entry->root->operands[0];
  CHECK(d->op == IR_OP_DOT && d->shape.rank == 2 && d->shape.dims[0] == 1 && d->shape.dims[1] == 2500);
  CHECK(d->operands[0]->op == IR_OP_BITCAST && d->operands[0]->shape.rank == 2 && d->operands[0]->shape.dims[1] == 1);
  check_same_values(GEMV, m, INPUT_SEED);
  ir_module_free(m);
  m = run_to(GEMV, "h100", "triton-gemm-rewriter", &s);
  if (!m) return;
  int n;
  only_gemm(m->entry, &n);
  CHECK(n == 1); /* Triton takes it now */
  ir_module_free(m);
}

TEST(bitcasts_leave_the_gemm_fusions) {
  Seen s;
  /* split-K: XLA's gemm_fusion_dot.8 = fusion(bitcast(p0), bitcast(p1)) */
  IrModule *m = run_to(WEIGHT_GRAD, "h100", "hoist-fused-bitcasts", &s);
  if (!m) return;
  int n;
  IrInstr *g = only_gemm(m->entry, &n);
  CHECK(n == 1 && g != NULL);
  if (g) {
    CHECK(!body_has(g, IR_OP_BITCAST) && !body_has(g, IR_OP_RESHAPE));
    CHECK(g->operands[0]->op == IR_OP_BITCAST && g->operands[1]->op == IR_OP_BITCAST);
  }
  CHECK_CONTAINS(s.last_accepted, "move out onto its operands");
  check_same_values(WEIGHT_GRAD, m, INPUT_SEED);
  ir_module_free(m);
  /* the attention scores: k bitcast outside, transposed inside with the new dimensions */
  m = run_to(ATTENTION, "h100", "hoist-fused-bitcasts", &s);
  if (!m) return;
  g = only_gemm(m->entry, &n);
  CHECK(n == 1 && g != NULL);
  if (g) {
    CHECK(!body_has(g, IR_OP_BITCAST) && body_has(g, IR_OP_TRANSPOSE));
    CHECK(g->operands[1]->op == IR_OP_BITCAST && strcmp(g->operands[1]->operands[0]->name, "k") == 0);
  }
  check_same_values(ATTENTION, m, INPUT_SEED);
  ir_module_free(m);
  /* a reshaped result: the fusion returns the dot's shape, a bitcast after it the reshaped one */
  m = run_to(RESHAPED, "h100", "hoist-fused-bitcasts", &s);
  if (!m) return;
  g = only_gemm(m->entry, &n);
  CHECK(n == 1 && g != NULL);
  if (g) {
    CHECK(g->shape.rank == 2 && g->shape.dims[0] == 64 && g->shape.dims[1] == 48);
    CHECK(g->nusers == 1 && g->users[0]->op == IR_OP_BITCAST && g->users[0]->shape.rank == 3);
  }
  CHECK_CONTAINS(s.last_accepted, "bitcast to");
  check_same_values(RESHAPED, m, INPUT_SEED);
  ir_module_free(m);
}

/* dot_dimension_merger: attention's scores over [batch, heads] become one batch dimension of 8,
 * read through bitcasts (XLA's module: f32[8,64,32] operands, bitcast back to [2,4,64,64]); the
 * mask broadcast over the heads then stays outside the GEMM fusion, as in XLA's kernels. */
TEST(batch_dimensions_of_a_dot_merge) {
  static const char *TWO_BATCH =
      "HloModule two_batch\n"
      "ENTRY main {\n"
      "  q = f32[2,4,64,32]{3,2,1,0} parameter(0)\n"
      "  k = f32[2,4,64,32]{3,2,1,0} parameter(1)\n"
      "  ROOT s = f32[2,4,64,64]{3,2,1,0} dot(q, k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, "
      "rhs_batch_dims={0,1}, rhs_contracting_dims={3}\n"
      "}\n";
  Seen s;
  IrModule *m = run_to(TWO_BATCH, "h100", "dot_dimension_merger", &s);
  if (!m) return;
  const IrInstr *root = m->entry->root;
  CHECK(root->op == IR_OP_BITCAST && root->noperands == 1);
  const IrInstr *d = root->noperands == 1 ? root->operands[0] : NULL;
  CHECK(d && d->op == IR_OP_DOT && d->shape.rank == 3 && d->shape.dims[0] == 8);
  int64_t b[4], c[4];
  CHECK(d && ir_attr_dims(d, "lhs_batch_dims", b, 4) == 1 && b[0] == 0);
  CHECK(d && ir_attr_dims(d, "rhs_contracting_dims", c, 4) == 1 && c[0] == 2);
  CHECK(d && d->operands[0]->op == IR_OP_BITCAST && d->operands[0]->shape.dims[0] == 8);
  CHECK_CONTAINS(s.last_accepted, "2 batch dimensions {0,1} become one of 8");
  check_same_values(TWO_BATCH, m, INPUT_SEED);
  ir_module_free(m);
}

int main(void) {
  RUN(attention_scores_take_the_transpose_and_the_scale);
  RUN(dense_layer_bias_and_relu_are_the_gemm_epilogue);
  RUN(no_triton_gemm_before_ampere);
  RUN(a_long_contraction_is_split_32_ways);
  RUN(a_split_of_an_operand_in_a_layout_stays_a_bitcast);
  RUN(every_computation_is_split_even_after_a_split_adds_one);
  RUN(sorted_contracting_dimensions_need_no_transpose);
  RUN(vector_times_matrix_becomes_multiply_and_reduce);
  RUN(a_tiny_dot_stays_a_dot);
  RUN(projections_of_one_activation_become_one_gemm);
  RUN(an_operand_read_left_and_transposed_right_merges);
  RUN(a_large_vector_matrix_product_gets_a_unit_dimension);
  RUN(bitcasts_leave_the_gemm_fusions);
  RUN(batch_dimensions_of_a_dot_merge);
  return check_summary();
}
