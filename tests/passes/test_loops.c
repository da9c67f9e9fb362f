/* test_loops.c — what today's XLA does to loops and JAX's annotations before fusion, pass by pass
 * (priority pipeline): sharding-remover, while-loop-constant-sinking, today's
 * while-loop-simplifier (repeated, constant and propagated elements, one-trip loops, merged
 * induction variables), today's cse (loops over identical bodies) and conditional-simplifier
 * (with algsimp's pred form of a conditional). Each test gives the HLO a
 * pass gets, checks the exact rewrites it reports and what it leaves, and that the reference
 * interpreter computes the same numbers before and after. */
#include "pass_check.h"

/* A loop over x: counter i (element 0, the condition's), a second counter j that starts where i
 * does and steps by 1 (as JAX's fori_loop keeps besides the loop's own), and x += j + 1. */
static const char *const two_counters =
    "HloModule iv\n\n"
    "body {\n"
    "  p = (s32[], s32[], f32[4]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  j = s32[] get-tuple-element(p), index=1\n"
    "  x = f32[4] get-tuple-element(p), index=2\n"
    "  one = s32[] constant(1)\n"
    "  i1 = s32[] add(i, one)\n"
    "  j1 = s32[] add(j, one)\n"
    "  jf = f32[] convert(j1)\n"
    "  jb = f32[4] broadcast(jf), dimensions={}\n"
    "  x1 = f32[4] add(x, jb)\n"
    "  ROOT t = (s32[], s32[], f32[4]) tuple(i1, j1, x1)\n"
    "}\n\n"
    "cond {\n"
    "  p = (s32[], s32[], f32[4]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(5)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
    "}\n\n"
    "ENTRY main {\n"
    "  x = f32[4] parameter(0)\n"
    "  zero = s32[] constant(0)\n"
    "  init = (s32[], s32[], f32[4]) tuple(zero, zero, x)\n"
    "  w = (s32[], s32[], f32[4]) while(init), condition=cond, body=body\n"
    "  jout = s32[] get-tuple-element(w), index=1\n"
    "  xo = f32[4] get-tuple-element(w), index=2\n"
    "  ROOT r = (f32[4], s32[]) tuple(xo, jout)\n"
    "}\n";

TEST(merge_induction_variables) {
  IrModule *m = hlo(two_counters);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_while_simplifier_current, m, &log));
  /* j becomes 0 + i * 1 everywhere, then a constant element (0, never changed), then dead. */
  CHECK_STR(log.buf,
            "while-loop-simplifier rewrite: merged the induction variable element 1 (steps by 1) of w into its trip "
            "counter (element 0): each is read as its start + counter x step, and no longer changes\n"
            "while-loop-simplifier rewrite: element 1 of w starts as the constant zero and never changes: the body and "
            "the condition read the constant\n"
            "while-loop-simplifier remove: element 1 of w is the constant zero: it starts as it and the body sets it to "
            "it again, so it leaves the loop's state\n");
  IrInstr *w = ir_module_find_instr(m, "w");
  CHECK(w && w->shape.ntuple == 2);
  /* The body computes j from i (i * 1 + 0: algsimp folds it), and still its own x. */
  CHECK_STR(line_of(m, "p.value"), "%p.value = s32[] add(%zero.37, %p.steps)");
  CHECK_STR(line_of(m, "p.steps"), "%p.steps = s32[] multiply(%get-tuple-element.26, %one.28)");
  /* After the loop, j is read the same way from the loop's counter. */
  CHECK_STR(line_of(m, "r"), "%r = (f32[4], s32[]) tuple(%xo, %w.value)");
  /* Nothing is left to do. */
  Log again = {{0}, 0};
  CHECK(!run_pass(&pass_while_simplifier_current, m, &again));
  ir_module_free(m);
}

/* The classic pass (the paper's pipeline) keeps both counters. */
TEST(classic_keeps_both_counters) {
  IrModule *m = hlo(two_counters);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(!run_pass(&pass_while_simplifier, m, &log));
  CHECK(ir_module_find_instr(m, "w")->shape.ntuple == 3);
  ir_module_free(m);
}

/* Elements 1 and 2 both start as x and pass through: one element. Element 3 starts as 7 and the
 * body sets it to 7: the constant. */
TEST(repeated_and_constant_elements) {
  IrModule *m = hlo("HloModule rep\n\n"
                    "body {\n"
                    "  p = (s32[], f32[4], f32[4], s32[], f32[4]) parameter(0)\n"
                    "  i = s32[] get-tuple-element(p), index=0\n"
                    "  a = f32[4] get-tuple-element(p), index=1\n"
                    "  b = f32[4] get-tuple-element(p), index=2\n"
                    "  k = s32[] get-tuple-element(p), index=3\n"
                    "  acc = f32[4] get-tuple-element(p), index=4\n"
                    "  one = s32[] constant(1)\n"
                    "  i1 = s32[] add(i, one)\n"
                    "  seven = s32[] constant(7)\n"
                    "  kf = f32[] convert(k)\n"
                    "  kb = f32[4] broadcast(kf), dimensions={}\n"
                    "  ab = f32[4] multiply(a, b)\n"
                    "  abk = f32[4] add(ab, kb)\n"
                    "  acc1 = f32[4] add(acc, abk)\n"
                    "  ROOT t = (s32[], f32[4], f32[4], s32[], f32[4]) tuple(i1, a, b, seven, acc1)\n"
                    "}\n\n"
                    "cond {\n"
                    "  p = (s32[], f32[4], f32[4], s32[], f32[4]) parameter(0)\n"
                    "  i = s32[] get-tuple-element(p), index=0\n"
                    "  n = s32[] constant(20)\n"
                    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
                    "}\n\n"
                    "ENTRY main {\n"
                    "  x = f32[4] parameter(0)\n"
                    "  zero = s32[] constant(0)\n"
                    "  c7 = s32[] constant(7)\n"
                    "  init = (s32[], f32[4], f32[4], s32[], f32[4]) tuple(zero, x, x, c7, x)\n"
                    "  w = (s32[], f32[4], f32[4], s32[], f32[4]) while(init), condition=cond, body=body\n"
                    "  b = f32[4] get-tuple-element(w), index=2\n"
                    "  k = s32[] get-tuple-element(w), index=3\n"
                    "  acc = f32[4] get-tuple-element(w), index=4\n"
                    "  ROOT r = (f32[4], s32[], f32[4]) tuple(b, k, acc)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_while_simplifier_current, m, &log));
  CHECK_STR(log.buf,
            "while-loop-simplifier remove: element 2 of w is element 1: both start as x and the body passes both "
            "through unchanged, so element 2 goes and its reads read element 1 (after the loop, x)\n"
            "while-loop-simplifier remove: element 2 of w is the constant c7: it starts as it and the body sets it to "
            "it again, so it leaves the loop's state\n");
  /* What is left: the counter, x and the sum. */
  IrInstr *w = ir_module_find_instr(m, "w");
  CHECK(w && w->shape.ntuple == 3);
  CHECK_STR(line_of(m, "r"), "%r = (f32[4], s32[], f32[4]) tuple(%x, %c7, %acc.30)");
  CHECK_STR(line_of(m, "ab"), "%ab = f32[4] multiply(%a, %a)");
  CHECK_STR(line_of(m, "kf"), "%kf = f32[] convert(%c7.33)");
  ir_module_free(m);
}

/* A scalar element that starts as a constant and passes through is read as the constant. */
TEST(propagated_constant) {
  IrModule *m = hlo("HloModule prop\n\n"
                    "body {\n"
                    "  p = (s32[], f32[], f32[4]) parameter(0)\n"
                    "  i = s32[] get-tuple-element(p), index=0\n"
                    "  s = f32[] get-tuple-element(p), index=1\n"
                    "  x = f32[4] get-tuple-element(p), index=2\n"
                    "  one = s32[] constant(1)\n"
                    "  i1 = s32[] add(i, one)\n"
                    "  sb = f32[4] broadcast(s), dimensions={}\n"
                    "  x1 = f32[4] multiply(x, sb)\n"
                    "  ROOT t = (s32[], f32[], f32[4]) tuple(i1, s, x1)\n"
                    "}\n\n"
                    "cond {\n"
                    "  p = (s32[], f32[], f32[4]) parameter(0)\n"
                    "  i = s32[] get-tuple-element(p), index=0\n"
                    "  n = s32[] constant(3)\n"
                    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
                    "}\n\n"
                    "ENTRY main {\n"
                    "  x = f32[4] parameter(0)\n"
                    "  zero = s32[] constant(0)\n"
                    "  half = f32[] constant(0.5)\n"
                    "  init = (s32[], f32[], f32[4]) tuple(zero, half, x)\n"
                    "  w = (s32[], f32[], f32[4]) while(init), condition=cond, body=body\n"
                    "  ROOT xo = f32[4] get-tuple-element(w), index=2\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_while_simplifier_current, m, &log));
  CHECK_STR(log.buf,
            "while-loop-simplifier rewrite: element 1 of w starts as the constant half and never changes: the body "
            "and the condition read the constant\n"
            "while-loop-simplifier remove: removed element 1 (f32[]) of w: neither the condition, the other carried "
            "values nor the code after the loop read it\n");
  CHECK_STR(line_of(m, "sb"), "%sb = f32[4] broadcast(%half.23), dimensions={}");
  CHECK(ir_module_find_instr(m, "w")->shape.ntuple == 2);
  ir_module_free(m);
}

/* A loop that runs once is its body. */
TEST(one_trip_loop) {
  IrModule *m = hlo("HloModule once\n\n"
                    "body {\n"
                    "  p = (s32[], f32[4]) parameter(0)\n"
                    "  i = s32[] get-tuple-element(p), index=0\n"
                    "  x = f32[4] get-tuple-element(p), index=1\n"
                    "  one = s32[] constant(1)\n"
                    "  i1 = s32[] add(i, one)\n"
                    "  e = f32[4] exponential(x)\n"
                    "  ROOT t = (s32[], f32[4]) tuple(i1, e)\n"
                    "}\n\n"
                    "cond {\n"
                    "  p = (s32[], f32[4]) parameter(0)\n"
                    "  i = s32[] get-tuple-element(p), index=0\n"
                    "  n = s32[] constant(1)\n"
                    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
                    "}\n\n"
                    "ENTRY main {\n"
                    "  x = f32[4] parameter(0)\n"
                    "  zero = s32[] constant(0)\n"
                    "  init = (s32[], f32[4]) tuple(zero, x)\n"
                    "  w = (s32[], f32[4]) while(init), condition=cond, body=body\n"
                    "  ROOT xo = f32[4] get-tuple-element(w), index=1\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_while_simplifier_current, m, &log));
  CHECK_CONTAINS(log.buf, "while-loop-simplifier inline: w runs once: replaced by a copy of its body body (6 instructions) reading its initial value init\n");
  CHECK(count_op(m, IR_OP_WHILE) == 0);
  CHECK(m->ncomps == 1);
  CHECK_STR(line_of(m, "e.24"), "%e.24 = f32[4] exponential(%x.21)");
  CHECK_STR(line_of(m, "xo"), "%xo = f32[4] get-tuple-element(%t.25), index=1");
  ir_module_free(m);
}

/* Twenty searches over one table: twenty loops over copies of one body. */
static const char *const twin_loops =
    "HloModule twins\n\n"
    "body_a {\n"
    "  p = (s32[], f32[4]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  x = f32[4] get-tuple-element(p), index=1\n"
    "  one = s32[] constant(1)\n"
    "  i1 = s32[] add(i, one)\n"
    "  x1 = f32[4] sine(x)\n"
    "  ROOT t = (s32[], f32[4]) tuple(i1, x1)\n"
    "}\n\n"
    "cond_a {\n"
    "  p = (s32[], f32[4]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(8)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
    "}\n\n"
    "body_b {\n"
    "  p = (s32[], f32[4]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  x = f32[4] get-tuple-element(p), index=1\n"
    "  one = s32[] constant(1)\n"
    "  i1 = s32[] add(i, one)\n"
    "  x1 = f32[4] sine(x)\n"
    "  ROOT t = (s32[], f32[4]) tuple(i1, x1)\n"
    "}\n\n"
    "cond_b {\n"
    "  p = (s32[], f32[4]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(8)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
    "}\n\n"
    "ENTRY main {\n"
    "  x = f32[4] parameter(0)\n"
    "  zero = s32[] constant(0)\n"
    "  init = (s32[], f32[4]) tuple(zero, x)\n"
    "  wa = (s32[], f32[4]) while(init), condition=cond_a, body=body_a\n"
    "  wb = (s32[], f32[4]) while(init), condition=cond_b, body=body_b\n"
    "  a = f32[4] get-tuple-element(wa), index=1\n"
    "  b = f32[4] get-tuple-element(wb), index=1\n"
    "  ROOT s = f32[4] add(a, b)\n"
    "}\n";

TEST(cse_merges_loops_over_identical_bodies) {
  IrModule *m = hlo(twin_loops);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_cse_current, m, &log));
  CHECK_CONTAINS(log.buf, "cse rewrite: replaced wb by wa: the same while of the same operands\n");
  CHECK(count_op(m, IR_OP_WHILE) == 1);
  CHECK(ir_module_find_computation(m, "body_b") == NULL);
  /* The classic pipeline's cse leaves loops alone. */
  IrModule *c = hlo(twin_loops);
  Log log2 = {{0}, 0};
  run_pass(&pass_cse, c, &log2);
  CHECK(count_op(c, IR_OP_WHILE) == 2);
  ir_module_free(c);
  ir_module_free(m);
}

/* Loops whose bodies differ in one constant stay two. */
TEST(cse_keeps_loops_that_differ) {
  char text[4096];
  snprintf(text, sizeof text, "%s", twin_loops);
  char *p = strstr(text, "cond_b {");
  CHECK(p != NULL);
  if (!p) return;
  p = strstr(p, "constant(8)");
  CHECK(p != NULL);
  if (!p) return;
  p[9] = '9';
  IrModule *m = hlo(text);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  run_pass(&pass_cse_current, m, &log);
  CHECK(count_op(m, IR_OP_WHILE) == 2);
  ir_module_free(m);
}

/* A loop that carries a table it only reads: the reads use a copy of the table inside the loop. */
TEST(constant_sinking) {
  IrModule *m = hlo("HloModule sink\n\n"
                    "body {\n"
                    "  p = (s32[], f32[], f32[4]) parameter(0)\n"
                    "  i = s32[] get-tuple-element(p), index=0\n"
                    "  acc = f32[] get-tuple-element(p), index=1\n"
                    "  tab = f32[4] get-tuple-element(p), index=2\n"
                    "  one = s32[] constant(1)\n"
                    "  i1 = s32[] add(i, one)\n"
                    "  d = f32[1] dynamic-slice(tab, i), dynamic_slice_sizes={1}\n"
                    "  v = f32[] reshape(d)\n"
                    "  acc1 = f32[] add(acc, v)\n"
                    "  ROOT t = (s32[], f32[], f32[4]) tuple(i1, acc1, tab)\n"
                    "}\n\n"
                    "cond {\n"
                    "  p = (s32[], f32[], f32[4]) parameter(0)\n"
                    "  i = s32[] get-tuple-element(p), index=0\n"
                    "  n = s32[] constant(4)\n"
                    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
                    "}\n\n"
                    "ENTRY main {\n"
                    "  a = f32[] parameter(0)\n"
                    "  zero = s32[] constant(0)\n"
                    "  table = f32[4] constant({1, 2, 4, 8})\n"
                    "  init = (s32[], f32[], f32[4]) tuple(zero, a, table)\n"
                    "  w = (s32[], f32[], f32[4]) while(init), condition=cond, body=body\n"
                    "  ROOT r = f32[] get-tuple-element(w), index=1\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_while_constant_sinking, m, &log));
  CHECK_STR(log.buf,
            "while-loop-constant-sinking rewrite: sank table (f32[4]) into the body of w: element 2 never changes, so "
            "its 1 read uses a copy of the constant\n");
  CHECK_STR(line_of(m, "d"), "%d = f32[1] dynamic-slice(%table.sunk, %i), dynamic_slice_sizes={1}");
  /* The element stays (the body passes it through) until while-loop-simplifier finds it unread. */
  CHECK(ir_module_find_instr(m, "w")->shape.ntuple == 3);
  Log log2 = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_while_simplifier_current, m, &log2));
  CHECK(ir_module_find_instr(m, "w")->shape.ntuple == 2);
  /* Nothing left to sink. */
  Log log3 = {{0}, 0};
  CHECK(!run_pass(&pass_while_constant_sinking, m, &log3));
  ir_module_free(m);
}

/* Three branches on an s32 index; branch b1 doubles, b0 negates, b2 adds one. */
static const char *const three_branches =
    "HloModule cond3\n\n"
    "b0 {\n"
    "  p = f32[4] parameter(0)\n"
    "  ROOT n = f32[4] negate(p)\n"
    "}\n\n"
    "b1 {\n"
    "  p = f32[4] parameter(0)\n"
    "  ROOT d = f32[4] add(p, p)\n"
    "}\n\n"
    "b2 {\n"
    "  p = f32[4] parameter(0)\n"
    "  one = f32[] constant(1)\n"
    "  ob = f32[4] broadcast(one), dimensions={}\n"
    "  ROOT a = f32[4] add(p, ob)\n"
    "}\n\n"
    "ENTRY main {\n"
    "  x = f32[4] parameter(0)\n"
    "  k = s32[] constant(INDEX)\n"
    "  c = f32[4] conditional(k, x, x, x), branch_computations={b0, b1, b2}\n"
    "  ROOT r = f32[4] multiply(c, x)\n"
    "}\n";

static IrModule *three_branches_at(const char *index) {
  char text[2048];
  const char *at = strstr(three_branches, "INDEX");
  snprintf(text, sizeof text, "%.*s%s%s", (int)(at - three_branches), three_branches, index, at + 5);
  return hlo(text);
}

/* A constant index names the branch that runs: the conditional becomes a copy of it. */
TEST(conditional_constant_index) {
  IrModule *m = three_branches_at("1");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_conditional_simplifier, m, &log));
  /* and the copy's new name, so that `why d` finds d.17 */
  CHECK_STR(log.buf, "conditional-simplifier inline: c always runs b1 (its index is the constant 1): replaced by a "
                     "copy of it (1 instruction)\n"
                     "conditional-simplifier rename: parameter p.5 of b1 is x in main, the value passed in: branch b1 of "
                     "c was copied there\n"
                     "conditional-simplifier rename: d (in b1) is d.17 in main: branch b1 of c was copied there\n");
  CHECK(count_op(m, IR_OP_CONDITIONAL) == 0);
  CHECK_STR(line_of(m, "r"), "%r = f32[4] multiply(%d.17, %x)");
  /* The branches nothing calls any more are gone. */
  CHECK(m->ncomps == 1);
  ir_module_free(m);
}

/* An index out of range runs the last branch (HLO's rule). */
TEST(conditional_index_out_of_range) {
  IrModule *m = three_branches_at("7");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_conditional_simplifier, m, &log));
  CHECK_STR(log.buf, "conditional-simplifier inline: c always runs b2 (its index is the constant 7, out of range: the "
                     "last branch runs): replaced by a copy of it (3 instructions)\n"
                     "conditional-simplifier rename: parameter p.8 of b2 is x in main, the value passed in: branch b2 of "
                     "c was copied there\n"
                     "conditional-simplifier rename: one (in b2) is one.17 in main: branch b2 of c was copied there\n"
                     "conditional-simplifier rename: ob (in b2) is ob.18 in main: branch b2 of c was copied there\n"
                     "conditional-simplifier rename: a (in b2) is a.19 in main: branch b2 of c was copied there\n");
  CHECK_STR(line_of(m, "r"), "%r = f32[4] multiply(%a.19, %x)");
  ir_module_free(m);
}

/* JAX's lax.cond: an s32 index converted from a pred, two branches returning a tuple. algsimp
 * makes it a pred conditional; conditional-simplifier then runs both cheap branches and selects,
 * element by element. */
static const char *const cond_on_pred =
    "HloModule condp\n\n"
    "on_false {\n"
    "  p = (f32[4], f32[]) parameter(0)\n"
    "  x = f32[4] get-tuple-element(p), index=0\n"
    "  s = f32[] get-tuple-element(p), index=1\n"
    "  n = f32[4] negate(x)\n"
    "  ROOT t = (f32[4], f32[]) tuple(n, s)\n"
    "}\n\n"
    "on_true {\n"
    "  p = (f32[4], f32[]) parameter(0)\n"
    "  x = f32[4] get-tuple-element(p), index=0\n"
    "  s = f32[] get-tuple-element(p), index=1\n"
    "  e = f32[4] exponential(x)\n"
    "  h = f32[] multiply(s, s)\n"
    "  ROOT t = (f32[4], f32[]) tuple(e, h)\n"
    "}\n\n"
    "ENTRY main {\n"
    "  x = f32[4] parameter(0)\n"
    "  s = f32[] parameter(1)\n"
    "  zero = f32[] constant(0)\n"
    "  q = pred[] compare(s, zero), direction=GT\n"
    "  k = s32[] convert(q)\n"
    "  arg = (f32[4], f32[]) tuple(x, s)\n"
    "  c = (f32[4], f32[]) conditional(k, arg, arg), branch_computations={on_false, on_true}\n"
    "  c0 = f32[4] get-tuple-element(c), index=0\n"
    "  c1 = f32[] get-tuple-element(c), index=1\n"
    "  c1b = f32[4] broadcast(c1), dimensions={}\n"
    "  ROOT r = f32[4] add(c0, c1b)\n"
    "}\n";

TEST(conditional_on_pred_becomes_select) {
  IrModule *m = hlo(cond_on_pred);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK(strstr(log.buf, "algsimp rewrite: replaced c(k, arg, arg) by c(q, arg, arg): indexed by convert(q) of a pred, it runs "
                        "on_true when q is true and on_false when false (true_computation=on_true, "
                        "false_computation=on_false)\n") !=
        NULL);
  CHECK_STR(line_of(m, "c"), "%c = (f32[4], f32[]) conditional(%q, %arg, %arg), true_computation=%on_true, "
                             "false_computation=%on_false");
  Log log2 = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_conditional_simplifier, m, &log2));
  CHECK(strstr(log2.buf, "conditional-simplifier rewrite: c runs two cheap branches (on_true, on_false) on q: replaced by "
                         "both (9 instructions) and a select of their results (tuple)\n") != NULL);
  CHECK(count_op(m, IR_OP_CONDITIONAL) == 0);
  /* One select per element: the array's reads q broadcast, the scalar's reads q itself. */
  CHECK(count_op(m, IR_OP_SELECT) == 2);
  CHECK(count_op(m, IR_OP_EXP) == 1 && count_op(m, IR_OP_NEGATE) == 1);
  CHECK(m->ncomps == 1);
  ir_module_free(m);
}

/* The classic pipeline's algsimp (the paper's XLA) leaves the s32 index alone. */
TEST(classic_algsimp_keeps_conditional_index) {
  IrModule *m = hlo(cond_on_pred);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  run_pass(&pass_algsimp, m, &log);
  CHECK(strstr(line_of(m, "c"), "branch_computations={%on_false, %on_true}") != NULL);
  ir_module_free(m);
}

/* A branch with a dot is too costly to run always; a branch that only passes its operand through
 * costs less than a select. Both conditionals stay, and say why. */
TEST(conditional_kept) {
  IrModule *m = hlo("HloModule keep\n\n"
                    "mm {\n"
                    "  p = f32[4,4] parameter(0)\n"
                    "  ROOT d = f32[4,4] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                    "}\n\n"
                    "neg {\n"
                    "  p = f32[4,4] parameter(0)\n"
                    "  ROOT n = f32[4,4] negate(p)\n"
                    "}\n\n"
                    "same {\n"
                    "  ROOT p = f32[4,4] parameter(0)\n"
                    "}\n\n"
                    "ENTRY main {\n"
                    "  x = f32[4,4] parameter(0)\n"
                    "  q = pred[] parameter(1)\n"
                    "  c1 = f32[4,4] conditional(q, x, x), true_computation=mm, false_computation=neg\n"
                    "  ROOT c2 = f32[4,4] conditional(q, c1, c1), true_computation=neg, false_computation=same\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(!run_pass(&pass_conditional_simplifier, m, &log));
  CHECK_STR(log.buf,
            "conditional-simplifier keep: kept c1: its pred q is not a constant and branch mm computes d (dot), too "
            "costly to run always\n"
            "conditional-simplifier keep: kept c2: branch same only passes values through: running it costs less than "
            "a select\n");
  CHECK(count_op(m, IR_OP_CONDITIONAL) == 2);
  ir_module_free(m);
}

TEST(sharding_remover) {
  IrModule *m = hlo("HloModule shard\n\n"
                    "ENTRY main {\n"
                    "  k = u32[2] parameter(0)\n"
                    "  s = u32[2] custom-call(k), custom_call_target=\"Sharding\", sharding={replicated}\n"
                    "  a = u32[2] add(s, s)\n"
                    "  f = u32[2] custom-call(a), custom_call_target=\"SPMDFullToShardShape\", sharding={manual}\n"
                    "  o = u32[2] custom-call(f), custom_call_target=\"my_kernel\"\n"
                    "  ROOT r = u32[2] multiply(o, a)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass(&pass_sharding_remover, m, &log));
  CHECK_STR(log.buf,
            "sharding-remover remove: removed f (custom_call_target=\"SPMDFullToShardShape\"): a sharding hint; one "
            "device has nothing to partition, so its users read a\n"
            "sharding-remover remove: removed s (custom_call_target=\"Sharding\"): a sharding hint; one device has "
            "nothing to partition, so its users read k\n");
  CHECK_STR(line_of(m, "a"), "%a = u32[2] add(%k, %k)");
  CHECK_STR(line_of(m, "o"), "%o = u32[2] custom-call(%a), custom_call_target=\"my_kernel\"");
  CHECK(count_op(m, IR_OP_CUSTOM_CALL) == 1);
  ir_module_free(m);
}

/* A loop whose result only a multiplication by zero read: once algsimp makes that product the
 * zero, nothing reads the loop and it goes with what fed only it (XLA's
 * RemoveInstructionAndUnusedOperands); with a side effect in its body it stays. */
static const char *dead_loop(const char *effect) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "HloModule dead_loop\n\n"
           "body {\n"
           "  p = (s32[], u32[]) parameter(0)\n"
           "  i = s32[] get-tuple-element(p), index=0\n"
           "  v = u32[] get-tuple-element(p), index=1\n"
           "  one = s32[] constant(1)\n"
           "  i1 = s32[] add(i, one)\n"
           "  v1 = u32[] %s(v, v)\n"
           "  ROOT t = (s32[], u32[]) tuple(i1, v1)\n"
           "}\n\n"
           "cond {\n"
           "  p = (s32[], u32[]) parameter(0)\n"
           "  i = s32[] get-tuple-element(p), index=0\n"
           "  n = s32[] constant(5)\n"
           "  ROOT lt = pred[] compare(i, n), direction=LT\n"
           "}\n\n"
           "ENTRY main {\n"
           "  a = u32[] parameter(0)\n"
           "  b = u32[] parameter(1)\n"
           "  zero = s32[] constant(0)\n"
           "  init = (s32[], u32[]) tuple(zero, a)\n"
           "  w = (s32[], u32[]) while(init), condition=cond, body=body\n"
           "  r = u32[] get-tuple-element(w), index=1\n"
           "  z = u32[] constant(0)\n"
           "  m = u32[] multiply(r, z)\n"
           "  ROOT s = u32[] add(m, b)\n"
           "}\n",
           effect);
  return buf;
}

TEST(unread_loop_goes) {
  IrModule *m = hlo(dead_loop("xor"));
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_STR(log.buf, "algsimp rewrite: replaced m(r, 0) by z: an integer times zero is zero\n"
                     "algsimp rewrite: replaced s(0, b) by b: adding zero\n");
  CHECK(count_op(m, IR_OP_WHILE) == 0 && count_op(m, IR_OP_TUPLE) == 1);
  CHECK_STR(line_of(m, "init"), "(none)");
  ir_module_free(m);
  /* A custom call may do more than compute its value: the loop stays. */
  m = hlo(dead_loop("custom-call"));
  CHECK(m != NULL);
  if (!m) return;
  Log log2 = {{0}, 0};
  CHECK(run_pass(&pass_algsimp_current, m, &log2));
  CHECK(count_op(m, IR_OP_WHILE) == 1);
  ir_module_free(m);
}

int main(void) {
  RUN(merge_induction_variables);
  RUN(unread_loop_goes);
  RUN(classic_keeps_both_counters);
  RUN(repeated_and_constant_elements);
  RUN(propagated_constant);
  RUN(one_trip_loop);
  RUN(cse_merges_loops_over_identical_bodies);
  RUN(cse_keeps_loops_that_differ);
  RUN(constant_sinking);
  RUN(sharding_remover);
  RUN(conditional_constant_index);
  RUN(conditional_index_out_of_range);
  RUN(conditional_on_pred_becomes_select);
  RUN(classic_algsimp_keeps_conditional_index);
  RUN(conditional_kept);
  return check_summary();
}
