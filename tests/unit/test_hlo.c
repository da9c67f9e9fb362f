/* test_hlo.c — HLO text in and out: parsing every construct real dumps use, locations, the
 * canonical printer and its fixed point, and located errors. */
#include <stdlib.h>

#include "check.h"
#include "hlo.h"
#include "verify.h"

static IrModule *parse(const char *text, FxError *err) {
  fx_error_clear(err);
  return hlo_parse(text, strlen(text), "t.hlo", err);
}

/* Parses, prints, parses the print and prints again: both prints must be identical. */
static char *roundtrip(const char *text) {
  FxError err;
  IrModule *m = parse(text, &err);
  if (!m) {
    fx_error_print(stderr, &err);
    return NULL;
  }
  char *s1 = hlo_print_string(m);
  ir_module_free(m);
  IrModule *m2 = parse(s1, &err);
  if (!m2) {
    fx_error_print(stderr, &err);
    fx_free(s1);
    return NULL;
  }
  char *s2 = hlo_print_string(m2);
  ir_module_free(m2);
  if (strcmp(s1, s2) != 0) {
    fprintf(stderr, "not a fixed point:\n%s\n---\n%s\n", s1, s2);
    fx_free(s1);
    fx_free(s2);
    return NULL;
  }
  fx_free(s2);
  return s1;
}

static const char *kSmall =
    "// leading comment\n"
    "HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[]}\n"
    "\n"
    "%add_f32 (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n"
    "}\n"
    "\n"
    "ENTRY main {\n"
    "  x = f32[4]{0} parameter(0)\n"
    "  c = f32[] constant(0)\n"
    "  ROOT r = f32[] reduce(x, c), dimensions={0}, to_apply=add_f32, metadata={op_name=\"sum\" source_line=3}\n"
    "}\n";

TEST(parses_small_module) {
  FxError err;
  IrModule *m = parse(kSmall, &err);
  CHECK(m != NULL);
  if (!m) return;
  CHECK_STR(m->name, "jit_f");
  CHECK_STR(m->header_attrs, ", entry_computation_layout={(f32[4]{0})->f32[]}");
  CHECK(m->ncomps == 2);
  CHECK(m->entry == m->comps[1]);
  CHECK(m->entry->is_entry);
  CHECK(m->comps[0]->has_signature && !m->entry->has_signature);
  IrInstr *r = ir_module_find_instr(m, "r");
  CHECK(r && r->is_root && m->entry->root == r);
  CHECK(r && r->op == IR_OP_REDUCE && r->noperands == 2);
  CHECK(r && ir_attr_comp(r, "to_apply") == m->comps[0]);
  CHECK(r && r->loc.line == 13 && r->loc.col == 8);
  CHECK_STR(r ? r->loc.file : NULL, "t.hlo");
  CHECK_STR(r ? ir_attr_text(r, "metadata") : NULL, "{op_name=\"sum\" source_line=3}");
  IrInstr *x = ir_module_find_instr(m, "x");
  CHECK(x && x->param_number == 0 && m->entry->params[0] == x && m->entry->nparams == 1);
  IrInstr *c = ir_module_find_instr(m, "c");
  CHECK(c && c->literal && c->literal->count == 1 && c->literal->values[0] == 0.0);
  ir_module_free(m);
}

TEST(prints_canonical_form) {
  char *s = roundtrip(kSmall);
  CHECK_STR(s,
            "HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[]}\n"
            "\n"
            "%add_f32 (a: f32[], b: f32[]) -> f32[] {\n"
            "  %a = f32[] parameter(0)\n"
            "  %b = f32[] parameter(1)\n"
            "  ROOT %s = f32[] add(%a, %b)\n"
            "}\n"
            "\n"
            "ENTRY %main {\n"
            "  %x = f32[4]{0} parameter(0)\n"
            "  %c = f32[] constant(0)\n"
            "  ROOT %r = f32[] reduce(%x, %c), dimensions={0}, to_apply=%add_f32, metadata={op_name=\"sum\" source_line=3}\n"
            "}\n");
  fx_free(s);
}

TEST(format_instr_line) {
  FxError err;
  IrModule *m = parse(kSmall, &err);
  CHECK(m != NULL);
  if (!m) return;
  char buf[256];
  int n = hlo_format_instr(ir_module_find_instr(m, "s"), buf, sizeof buf);
  CHECK_STR(buf, "%s = f32[] add(%a, %b)");
  CHECK(n == (int)strlen("%s = f32[] add(%a, %b)"));
  char tiny[6];
  n = hlo_format_instr(ir_module_find_instr(m, "s"), tiny, sizeof tiny);
  CHECK_STR(tiny, "%s = ");
  CHECK(n == 22);
  ir_module_free(m);
}

TEST(error_is_located_with_source) {
  FxError err;
  IrModule *m = parse("HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT q = f32[2] frobnicate(p)\n}\n", &err);
  CHECK(m == NULL);
  CHECK(err.set);
  CHECK_STR(err.file, "t.hlo");
  CHECK(err.line == 5 && err.col == 19);
  CHECK_STR(err.msg, "unknown opcode 'frobnicate'");
  CHECK_STR(err.source, "  ROOT q = f32[2] frobnicate(p)");
}

int main(void) {
  RUN(parses_small_module);
  RUN(prints_canonical_form);
  RUN(format_instr_line);
  RUN(error_is_located_with_source);
  return check_summary();
}
