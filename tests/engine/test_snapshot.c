/* test_snapshot.c — stage snapshots that share what they did not change (ir_module_snapshot):
 * the copy prints the same as its source, shares its names, shapes and literals but not its
 * instructions, survives its source being freed first, leaves the source alone when a pass edits
 * it, and a long chain of snapshots of snapshots starts over with a deep copy. Memory figures are
 * measured in bench/snapshot_memory.c, not here. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../../explain/explain.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../repl/session.h"

static const char *const text =
    "HloModule snap\n"
    "\n"
    "%add_f32 (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(%a, %b)\n"
    "}\n"
    "\n"
    "ENTRY %main (x: f32[4,8], y: f32[4,8]) -> (f32[4], f32[4,8]) {\n"
    "  %x = f32[4,8]{1,0} parameter(0), metadata={op_name=\"jit(f)/x\" source_file=\"f.py\" source_line=3}\n"
    "  %y = f32[4,8]{1,0} parameter(1)\n"
    "  %c = f32[] constant(1.5)\n"
    "  %k = f32[4,8]{1,0} broadcast(%c), dimensions={}\n"
    "  %m = f32[4,8]{1,0} multiply(%x, %k), metadata={op_name=\"jit(f)/mul\"}\n"
    "  %m2 = f32[4,8]{1,0} multiply(%k, %x)\n"
    "  %e = f32[4,8]{1,0} exponential(%m)\n"
    "  %z = f32[] constant(0)\n"
    "  %r = f32[4]{0} reduce(%e, %z), dimensions={1}, to_apply=%add_f32\n"
    "  %d = f32[4,8]{1,0} add(%m2, %y)\n"
    "  ROOT %t = (f32[4]{0}, f32[4,8]{1,0}) tuple(%r, %d)\n"
    "}\n";

static IrModule *parse(void) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "snap.hlo", &err);
  if (!m) fx_error_print(stderr, &err);
  return m;
}

TEST(a_snapshot_prints_the_same_and_shares_immutable_parts) {
  IrModule *m = parse();
  IrModule *s = ir_module_snapshot(m);
  CHECK(s != NULL);
  char *a = hlo_print_string(m), *b = hlo_print_string(s);
  CHECK_STR(b, a);
  fx_free(a);
  fx_free(b);
  IrInstr *mx = ir_module_find_instr(m, "m"), *sx = ir_module_find_instr(s, "m");
  CHECK(mx != sx);                                /* its own instruction */
  CHECK(mx->operands != sx->operands);            /* and arrays a pass may edit */
  CHECK(mx->attrs != sx->attrs);
  CHECK(mx->name == sx->name);                    /* shared: name, shape, attribute text */
  CHECK(mx->shape.dims == sx->shape.dims);
  CHECK(mx->attrs[0].text == sx->attrs[0].text);
  CHECK(ir_module_find_instr(m, "c")->literal == ir_module_find_instr(s, "c")->literal);
  CHECK(s->arena.total < m->arena.total);         /* the copy holds less */
  /* A deep copy shares nothing. */
  IrModule *d = ir_module_clone(m);
  CHECK(ir_module_find_instr(d, "m")->name != mx->name);
  CHECK(ir_module_bytes(d) > d->arena.total);     /* its name indexes count too */
  ir_module_free(d);
  ir_module_free(s);
  ir_module_free(m);
}

TEST(the_source_may_go_first) {
  IrModule *m = parse();
  char *a = hlo_print_string(m);
  IrModule *s1 = ir_module_snapshot(m);
  IrModule *s2 = ir_module_snapshot(s1);
  ir_module_free(m);  /* s1 and s2 still point into its arena */
  ir_module_free(s1); /* s2 into both */
  char *b = hlo_print_string(s2);
  CHECK_STR(b, a);
  CHECK_STR(ir_module_find_instr(s2, "r")->shape.minor_to_major ? "layout" : "", "layout");
  fx_free(a);
  fx_free(b);
  ir_module_free(s2);
}

TEST(editing_a_snapshot_leaves_the_source_alone) {
  IrModule *m = parse();
  char *before = hlo_print_string(m);
  IrModule *s = ir_module_snapshot(m);
  IrInstr *e = ir_module_find_instr(s, "e");
  CHECK(ir_instr_rename(e, "exp.renamed"));
  ir_attr_set_text(ir_module_find_instr(s, "r"), "dimensions", "{0}");
  int64_t dims[1] = {32};
  IrShape flat = ir_shape_array(&s->arena, IR_F32, 1, dims);
  CHECK(ir_shape_copy(&s->arena, &ir_module_find_instr(s, "k")->shape, &flat));
  char *after = hlo_print_string(m);
  CHECK_STR(after, before);
  CHECK(ir_module_find_instr(m, "e") != NULL);
  CHECK(ir_module_find_instr(s, "exp.renamed") != NULL);
  fx_free(before);
  fx_free(after);
  ir_module_free(s);
  ir_module_free(m);
}

TEST(a_pipeline_stage_shares_with_the_stage_before) {
  IrModule *m = parse();
  ExplainLog *log = explain_log_new();
  DecisionSink sink = explain_log_sink(log);
  PassSettings st;
  pass_settings_default(&st);
  FxError err;
  fx_error_clear(&err);
  explain_log_begin_stage(log, 1, "cse");
  PassContext cx = {&sink, device_default(), &st, 1, "cse", &err, NULL, false};
  IrModule *out = NULL;
  bool changed = false;
  CHECK(pass_run_stage(&pass_cse, m, &cx, &out, &changed));
  CHECK(changed && out); /* m2 is m with its operands swapped */
  CHECK(ir_module_find_instr(out, "x")->name == ir_module_find_instr(m, "x")->name);
  CHECK(ir_module_find_instr(m, "m2") != NULL);
  ir_module_free(m); /* the stage outlives its input */
  char *t = hlo_print_string(out);
  CHECK(strstr(t, "metadata={op_name=\"jit(f)/x\" source_file=\"f.py\" source_line=3}") != NULL);
  fx_free(t);
  ir_module_free(out);
  explain_log_free(log);
}

TEST(a_long_chain_starts_over) {
  IrModule *m = parse();
  IrModule *cur = m;
  for (int k = 0; k < IR_MAX_BORROWED + 10; k++) {
    IrModule *next = ir_module_snapshot(cur);
    CHECK(next->nborrowed <= IR_MAX_BORROWED);
    if (cur != m) ir_module_free(cur);
    cur = next;
  }
  CHECK(cur->nborrowed < 12); /* the deep copy at IR_MAX_BORROWED started a new chain */
  char *a = hlo_print_string(m), *b = hlo_print_string(cur);
  CHECK_STR(b, a);
  fx_free(a);
  fx_free(b);
  ir_module_free(m);
  ir_module_free(cur);
}

/* Runs one shell command on s; its output (malloc'd) in *out. */
static bool shell(Session *s, const char *line, char **out) {
  char copy[256];
  snprintf(copy, sizeof copy, "%s", line);
  char *argv[8];
  int argc = 0;
  for (char *w = strtok(copy, " "); w && argc < 7; w = strtok(NULL, " ")) argv[argc++] = w;
  argv[argc] = NULL;
  size_t len = 0;
  FILE *f = open_memstream(out, &len);
  s->out = s->err = f;
  FxError err;
  fx_error_clear(&err);
  const ReplCommand *c = repl_command_lookup(argv[0]);
  bool ok = c && c->run(s, argc, argv, &err);
  if (!ok && err.set) fprintf(f, "error: %s\n", err.msg);
  fclose(f);
  return ok;
}

TEST(show_stats_reports_the_stage_memory) {
  Session *s = session_new(stdout, stderr);
  explain_engine_set_input(&s->eng, parse());
  char *out;
  CHECK(shell(s, "show-stats", &out));
  CHECK(strstr(out, "stage memory") == NULL); /* the input alone: the snapshots line says it */
  free(out);
  CHECK(shell(s, "step all", &out));
  free(out);
  CHECK(shell(s, "show-stats", &out));
  CHECK_CONTAINS(out, "  snapshots       18 stages in ");
  CHECK_CONTAINS(out, "  stage memory    ");
  CHECK_CONTAINS(out, ": snapshots ");
  CHECK_CONTAINS(out, ", name indexes ");
  CHECK_CONTAINS(out, ", decision log ");
  CHECK_CONTAINS(out, " decisions)\n");
  free(out);
  s->json = true;
  CHECK(shell(s, "show-stats", &out));
  CHECK_CONTAINS(out, "\"snapshot_bytes\":");
  CHECK_CONTAINS(out, "\"index_bytes\":");
  CHECK_CONTAINS(out, "\"log_bytes\":");
  CHECK_CONTAINS(out, "\"stage_bytes\":");
  free(out);
  session_free(s);
}

int main(void) {
  RUN(a_snapshot_prints_the_same_and_shares_immutable_parts);
  RUN(the_source_may_go_first);
  RUN(editing_a_snapshot_leaves_the_source_alone);
  RUN(a_pipeline_stage_shares_with_the_stage_before);
  RUN(a_long_chain_starts_over);
  RUN(show_stats_reports_the_stage_memory);
  return check_summary();
}
