/* test_xla_verdicts.c — fxplain's verdict beside each of XLA's priority-fusion steps
 * (xla_fusion_log_compare): pairs matched by what XLA's and fxplain's names hold, so that a DISAGREE
 * means the two really part. A tiny module and a FusionProcessDump written here, fxplain's records
 * filed by hand. */
#include <stdlib.h>
#include <unistd.h>

#include "../check.h"
#include "../../compiler/hlo/hlo.h"
#include "../../explain/xla_dump.h"

static const char *module_text =
    "HloModule t\n"
    "\n"
    "%body (param_0: f32[4]) -> f32[4] {\n"
    "  %param_0 = f32[4]{0} parameter(0)\n"
    "  ROOT %neg.1 = f32[4]{0} negate(%param_0)\n"
    "}\n"
    "\n"
    "ENTRY %main (x: f32[4]) -> f32[4] {\n"
    "  %x = f32[4]{0} parameter(0)\n"
    "  %p = f32[4]{0} exponential(%x)\n"
    "  %ts = f32[4]{0} fusion(%p), kind=kLoop, calls=%body\n"
    "  %m = f32[4]{0} sine(%ts)\n"
    "  %q = f32[4]{0} cosine(%m)\n"
    "  ROOT %r = f32[4]{0} tanh(%q)\n"
    "}\n";

/* XLA fuses p into the fusion ts (which keeps its name), finds ts ineligible, is told fusing m is
 * slower but later fuses ts into m (so m is not "left unfused"), and leaves q unfused. */
static const char *log_text =
    "fusion_steps {\n  update_priority {\n    producer_name: \"p\"\n    consumer_names: \"ts\"\n"
    "    us_fused: 1\n    us_unfused: 2\n  }\n}\n"
    "fusion_steps {\n  fusion {\n    fusion_name: \"ts\"\n    producer_name: \"p\"\n    consumer_name: \"ts\"\n  }\n}\n"
    "fusion_steps {\n  producer_ineligible {\n    producer_name: \"ts\"\n    reason: \"the consumer is not fusible\"\n  }\n}\n"
    "fusion_steps {\n  update_priority {\n    producer_name: \"m\"\n    consumer_names: \"q\"\n"
    "    us_fused: 2\n    us_unfused: 1\n  }\n}\n"
    "fusion_steps {\n  fusion {\n    fusion_name: \"fusion.9\"\n    producer_name: \"ts\"\n    consumer_name: \"m\"\n  }\n}\n"
    "fusion_steps {\n  update_priority {\n    producer_name: \"q\"\n    consumer_names: \"r\"\n"
    "    us_fused: 2\n    us_unfused: 1\n  }\n}\n";

static void file(DecisionSink *s, const char *prod, const char *cons, bool ok, const char *result) {
  PassDecision d = {.stage = 1, .pass = XLA_OWN_PASS, .action = "fuse", .producer = prod, .consumer = cons,
                    .accepted = ok, .reason = ok ? NULL : "not_fusible", .result = result};
  pass_emit(s, &d, "%s", ok ? "fused" : "refused");
}

TEST(verdicts_match_what_names_hold) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(module_text, strlen(module_text), "t.hlo", &err);
  CHECK(m != NULL);
  char path[] = "/tmp/fxplain-verdicts-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, log_text, strlen(log_text)) == (ssize_t)strlen(log_text));
  close(fd);
  XlaFusionLog *l = xla_fusion_log_load(path, &err);
  unlink(path);
  CHECK(l != NULL);
  if (!m || !l) return;
  CHECK(xla_fusion_log_check(l, m, &err));
  ExplainLog *own = explain_log_new();
  CHECK(explain_log_begin_stage(own, 1, "priority-fusion"));
  DecisionSink s = explain_log_sink(own);
  /* fxplain names the fusion consumer ts by the body instruction reading p (neg.1). */
  file(&s, "p", "neg.1", true, "ts");
  /* It refuses ts -> m first (as XLA refuses a producer with only bitcast users), then fuses it. */
  file(&s, "ts", "m", false, NULL);
  file(&s, "ts", "m", true, "fusion");
  /* And it fuses q, which XLA left unfused: a real disagreement. */
  file(&s, "q", "r", true, "fusion.1");
  XlaVerdict *v;
  int n = xla_fusion_log_compare(l, own, 1, XLA_OWN_PASS, m, &v);
  CHECK(n == l->nsteps + 1); /* m is fused into later: only q is left unfused */
  if (n == l->nsteps + 1) {
    CHECK(v[1].own && v[1].own->accepted && !v[1].differ); /* p into ts: agrees */
    CHECK(!v[2].differ);                                    /* ts (holding p and ts) ineligible */
    CHECK(v[4].own && v[4].own->accepted && !v[4].differ); /* ts into m: fxplain fused it in the end */
    CHECK(v[6].left_unfused && v[6].step == 5);
    CHECK(v[6].own && v[6].differ);                         /* q: XLA left it, fxplain fused it */
  }
  fx_free(v);
  explain_log_free(own);
  xla_fusion_log_free(l);
  ir_module_free(m);
}

/* A bitcast XLA fused into q (making fusion.7), which it then left unfused; fxplain fused the
 * bitcast into r directly. That says nothing about fusion.7: no DISAGREE. */
TEST(a_bitcast_fused_first_is_not_the_producer) {
  static const char *text = "HloModule b\n\nENTRY %main (x: f32[4]) -> f32[4] {\n"
                            "  %x = f32[4]{0} parameter(0)\n  %m = f32[4]{0} sine(%x)\n"
                            "  %bc = f32[4]{0} bitcast(%m)\n  %q = f32[4]{0} cosine(%bc)\n"
                            "  ROOT %r = f32[4]{0} add(%q, %bc)\n}\n";
  static const char *steps =
      "fusion_steps {\n  fusion {\n    fusion_name: \"fusion.7\"\n    producer_name: \"bc\"\n    consumer_name: \"q\"\n  }\n}\n"
      "fusion_steps {\n  update_priority {\n    producer_name: \"fusion.7\"\n    consumer_names: \"r\"\n"
      "    us_fused: 2\n    us_unfused: 1\n  }\n}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "b.hlo", &err);
  char path[] = "/tmp/fxplain-verdicts-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0 && write(fd, steps, strlen(steps)) == (ssize_t)strlen(steps));
  close(fd);
  XlaFusionLog *l = xla_fusion_log_load(path, &err);
  unlink(path);
  CHECK(m && l);
  if (!m || !l) return;
  ExplainLog *own = explain_log_new();
  CHECK(explain_log_begin_stage(own, 1, "priority-fusion"));
  DecisionSink s = explain_log_sink(own);
  file(&s, "bc", "q", true, "fusion");
  file(&s, "bc", "r", true, "fusion.1");
  XlaVerdict *v;
  int n = xla_fusion_log_compare(l, own, 1, XLA_OWN_PASS, m, &v);
  CHECK(n == 3);
  if (n == 3) {
    CHECK(!v[0].differ);                        /* bc into q: both */
    CHECK(v[2].left_unfused && !v[2].differ);   /* fusion.7 left: fxplain's bitcast fusion is no verdict on it */
  }
  fx_free(v);
  explain_log_free(own);
  xla_fusion_log_free(l);
  ir_module_free(m);
}

TEST(user_names_from_op_name) {
  static const char *text = "HloModule u\n\nENTRY %main (x: f32[4]) -> f32[4] {\n"
                            "  %x = f32[4]{0} parameter(0), metadata={op_name=\"x\"}\n"
                            "  %a = f32[4]{0} exponential(%x), metadata={op_name=\"jit(step)/attention/exp\"}\n"
                            "  %b = f32[4]{0} negate(%a), metadata={op_name=\"pjit(f)/jit(g)/mlp/neg\" stack_frame_id=3}\n"
                            "  ROOT %c = f32[4]{0} tanh(%b)\n}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "u.hlo", &err);
  CHECK(m != NULL);
  if (!m) return;
  char buf[128];
  xla_user_name(ir_module_find_instr(m, "a"), buf, sizeof buf);
  CHECK_STR(buf, "attention/exp");
  xla_user_name(ir_module_find_instr(m, "b"), buf, sizeof buf);
  CHECK_STR(buf, "mlp/neg");
  xla_user_name(ir_module_find_instr(m, "x"), buf, sizeof buf);
  CHECK_STR(buf, "x");
  xla_user_name(ir_module_find_instr(m, "c"), buf, sizeof buf);
  CHECK_STR(buf, "");
  ir_module_free(m);
}

int main(void) {
  RUN(verdicts_match_what_names_hold);
  RUN(a_bitcast_fused_first_is_not_the_producer);
  RUN(user_names_from_op_name);
  return check_summary();
}
