/* test_simplify.c — the simplification passes algsimp, constant-folding, while-loop-simplifier
 * and call-inliner: the exact rewrites each makes and reports on small modules (HLO text and
 * .fx), numeric agreement before and after on the reference interpreter, and every corpus
 * module through each pass (verifier clean, instruction count not larger). */
#include <dirent.h>
#include <stdlib.h>

#include "pass_check.h"

/* ---------- algsimp ---------- */

TEST(algsimp_identities) {
  IrModule *m = hlo("HloModule t\n\nENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4]) {\n"
                    "  %x = f32[4]{0} parameter(0)\n  %y = f32[4]{0} parameter(1)\n"
                    "  %one = f32[] constant(1)\n  %b1 = f32[4]{0} broadcast(%one), dimensions={}\n"
                    "  %multiply.4 = f32[4]{0} multiply(%x, %b1)\n"
                    "  %zero = f32[] constant(0)\n  %b0 = f32[4]{0} broadcast(%zero), dimensions={}\n"
                    "  %add.5 = f32[4]{0} add(%b0, %multiply.4)\n  %sub = f32[4]{0} subtract(%add.5, %b0)\n"
                    "  %n1 = f32[4]{0} negate(%sub)\n  %n2 = f32[4]{0} negate(%n1)\n"
                    "  %c = f32[4]{0} convert(%n2)\n  %d = f32[4]{0} divide(%c, %b1)\n"
                    "  %t = pred[] constant(true)\n  %bt = pred[4]{0} broadcast(%t), dimensions={}\n"
                    "  %sel = f32[4]{0} select(%bt, %y, %d)\n"
                    "  ROOT %r = (f32[4]{0}, f32[4]{0}) tuple(%d, %sel)\n}\n");
  CHECK(m != NULL);
  if (!m) return;
  int before = ir_module_instr_count(m);
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp, m, &log));
  CHECK_STR(log.buf,
            "algsimp rewrite: replaced multiply.4(x, 1) by x: multiplying by one\n"
            "algsimp rewrite: replaced add.5(0, x) by x: adding zero\n"
            "algsimp rewrite: replaced sub(x, 0) by x: subtracting zero\n"
            "algsimp rewrite: replaced n2(n1) by x: negate of negate\n"
            "algsimp rewrite: replaced c(x) by x: converting to the same type\n"
            "algsimp rewrite: replaced d(x, 1) by x: dividing by one\n"
            "algsimp rewrite: replaced sel(1, y, x) by y: the condition is always true\n");
  CHECK_STR(line_of(m, "r"), "%r = (f32[4]{0}, f32[4]{0}) tuple(%x, %y)");
  /* Everything the rewrites left unused went with them; the names are gone for good. */
  CHECK(ir_module_instr_count(m) == 3);
  CHECK(ir_module_instr_count(m) < before);
  CHECK(ir_module_find_instr(m, "multiply.4") == NULL);
  /* A second run has nothing left to do. */
  Log log2 = {{0}, 0};
  CHECK(!run_pass(&pass_algsimp, m, &log2));
  CHECK(log2.n == 0);
  ir_module_free(m);
}

TEST(algsimp_chains) {
  IrModule *m = hlo("HloModule t\n\nENTRY %main (x: f32[2,3,4]) -> (f32[2,3,4], f32[2,3,4], f32[4,2,3], f32[2,3], f32[1,3,2]) {\n"
                    "  %x = f32[2,3,4]{2,1,0} parameter(0)\n"
                    "  %r1 = f32[6,4]{1,0} reshape(%x)\n  %r2 = f32[24]{0} reshape(%r1)\n  %r3 = f32[2,3,4]{2,1,0} reshape(%r2)\n"
                    "  %t1 = f32[4,3,2]{2,1,0} transpose(%x), dimensions={2,1,0}\n"
                    "  %t2 = f32[2,3,4]{2,1,0} transpose(%t1), dimensions={2,1,0}\n"
                    "  %t3 = f32[3,2,4]{2,1,0} transpose(%x), dimensions={1,0,2}\n"
                    "  %t4 = f32[4,2,3]{2,1,0} transpose(%t3), dimensions={2,1,0}\n"
                    "  %s = f32[] constant(2)\n  %b1 = f32[3]{0} broadcast(%s), dimensions={}\n"
                    "  %b2 = f32[2,3]{1,0} broadcast(%b1), dimensions={1}\n"
                    "  %sl1 = f32[2,3,3]{2,1,0} slice(%x), slice={[0:2], [0:3], [1:4]}\n"
                    "  %sl2 = f32[1,3,2]{2,1,0} slice(%sl1), slice={[1:2], [0:3], [0:3:2]}\n"
                    "  ROOT %r = (f32[2,3,4]{2,1,0}, f32[2,3,4]{2,1,0}, f32[4,2,3]{2,1,0}, f32[2,3]{1,0}, f32[1,3,2]{2,1,0}) tuple(%r3, %t2, %t4, %b2, %sl2)\n}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp, m, &log));
  CHECK_STR(log.buf,
            "algsimp rewrite: reshape of reshape: r2 now reshapes x directly (skipping r1)\n"
            "algsimp rewrite: reshape of reshape: r3 now reshapes x directly (skipping r2)\n"
            "algsimp rewrite: replaced r3(x) by x: the reshapes cancel\n"
            "algsimp rewrite: replaced t2(t1) by x: transpose of transpose: the permutations of t1 and t2 cancel\n"
            "algsimp rewrite: transpose of transpose: t4 now transposes x directly (skipping t3)\n"
            "algsimp rewrite: broadcast of broadcast: b2 now broadcasts s directly (skipping b1)\n"
            "algsimp rewrite: slice of slice: sl2 now slices x directly (skipping sl1)\n");
  CHECK_STR(line_of(m, "t4"), "%t4 = f32[4,2,3]{2,1,0} transpose(%x), dimensions={2,0,1}");
  CHECK_STR(line_of(m, "b2"), "%b2 = f32[2,3]{1,0} broadcast(%s), dimensions={}");
  CHECK_STR(line_of(m, "sl2"), "%sl2 = f32[1,3,2]{2,1,0} slice(%x), slice={[1:2], [0:3], [1:4:2]}");
  CHECK_STR(line_of(m, "r"), "%r = (f32[2,3,4]{2,1,0}, f32[2,3,4]{2,1,0}, f32[4,2,3]{2,1,0}, f32[2,3]{1,0}, f32[1,3,2]{2,1,0}) tuple(%x, %x, %t4, %b2, %sl2)");
  ir_module_free(m);
}

TEST(algsimp_concatenate) {
  IrModule *m = hlo("HloModule t\n\nENTRY %main (a: f32[2,3], b: f32[2,5]) -> (f32[2,4], f32[2,3], f32[2,3]) {\n"
                    "  %a = f32[2,3]{1,0} parameter(0)\n  %b = f32[2,5]{1,0} parameter(1)\n"
                    "  %cc = f32[2,8]{1,0} concatenate(%a, %b), dimensions={1}\n"
                    "  %sb = f32[2,4]{1,0} slice(%cc), slice={[0:2], [4:8]}\n"
                    "  %sa = f32[2,3]{1,0} slice(%cc), slice={[0:2], [0:3]}\n"
                    "  %one = f32[2,3]{1,0} concatenate(%a), dimensions={0}\n"
                    "  ROOT %r = (f32[2,4]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(%sb, %sa, %one)\n}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp, m, &log));
  CHECK_STR(log.buf,
            "algsimp rewrite: slice of concatenate: sb takes only operand 1 (b) of cc\n"
            "algsimp rewrite: slice of concatenate: sa takes only operand 0 (a) of cc\n"
            "algsimp rewrite: replaced sa(a) by a: the slice takes everything\n"
            "algsimp rewrite: replaced one(a) by a: concatenate of one operand\n");
  CHECK_STR(line_of(m, "sb"), "%sb = f32[2,4]{1,0} slice(%b), slice={[0:2], [1:5]}");
  CHECK(ir_module_find_instr(m, "cc") == NULL);
  ir_module_free(m);
}

/* The .fx CartPole has reshape chains (a column reshaped to [n,1] and back for broadcasting). */
TEST(algsimp_on_fx_cartpole) {
  FILE *f = fopen("scripts/cartpole.fx", "rb");
  CHECK(f != NULL);
  if (!f) return;
  static char src[65536];
  size_t n = fread(src, 1, sizeof src - 1, f);
  src[n] = 0;
  fclose(f);
  IrModule *m = fx(src);
  CHECK(m != NULL);
  if (!m) return;
  int before = ir_module_instr_count(m);
  Log log = {{0}, 0};
  CHECK(run_pass(&pass_algsimp, m, &log));
  CHECK_CONTAINS(log.buf, "reshape of reshape: reshape.");
  CHECK(ir_module_instr_count(m) < before);
  ir_module_free(m);
}

/* ---------- constant folding ---------- */

TEST(constant_folding_exact) {
  IrModule *m = hlo("HloModule t\n\nENTRY %main (x: f32[2048]) -> (f32[], pred[4], s32[], f32[2048], f32[2048], s32[4]) {\n"
                    "  %x = f32[2048]{0} parameter(0)\n"
                    "  %c2 = f32[] constant(2)\n  %c3 = f32[] constant(3)\n  %add.3 = f32[] add(%c2, %c3)\n"
                    "  %iota = s32[4]{0} iota(), iota_dimension=0\n  %ten = s32[] constant(10)\n"
                    "  %b = s32[4]{0} broadcast(%ten), dimensions={}\n  %m = s32[4]{0} multiply(%iota, %b)\n"
                    "  %cmp = pred[4]{0} compare(%m, %b), direction=LT\n"
                    "  %f = f32[] constant(-2.7)\n  %cv = s32[] convert(%f)\n"
                    "  %big = f32[2048]{0} broadcast(%c2), dimensions={}\n  %bigadd = f32[2048]{0} add(%big, %big)\n"
                    "  %usex = f32[2048]{0} add(%x, %big)\n"
                    "  ROOT %r = (f32[], pred[4]{0}, s32[], f32[2048]{0}, f32[2048]{0}, s32[4]{0}) tuple(%add.3, %cmp, %cv, %bigadd, %usex, %m)\n}\n");
  CHECK(m != NULL);
  if (!m) return;
  int before = ir_module_instr_count(m);
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_constant_folding, m, &log));
  CHECK_STR(log.buf,
            "constant-folding fold: folded add.3(2, 3) to constant 5\n"
            "constant-folding fold: folded m(iota, 10) to constant {0, 10, 20, 30}\n"
            "constant-folding fold: folded cmp(m, 10) to constant {true, false, false, false}\n"
            "constant-folding fold: folded cv(-2.7) to constant -2\n");
  CHECK_STR(line_of(m, "add.3"), "%add.3 = f32[] constant(5)");
  CHECK_STR(line_of(m, "cmp"), "%cmp = pred[4]{0} constant({true, false, false, false})");
  /* Broadcasts alone and results over 1024 elements stay. */
  CHECK_STR(line_of(m, "bigadd"), "%bigadd = f32[2048]{0} add(%big, %big)");
  CHECK(ir_module_find_instr(m, "c3") == NULL);
  CHECK(ir_module_find_instr(m, "iota") == NULL);
  CHECK(ir_module_instr_count(m) < before);
  ir_module_free(m);
}

/* Folding computes in the element type: literals are first rounded to it (the text -0.99999994
 * is the f32 value 1 - 2^-24, and 1 - that is the tie that rounds to 2 in f32), and integer
 * products wrap exactly (0xDEADBEEF * 0x9E3779B9 needs more than a double's 53 bits). */
TEST(constant_folding_in_element_type) {
  IrModule *m = hlo("HloModule t\n\nENTRY %main () -> (f32[], u32[]) {\n"
                    "  %one = f32[] constant(1)\n  %n = f32[] constant(-0.99999994)\n"
                    "  %d = f32[] subtract(%one, %n)\n"
                    "  %a = u32[] constant(3735928559)\n  %b = u32[] constant(2654435769)\n"
                    "  %p = u32[] multiply(%a, %b)\n"
                    "  ROOT %r = (f32[], u32[]) tuple(%d, %p)\n}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_constant_folding, m, &log));
  CHECK_STR(line_of(m, "d"), "%d = f32[] constant(2)");
  /* 3735928559 * 2654435769 mod 2^32 */
  char want[96];
  snprintf(want, sizeof want, "%%p = u32[] constant(%u)", (unsigned)(3735928559u * 2654435769u));
  CHECK_STR(line_of(m, "p"), want);
  ir_module_free(m);
}

/* ---------- while-loop-simplifier ---------- */

TEST(while_dead_elements) {
  IrModule *m = fx("param x: f32[4]\nparam y: f32[4]\nparam z: f32[4]\nloop 5 carry (a = x, b = y) {\n"
                   "  a = a + z\n  b = b * a + 1\n}\nout a\n");
  CHECK(m != NULL);
  if (!m) return;
  int before = ir_module_instr_count(m);
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_while_simplifier, m, &log));
  IrInstr *w = NULL;
  for (int k = 0; k < m->entry->ninstrs; k++)
    if (m->entry->instrs[k]->op == IR_OP_WHILE) w = m->entry->instrs[k];
  CHECK(w != NULL);
  if (w) {
    CHECK_STR(log.buf, "while-loop-simplifier remove: removed element 2 (f32[4]) of while.25: neither the condition, the other "
                       "carried values nor the code after the loop read it\n");
    /* (counter, a, captured z) remain; the loop still has its trip count. */
    char s[256];
    ir_shape_format(&w->shape, false, s, sizeof s);
    CHECK_STR(s, "(s32[], f32[4], f32[4])");
    CHECK_STR(ir_attr_text(w, "backend_config"), "{\"known_trip_count\":{\"n\":\"5\"}}");
    CHECK(ir_attr_comp(w, "body")->root->noperands == 3);
  }
  CHECK(ir_module_instr_count(m) < before);
  CHECK(ir_module_find_instr(m, "b") == NULL);
  ir_module_free(m);
}

TEST(while_zero_trips) {
  IrModule *m = fx("param x: f32[4]\nloop 0 carry (a = x) {\n  a = a * 2\n}\nout a\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_while_simplifier, m, &log));
  CHECK_CONTAINS(log.buf, "by its initial value tuple.");
  CHECK_CONTAINS(log.buf, ": the loop runs zero times\n");
  CHECK(count_op(m, IR_OP_WHILE) == 0);
  CHECK(m->ncomps == 1);
  ir_module_free(m);
  /* Live state stays: everything here is read. */
  m = fx("param x: f32[4]\nloop 3 carry (a = x, b = x) {\n  a = a + b\n  b = b * 2\n}\nout a\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log2 = {{0}, 0};
  CHECK(!run_pass(&pass_while_simplifier, m, &log2));
  CHECK(log2.n == 0);
  ir_module_free(m);
}

/* Without a backend_config the trip count comes from the fori_loop pattern: a counter that
 * starts at or past its limit. A body shared by two loops is not edited. */
TEST(while_pattern_and_shared_body) {
  const char *text =
      "HloModule t\n\n%cond (p: (s32[], f32[4], f32[4])) -> pred[] {\n  %p = (s32[], f32[4]{0}, f32[4]{0}) parameter(0)\n"
      "  %g = s32[] get-tuple-element(%p), index=0\n  %n = s32[] constant(3)\n  ROOT %lt = pred[] compare(%g, %n), direction=LT\n}\n\n"
      "%body (q: (s32[], f32[4], f32[4])) -> (s32[], f32[4], f32[4]) {\n  %q = (s32[], f32[4]{0}, f32[4]{0}) parameter(0)\n"
      "  %i = s32[] get-tuple-element(%q), index=0\n  %one = s32[] constant(1)\n  %i1 = s32[] add(%i, %one)\n"
      "  %a = f32[4]{0} get-tuple-element(%q), index=1\n  %b = f32[4]{0} get-tuple-element(%q), index=2\n"
      "  %b2 = f32[4]{0} multiply(%b, %b)\n"
      "  ROOT %r = (s32[], f32[4]{0}, f32[4]{0}) tuple(%i1, %a, %b2)\n}\n\n"
      "ENTRY %main (x: f32[4]) -> (f32[4], f32[4]) {\n  %x = f32[4]{0} parameter(0)\n  %c5 = s32[] constant(5)\n"
      "  %t = (s32[], f32[4]{0}, f32[4]{0}) tuple(%c5, %x, %x)\n"
      "  %w = (s32[], f32[4]{0}, f32[4]{0}) while(%t), condition=%cond, body=%body\n"
      "  %c0 = s32[] constant(0)\n  %t2 = (s32[], f32[4]{0}, f32[4]{0}) tuple(%c0, %x, %x)\n"
      "  %w2 = (s32[], f32[4]{0}, f32[4]{0}) while(%t2), condition=%cond, body=%body\n"
      "  %r1 = f32[4]{0} get-tuple-element(%w), index=1\n  %r2 = f32[4]{0} get-tuple-element(%w2), index=1\n"
      "  ROOT %out = (f32[4]{0}, f32[4]{0}) tuple(%r1, %r2)\n}\n";
  IrModule *m = hlo(text);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_while_simplifier, m, &log));
  /* w never runs and goes; then w2 is the body's only caller, and its element 2 is dead. */
  CHECK_STR(log.buf, "while-loop-simplifier remove: replaced w by its initial value t: the loop runs zero times\n"
                     "while-loop-simplifier remove: removed element 2 (f32[4]) of w2: neither the condition, the other "
                     "carried values nor the code after the loop read it\n");
  CHECK_STR(line_of(m, "r1"), "%r1 = f32[4]{0} get-tuple-element(%t), index=1");
  CHECK(ir_module_find_instr(m, "b2") == NULL);
  Log log2 = {{0}, 0};
  CHECK(!run_pass(&pass_while_simplifier, m, &log2));
  ir_module_free(m);
  /* When both loops run, their shared body is left alone. */
  char shared[4096];
  snprintf(shared, sizeof shared, "%s", text);
  char *c5 = strstr(shared, "constant(5)");
  CHECK(c5 != NULL);
  if (!c5) return;
  c5[9] = '1';
  m = hlo(shared);
  CHECK(m != NULL);
  if (!m) return;
  Log log3 = {{0}, 0};
  CHECK(!run_pass(&pass_while_simplifier, m, &log3));
  CHECK(log3.n == 0);
  ir_module_free(m);
}

/* ---------- call-inliner ---------- */

TEST(call_inliner) {
  IrModule *m = fx("def f(a, b) { return a * b, a + b }\ndef g(a) {\n  t = a * 2\n  return t\n}\nparam x: f32[4]\n"
                   "p, q = f(x, x)\nu = g(p)\nw = g(q)\nout u, w\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_call_inliner, m, &log));
  CHECK_STR(log.buf,
            "call-inliner inline: inlined call.8 (to_apply=f, 3 instructions) into main\n"
            "call-inliner rename: parameter a of f is x in main, the value passed in: f was inlined there (call.8)\n"
            "call-inliner rename: parameter b of f is x in main, the value passed in: f was inlined there (call.8)\n"
            "call-inliner rename: multiply.5 (in f) is multiply.20 in main: f was inlined there (call.8)\n"
            "call-inliner rename: add.6 (in f) is add.21 in main: f was inlined there (call.8)\n"
            "call-inliner rename: tuple.7 (in f) is tuple.22 in main: f was inlined there (call.8)\n"
            "call-inliner inline: inlined u (to_apply=g, 3 instructions) into main\n"
            "call-inliner inline: inlined w (to_apply=g, 3 instructions) into main\n"
            "call-inliner remove: removed computation f: every call to it was inlined\n"
            "call-inliner remove: removed computation g: every call to it was inlined\n");
  /* (g is called twice: its two copies of t are both "what t became", so neither is reported) */
  CHECK(count_op(m, IR_OP_CALL) == 0);
  CHECK(m->ncomps == 1);
  /* Copies are named after the callee's instructions, never reusing a name. */
  IrInstr *root = m->entry->root;
  CHECK(strncmp(root->operands[0]->name, "t.", 2) == 0);
  CHECK(strncmp(root->operands[1]->name, "t.", 2) == 0);
  CHECK(root->operands[0] != root->operands[1]);
  CHECK(root->operands[0]->loc.line == 3);
  ir_module_free(m);
}

/* ---------- every corpus module through every pass ---------- */

/* What inlining every call makes of computation c: its own instructions, each call replaced by
 * the (inlined) callee's instructions other than its parameters. */
static int64_t expanded(const IrComputation *c, int depth) {
  if (depth > 64) return 0;
  int64_t n = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    const IrComputation *callee = i->op == IR_OP_CALL ? ir_attr_comp(i, "to_apply") : NULL;
    if (callee) n += expanded(callee, depth + 1) - callee->nparams;
    else n++;
  }
  return n;
}

TEST(corpus_through_each_pass) {
  const char *dir = getenv("FXPLAIN_HLO_CORPUS");
  if (!dir || !*dir) dir = "tests/data/hlo-corpus";
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  if (!d) {
    fprintf(stderr, "no corpus at %s\n", dir);
    return;
  }
  const Pass *passes[] = {&pass_call_inliner, &pass_algsimp, &pass_constant_folding, &pass_while_simplifier};
  struct dirent *ent;
  int files = 0;
  while ((ent = readdir(d))) {
    size_t len = strlen(ent->d_name);
    if (len < 5 || strcmp(ent->d_name + len - 4, ".hlo") != 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
    FxError err;
    fx_error_clear(&err);
    IrModule *m = hlo_load_file(path, &err);
    if (!m) {
      fx_error_print(stderr, &err);
      CHECK(m != NULL);
      continue;
    }
    files++;
    for (size_t p = 0; p < sizeof passes / sizeof *passes; p++) {
      int before = ir_module_instr_count(m);
      /* Expected sizes of each computation once every call is inlined (by name). */
      int ncomps0 = m->ncomps;
      const char **names = malloc(sizeof(char *) * (size_t)ncomps0);
      int64_t *sizes = malloc(sizeof(int64_t) * (size_t)ncomps0);
      for (int c = 0; c < ncomps0; c++) {
        names[c] = m->comps[c]->name;
        sizes[c] = expanded(m->comps[c], 0);
      }
      Log log = {{0}, 0};
      int fails = check_cur_failed;
      check_cur_failed = 0;
      run_pass(passes[p], m, &log);
      int after = ir_module_instr_count(m);
      /* Inlining copies each callee once per call and removes what is no longer called:
       * exactly the expanded size of the computations that remain. Nothing else may grow. */
      int64_t allowed = before;
      if (passes[p] == &pass_call_inliner) {
        allowed = 0;
        for (int c = 0; c < m->ncomps; c++)
          for (int q = 0; q < ncomps0; q++)
            if (strcmp(names[q], m->comps[c]->name) == 0) allowed += sizes[q];
        if (after != allowed) {
          fprintf(stderr, "%s: call-inliner left %d instructions, expected %lld\n", ent->d_name, after, (long long)allowed);
          check_cur_failed = 1;
        }
      }
      free(names);
      free(sizes);
      if (after > allowed) {
        fprintf(stderr, "%s: %s grew the module from %d to %d instructions\n", ent->d_name, passes[p]->name, before, after);
        check_cur_failed = 1;
      }
      if (check_cur_failed) fprintf(stderr, "  (in %s after %s)\n", ent->d_name, passes[p]->name);
      check_cur_failed |= fails;
    }
    if (count_op(m, IR_OP_CALL) != 0) {
      fprintf(stderr, "%s: calls left after call-inliner\n", ent->d_name);
      check_cur_failed = 1;
    }
    ir_module_free(m);
  }
  closedir(d);
  CHECK(files >= 30);
}

int main(void) {
  RUN(algsimp_identities);
  RUN(algsimp_chains);
  RUN(algsimp_concatenate);
  RUN(algsimp_on_fx_cartpole);
  RUN(constant_folding_exact);
  RUN(constant_folding_in_element_type);
  RUN(while_dead_elements);
  RUN(while_zero_trips);
  RUN(while_pattern_and_shared_body);
  RUN(call_inliner);
  RUN(corpus_through_each_pass);
  return check_summary();
}
