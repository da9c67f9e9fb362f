/* test_ir.c — the IR core: building, editing, cloning, shapes and attributes. */
#include "../check.h"
#include "../../compiler/ir/ir.h"

static IrModule *small(IrInstr **p_out, IrInstr **a_out) {
  IrModule *m = ir_module_new("t");
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  int64_t d[2] = {2, 3};
  IrShape s = ir_shape_array(&m->arena, IR_F32, 2, d);
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, &s, NULL, 0, "x");
  IrInstr *ops[2] = {p, p};
  IrInstr *a = ir_instr_new(c, IR_OP_ADD, &s, ops, 2, NULL);
  ir_set_root(c, a);
  *p_out = p;
  *a_out = a;
  return m;
}

TEST(build_and_format) {
  IrInstr *p, *a;
  IrModule *m = small(&p, &a);
  char b[64];
  ir_shape_format(&a->shape, true, b, sizeof b);
  CHECK_STR(b, "f32[2,3]{1,0}");
  ir_shape_format(&a->shape, false, b, sizeof b);
  CHECK_STR(b, "f32[2,3]");
  CHECK(p->nusers == 1);
  CHECK(ir_shape_bytes(&a->shape) == 24);
  CHECK(ir_module_find_instr(m, a->name) == a);
  ir_module_free(m);
}

TEST(unique_names_never_reused) {
  IrInstr *p, *a;
  IrModule *m = small(&p, &a);
  IrInstr *ops[1] = {p};
  IrInstr *n = ir_instr_new(m->entry, IR_OP_NEGATE, &p->shape, ops, 1, "x");
  CHECK(strcmp(n->name, "x") != 0);
  const char *old = a->name;
  ir_replace_all_uses(a, n);
  ir_instr_remove(a);
  CHECK(m->entry->root == n);
  CHECK(ir_module_find_instr(m, old) == NULL);
  IrInstr *n2 = ir_instr_new(m->entry, IR_OP_NEGATE, &p->shape, ops, 1, old);
  CHECK(strcmp(n2->name, old) != 0);
  ir_module_free(m);
}

TEST(clone_keeps_names_and_edges) {
  IrInstr *p, *a;
  IrModule *m = small(&p, &a);
  ir_attr_set_text(a, "metadata", "{op_name=\"x\"}");
  IrModule *c = ir_module_clone(m);
  CHECK(c != NULL);
  IrInstr *a2 = ir_module_find_instr(c, a->name);
  CHECK(a2 && a2 != a);
  CHECK(a2->operands[0] == ir_module_find_instr(c, "x"));
  CHECK(a2->operands[0]->users[0] == a2);
  CHECK_STR(ir_attr_text(a2, "metadata"), "{op_name=\"x\"}");
  CHECK(c->entry->root == a2);
  ir_module_free(m);
  ir_module_free(c);
}

TEST(attrs_typed) {
  IrInstr *p, *a;
  IrModule *m = small(&p, &a);
  int64_t v[3] = {0, 2, 1};
  ir_attr_set_dims(a, "dimensions", v, 3);
  CHECK_STR(ir_attr_text(a, "dimensions"), "{0,2,1}");
  int64_t out[4];
  CHECK(ir_attr_dims(a, "dimensions", out, 4) == 3 && out[1] == 2);
  ir_attr_set_text(a, "slice", "{[0:2], [1:5:2]}");
  int64_t st[2], li[2], sd[2];
  CHECK(ir_attr_slice(a, st, li, sd, 2) == 2);
  CHECK(st[1] == 1 && li[1] == 5 && sd[1] == 2 && sd[0] == 1);
  ir_module_free(m);
}

TEST(sizes_saturate) {
  int64_t d[3] = {INT64_MAX / 2, 4, 4};
  Arena ar;
  arena_init(&ar);
  IrShape s = ir_shape_array(&ar, IR_F32, 3, d);
  CHECK(ir_shape_elements(&s) == INT64_MAX);
  CHECK(ir_shape_bytes(&s) == INT64_MAX);
  arena_free(&ar);
}

TEST(opcode_table) {
  IrOpcode op;
  CHECK(ir_op_lookup("dynamic-update-slice", 20, &op) && op == IR_OP_DYNAMIC_UPDATE_SLICE);
  CHECK(!ir_op_lookup("frobnicate", 10, &op));
  CHECK(ir_op_info(IR_OP_TANH)->expensive);
  CHECK(!ir_op_info(IR_OP_ADD)->expensive);
  CHECK(ir_op_is_elementwise(IR_OP_SELECT));
}

TEST(bytes_formatted_in_each_style) {
  char b[32];
  fx_format_bytes(b, sizeof b, 1023, FX_BYTES_PLAN);
  CHECK_STR(b, "1023 B");
  fx_format_bytes(b, sizeof b, 1536, FX_BYTES_RUN);
  CHECK_STR(b, "1.5 KiB");
  fx_format_bytes(b, sizeof b, 3.0 * 1024 * 1024 / 8, FX_BYTES_PLAN);
  CHECK_STR(b, "384.0 KiB");
  fx_format_bytes(b, sizeof b, 1.25 * 1024 * 1024, FX_BYTES_PLAN);
  CHECK_STR(b, "1.2 MiB");
  fx_format_bytes(b, sizeof b, 1.25 * 1024 * 1024, FX_BYTES_RUN);
  CHECK_STR(b, "1.25 MiB");
  fx_format_bytes(b, sizeof b, 3.0 * 1024 * 1024 * 1024, FX_BYTES_PLAN);
  CHECK_STR(b, "3.00 GiB");
  fx_format_bytes(b, sizeof b, 3.0 * 1024 * 1024 * 1024, FX_BYTES_MIB);
  CHECK_STR(b, "3072.0 MiB");
  fx_format_bytes(b, sizeof b, 2.0 * 1024 * 1024 * 1024 * 1024, FX_BYTES_SHORT);
  CHECK_STR(b, "2.0 TiB");
}

TEST(pointer_map) {
  PtrMap m = {0};
  int keys[300] = {0};
  CHECK(ptrmap_get(&m, &keys[0]) == NULL);
  for (int k = 0; k < 300; k++) CHECK(ptrmap_put(&m, &keys[k], (void *)(intptr_t)(k + 1)));
  CHECK(m.n == 300 && m.cap >= 600);
  for (int k = 0; k < 300; k++) CHECK((intptr_t)ptrmap_get(&m, &keys[k]) == k + 1);
  CHECK(ptrmap_put(&m, &keys[7], NULL) && m.n == 300 && ptrmap_get(&m, &keys[7]) == NULL);
  ptrmap_free(&m);
  CHECK(m.cap == 0 && ptrmap_get(&m, &keys[1]) == NULL);
}

TEST(math_table) {
  /* every op of math.def is an elementwise unary op with both functions, evaluated with them */
  static const IrOpcode ops[] = {
#define MATH(OP, dfn, ffn) IR_OP_##OP,
#include "../../compiler/ir/math.def"
#undef MATH
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    CHECK(ir_op_info(ops[k])->category == IR_CAT_UNARY);
    CHECK(ir_math_function(ops[k], false) && ir_math_function(ops[k], true));
    double r;
    CHECK(ir_math_eval(ops[k], 0.5, true, &r));
  }
  double r = 0;
  CHECK_STR(ir_math_function(IR_OP_CBRT, true), "cbrtf");
  CHECK_STR(ir_math_function(IR_OP_ABS, false), "fabs");
  CHECK(ir_math_function(IR_OP_ADD, false) == NULL && !ir_math_eval(IR_OP_ADD, 1, false, &r));
  CHECK(ir_math_eval(IR_OP_EXP, 1.0, true, &r) && r == (double)expf(1.0f));
  CHECK(ir_math_eval(IR_OP_EXP, 1.0, false, &r) && r == exp(1.0));
}

/* ir_replace_all_uses hands the users over in their order, as XLA's ReplaceAllUsesWith does
 * (multi-output fusion walks a value's users in this order), and a replacement that reads the old
 * value keeps reading it. */
TEST(replace_all_uses_keeps_user_order) {
  IrInstr *p, *a;
  IrModule *m = small(&p, &a);
  IrComputation *c = m->entry;
  IrInstr *ops[1] = {p};
  IrInstr *n[4];
  for (int k = 0; k < 4; k++) n[k] = ir_instr_new(c, k % 2 ? IR_OP_ABS : IR_OP_NEGATE, &p->shape, ops, 1, NULL);
  IrInstr *e = ir_instr_new(c, IR_OP_EXP, &p->shape, ops, 1, NULL);
  CHECK(p->nusers == 6);
  ir_replace_all_uses(p, e);
  /* a (the add) was x's first user; the four unary users follow in the order they were added. */
  CHECK(e->nusers == 5);
  CHECK(e->users[0] == a);
  for (int k = 0; k < 4; k++) CHECK(e->users[k + 1] == n[k] && n[k]->operands[0] == e);
  CHECK(e->operands[0] == p);
  CHECK(p->nusers == 1 && p->users[0] == e);
  ir_module_free(m);
}

/* A module named `name` whose entry computation `main` (*c) is still empty, and f32[4] (*s). */
static IrModule *entry_module(const char *name, IrComputation **c, IrShape *s) {
  IrModule *m = ir_module_new(name);
  *c = ir_computation_new(m, "main");
  (*c)->is_entry = true;
  m->entry = *c;
  int64_t d[1] = {4};
  *s = ir_shape_array(&m->arena, IR_F32, 1, d);
  return m;
}

/* XLA's MakeInstructionPostOrder: from each instruction without users, in list order, operands
 * first to last, each written after its operands; not the list order kept by ir_computation_sort. */
TEST(post_order_is_xla_walk) {
  IrComputation *c;
  IrShape s;
  IrModule *m = entry_module("t", &c, &s);
  IrInstr *x = ir_instr_new(c, IR_OP_PARAMETER, &s, NULL, 0, "x");
  IrInstr *ops[2] = {x, NULL};
  IrInstr *unused = ir_instr_new(c, IR_OP_ABS, &s, ops, 1, "unused");
  IrInstr *a = ir_instr_new(c, IR_OP_NEGATE, &s, ops, 1, "a");
  IrInstr *b = ir_instr_new(c, IR_OP_EXP, &s, ops, 1, "b");
  ops[0] = b;
  ops[1] = a;
  IrInstr *r = ir_instr_new(c, IR_OP_ADD, &s, ops, 2, "r");
  ir_set_root(c, r);
  IrInstr *order[8];
  CHECK(ir_computation_post_order(c, order) == 5);
  IrInstr *want[5] = {x, unused, b, a, r};
  for (int k = 0; k < 5; k++) CHECK(order[k] == want[k]);
  /* The walk leaves the list as it was. */
  CHECK(c->instrs[2] == a && c->instrs[3] == b);
  ir_module_free(m);
}

/* ir_computation_sort_last, and ir_computation_sort (which hands it such a computation), give
 * Kahn's order for a computation in order but for its last instruction: read here by an
 * instruction in the middle (the marking starts at its earliest reader), then by more readers
 * than it looks up one by one. */
static void check_sort_last(int nreaders) {
  IrModule *m = ir_module_new("t");
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  int64_t d[1] = {4};
  IrShape s = ir_shape_array(&m->arena, IR_F32, 1, d);
  IrInstr *x = ir_instr_new(c, IR_OP_PARAMETER, &s, NULL, 0, "x");
  IrInstr *ops[2] = {x, NULL};
  IrInstr *a = ir_instr_new(c, IR_OP_NEGATE, &s, ops, 1, "a");
  IrInstr *readers[12];
  for (int k = 0; k < nreaders; k++) readers[k] = ir_instr_new(c, IR_OP_ABS, &s, ops, 1, "reader");
  ir_instr_new(c, IR_OP_SQRT, &s, ops, 1, "independent");
  ops[0] = readers[0];
  ops[1] = a;
  IrInstr *r = ir_instr_new(c, IR_OP_ADD, &s, ops, 2, "r");
  ir_instr_new(c, IR_OP_EXP, &s, &a, 1, "after");
  ir_set_root(c, r);
  IrInstr *last = ir_instr_new(c, IR_OP_TANH, &s, &x, 1, "last");
  for (int k = 0; k < nreaders; k++) ir_set_operand(readers[k], 0, last);
  IrModule *other = ir_module_clone(m);
  CHECK(other != NULL);
  ir_computation_sort(other->entry);
  ir_computation_sort_last(c);
  /* Kahn's order, taking the earliest-positioned ready instruction: what does not depend on it
   * first, in order; then it; then its dependents, in order. */
  const char *want[20] = {"x", "a", "independent", "after", "last"};
  int nwant = 5;
  for (int k = 0; k < nreaders; k++) want[nwant++] = readers[k]->name;
  want[nwant++] = "r";
  CHECK(c->ninstrs == nwant && other->entry->ninstrs == nwant);
  for (int k = 0; k < nwant; k++) {
    CHECK_STR(c->instrs[k]->name, want[k]);
    CHECK_STR(other->entry->instrs[k]->name, want[k]);
  }
  CHECK(c->instrs[4] == last && c->instrs[nwant - 1] == r);
  ir_module_free(other);
  ir_module_free(m);
}

TEST(sort_last_is_sort) {
  check_sort_last(1);
  check_sort_last(12);
}

/* A value with many users: its user list stays in XLA's order (appended when added; a removed
 * user's place goes to the last one) through thousands of rewirings, with and without the index
 * ir.c keeps for long lists, and across a snapshot (whose lists are indexed anew). Checked against
 * a model of the list after every edit. */
static unsigned next_rand(unsigned *s) { return *s = *s * 1103515245u + 12345u; }

static bool users_match(const IrInstr *v, IrInstr *const *model, int n) {
  if (v->nusers != n) return false;
  for (int k = 0; k < n; k++)
    if (v->users[k] != model[k]) return false;
  return true;
}

static void model_remove(IrInstr **model, int *n, const IrInstr *u) {
  for (int k = 0; k < *n; k++)
    if (model[k] == u) {
      model[k] = model[*n - 1];
      (*n)--;
      return;
    }
}

TEST(wide_user_lists_keep_xla_order) {
  enum { N = 600 };
  IrComputation *c;
  IrShape s;
  IrModule *m = entry_module("wide", &c, &s);
  IrInstr *v = ir_instr_new(c, IR_OP_PARAMETER, &s, NULL, 0, "v");
  IrInstr *w = ir_instr_new(c, IR_OP_PARAMETER, &s, NULL, 0, "w");
  CHECK(ir_computation_set_params(c, (IrInstr *[]){v, w}, 2));
  IrInstr *readers[N], *model_v[N], *model_w[N];
  int nv = 0, nw = 0;
  for (int k = 0; k < N; k++) {
    readers[k] = ir_instr_new(c, IR_OP_NEGATE, &s, &v, 1, "negate");
    model_v[nv++] = readers[k];
  }
  CHECK(users_match(v, model_v, nv));
  ir_set_root(c, readers[0]);
  unsigned seed = 11;
  bool ok = true;
  for (int step = 0; step < 6000 && ok; step++) {
    IrInstr *r = readers[next_rand(&seed) % N];
    IrInstr *to = r->operands[0] == v ? w : v;
    /* move r to the other value, now and then back and forth at once */
    model_remove(to == w ? model_v : model_w, to == w ? &nv : &nw, r);
    if (to == w) model_w[nw++] = r;
    else model_v[nv++] = r;
    ir_set_operand(r, 0, to);
    ok = users_match(v, model_v, nv) && users_match(w, model_w, nw);
    if (step == 3000) {
      /* a snapshot's lists are the same, and edits to it go on in the same order */
      IrModule *snap = ir_module_snapshot(m);
      ok = ok && snap && ir_verify(snap, &(FxError){0});
      ir_module_free(snap);
    }
  }
  CHECK(ok);
  /* all readers onto w and back: the list empties and refills in order */
  for (int k = 0; k < N; k++) {
    if (readers[k]->operands[0] != v) continue;
    model_remove(model_v, &nv, readers[k]);
    model_w[nw++] = readers[k];
    ir_set_operand(readers[k], 0, w);
  }
  CHECK(v->nusers == 0 && users_match(w, model_w, nw) && nw == N);
  ir_replace_all_uses(w, v);
  CHECK(w->nusers == 0 && v->nusers == N);
  for (int k = 0; k < N; k++) CHECK(v->users[k] == model_w[k]);
  CHECK(ir_verify(m, &(FxError){0}));
  ir_module_free(m);
}

int main(void) {
  RUN(build_and_format);
  RUN(unique_names_never_reused);
  RUN(clone_keeps_names_and_edges);
  RUN(attrs_typed);
  RUN(sizes_saturate);
  RUN(opcode_table);
  RUN(bytes_formatted_in_each_style);
  RUN(pointer_map);
  RUN(math_table);
  RUN(replace_all_uses_keeps_user_order);
  RUN(post_order_is_xla_walk);
  RUN(sort_last_is_sort);
  RUN(wide_user_lists_keep_xla_order);
  return check_summary();
}
