/* test_explain.c — the decision log: copying, stages, truncation, queries, summaries, text and
 * JSON formatting, the reason vocabulary, pair relations, where two instructions are split (kernel
 * boundaries and their decisions) and stage diffs. */
#include <stdlib.h>

#include "../check.h"
#include "../../compiler/fusion/fusion.h"
#include "../../explain/explain.h"
#include "../../compiler/passes/passes.h"

static void emit(DecisionSink *sink, int stage, const char *pass, const char *action, const char *prod,
                 const char *cons, bool ok, const char *reason, const char *detail) {
  char pbuf[64], cbuf[64]; /* the log must copy: these die right after */
  snprintf(pbuf, sizeof pbuf, "%s", prod ? prod : "");
  snprintf(cbuf, sizeof cbuf, "%s", cons ? cons : "");
  PassDecision d = {.stage = stage, .pass = pass, .action = action, .producer = prod ? pbuf : NULL,
                    .consumer = cons ? cbuf : NULL, .accepted = ok, .reason = reason};
  pass_emit(sink, &d, "%s", detail);
  memset(pbuf, 'x', sizeof pbuf - 1);
  memset(cbuf, 'x', sizeof cbuf - 1);
}

static char *capture_record(const ExplainRecord *r, bool json) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (json) explain_print_record_json(f, r);
  else explain_print_record(f, r);
  fclose(f);
  return text;
}

TEST(log_copies_and_keeps_stages) {
  ExplainLog *log = explain_log_new();
  DecisionSink sink = explain_log_sink(log);
  CHECK(explain_log_begin_stage(log, 1, "cse"));
  emit(&sink, 0, NULL, "rewrite", "multiply.9", NULL, true, NULL, "replaced multiply.9 by multiply.4");
  CHECK(explain_log_begin_stage(log, 2, "instruction-fusion"));
  PassDecision d = {.action = "fuse", .producer = "concatenate.12", .consumer = "add.15", .accepted = false,
                    .reason = "code_duplication", .suggestion = "set concat_user_limit 3"};
  pass_metric(&d, "users", 2);
  pass_metric(&d, "limit", 1);
  pass_metric(&d, "users", 3); /* same key: replaced */
  pass_emit(&sink, &d, "concatenate.12 has %d users; limit %d", 3, 1);
  emit(&sink, 0, NULL, "fuse", "exp.3", "add.15", true, NULL, "fused");
  emit(&sink, 0, NULL, "fuse", "negate.4", "fusion.1", true, NULL, "fused");
  CHECK(explain_log_nstages(log) == 3);
  CHECK(explain_stage_count(log, 0) == 0);
  CHECK(explain_stage_count(log, 1) == 1);
  CHECK(explain_stage_count(log, 2) == 3);
  CHECK(explain_log_total(log) == 4);
  const ExplainRecord *r = explain_stage_record(log, 1, 0);
  CHECK(r->stage == 1 && r->seq == 0);
  CHECK_STR(r->pass, "cse");
  CHECK_STR(r->producer, "multiply.9");
  CHECK(r->consumer == NULL && r->reason == NULL && r->accepted);
  r = explain_stage_record(log, 2, 0);
  CHECK_STR(r->pass, "instruction-fusion");
  CHECK_STR(r->producer, "concatenate.12");
  CHECK_STR(r->consumer, "add.15");
  CHECK_STR(r->detail, "concatenate.12 has 3 users; limit 1");
  CHECK(r->nmetrics == 2 && r->metrics[0].value == 3);
  char sum[128];
  explain_stage_summary(log, 2, sum, sizeof sum);
  CHECK_STR(sum, "2 fused, 1 rejected");
  explain_stage_summary(log, 1, sum, sizeof sum);
  CHECK_STR(sum, "1 rewritten");
  explain_stage_summary(log, 7, sum, sizeof sum);
  CHECK_STR(sum, "no change");
  /* re-running stage 2 drops it (and anything later) first */
  CHECK(explain_log_begin_stage(log, 2, "instruction-fusion"));
  CHECK(explain_stage_count(log, 2) == 0 && explain_stage_count(log, 1) == 1);
  explain_log_truncate(log, 1);
  CHECK(explain_log_nstages(log) == 1 && explain_log_total(log) == 0);
  explain_log_free(log);
}

TEST(queries_filter) {
  ExplainLog *log = explain_log_new();
  DecisionSink sink = explain_log_sink(log);
  explain_log_begin_stage(log, 1, "cse");
  emit(&sink, 0, NULL, "rewrite", "m.9", NULL, true, NULL, "a");
  explain_log_begin_stage(log, 2, "instruction-fusion");
  emit(&sink, 0, NULL, "fuse", "concatenate.12", "add.15", false, "code_duplication", "b");
  emit(&sink, 0, NULL, "fuse", "exp.3", "add.15", true, NULL, "c");
  emit(&sink, 0, NULL, "fuse", "rng.2", "add.15", false, "custom_call", "d");
  explain_log_begin_stage(log, 3, "multi_output_fusion");
  emit(&sink, 0, NULL, "sibling", NULL, "fusion.1,concatenate.12,fusion.2", false, "shape_mismatch", "e");
  ExplainFilter f;
  const ExplainRecord **res;
  explain_filter_init(&f);
  CHECK(explain_query(log, &f, &res) == 5);
  fx_free(res);
  f.verdict = 0;
  CHECK(explain_query(log, &f, &res) == 3);
  CHECK_STR(res[0]->detail, "b");
  CHECK_STR(res[2]->detail, "e");
  fx_free(res);
  f.reason = "custom_call";
  CHECK(explain_query(log, &f, &res) == 1);
  CHECK_STR(res[0]->producer, "rng.2");
  fx_free(res);
  explain_filter_init(&f);
  f.pass = "cse";
  CHECK(explain_query(log, &f, &res) == 1);
  fx_free(res);
  explain_filter_init(&f);
  f.stage = 2;
  f.verdict = 1;
  CHECK(explain_query(log, &f, &res) == 1);
  CHECK_STR(res[0]->producer, "exp.3");
  fx_free(res);
  explain_filter_init(&f);
  f.name = "concatenate.12";
  CHECK(explain_query(log, &f, &res) == 2); /* as producer, and inside a group */
  fx_free(res);
  f.max_stage = 2;
  CHECK(explain_query(log, &f, &res) == 1);
  fx_free(res);
  explain_filter_init(&f);
  f.name = "add.15";
  f.name2 = "concatenate.12";
  CHECK(explain_query(log, &f, &res) == 1);
  CHECK_STR(res[0]->reason, "code_duplication");
  fx_free(res);
  f.name = "fusion.2";
  CHECK(explain_query(log, &f, &res) == 1); /* both in one group */
  fx_free(res);
  f.name = "exp.3";
  f.name2 = "rng.2";
  CHECK(explain_query(log, &f, &res) == 0);
  fx_free(res);
  /* a name that is a prefix of another does not match */
  explain_filter_init(&f);
  f.name = "add.1";
  CHECK(explain_query(log, &f, &res) == 0);
  fx_free(res);
  explain_log_free(log);
}

TEST(text_and_json_formatting) {
  ExplainLog *log = explain_log_new();
  DecisionSink sink = explain_log_sink(log);
  explain_log_begin_stage(log, 4, "instruction-fusion");
  PassDecision d = {.action = "fuse", .producer = "concatenate.12", .consumer = "add.15", .accepted = false,
                    .reason = "code_duplication", .suggestion = "set concat_user_limit 3"};
  pass_metric(&d, "users", 2);
  pass_metric(&d, "ratio", 1.25);
  pass_emit(&sink, &d, "concatenate.12 has 2 users; \"limit\" 1\tuser");
  PassDecision e = {.action = "rewrite", .producer = "multiply.9", .result = "multiply.4", .accepted = true};
  pass_emit(&sink, &e, "replaced multiply.9 by multiply.4");
  char *t = capture_record(explain_stage_record(log, 4, 0), false);
  CHECK_STR(t, "stage 4  instruction-fusion  fuse  concatenate.12 -> add.15  rejected [code_duplication]\n"
               "    concatenate.12 has 2 users; \"limit\" 1\tuser\n"
               "    metrics: users=2 ratio=1.25\n"
               "    suggestion: set concat_user_limit 3\n");
  free(t);
  t = capture_record(explain_stage_record(log, 4, 0), true);
  CHECK_STR(t, "{\"stage\":4,\"pass\":\"instruction-fusion\",\"action\":\"fuse\",\"producer\":\"concatenate.12\","
               "\"consumer\":\"add.15\",\"verdict\":\"rejected\",\"reason\":\"code_duplication\","
               "\"detail\":\"concatenate.12 has 2 users; \\\"limit\\\" 1\\tuser\",\"metrics\":{\"users\":2,"
               "\"ratio\":1.25},\"suggestion\":\"set concat_user_limit 3\"}");
  free(t);
  t = capture_record(explain_stage_record(log, 4, 1), true);
  CHECK_STR(t, "{\"stage\":4,\"pass\":\"instruction-fusion\",\"action\":\"rewrite\",\"producer\":\"multiply.9\","
               "\"consumer\":null,\"verdict\":\"accepted\",\"reason\":null,\"detail\":\"replaced multiply.9 by "
               "multiply.4\",\"metrics\":{},\"suggestion\":null}");
  free(t);
  t = capture_record(explain_stage_record(log, 4, 1), false);
  CHECK_STR(t, "stage 4  instruction-fusion  rewrite  multiply.9 => multiply.4  accepted\n"
               "    replaced multiply.9 by multiply.4\n");
  free(t);
  explain_log_free(log);
}

TEST(reason_vocabulary) {
  CHECK(explain_reason_count() == FUSION_REASON_COUNT);
  CHECK_STR(explain_reason_code(0), "not_fusible");
  CHECK(explain_reason_meaning("code_duplication") != NULL);
  CHECK(explain_reason_meaning("policy") != NULL);
  CHECK(explain_reason_meaning("made_up") == NULL);
  for (int k = 0; k < explain_reason_count(); k++) CHECK(explain_reason_meaning(explain_reason_code(k)) != NULL);
}

/* x -> negate.1 -> add.2(negate.1, x) ; exp.3(x) ; sub.4(exp.3, add.2); other computation with y */
static IrModule *relations_module(void) {
  IrModule *m = ir_module_new("t");
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  int64_t n = 4;
  IrShape s = ir_shape_array(&m->arena, IR_F32, 1, &n);
  IrInstr *x = ir_instr_new(c, IR_OP_PARAMETER, &s, NULL, 0, "x");
  IrInstr *neg = ir_instr_new(c, IR_OP_NEGATE, &s, &x, 1, "negate.1");
  IrInstr *add = ir_instr_new(c, IR_OP_ADD, &s, (IrInstr *[]){neg, x}, 2, "add.2");
  IrInstr *ex = ir_instr_new(c, IR_OP_EXP, &s, &x, 1, "exponential.3");
  IrInstr *sub = ir_instr_new(c, IR_OP_SUBTRACT, &s, (IrInstr *[]){ex, add}, 2, "subtract.4");
  ir_set_root(c, sub);
  IrComputation *o = ir_computation_new(m, "other");
  IrInstr *y = ir_instr_new(o, IR_OP_PARAMETER, &s, NULL, 0, "y");
  ir_set_root(o, ir_instr_new(o, IR_OP_ABS, &s, &y, 1, "abs.5"));
  return m;
}

TEST(pair_relations) {
  IrModule *m = relations_module();
  char buf[512];
  explain_pair_relation(m, NULL, "negate.1", "add.2", buf, sizeof buf);
  CHECK_CONTAINS(buf, "negate.1 is an operand of add.2, but no pass has evaluated the pair yet");
  explain_pair_relation(m, NULL, "subtract.4", "negate.1", buf, sizeof buf);
  CHECK_STR(buf, "they were never producer and consumer: negate.1 reaches subtract.4 only through other "
                 "instructions");
  explain_pair_relation(m, NULL, "negate.1", "exponential.3", buf, sizeof buf);
  CHECK_CONTAINS(buf, "they are siblings");
  explain_pair_relation(m, NULL, "negate.1", "abs.5", buf, sizeof buf);
  CHECK_STR(buf, "they are in different computations (negate.1 in main, abs.5 in other): fusion only joins "
                 "instructions of one computation");
  explain_pair_relation(m, NULL, "negate.1", "nothing.9", buf, sizeof buf);
  CHECK_STR(buf, "nothing.9 is not in this stage");
  FxError err;
  fx_error_clear(&err);
  KernelPlan *p = plan_build(m, device_default(), &err);
  explain_pair_relation(m, p, "add.2", "subtract.4", buf, sizeof buf);
  CHECK_CONTAINS(buf, "add.2 is an operand of subtract.4");
  plan_free(p);
  ir_module_free(m);
}

/* where two instructions are split: the kernel boundaries between them and their decisions */
TEST(split_boundaries_and_decisions) {
  IrModule *m = relations_module();
  FxError err;
  fx_error_clear(&err);
  KernelPlan *p = plan_build(m, device_default(), &err);
  CHECK(p != NULL);
  ExplainLog *log = explain_log_new();
  DecisionSink sink = explain_log_sink(log);
  CHECK(explain_log_begin_stage(log, 1, "algsimp"));
  PassDecision rw = {.action = "rewrite", .producer = "gone.7", .accepted = true, .result = "add.2"};
  pass_emit(&sink, &rw, "replaced gone.7 by add.2");
  CHECK(explain_log_begin_stage(log, 2, "instruction-fusion"));
  emit(&sink, 0, NULL, "fuse", "negate.1", "add.2", false, "expensive_duplication", "first run");
  emit(&sink, 0, NULL, "sibling", "negate.1", "add.2", false, "cycle", "sibling");
  emit(&sink, 0, NULL, "fuse", "add.2", "subtract.4", false, "not_fusible", "no");
  CHECK(explain_log_begin_stage(log, 3, "instruction-fusion"));
  emit(&sink, 0, NULL, "fuse", "negate.1", "add.2", false, "expensive_duplication", "second run");
  ExplainStageView *v = explain_view_new(log, 3, m, p);
  CHECK(v != NULL);
  ExplainSplit sp;
  /* a path with two boundaries; the re-made decision is counted, the producer->consumer one wins */
  CHECK(explain_split(v, "negate.1", "subtract.4", &sp, &err));
  CHECK(sp.kind == EXPLAIN_SPLIT_PATH && !sp.b_first);
  CHECK(sp.nboundaries == 2 && sp.total_boundaries == 2);
  CHECK_STR(sp.boundaries[0].from->name, "negate.1");
  CHECK_STR(sp.boundaries[0].to->name, "add.2");
  CHECK_STR(sp.boundaries[0].decision->detail, "first run"); /* the first of identical ones */
  CHECK(sp.boundaries[0].same == 1 && explain_record_number(log, sp.boundaries[0].latest) == 5);
  CHECK(sp.boundaries[0].ndecisions == 3 && sp.boundaries[0].bytes == 16);
  CHECK_STR(sp.boundaries[1].decision->reason, "not_fusible");
  CHECK_CONTAINS(sp.sentence, "negate.1 feeds subtract.4 across 2 kernel boundaries");
  /* the other direction */
  CHECK(explain_split(v, "subtract.4", "negate.1", &sp, &err));
  CHECK(sp.kind == EXPLAIN_SPLIT_PATH && sp.b_first && sp.nboundaries == 2);
  /* a removed name is followed to what replaced it */
  CHECK(explain_split(v, "gone.7", "subtract.4", &sp, &err));
  CHECK(sp.kind == EXPLAIN_SPLIT_PATH && sp.nboundaries == 1);
  CHECK_STR(sp.a->name, "add.2");
  CHECK_CONTAINS(sp.sentence, "gone.7 (now add.2) feeds subtract.4");
  CHECK(explain_view_follow(v, "gone.7") == ir_module_find_instr(m, "add.2"));
  /* siblings, no kernel, other computations */
  CHECK(explain_split(v, "negate.1", "exponential.3", &sp, &err));
  CHECK(sp.kind == EXPLAIN_SPLIT_SIBLINGS && sp.nboundaries == 0);
  CHECK_STR(sp.common, "x");
  CHECK(explain_split(v, "x", "add.2", &sp, &err));
  CHECK(sp.kind == EXPLAIN_SPLIT_NO_KERNEL);
  CHECK_CONTAINS(sp.sentence, "x launches no kernel (a parameter");
  CHECK(explain_split(v, "negate.1", "abs.5", &sp, &err));
  CHECK(sp.kind == EXPLAIN_SPLIT_ELSEWHERE);
  CHECK(!explain_split(v, "nothing.9", "abs.5", &sp, &err));
  /* a boundary no pass judged says why */
  ExplainBoundary bd;
  explain_boundary(v, plan_kernel_of(p, ir_module_find_instr(m, "exponential.3")),
                   plan_kernel_of(p, ir_module_find_instr(m, "subtract.4")), &bd);
  CHECK(bd.decision == NULL && bd.none[0]);
  explain_view_free(v);
  /* clones and re-runs group */
  const ExplainRecord *recs[3] = {explain_stage_record(log, 2, 0), explain_stage_record(log, 3, 0),
                                  explain_stage_record(log, 2, 2)};
  int group[3];
  CHECK(explain_group_records(recs, 3, group) == 2);
  CHECK(group[0] == 0 && group[1] == 0 && group[2] == 2);
  explain_log_free(log);
  plan_free(p);
  ir_module_free(m);
}

TEST(diff_between_stages) {
  IrModule *a = relations_module();
  IrModule *b = ir_module_clone(a);
  /* B: negate.1 removed (add.2 now reads x twice), a new multiply, exp moved into a fusion */
  IrInstr *add = ir_module_find_instr(b, "add.2");
  IrInstr *x = ir_module_find_instr(b, "x");
  IrInstr *neg = ir_module_find_instr(b, "negate.1");
  ir_set_operand(add, 0, x);
  ir_instr_remove(neg);
  IrInstr *sub = ir_module_find_instr(b, "subtract.4");
  IrInstr *mul = ir_instr_new_before(b->entry, sub, IR_OP_MULTIPLY, &x->shape, (IrInstr *[]){x, x}, 2, "multiply.6");
  (void)mul;
  IrComputation *body = ir_computation_new(b, "fused_computation");
  IrInstr *ex = ir_module_find_instr(b, "exponential.3");
  IrInstr *fp = ir_instr_new(body, IR_OP_PARAMETER, &x->shape, NULL, 0, "param_0");
  IrInstr *fex = ir_instr_new(body, IR_OP_EXP, &x->shape, &fp, 1, "exponential.3.fused");
  ir_set_root(body, fex);
  IrInstr *f = ir_instr_new_before(b->entry, sub, IR_OP_FUSION, &x->shape, &x, 1, "fusion.7");
  ir_attr_set_text(f, "kind", "kLoop");
  ir_attr_set_comp(f, "calls", body);
  body->fusion_instr = f;
  ir_replace_all_uses(ex, f);
  ir_instr_remove(ex);
  /* the log says exponential.3 went into fusion.7 */
  ExplainLog *log = explain_log_new();
  DecisionSink sink = explain_log_sink(log);
  explain_log_begin_stage(log, 1, "instruction-fusion");
  PassDecision d = {.action = "fuse", .producer = "exponential.3", .consumer = "subtract.4", .accepted = true,
                    .result = "fusion.7"};
  pass_emit(&sink, &d, "fused");
  FxError err;
  fx_error_clear(&err);
  ExplainDiff *df = explain_diff(a, b, log, 0, 1, &err);
  CHECK(df != NULL);
  CHECK(df->count[DIFF_REMOVED] == 1 && df->count[DIFF_REWRITTEN] == 2 && df->count[DIFF_ADDED] == 2);
  CHECK(df->count[DIFF_FUSED] == 1);
  CHECK(df->n == 6);
  CHECK(df->entries[0].kind == DIFF_REMOVED);
  CHECK_STR(df->entries[0].name, "negate.1");
  CHECK(df->entries[0].into == NULL);
  CHECK_STR(df->entries[1].name, "add.2");
  CHECK_STR(df->entries[1].detail, "operands (negate.1, x) -> (x, x)");
  CHECK_STR(df->entries[2].name, "exponential.3");
  CHECK(df->entries[2].kind == DIFF_FUSED);
  CHECK_STR(df->entries[2].into, "fusion.7");
  CHECK_STR(df->entries[3].name, "subtract.4");
  CHECK_STR(df->entries[3].detail, "operands (exponential.3, add.2) -> (fusion.7, add.2)");
  CHECK_STR(df->entries[4].name, "multiply.6");
  CHECK_STR(df->entries[5].name, "fusion.7");
  CHECK_STR(df->entries[5].detail, "kLoop fusion of 1 instructions");
  explain_diff_free(df);
  /* an instruction that keeps its name when moved into a fused body is "fused" */
  IrModule *c = ir_module_clone(a);
  IrInstr *cneg = ir_module_find_instr(c, "negate.1");
  IrComputation *cb = ir_computation_new(c, "fused_neg");
  IrInstr *fusion = ir_instr_new_before(c->entry, cneg, IR_OP_FUSION, &cneg->shape, cneg->operands, 1, "fusion.8");
  ir_attr_set_comp(fusion, "calls", cb);
  cb->fusion_instr = fusion;
  ir_replace_all_uses(cneg, fusion);
  /* move negate.1 itself into the body */
  ir_set_operand(cneg, 0, NULL);
  for (int k = 0; k < c->entry->ninstrs; k++)
    if (c->entry->instrs[k] == cneg) {
      memmove(&c->entry->instrs[k], &c->entry->instrs[k + 1], sizeof(IrInstr *) * (size_t)(c->entry->ninstrs - k - 1));
      c->entry->ninstrs--;
      break;
    }
  IrInstr *cp = ir_instr_new(cb, IR_OP_PARAMETER, &cneg->shape, NULL, 0, "param_0.2");
  cneg->parent = cb;
  arena_grow(&c->arena, (void **)&cb->instrs, &cb->instrs_cap, cb->ninstrs + 1, sizeof(IrInstr *));
  cb->instrs[cb->ninstrs++] = cneg;
  ir_set_operand(cneg, 0, cp);
  ir_set_root(cb, cneg);
  df = explain_diff(a, c, NULL, 0, 1, &err);
  CHECK(df && df->count[DIFF_FUSED] == 1);
  bool found = false;
  for (int k = 0; k < df->n; k++)
    if (df->entries[k].kind == DIFF_FUSED) {
      CHECK_STR(df->entries[k].name, "negate.1");
      CHECK_STR(df->entries[k].into, "fusion.8");
      found = true;
    }
  CHECK(found);
  explain_diff_free(df);
  /* the same snapshot: nothing */
  df = explain_diff(a, a, NULL, 0, 0, &err);
  CHECK(df && df->n == 0);
  explain_diff_free(df);
  explain_log_free(log);
  ir_module_free(c);
  ir_module_free(b);
  ir_module_free(a);
}

int main(void) {
  RUN(log_copies_and_keeps_stages);
  RUN(queries_filter);
  RUN(text_and_json_formatting);
  RUN(reason_vocabulary);
  RUN(pair_relations);
  RUN(split_boundaries_and_decisions);
  RUN(diff_between_stages);
  return check_summary();
}
