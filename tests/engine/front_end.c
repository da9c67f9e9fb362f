/* front_end.c — a second front end to fxplain's engine, with no shell: it proves that everything
 * a user asks the shell is answered by explain/engine.h alone. It links the engine library and
 * the compiler only (not repl/, viz/ or runtime/), and, as a notebook or a language server would:
 * loads a .fx program, runs a pipeline to its end, asks the kernels of a stage, asks `why` for a
 * pair of instructions and for one name, reads the decision log by number, writes a decision as
 * JSON through the one writer, and asks what a change of setting does to the decisions. The facts checked are the ones the shell prints for the same
 * program (`fxplain -e 'load tests/engine/softmax.fx; step all; kernels; why m e'`). It also loads
 * XLA's own dump (tests/xla_dumps/data/mlp) and asks which instructions and kernels came from a
 * line of the user's Python, as `load DIR; goto priority-fusion; find mlp.py:10` does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../explain/compare.h"
#include "../../explain/engine.h"
#include "../../explain/xla_dump.h"
#include "../check.h"

#define PROGRAM "tests/engine/softmax.fx"

static bool load(ExplainEngine *e) {
  FxError err;
  fx_error_clear(&err);
  if (!explain_engine_init(e)) return false;
  if (!explain_engine_load_file(e, PROGRAM, &err)) {
    fx_error_print(stderr, &err);
    explain_engine_fini(e);
    return false;
  }
  return true;
}

TEST(load_run_and_kernels) {
  ExplainEngine e;
  CHECK(load(&e));
  if (!e.stages) return;
  FxError err;
  fx_error_clear(&err);
  CHECK_STR(explain_engine_pipeline(&e)->name, "classic");
  CHECK_STR(explain_engine_module(&e, 0)->name, "softmax");
  const KernelPlan *p0 = explain_engine_plan(&e, 0, &err);
  CHECK(p0 && p0->ncompute == 7);
  /* The plan is kept with the stage: asking again gives the same one. */
  CHECK(explain_engine_plan(&e, 0, &err) == p0);
  int last = explain_engine_last_stage(&e);
  CHECK(explain_engine_ensure(&e, last, &err));
  CHECK(e.nstages == last + 1);
  e.cur = last;
  const KernelPlan *p = explain_engine_plan(&e, last, &err);
  CHECK(p && p->ncompute == 3);
  if (p) {
    const IrInstr *m = ir_module_find_instr(explain_engine_module(&e, last), "m");
    const PlanKernel *k = m ? plan_kernel_of(p, m) : NULL;
    CHECK(k && strcmp(k->name, "m") == 0 && k->kind == KERNEL_INPUT);
  }
  char what[128];
  explain_engine_stage_summary(&e, explain_engine_stage_of_pass(&e, "instruction-fusion", 0), what, sizeof what);
  CHECK_STR(what, "3 fused, 7 rejected");
  /* A finished pipeline says so, and leaves the stages as they were. */
  CHECK(!explain_engine_run_next(&e, &err) && strstr(err.msg, "is finished"));
  CHECK(e.nstages == last + 1);
  /* Another device builds the plan again; going back to a stage runs nothing. */
  e.device = *device_lookup("h100");
  const KernelPlan *ph = explain_engine_plan(&e, last, &err);
  CHECK(ph && ph->ncompute == 3);
  explain_engine_truncate(&e, 1);
  CHECK(e.nstages == 1 && e.cur == 0);
  explain_engine_fini(&e);
}

TEST(why_a_pair_and_a_name) {
  ExplainEngine e;
  CHECK(load(&e));
  if (!e.stages) return;
  FxError err;
  fx_error_clear(&err);
  CHECK(explain_engine_ensure(&e, explain_engine_last_stage(&e), &err));
  e.cur = explain_engine_last_stage(&e);
  ExplainWhyPair q;
  int unknown = 0;
  CHECK(explain_engine_why_pair(&e, "m", "e", &q, &unknown, &err));
  /* fusion-merger put e's fusion into both of its users (XLA 2021 merges into a user that is no
   * fusion yet), so m reaches e's copy in y's kernel directly and through s's kernel. */
  CHECK(q.have_split && q.apart && q.split->kind == EXPLAIN_SPLIT_PATH);
  CHECK_STR(explain_split_kind_name(q.split->kind), "path");
  CHECK(q.split->nboundaries == 3);
  bool direct = false;
  for (int k = 0; k < q.split->nboundaries; k++) {
    const ExplainBoundary *b = &q.split->boundaries[k];
    if (strcmp(b->from->name, "m") != 0 || strcmp(b->to->name, "fusion") != 0) continue;
    direct = b->bytes == 256 && b->decision && explain_engine_number(&e, b->decision) == 13 &&
             strcmp(b->decision->reason, "reduce_epilogue") == 0 && explain_record_by_number(e.log, 13) == b->decision;
  }
  CHECK(direct);
  CHECK_CONTAINS(q.relation, "m feeds e (in fusion) across 3 kernel boundaries");
  explain_why_pair_free(&q);

  /* e and s: together now (a copy of e runs in s's kernel), merged by fusion-merger; the earlier
   * rejection is superseded. */
  CHECK(explain_engine_why_pair(&e, "e", "s", &q, &unknown, &err));
  CHECK(q.have_split && !q.apart && q.split->kind == EXPLAIN_SPLIT_NONE);
  CHECK(q.n == 2 && q.final && q.final->accepted && explain_engine_number(&e, q.final) == 17);
  explain_why_pair_free(&q);

  /* A name at no stage is the front end's to report (it knows where the user typed it). */
  CHECK(!explain_engine_why_pair(&e, "m", "nothing.1", &q, &unknown, &err) && unknown == 2 && !err.set);

  ExplainWhyOne w;
  /* A name algsimp removed is followed to what it became. */
  CHECK(explain_engine_why_one(&e, "reshape.9", &w, &unknown, &err));
  CHECK(w.instr == NULL && w.last_seen == 1 && w.became && strcmp(w.became->name, "m") == 0);
  CHECK(w.n == 2 && explain_engine_number(&e, w.decisions[1]) == 2);
  explain_why_one_free(&w);
  CHECK(explain_engine_why_one(&e, "subtract.11", &w, &unknown, &err));
  CHECK(w.instr && w.kernel && strcmp(w.kernel->name, "fusion") == 0 && w.kernel->nmembers == 5);
  explain_why_one_free(&w);
  CHECK(explain_engine_why_one(&e, "y", &w, &unknown, &err));
  CHECK(w.instr && w.kernel && strcmp(w.kernel->name, "fusion") == 0);
  explain_why_one_free(&w);
  explain_engine_fini(&e);
}

TEST(decisions_as_json) {
  ExplainEngine e;
  CHECK(load(&e));
  if (!e.stages) return;
  FxError err;
  fx_error_clear(&err);
  CHECK(explain_engine_ensure(&e, explain_engine_last_stage(&e), &err));
  ExplainFilter f;
  explain_filter_init(&f);
  f.verdict = 0;
  f.reason = "reduce_epilogue";
  const ExplainRecord **res;
  int n = explain_query(e.log, &f, &res);
  CHECK(n >= 2);
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  JsonWriter w;
  json_init(&w, out);
  json_array_begin(&w);
  for (int k = 0; k < n; k++) explain_record_json(&w, res[k], explain_engine_number(&e, res[k]));
  json_array_end(&w);
  CHECK(json_done(&w));
  fclose(out);
  CHECK_CONTAINS(text, "{\"number\":7,\"stage\":9,\"pass\":\"instruction-fusion\",\"action\":\"fuse\",\"producer\":\"s\"");
  free(text);
  fx_free(res);
  explain_engine_fini(&e);
}

TEST(what_a_setting_changes) {
  ExplainEngine e;
  CHECK(load(&e));
  if (!e.stages) return;
  FxError err;
  fx_error_clear(&err);
  /* An operand budget of 3 splits a fusion: the engine runs the pipeline twice, on scratch copies. */
  PassSettings after = e.settings;
  after.operand_budget = 3;
  ExplainComparison c;
  CHECK(explain_compare_settings(&e, &e.settings, &e.device, &after, &e.device, false, &c, &err));
  CHECK(c.kernels_before == 3 && c.kernels_after == 4);
  CHECK(c.nchanges == 2 && c.one_run_only == 13);
  CHECK(e.nstages == 1); /* the engine's own stages are not touched */
  explain_comparison_free(&c);
  explain_engine_fini(&e);
}

TEST(a_broken_program_is_a_located_error) {
  ExplainEngine e;
  CHECK(explain_engine_init(&e));
  FxError err;
  fx_error_clear(&err);
  CHECK(!explain_engine_load_file(&e, "tests/engine/no-such-program.fx", &err));
  CHECK(err.set && strstr(err.msg, "cannot open it"));
  CHECK(!explain_engine_loaded(&e));
  explain_engine_fini(&e);
}

TEST(an_xla_dump_and_its_source_lines) {
  ExplainEngine e;
  CHECK(explain_engine_init(&e));
  FxError err;
  fx_error_clear(&err);
  const char *dir = "tests/xla_dumps/data/mlp";
  CHECK(xla_path_kind(dir) == XLA_PATH_FOLDER);
  CHECK(xla_path_kind("x/module_0001.jit_f.priority_fusion_dump.txt") == XLA_PATH_LOG);
  CHECK(xla_path_kind(PROGRAM) == XLA_PATH_OTHER);
  const DeviceProfile *switched = NULL;
  CHECK(explain_engine_load_xla(&e, dir, NULL, &switched, &err));
  if (!e.xla) {
    fx_error_print(stderr, &err);
    explain_engine_fini(&e);
    return;
  }
  /* The dump's one module, its snapshots as the `xla` pipeline; XLA compiled for an H100. */
  CHECK(e.xla->nmods == 1 && strcmp(e.xla->mods[0].name, "jit_f") == 0);
  CHECK_STR(explain_engine_pipeline(&e)->name, "xla");
  CHECK(explain_engine_last_stage(&e) == 6);
  CHECK(switched && strcmp(switched->name, "h100") == 0 && strcmp(e.device.name, "h100") == 0);
  int fs = xla_dump_fusion_stage(e.xla);
  CHECK(fs == 2);
  CHECK(explain_engine_ensure(&e, fs, &err));
  e.cur = fs;
  XlaFind f;
  CHECK(explain_engine_find(&e, "mlp.py:10", &f, &err));
  CHECK(f.n == 5 && f.stage == 2 && f.nkernels == 1 && f.has_positions);
  if (f.nkernels == 1) CHECK_STR(f.kernels[0]->name, "gemm_fusion_dot_general.1");
  xla_find_free(&f);
  CHECK(explain_engine_find(&e, "jit(f)/layer", &f, &err));
  CHECK(f.n == 5 && f.nkernels == 1);
  xla_find_free(&f);
  XlaSource src;
  char buf[1536];
  CHECK(explain_engine_source_of(&e, "tanh.0", &src, buf, sizeof buf));
  CHECK(src.line == 10 && src.file && strstr(src.file, "mlp.py") && src.function && strcmp(src.function, "f") == 0);
  /* Each kernel's source lines: the matmul fusion holds lines 10 and 11. */
  const KernelPlan *p = explain_engine_plan(&e, fs, &err);
  XlaKernelSources *ks = NULL;
  int n = p ? xla_kernel_sources(explain_engine_module(&e, fs), p, &ks) : -1;
  bool gemm = false;
  for (int k = 0; k < n; k++)
    if (strcmp(ks[k].kernel, "gemm_fusion_dot_general.1") == 0)
      gemm = ks[k].n == 2 && strcmp(ks[k].lines[0], "mlp.py:10") == 0 && strcmp(ks[k].lines[1], "mlp.py:11") == 0;
  CHECK(gemm);
  if (n >= 0) fx_free(ks);
  /* A module the folder does not hold is an error, and the dump stays loaded. */
  CHECK(!explain_engine_load_xla(&e, dir, "7", &switched, &err) && strstr(err.msg, "no module '7'"));
  CHECK(e.xla && e.nstages > fs);
  explain_engine_fini(&e);
}

/* A name from the user's dump inside a jitted function (a computation called once) is followed
 * through the call-inliner's copy to the kernel it ends in. */
TEST(why_follows_a_name_through_inlining) {
  static const char text[] =
      "HloModule jit_f\n\n"
      "inner.2 {\n"
      "  x.3 = f32[64] parameter(0)\n"
      "  sine.4 = f32[64] sine(x.3)\n"
      "  ROOT mul.5 = f32[64] multiply(sine.4, x.3)\n"
      "}\n\n"
      "ENTRY main.6 {\n"
      "  a.7 = f32[64] parameter(0)\n"
      "  jit_inner.8 = f32[64] call(a.7), to_apply=inner.2\n"
      "  ROOT neg.9 = f32[64] negate(jit_inner.8)\n"
      "}\n";
  ExplainEngine e;
  CHECK(explain_engine_init(&e));
  FxError err;
  fx_error_clear(&err);
  CHECK(explain_engine_load_hlo(&e, "inline.hlo", text, sizeof text - 1, &err));
  int last = explain_engine_last_stage(&e);
  CHECK(explain_engine_ensure(&e, last, &err));
  e.cur = last;
  ExplainWhyOne w;
  int unknown = 0;
  CHECK(explain_engine_why_one(&e, "sine.4", &w, &unknown, &err));
  /* gone from the last stage, but what it became is in the one kernel with neg.9 */
  CHECK(w.instr == NULL && w.became != NULL && w.became_kernel != NULL);
  const IrInstr *neg = ir_module_find_instr(explain_engine_module(&e, last), "neg.9");
  const KernelPlan *p = explain_engine_plan(&e, last, &err);
  CHECK(neg && p && w.became_kernel == plan_kernel_of(p, neg));
  bool renamed = false;
  for (int k = 0; k < w.n; k++) renamed = renamed || strcmp(w.decisions[k]->action, "rename") == 0;
  CHECK(renamed);
  explain_why_one_free(&w);
  /* the function's parameter is the value the call passed in */
  CHECK(explain_engine_why_one(&e, "x.3", &w, &unknown, &err));
  CHECK(w.instr == NULL && w.became != NULL && strcmp(w.became->name, "a.7") == 0);
  explain_why_one_free(&w);
  explain_engine_fini(&e);
}

/* A name a pass made and replaced within its own stage (the first level of reduce-window-rewriter's
 * scan of block totals) is in no stage, but its decisions still answer `why`; a name nothing made
 * is unknown. */
TEST(why_a_name_only_decisions_hold) {
  static const char text[] =
      "HloModule cumsum\n\n"
      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n\n"
      "ENTRY main {\n"
      "  x = f32[8,1024] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  ROOT s = f32[8,1024] reduce-window(x, z), window={size=1x1024 pad=0_0x1023_0}, to_apply=add\n"
      "}\n";
  ExplainEngine e;
  CHECK(explain_engine_init(&e));
  FxError err;
  fx_error_clear(&err);
  CHECK(explain_engine_load_hlo(&e, "cumsum.hlo", text, sizeof text - 1, &err));
  explain_engine_set_pipeline(&e, pipeline_lookup("priority"));
  int last = explain_engine_last_stage(&e);
  CHECK(explain_engine_ensure(&e, last, &err));
  e.cur = last;
  ExplainWhyOne w;
  int unknown = 0;
  CHECK(explain_engine_why_one(&e, "s.totals_scan", &w, &unknown, &err));
  CHECK(unknown == 0 && w.instr == NULL && w.last_seen == -1 && w.first_later == -1 && w.n == 1);
  CHECK(w.n == 1 && strcmp(w.decisions[0]->pass, "reduce-window-rewriter") == 0 &&
        strcmp(w.decisions[0]->producer, "s.totals_scan") == 0);
  explain_why_one_free(&w);
  CHECK(!explain_engine_why_one(&e, "s.nothing", &w, &unknown, &err) && unknown == 1);
  explain_why_one_free(&w);
  explain_engine_fini(&e);
}

int main(void) {
  RUN(load_run_and_kernels);
  RUN(why_a_pair_and_a_name);
  RUN(why_follows_a_name_through_inlining);
  RUN(why_a_name_only_decisions_hold);
  RUN(decisions_as_json);
  RUN(what_a_setting_changes);
  RUN(a_broken_program_is_a_located_error);
  RUN(an_xla_dump_and_its_source_lines);
  return check_summary();
}
