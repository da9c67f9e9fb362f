/* test_verify.c — the verifier and shape inference: what each catches and the shapes each opcode
 * rule gives, on modules built with the IR API (as the passes and the .fx lowering build them). */
#include <stdlib.h>

#include "../check.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/ir/ir.h"

/* A module whose entry holds parameters of the given shapes (HLO text), e.g. "f32[4,8]". */
static IrModule *with_params(const char *const *shapes, int n) {
  char text[2048];
  size_t len = (size_t)snprintf(text, sizeof text, "HloModule t\n\n%%add (x: f32[], y: f32[]) -> f32[] {\n  %%x = f32[] parameter(0)\n"
                                                   "  %%y = f32[] parameter(1)\n  ROOT %%s = f32[] add(%%x, %%y)\n}\n\nENTRY %%e {\n");
  for (int k = 0; k < n; k++) len += (size_t)snprintf(text + len, sizeof text - len, "  p%d = %s parameter(%d)\n", k, shapes[k], k);
  snprintf(text + len, sizeof text - len, "}\n");
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "t.hlo", &err);
  if (!m) fx_error_print(stderr, &err);
  return m;
}

static IrInstr *param(IrModule *m, int k) { return m->entry->params[k]; }

/* Adds `op` over the given parameters with a placeholder shape and attributes "key=value" pairs,
 * runs inference and returns the inferred shape as text (or "error: MSG"). */
static const char *infer(IrModule *m, IrOpcode op, const char *declared_like, const int *ops, int nops, const char *const *attrs,
                         int nattrs, char *buf, size_t n) {
  IrInstr *o[16];
  for (int k = 0; k < nops; k++) o[k] = param(m, ops[k]);
  IrShape s = ir_shape_scalar(IR_F32);
  if (declared_like) s = param(m, declared_like[0] - '0')->shape; /* "N": like parameter N */
  IrInstr *i = ir_instr_new(m->entry, op, &s, o, nops, NULL);
  for (int k = 0; k + 1 < 2 * nattrs; k += 2) {
    if (strcmp(attrs[k], "to_apply") == 0) ir_attr_set_comp(i, "to_apply", m->comps[0]);
    else ir_attr_set_text(i, attrs[k], attrs[k + 1]);
  }
  IrShape out;
  FxError err;
  fx_error_clear(&err);
  if (!ir_infer_shape(i, &out, &m->arena, &err)) {
    /* Drop the "'%name': " prefix: the probe's name depends on the module's id counter. */
    const char *msg = strstr(err.msg, "': ");
    snprintf(buf, n, "error: %.240s", msg ? msg + 3 : err.msg);
  } else {
    ir_shape_format(&out, true, buf, n);
  }
  ir_instr_remove(i);
  return buf;
}

TEST(inference_rules) {
  const char *shapes[] = {"f32[4,8]{1,0}", "f32[8,16]{1,0}", "f32[2,4,8]{2,1,0}", "f32[1,9,9,3]{3,2,1,0}", "f32[3,3,3,16]{3,2,1,0}",
                          "f32[]", "s32[]", "s32[5,1]{1,0}"};
  IrModule *m = with_params(shapes, 8);
  CHECK(m != NULL);
  if (!m) return;
  char b[256];
  int p0[] = {0}, p00[] = {0, 0}, p01[] = {0, 1}, p22[] = {2, 2}, p34[] = {3, 4}, p05[] = {0, 5}, p066[] = {0, 6, 6};
  const char *dot[] = {"lhs_contracting_dims", "{1}", "rhs_contracting_dims", "{0}"};
  CHECK_STR(infer(m, IR_OP_DOT, NULL, p01, 2, dot, 2, b, sizeof b), "f32[4,16]{1,0}");
  const char *bdot[] = {"lhs_batch_dims", "{0}", "rhs_batch_dims", "{0}", "lhs_contracting_dims", "{2}", "rhs_contracting_dims", "{2}"};
  CHECK_STR(infer(m, IR_OP_DOT, NULL, p22, 2, bdot, 4, b, sizeof b), "f32[2,4,4]{2,1,0}");
  const char *conv[] = {"window", "{size=3x3 stride=2x2 pad=1_1x1_1}", "dim_labels", "b01f_01io->b01f"};
  CHECK_STR(infer(m, IR_OP_CONVOLUTION, NULL, p34, 2, conv, 2, b, sizeof b), "f32[1,5,5,16]{3,2,1,0}");
  const char *convd[] = {"window", "{size=3x3 rhs_dilate=2x2}", "dim_labels", "b01f_01io->b01f"};
  CHECK_STR(infer(m, IR_OP_CONVOLUTION, NULL, p34, 2, convd, 2, b, sizeof b), "f32[1,5,5,16]{3,2,1,0}");
  const char *rw[] = {"window", "{size=2x3 stride=2x1 pad=0_0x1_1 lhs_dilate=1x2}", "to_apply", ""};
  CHECK_STR(infer(m, IR_OP_REDUCE_WINDOW, NULL, p05, 2, rw, 2, b, sizeof b), "f32[2,15]{1,0}");
  const char *red[] = {"dimensions", "{0}", "to_apply", ""};
  CHECK_STR(infer(m, IR_OP_REDUCE, NULL, p05, 2, red, 2, b, sizeof b), "f32[8]{0}");
  const char *tr[] = {"dimensions", "{1,0}"};
  CHECK_STR(infer(m, IR_OP_TRANSPOSE, NULL, p0, 1, tr, 1, b, sizeof b), "f32[8,4]{1,0}");
  const char *sl[] = {"slice", "{[1:4:2], [0:8:3]}"};
  CHECK_STR(infer(m, IR_OP_SLICE, NULL, p0, 1, sl, 1, b, sizeof b), "f32[2,3]{1,0}");
  const char *pad[] = {"padding", "1_2_1x-2_-1"};
  CHECK_STR(infer(m, IR_OP_PAD, NULL, p05, 2, pad, 1, b, sizeof b), "f32[10,5]{1,0}");
  const char *ds[] = {"dynamic_slice_sizes", "{2,8}"};
  CHECK_STR(infer(m, IR_OP_DYNAMIC_SLICE, NULL, p066, 3, ds, 1, b, sizeof b), "f32[2,8]{1,0}");
  const char *cat[] = {"dimensions", "{1}"};
  CHECK_STR(infer(m, IR_OP_CONCATENATE, NULL, p00, 2, cat, 1, b, sizeof b), "f32[4,16]{1,0}");
  const char *cmp[] = {"direction", "LT"};
  CHECK_STR(infer(m, IR_OP_COMPARE, NULL, p00, 2, cmp, 1, b, sizeof b), "pred[4,8]{1,0}");
  CHECK_STR(infer(m, IR_OP_ADD, NULL, p00, 2, NULL, 0, b, sizeof b), "f32[4,8]{1,0}");
  CHECK_STR(infer(m, IR_OP_ADD, NULL, p01, 2, NULL, 0, b, sizeof b),
            "error: operands of add have different dimensions: f32[4,8] and f32[8,16]");
  CHECK_STR(infer(m, IR_OP_TUPLE, NULL, p05, 2, NULL, 0, b, sizeof b), "(f32[4,8]{1,0}, f32[])");
  const char *tk[] = {"k", "3"};
  CHECK_STR(infer(m, IR_OP_TOPK, NULL, p0, 1, tk, 1, b, sizeof b), "(f32[4,3]{1,0}, s32[4,3]{1,0})");
  /* Custom calls trust their declared shape. */
  CHECK_STR(infer(m, IR_OP_CUSTOM_CALL, "1", p0, 1, NULL, 0, b, sizeof b), "f32[8,16]{1,0}");
  /* Broadcast checks its mapping against the declared result. */
  const char *bc[] = {"dimensions", "{1,2}"};
  CHECK_STR(infer(m, IR_OP_BROADCAST, "2", p0, 1, bc, 1, b, sizeof b), "f32[2,4,8]{2,1,0}");
  const char *bcbad[] = {"dimensions", "{0,1}"};
  CHECK_STR(infer(m, IR_OP_BROADCAST, "2", p0, 1, bcbad, 1, b, sizeof b),
            "error: broadcast maps operand dimension 0 (size 4) to result dimension 0 (size 2): f32[4,8] -> f32[2,4,8]");
  ir_module_free(m);
}

/* A small valid module built with the IR API. */
static IrModule *built(IrInstr **p, IrInstr **n, IrInstr **a) {
  const char *shapes[] = {"f32[4]{0}"};
  IrModule *m = with_params(shapes, 1);
  if (!m) return NULL;
  *p = param(m, 0);
  IrInstr *ops[2] = {*p, *p};
  *n = ir_instr_new(m->entry, IR_OP_NEGATE, &(*p)->shape, ops, 1, "neg");
  ops[1] = *n;
  *a = ir_instr_new(m->entry, IR_OP_ADD, &(*p)->shape, ops, 2, "sum");
  ir_set_root(m->entry, *a);
  return m;
}

static const char *verify_msg(const IrModule *m, char *buf, size_t n) {
  FxError err;
  fx_error_clear(&err);
  if (ir_verify(m, &err)) return "ok";
  snprintf(buf, n, "%d:%d: %.480s", err.line, err.col, err.msg);
  return buf;
}

TEST(built_module_verifies) {
  IrInstr *p, *n, *a;
  IrModule *m = built(&p, &n, &a);
  CHECK(m != NULL);
  if (!m) return;
  char b[512];
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  IrModule *c = ir_module_clone(m);
  CHECK_STR(verify_msg(c, b, sizeof b), "ok");
  ir_module_free(c);
  ir_module_free(m);
}

/* Links of an instruction with many operands, some of them repeated (a value is listed once as
 * a user however often it is read): a wide tuple verifies, and an operand swapped behind ir.c's
 * back is reported at the first instruction at fault, as the exact check finds it. */
TEST(links_of_wide_instructions) {
  const char *shapes[] = {"f32[4]{0}"};
  IrModule *m = with_params(shapes, 1);
  CHECK(m != NULL);
  if (!m) return;
  IrInstr *p = param(m, 0);
  IrInstr *n1 = ir_instr_new(m->entry, IR_OP_NEGATE, &p->shape, &p, 1, "n1");
  IrInstr *n2 = ir_instr_new(m->entry, IR_OP_NEGATE, &p->shape, &p, 1, "n2");
  enum { N = 24 };
  IrInstr *ops[N];
  IrShape el[N];
  for (int k = 0; k < N; k++) {
    ops[k] = k == 5 ? n1 : k % 3 ? p : n2;
    el[k] = p->shape;
  }
  IrShape ts = {.type = IR_TUPLE, .ntuple = N, .tuple = el};
  IrInstr *t = ir_instr_new(m->entry, IR_OP_TUPLE, &ts, ops, N, "t");
  ir_set_root(m->entry, t);
  char b[512];
  CHECK(p->nusers == 3 && n1->nusers == 1 && n2->nusers == 1);
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  t->operands[5] = n2; /* n1 still lists t as a user */
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: '%n1' lists '%t' as a user, which does not use it");
  t->operands[5] = n1;
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  n2->nusers = 0; /* t reads n2, which does not list it */
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: '%t' uses '%n2' but is missing from its users");
  n2->nusers = 1;
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  ir_module_free(m);
}

TEST(catches_order_links_names_and_shapes) {
  IrInstr *p, *n, *a;
  char b[512];
  IrModule *m = built(&p, &n, &a);
  if (!m) return;
  /* Out of topological order. */
  IrComputation *e = m->entry;
  e->instrs[1] = a;
  e->instrs[2] = n;
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: '%sum' uses '%neg' before its definition (instructions are not in topological order)");
  ir_computation_sort(e);
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  /* An operand edge without its user edge. */
  a->operands[0] = n;
  CHECK_STR(verify_msg(m, b, sizeof b), "10:3: '%p0' lists '%sum' as a user, which does not use it");
  a->operands[0] = p;
  int nu = p->nusers;
  p->nusers = 0;
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: '%neg' uses '%p0' but is missing from its users");
  p->nusers = nu;
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  /* Duplicate names. */
  const char *old = n->name;
  n->name = "p0";
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: duplicate instruction name '%p0' (also in '%e')");
  n->name = "";
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: an instruction in '%e' has no name");
  /* A name of its own, but set behind ir.c's back: the module cannot find it by that name. */
  n->name = "renamed";
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: '%renamed' cannot be found by its name in module 't'");
  CHECK(ir_module_find_instr(m, "renamed") == NULL);
  n->name = old;
  /* Listed twice: the second listing is a second instruction of the same name. */
  CHECK(e->ninstrs < e->instrs_cap);
  if (e->ninstrs < e->instrs_cap) e->instrs[e->ninstrs++] = n;
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: duplicate instruction name '%neg' (also in '%e')");
  e->ninstrs--;
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  /* A declared shape that is not the inferred one. */
  n->shape.dims[0] = 5;
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: shape mismatch: '%neg' is declared f32[5] but negate(f32[4]) gives f32[4]");
  n->shape.dims[0] = 4;
  /* Wrong arity. */
  n->noperands = 0;
  CHECK_STR(verify_msg(m, b, sizeof b), "10:3: '%p0' lists '%neg' as a user, which does not use it");
  n->noperands = 1;
  /* No root. */
  e->root = NULL;
  CHECK_STR(verify_msg(m, b, sizeof b), "9:1: computation '%e' has no ROOT");
  ir_set_root(e, a);
  /* A parameter that is not registered. */
  e->nparams = 0;
  CHECK_STR(verify_msg(m, b, sizeof b), "10:3: parameter '%p0' (number 0) is not registered in '%e'");
  e->nparams = 1;
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  ir_module_free(m);
}

/* Renaming through ir.c keeps the index exact, in the module and in its snapshots: a name given
 * to a new instruction after its first owner was removed (the passes' `why` still finds it), a
 * removed instruction's name stays reserved, and a snapshot's index finds each copy. */
TEST(renamed_instructions_stay_indexed) {
  IrInstr *p, *n, *a;
  char b[512];
  IrModule *m = built(&p, &n, &a);
  if (!m) return;
  IrInstr *ops[1] = {p};
  IrInstr *neg2 = ir_instr_new_before(m->entry, a, IR_OP_NEGATE, &n->shape, ops, 1, "neg2");
  CHECK(neg2 != NULL);
  if (!neg2) return;
  ir_replace_all_uses(n, neg2);
  ir_instr_remove(n);
  CHECK(ir_module_find_instr(m, "neg") == NULL);
  CHECK(ir_instr_rename(neg2, "neg"));
  CHECK(ir_module_find_instr(m, "neg") == neg2 && ir_module_find_instr(m, "neg2") == NULL);
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  IrModule *s = ir_module_snapshot(m);
  IrModule *d = ir_module_clone(m);
  CHECK(s && d);
  if (s && d) {
    CHECK_STR(verify_msg(s, b, sizeof b), "ok");
    CHECK_STR(verify_msg(d, b, sizeof b), "ok");
    IrInstr *sn = ir_module_find_instr(s, "neg"), *dn = ir_module_find_instr(d, "neg");
    CHECK(sn && sn != neg2 && sn->id == neg2->id && sn->parent == s->entry);
    CHECK(dn && dn != neg2 && dn->id == neg2->id && dn->parent == d->entry);
    CHECK(ir_module_find_instr(s, "neg2") == NULL);
    /* "neg2" stays reserved in the copies: a new instruction asking for it gets another name. */
    IrInstr *sops[1] = {s->entry->params[0]};
    IrInstr *x = ir_instr_new_before(s->entry, s->entry->root, IR_OP_NEGATE, &sn->shape, sops, 1, "neg2");
    CHECK(x && strcmp(x->name, "neg2") != 0 && ir_module_find_instr(s, x->name) == x);
    CHECK_STR(verify_msg(s, b, sizeof b), "ok");
  }
  ir_module_free(s);
  ir_module_free(d);
  ir_module_free(m);
}

TEST(catches_bad_calls) {
  IrInstr *p, *n, *a;
  char b[512];
  IrModule *m = built(&p, &n, &a);
  if (!m) return;
  IrComputation *add = m->comps[0];
  /* A computation that calls itself. */
  IrInstr *x = add->params[0];
  IrInstr *ops[2] = {x, add->params[1]};
  IrInstr *c = ir_instr_new(add, IR_OP_CALL, &x->shape, ops, 2, "again");
  ir_attr_set_comp(c, "to_apply", add);
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: '%again' calls '%add', which calls back into '%add' (recursion is not allowed)");
  ir_instr_remove(c);
  /* Calling the entry. */
  IrInstr *ce = ir_instr_new(add, IR_OP_CALL, &x->shape, ops, 2, "to_entry");
  ir_attr_set_comp(ce, "to_apply", m->entry);
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: '%to_entry': to_apply calls the entry computation");
  ir_instr_remove(ce);
  /* A computation from another module. */
  IrInstr *q, *n2, *a2;
  IrModule *other = built(&q, &n2, &a2);
  IrInstr *cf = ir_instr_new(add, IR_OP_CALL, &x->shape, ops, 2, "foreign");
  ir_attr_set_comp(cf, "to_apply", other->comps[0]);
  CHECK_STR(verify_msg(m, b, sizeof b), "0:0: '%foreign': to_apply names a computation that is not in the module");
  ir_instr_remove(cf);
  CHECK_STR(verify_msg(m, b, sizeof b), "ok");
  ir_module_free(other);
  ir_module_free(m);
}

int main(void) {
  RUN(inference_rules);
  RUN(built_module_verifies);
  RUN(catches_order_links_names_and_shapes);
  RUN(links_of_wide_instructions);
  RUN(renamed_instructions_stay_indexed);
  RUN(catches_bad_calls);
  return check_summary();
}
