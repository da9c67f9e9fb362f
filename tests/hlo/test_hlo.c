/* test_hlo.c — HLO text in and out: parsing every construct real dumps use, locations, the
 * canonical printer and its fixed point, and located errors. */
#include <stdlib.h>

#include "../check.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/ir/ir.h"

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


/* How fx_error_print shows err (the message, the source line and the caret). */
static char *printed(const FxError *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  fx_error_print(f, err);
  fclose(f);
  return buf;
}

/* A line longer than the error's source buffer is cut around the column, on UTF-8 character
 * boundaries, with "..." where it was cut, and the caret stays under the column. */
TEST(long_source_lines_are_cut_around_the_column) {
  char line[1200];
  size_t n = 0;
  for (int k = 0; k < 300; k++) n += (size_t)snprintf(line + n, sizeof line - n, "\xc3\xa9"); /* 300 x U+00E9, 2 bytes each */
  n += (size_t)snprintf(line + n, sizeof line - n, " BAD tail");
  FxError err;
  fx_error_clear(&err);
  fx_error_set(&err, "t.hlo", 3, 602, "here"); /* 'B' is byte 602 */
  fx_error_source_window(&err, line, n);
  CHECK(strncmp(err.source, "...", 3) == 0);
  CHECK(((unsigned char)err.source[3] & 0xC0) != 0x80); /* not cut inside a character */
  CHECK(strstr(err.source, " BAD tail") != NULL);
  CHECK(err.caret > 0 && strncmp(err.source + err.caret - 1, "BAD", 3) == 0);
  char *out = printed(&err);
  /* The caret line: two spaces of indent, then one column per character before 'B'. */
  const char *caret_line = strrchr(out, '\n');
  while (caret_line > out && caret_line[-1] != '\n') caret_line--;
  const char *src_line = strchr(out, '\n') + 1;
  size_t cols = 0;
  for (const char *c = src_line + 2; *c && strncmp(c, "BAD", 3) != 0; c++)
    if (((unsigned char)*c & 0xC0) != 0x80) cols++;
  CHECK(strspn(caret_line, " ") == 2 + cols && caret_line[2 + cols] == '^');
  free(out);

  /* An error early in a long line keeps the line's start, cut at its end. */
  fx_error_clear(&err);
  fx_error_set(&err, "t.hlo", 3, 5, "early");
  fx_error_source_window(&err, line, n);
  CHECK(err.caret == 0);
  CHECK(strncmp(err.source, "\xc3\xa9\xc3\xa9", 4) == 0);
  size_t sl = strlen(err.source);
  CHECK(sl < sizeof err.source && strcmp(err.source + sl - 3, "...") == 0);
  CHECK((unsigned char)err.source[sl - 4] == 0xA9); /* the last character before "..." is whole */
  out = printed(&err);
  CHECK(strstr(out, "\n    ^\n") != NULL); /* byte 5 starts the third character: indent of 2, then 2 */
  free(out);

  /* A short line is kept whole, the caret at the column. */
  fx_error_clear(&err);
  fx_error_set(&err, "t.hlo", 1, 3, "short");
  fx_error_source_window(&err, "ab?cd", 5);
  CHECK_STR(err.source, "ab?cd");
  CHECK(err.caret == 0);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    return NULL;
  }
  if (b) b[n] = 0;
  if (len) *len = (size_t)n;
  fclose(f);
  return b;
}

#define ALL_OPS "tests/hlo/data/all_ops.hlo"

TEST(all_ops_load_verify_and_print_back) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_load_file(ALL_OPS, &err);
  if (!m) fx_error_print(stderr, &err);
  CHECK(m != NULL);
  if (!m) return;
  fx_error_clear(&err);
  CHECK(ir_verify(m, &err));
  CHECK_STR(m->header_attrs,
            ", entry_computation_layout={(f32[4,8]{1,0}, s32[], u32[2]{0})->(f32[4,8]{1,0}, s32[])}, is_scheduled=false");
  CHECK_STR(m->prologue, "FileNames\n1 \"all_ops.py\"");
  CHECK_STR(m->epilogue, "StackFrames\n1 {file_location_id=1 parent_frame_id=1}");
  CHECK_STR(m->source_file, ALL_OPS);
  CHECK_STR(m->entry->name, "main");
  /* Layout tiles and memory space, bounded dynamic dims, nested tuples, tokens. */
  IrInstr *t = ir_module_find_instr(m, "tiled");
  CHECK(t && t->shape.has_layout && t->shape.minor_to_major[0] == 1);
  CHECK_STR(t ? t->shape.layout_extra : NULL, "T(8,128)(2,1)S(1)");
  IrInstr *d = ir_module_find_instr(m, "dyn");
  CHECK(d && d->shape.rank == 1 && d->shape.dims[0] == 8 && d->shape.dynamic && d->shape.dynamic[0]);
  IrInstr *nt = ir_module_find_instr(m, "nested");
  CHECK(nt && nt->shape.type == IR_TUPLE && nt->shape.ntuple == 2 && nt->shape.tuple[1].type == IR_TOKEN);
  CHECK(nt && nt->shape.tuple[0].ntuple == 2 && nt->shape.tuple[0].tuple[1].tuple[1].type == IR_PRED);
  IrInstr *cp = ir_module_find_instr(m, "copy");
  CHECK(cp && cp->shape.minor_to_major[0] == 0 && cp->shape.minor_to_major[1] == 1);
  /* Literals: decoded values, and elided ones kept as text. */
  IrInstr *ca = ir_module_find_instr(m, "c_arr");
  CHECK(ca && ca->literal && ca->literal->count == 4);
  CHECK(ca && ca->literal->values[1] == -2.5 && isinf(ca->literal->values[2]) && isnan(ca->literal->values[3]));
  CHECK_STR(ca ? ca->literal->text : NULL, "{ { 1, -2.5 }, { inf, -nan } }");
  IrInstr *cpred = ir_module_find_instr(m, "c_pred");
  CHECK(cpred && cpred->literal->count == 3 && cpred->literal->values[0] == 1 && cpred->literal->values[1] == 0);
  IrInstr *cb = ir_module_find_instr(m, "c_big");
  CHECK(cb && cb->literal->elided && cb->literal->values == NULL);
  /* Called computations: resolved (also when defined after the use), fusions know their caller. */
  IrInstr *fus = ir_module_find_instr(m, "fus");
  IrComputation *fc = fus ? ir_fused_computation(fus) : NULL;
  CHECK(fc && strcmp(fc->name, "fused_computation") == 0 && fc->fusion_instr == fus);
  CHECK_STR(fus ? ir_fusion_kind(fus) : NULL, "kLoop");
  IrInstr *srt = ir_module_find_instr(m, "srt");
  CHECK(srt && ir_attr_comp(srt, "to_apply") == ir_module_find_computation(m, "sort_cmp"));
  IrInstr *cnd2 = ir_module_find_instr(m, "cnd2");
  const IrAttr *bc = cnd2 ? ir_attr_get(cnd2, "branch_computations") : NULL;
  CHECK(bc && bc->kind == IR_ATTR_COMP && bc->ncomps == 2 && bc->comps_braced);
  CHECK(bc && bc->comps[1] == ir_module_find_computation(m, "on_false"));
  IrInstr *loop = ir_module_find_instr(m, "loop");
  CHECK(loop && ir_attr_comp(loop, "condition") == ir_module_find_computation(m, "cond"));
  CHECK_STR(loop ? ir_attr_text(loop, "backend_config") : NULL, "{\"known_trip_count\":{\"n\":\"10\"}}");
  /* Attributes fxplain does not interpret are kept verbatim, in order. */
  IrInstr *cc = ir_module_find_instr(m, "cc");
  CHECK(cc && cc->nattrs == 3 && strcmp(cc->attrs[2].key, "api_version") == 0);
  CHECK_STR(cc ? ir_attr_text(cc, "backend_config") : NULL, "\"{\\\"k\\\": 1}\"");
  CHECK_STR(cc ? ir_attr_text(cc, "custom_call_target") : NULL, "\"Sharding\"");
  IrInstr *lt = ir_module_find_instr(m, "lt");
  CHECK_STR(lt ? ir_attr_text(lt, "type") : NULL, "TOTALORDER");
  IrInstr *p = ir_module_find_instr(m, "p");
  CHECK_STR(p ? ir_attr_text(p, "sharding") : NULL, "{replicated}");
  ir_module_free(m);
  /* Printing is a fixed point. */
  size_t len;
  char *text = slurp(ALL_OPS, &len);
  CHECK(text != NULL);
  char *printed = text ? roundtrip(text) : NULL;
  CHECK(printed != NULL);
  CHECK_CONTAINS(printed, "\n  %tiled = f32[4,8]{1,0:T(8,128)(2,1)S(1)} parameter(10)\n");
  CHECK_CONTAINS(printed, "\n  %cmp = pred[4,8]{1,0} compare(%p, %abs), direction=GE\n");
  CHECK_CONTAINS(printed, "\n  %cnd2 = f32[4,8]{1,0} conditional(%n.44, %p, %p), branch_computations={%on_true, %on_false}\n");
  CHECK_CONTAINS(printed, "\n}\n\nStackFrames\n1 {file_location_id=1 parent_frame_id=1}\n");
  fx_free(printed);
  free(text);
}

/* What XLA's parser takes besides the full form: an instruction without a shape (inferred from its
 * operands), a broadcast of a scalar without dimensions= (they are {}), broadcast dimensions that do
 * not increase (a transposing broadcast: XLA's verifier asks only that sizes match). */
TEST(xla_parser_shorthands) {
  FxError err;
  IrModule *m = parse("HloModule m\n"
                      "add { lhs = f32[] parameter(0)\n rhs = f32[] parameter(1)\n ROOT add = add(lhs, rhs) }\n"
                      "ENTRY e { p = f32[2,3]{0,1} parameter(0)\n z = f32[] constant(0)\n"
                      " b = f32[3,2] broadcast(z)\n t = transpose(p), dimensions={1,0}\n s = add(t, b)\n"
                      " w = f32[2,2,3] broadcast(s), dimensions={2,0}\n"
                      " ROOT r = reduce(w, z), dimensions={0,1}, to_apply=add }\n",
                      &err);
  CHECK(m != NULL);
  if (!m) {
    fx_error_print(stderr, &err);
    return;
  }
  static const char *const want[][2] = {{"add", "f32[]"}, {"t", "f32[3,2]"}, {"s", "f32[3,2]"}, {"r", "f32[3]"}};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    IrInstr *x = ir_module_find_instr(m, want[k][0]);
    char buf[64] = "";
    if (x) ir_shape_format(&x->shape, false, buf, sizeof buf);
    CHECK_STR(buf, want[k][1]);
  }
  IrInstr *b = ir_module_find_instr(m, "b");
  CHECK_STR(b ? ir_attr_text(b, "dimensions") : NULL, "{}");
  ir_module_free(m);
  /* and what it still refuses: a shape that does not follow from the operands */
  CHECK(parse("HloModule m\nENTRY e { p = f32[2] parameter(0)\n ROOT c = convert(p) }\n", &err) == NULL);
  CHECK(strstr(err.msg, "has no shape") != NULL);
  CHECK(parse("HloModule m\nENTRY e { p = f32[2] parameter(0)\n ROOT b = f32[2,2] broadcast(p) }\n", &err) == NULL);
  CHECK(strstr(err.msg, "needs the attribute 'dimensions'") != NULL);
  /* XLA's verifier with allow_mixed_precision (its test base's) takes an f16 copy declared f32 */
  static const char *mixed = "HloModule m\nENTRY e { p = f16[2] parameter(0)\n ROOT c = f32[2] copy(p) }\n";
  CHECK(parse(mixed, &err) == NULL);
  CHECK(strstr(err.msg, "shape mismatch") != NULL);
  IrVerifyOptions lax = {.allow_mixed_precision = true};
  fx_error_clear(&err);
  IrModule *mm = hlo_parse_with(mixed, strlen(mixed), "t.hlo", &lax, &err);
  CHECK(mm != NULL);
  ir_module_free(mm);
}

TEST(operands_may_come_before_their_definition) {
  char *s = roundtrip("HloModule m\n\nENTRY e {\n  ROOT r = f32[2] add(n, p)\n  n = f32[2] negate(p)\n  p = f32[2] parameter(0)\n}\n");
  CHECK_STR(s, "HloModule m\n\nENTRY %e {\n  %p = f32[2] parameter(0)\n  %n = f32[2] negate(%p)\n  ROOT %r = f32[2] add(%n, %p)\n}\n");
  fx_free(s);
}

TEST(repeated_names_across_computations_are_renamed) {
  FxError err;
  IrModule *m = parse("HloModule m\n\nf {\n  a = f32[] parameter(0)\n  ROOT n = f32[] negate(a)\n}\n\n"
                      "ENTRY e {\n  a = f32[] parameter(0)\n  n = f32[] call(a), to_apply=f\n  ROOT r = f32[] add(a, n)\n}\n",
                      &err);
  CHECK(m != NULL);
  if (!m) return;
  IrComputation *e = m->entry;
  CHECK(e->ninstrs == 3);
  CHECK_STR(e->instrs[0]->name, "a.5");
  CHECK_STR(e->instrs[1]->name, "n.6");
  CHECK(e->root->operands[0] == e->instrs[0] && e->root->operands[1] == e->instrs[1]);
  CHECK(e->instrs[0]->loc.line == 9 && e->instrs[0]->loc.col == 3);
  CHECK(ir_module_find_instr(m, "a")->parent == m->comps[0]);
  char *s = hlo_print_string(m);
  CHECK_CONTAINS(s, "  ROOT %r = f32[] add(%a.5, %n.6)\n");
  ir_module_free(m);
  char *s2 = roundtrip(s);
  CHECK_STR(s2, s);
  fx_free(s);
  fx_free(s2);
}

TEST(without_entry_keyword_the_last_computation_is_the_entry) {
  char *s = roundtrip("HloModule m\nf {\n ROOT a = f32[] parameter(0)\n}\ng {\n ROOT b = s32[] parameter(0)\n}\n");
  CHECK_STR(s, "HloModule m\n\n%f {\n  ROOT %a = f32[] parameter(0)\n}\n\nENTRY %g {\n  ROOT %b = s32[] parameter(0)\n}\n");
  fx_free(s);
}

TEST(without_header_the_module_is_named_underscore) {
  /* XLA's parser takes a module without `HloModule NAME` (its tests mostly write one so) */
  char *s = roundtrip("f {\n ROOT a = f32[] parameter(0)\n}\ne {\n p = s8[] parameter(0)\n n = s8[] negate(p)\n}\n");
  CHECK_STR(s, "HloModule _\n\n%f {\n  ROOT %a = f32[] parameter(0)\n}\n\nENTRY %e {\n  %p = s8[] parameter(0)\n"
               "  ROOT %n = s8[] negate(%p)\n}\n");
  fx_free(s);
  char *t = roundtrip("// a comment first\nENTRY e {\n ROOT p = f32[] parameter(0)\n}\n");
  CHECK_STR(t, "HloModule _\n\nENTRY %e {\n  ROOT %p = f32[] parameter(0)\n}\n");
  fx_free(t);
}

TEST(an_operand_may_be_written_as_an_instruction) {
  /* XLA's parser takes `negate(s8[2] parameter(0))`: the operand is an instruction of its own */
  char *s = roundtrip("e {\n  n = s8[2] negate(s8[2] parameter(0))\n  ROOT c = s8[4] concatenate(n, s8[2] abs(s8[2] "
                      "parameter(1))), dimensions={0}\n}\n");
  CHECK_STR(s, "HloModule _\n\nENTRY %e {\n  %parameter.1 = s8[2] parameter(0)\n  %n = s8[2] negate(%parameter.1)\n"
               "  %parameter.3 = s8[2] parameter(1)\n  %abs.2 = s8[2] abs(%parameter.3)\n"
               "  ROOT %c = s8[4] concatenate(%n, %abs.2), dimensions={0}\n}\n");
  fx_free(s);
  FxError err;
  CHECK(parse("e {\n  ROOT n = f32[2] negate(f32[2] nosuchop(0))\n}\n", &err) == NULL);
  CHECK(strstr(err.msg, "unknown opcode 'nosuchop'") != NULL);
}

TEST(comments_and_line_breaks_inside_instructions) {
  char *s = roundtrip("/* file comment */ HloModule m // trailing\n\nENTRY e {\n"
                      "  p = (f32[], /*index=1*/s32[]) parameter(0) // why\n"
                      "  ROOT q = s32[]\n    get-tuple-element(p),\n    index=1\n}\n");
  /* Comments between the header and the first computation are kept (the prologue); others go. */
  CHECK_STR(s, "HloModule m\n\n// trailing\n\nENTRY %e {\n  %p = (f32[], s32[]) parameter(0)\n  ROOT %q = s32[] get-tuple-element(%p), index=1\n}\n");
  fx_free(s);
}

TEST(sections_after_computations_are_kept) {
  const char *t = "HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n\nFileNames\n1 \"a.py\"\n2 \"b.py\"\n\n"
                  "FileLocations\n1 {file_name_id=1 function_name_id=1 line=9 end_line=9 column=25 end_column=74}\n";
  FxError err;
  IrModule *m = parse(t, &err);
  CHECK(m && m->prologue == NULL);
  CHECK_STR(m ? m->epilogue : NULL,
            "FileNames\n1 \"a.py\"\n2 \"b.py\"\n\nFileLocations\n1 {file_name_id=1 function_name_id=1 line=9 end_line=9 column=25 end_column=74}");
  ir_module_free(m);
  char *s = roundtrip(t);
  CHECK_STR(s, "HloModule m\n\nENTRY %e {\n  ROOT %p = f32[] parameter(0)\n}\n\n"
               "FileNames\n1 \"a.py\"\n2 \"b.py\"\n\nFileLocations\n1 {file_name_id=1 function_name_id=1 line=9 end_line=9 column=25 end_column=74}\n");
  fx_free(s);
}

TEST(print_to_file_matches_string) {
  FxError err;
  IrModule *m = parse(kSmall, &err);
  CHECK(m != NULL);
  if (!m) return;
  FILE *f = tmpfile();
  CHECK(f && hlo_print(f, m, &err));
  if (f) {
    rewind(f);
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    char *s = hlo_print_string(m);
    CHECK_STR(buf, s);
    fx_free(s);
    fclose(f);
  }
  ir_module_free(m);
}

TEST(missing_file_is_an_error) {
  FxError err;
  fx_error_clear(&err);
  CHECK(hlo_load_file("tests/hlo/data/no-such-file.hlo", &err) == NULL);
  /* located at the file, as every file fxplain reads (fx_read_file) */
  CHECK_STR(err.file, "tests/hlo/data/no-such-file.hlo");
  CHECK_STR(err.msg, "cannot open it: No such file or directory");
}

/* Every prefix of a real module either loads or fails with one located error; none crashes. */
TEST(every_truncation_fails_cleanly) {
  size_t len;
  char *text = slurp(ALL_OPS, &len);
  CHECK(text != NULL);
  if (!text) return;
  int loaded = 0, unlocated = 0;
  for (size_t n = 0; n < len; n++) {
    FxError err;
    fx_error_clear(&err);
    IrModule *m = hlo_parse(text, n, "cut.hlo", &err);
    if (m) loaded++;
    else if (!err.set || err.line < 1 || err.col < 1) unlocated++;
    ir_module_free(m);
  }
  /* Only cuts inside or after the trailing StackFrames section still hold a whole module. */
  CHECK(loaded > 0 && loaded < 60);
  CHECK(unlocated == 0);
  free(text);
}

/* With the Nth allocation failing, for every N, parsing and printing end in a clean error. */
TEST(allocation_failures_are_clean_errors) {
  size_t len;
  char *text = slurp(ALL_OPS, &len);
  CHECK(text != NULL);
  if (!text) return;
  int failures = 0;
  for (long n = 0;; n++) {
    FxError err;
    fx_error_clear(&err);
    fx_alloc_fail_after(n);
    IrModule *m = hlo_parse(text, len, "oom.hlo", &err);
    char *s = m ? hlo_print_string(m) : NULL;
    fx_alloc_fail_after(-1);
    if (m && s) {
      fx_free(s);
      ir_module_free(m);
      break;
    }
    if (!m) {
      failures++;
      if (!err.set) {
        fprintf(stderr, "allocation %ld: no error\n", n);
        CHECK(err.set);
      }
    }
    ir_module_free(m);
    if (n > 100000) {
      CHECK(!"allocation count does not converge");
      break;
    }
  }
  CHECK(failures > 10);
  free(text);
}

int main(void) {
  RUN(parses_small_module);
  RUN(prints_canonical_form);
  RUN(format_instr_line);
  RUN(error_is_located_with_source);
  RUN(long_source_lines_are_cut_around_the_column);
  RUN(all_ops_load_verify_and_print_back);
  RUN(xla_parser_shorthands);
  RUN(operands_may_come_before_their_definition);
  RUN(repeated_names_across_computations_are_renamed);
  RUN(without_entry_keyword_the_last_computation_is_the_entry);
  RUN(without_header_the_module_is_named_underscore);
  RUN(an_operand_may_be_written_as_an_instruction);
  RUN(comments_and_line_breaks_inside_instructions);
  RUN(sections_after_computations_are_kept);
  RUN(print_to_file_matches_string);
  RUN(missing_file_is_an_error);
  RUN(every_truncation_fails_cleanly);
  RUN(allocation_failures_are_clean_errors);
  return check_summary();
}
