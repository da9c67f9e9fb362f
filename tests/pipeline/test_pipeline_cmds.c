/* test_pipeline_cmds.c — the pipeline commands on a session: step/back/goto move through stages
 * and reach the same contents by any path; passes, diff, why, decisions, kernels and show stats
 * print exactly what they should, in text and JSON; errors leave the session as it was. The
 * session runs its own three-pass pipeline so the tests do not depend on which passes the real
 * pipelines hold. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "../../explain/explain.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../repl/session.h"

static const Pass *const test_passes[] = {&pass_cse, &pass_dce, &pass_tuple_simplifier};
static const Pipeline test_pipeline = {"test", "cse, dce, tuple-simplifier", 3, test_passes};

static const char *const module_text =
    "HloModule t\n"
    "\n"
    "ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {\n"
    "  %x = f32[4]{0} parameter(0)\n"
    "  %y = f32[4]{0} parameter(1)\n"
    "  %a = f32[4]{0} add(%x, %y)\n"
    "  %b = f32[4]{0} add(%y, %x)\n"
    "  %dead = f32[4]{0} negate(%x)\n"
    "  %t = (f32[4]{0}, f32[4]{0}) tuple(%a, %b)\n"
    "  %g0 = f32[4]{0} get-tuple-element(%t), index=0\n"
    "  %g1 = f32[4]{0} get-tuple-element(%t), index=1\n"
    "  ROOT %m = f32[4]{0} multiply(%g0, %g1)\n"
    "}\n";

typedef struct {
  Session s;
  char *buf;
  size_t len;
} Sess;

static void sess_init_with(Sess *t, bool json, const char *text, const Pipeline *pl) {
  memset(t, 0, sizeof *t);
  Session *s = &t->s;
  explain_engine_init(&s->eng);
  s->json = json;
  s->input_name = "<test>";
  s->input_line = 1;
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "t.hlo", &err);
  if (!m) fx_error_print(stderr, &err);
  explain_engine_set_input(&s->eng, m);
  s->eng.pipeline = pl;
}

static void sess_init(Sess *t, bool json) { sess_init_with(t, json, module_text, &test_pipeline); }

static void sess_free(Sess *t) {
  Session *s = &t->s;
  explain_engine_fini(&s->eng);
  free(t->buf);
}

/* Runs one command; returns its output (valid until the next call). */
static const char *run(Sess *t, const char *line, bool *ok_out) {
  char copy[512];
  snprintf(copy, sizeof copy, "%s", line);
  char *argv[16];
  int argc = 0;
  for (char *w = strtok(copy, " "); w && argc < 15; w = strtok(NULL, " ")) argv[argc++] = w;
  argv[argc] = NULL;
  free(t->buf);
  t->buf = NULL;
  FILE *f = open_memstream(&t->buf, &t->len);
  t->s.out = f;
  t->s.err = f;
  FxError err;
  fx_error_clear(&err);
  const ReplCommand *c = repl_command_lookup(argv[0]);
  bool ok = c && c->run(&t->s, argc, argv, &err);
  if (!ok && err.set) fprintf(f, "error: %s\n", err.msg);
  fclose(f);
  if (ok_out) *ok_out = ok;
  return t->buf;
}

static const char *ok_run(Sess *t, const char *line) {
  bool ok;
  const char *out = run(t, line, &ok);
  if (!ok) fprintf(stderr, "command failed: %s\n%s", line, out);
  CHECK(ok);
  return out;
}

/* Two commands give the same output. */
static void same_output(Sess *t, const char *a, const char *b) {
  char *first = strdup(ok_run(t, a));
  CHECK_STR(ok_run(t, b), first);
  free(first);
}

static char *stage_text(Sess *t, int k) { return hlo_print_string(t->s.eng.stages[k].module); }

TEST(step_prints_one_line_per_pass) {
  Sess t;
  sess_init(&t, false);
  CHECK_STR(ok_run(&t, "step"), "stage 1  cse: 1 rewritten \xe2\x86\x92 3 kernels\n");
  CHECK_STR(ok_run(&t, "step all"), "stage 2  dce: 1 removed \xe2\x86\x92 2 kernels\n"
                                    "stage 3  tuple-simplifier: 2 rewritten \xe2\x86\x92 2 kernels\n");
  CHECK(t.s.eng.cur == 3 && t.s.eng.nstages == 4);
  bool ok;
  CHECK_STR(run(&t, "step", &ok), "error: already at the last stage (3) of the test pipeline\n");
  CHECK(!ok && t.s.eng.cur == 3);
  CHECK_STR(ok_run(&t, "back 2"), "stage 1  cse: 1 rewritten \xe2\x86\x92 3 kernels\n");
  CHECK_STR(ok_run(&t, "back 5"), "stage 0  input: 9 instructions \xe2\x86\x92 4 kernels\n"
                                  "(back 5: only 1 stage before stage 1; stopped at stage 0, the input)\n");
  CHECK_STR(run(&t, "back", &ok), "error: already at stage 0 (the input)\n");
  CHECK(!ok);
  CHECK_STR(ok_run(&t, "step dce"), "stage 1  cse: 1 rewritten \xe2\x86\x92 3 kernels\n"
                                    "stage 2  dce: 1 removed \xe2\x86\x92 2 kernels\n");
  CHECK_STR(ok_run(&t, "goto 0"), "stage 0  input: 9 instructions \xe2\x86\x92 4 kernels\n");
  CHECK_STR(ok_run(&t, "goto tuple-simplifier"), "stage 3  tuple-simplifier: 2 rewritten \xe2\x86\x92 2 kernels\n");
  CHECK_STR(run(&t, "goto 9", &ok), "error: no stage 9: the test pipeline has stages 0 to 3\n");
  CHECK_STR(run(&t, "step no-such-pass", &ok), "error: expected a count, a pass name or 'all', got 'no-such-pass'\n");
  CHECK_STR(run(&t, "step cse", &ok), "error: cse does not run after stage 3 of the test pipeline\n");
  CHECK_STR(run(&t, "step instruction-fusion", &ok), "error: the test pipeline does not run instruction-fusion\n");
  CHECK_STR(run(&t, "step call-inliner-x", &ok), "error: expected a count, a pass name or 'all', got 'call-inliner-x'\n");
  CHECK(t.s.eng.cur == 3);
  CHECK_STR(ok_run(&t, "stage"), "stage 3 of 3 (test pipeline): after tuple-simplifier; 4 instructions, 2 kernels\n"
                                 "the pipeline is finished\n");
  sess_free(&t);
}

/* The same stage contents and decisions whichever way a stage is reached. */
TEST(any_path_gives_the_same_stages) {
  Sess straight, winding;
  sess_init(&straight, false);
  sess_init(&winding, false);
  ok_run(&straight, "step all");
  ok_run(&winding, "step");
  ok_run(&winding, "back");
  ok_run(&winding, "goto 2");
  ok_run(&winding, "back 2");
  ok_run(&winding, "step 1");
  ok_run(&winding, "goto 3");
  ok_run(&winding, "back 1");
  for (int k = 0; k <= 3; k++) {
    char *a = stage_text(&straight, k), *b = stage_text(&winding, k);
    CHECK_STR(a, b);
    fx_free(a);
    fx_free(b);
  }
  char *d1 = strdup(ok_run(&straight, "decisions"));
  CHECK_STR(ok_run(&winding, "decisions"), d1);
  free(d1);
  /* stage 3 after back 1 shows the same as when first reached */
  ok_run(&winding, "step");
  char *k1 = strdup(ok_run(&straight, "kernels"));
  CHECK_STR(ok_run(&winding, "kernels"), k1);
  free(k1);
  sess_free(&straight);
  sess_free(&winding);
}

TEST(unchanged_stages_share_snapshots) {
  Sess t;
  sess_init(&t, false);
  ok_run(&t, "step all");
  ok_run(&t, "pipeline classic"); /* a real pipeline: back to stage 0 */
  CHECK(t.s.eng.cur == 0 && t.s.eng.nstages == 1);
  t.s.eng.pipeline = &test_pipeline;
  snprintf(t.s.eng.settings.disabled_passes, sizeof t.s.eng.settings.disabled_passes, "dce");
  CHECK_STR(ok_run(&t, "step 2"), "stage 1  cse: 1 rewritten \xe2\x86\x92 3 kernels\n"
                                  "stage 2  dce: switched off \xe2\x86\x92 3 kernels\n");
  CHECK(t.s.eng.stages[2].shared && t.s.eng.stages[2].module == t.s.eng.stages[1].module && !t.s.eng.stages[2].changed);
  CHECK(!t.s.eng.stages[1].shared);
  CHECK_CONTAINS(ok_run(&t, "decisions --reason policy"),
                 "stage 2  dce  skip  rejected [policy]\n    dce is switched off: the stage is the previous one, "
                 "unchanged\n    suggestion: turn it back on with `set`\n1 decision\n");
  sess_free(&t);
}

TEST(passes_table) {
  Sess t;
  sess_init(&t, false);
  ok_run(&t, "step 2");
  const char *out = ok_run(&t, "passes");
  CHECK_STR(out, "pipeline test on rtx2080ti\n"
                 "    stage pass                     changed instructions  kernels   launches       bytes    est. time\n"
                 "    0     input                                       9        4          4       176 B     20.00 us\n"
                 "    1     cse                      yes                8        3          3       128 B     15.00 us\n"
                 "  > 2     dce                      yes                7        2          2        96 B     10.00 us\n"
                 "    3     tuple-simplifier         not run\n");
  Sess j;
  sess_init(&j, true);
  ok_run(&j, "step 2");
  CHECK_STR(ok_run(&j, "passes --changed"),
            "[{\"stage\":0,\"pass\":\"input\",\"changed\":false,\"instructions\":9,\"kernels\":4,\"bytes\":176,"
            "\"est_us\":20.000285714285713},"
            "{\"stage\":1,\"pass\":\"cse\",\"changed\":true,\"instructions\":8,\"kernels\":3,\"bytes\":128,"
            "\"est_us\":15.000207792207792},"
            "{\"stage\":2,\"pass\":\"dce\",\"changed\":true,\"instructions\":7,\"kernels\":2,\"bytes\":96,"
            "\"est_us\":10.000155844155843}]\n");
  CHECK_STR(ok_run(&j, "passes"), /* without --changed, the stage not run yet is listed */
            "[{\"stage\":0,\"pass\":\"input\",\"changed\":false,\"instructions\":9,\"kernels\":4,\"bytes\":176,"
            "\"est_us\":20.000285714285713},"
            "{\"stage\":1,\"pass\":\"cse\",\"changed\":true,\"instructions\":8,\"kernels\":3,\"bytes\":128,"
            "\"est_us\":15.000207792207792},"
            "{\"stage\":2,\"pass\":\"dce\",\"changed\":true,\"instructions\":7,\"kernels\":2,\"bytes\":96,"
            "\"est_us\":10.000155844155843},"
            "{\"stage\":3,\"pass\":\"tuple-simplifier\",\"changed\":null,\"instructions\":null,\"kernels\":null,"
            "\"bytes\":null,\"est_us\":null}]\n");
  sess_free(&j);
  sess_free(&t);
}

/* passes --changed leaves out the stages whose pass changed nothing and those not run yet, and
 * says how many it left out. */
TEST(passes_changed_hides_unchanged_and_not_run) {
  static const Pass *const passes[] = {&pass_dce, &pass_dce, &pass_cse, &pass_tuple_simplifier};
  static const Pipeline pl = {"test2", "dce, dce, cse, tuple-simplifier", 4, passes};
  Sess t;
  sess_init_with(&t, false, module_text, &pl);
  ok_run(&t, "step 2");
  CHECK_STR(ok_run(&t, "passes --changed"),
            "pipeline test2 on rtx2080ti\n"
            "    stage pass                     changed instructions  kernels   launches       bytes    est. time\n"
            "    0     input                                       9        4          4       176 B     20.00 us\n"
            "    1     dce                      yes                8        3          3       144 B     15.00 us\n"
            "    (hidden: 1 stage that changed nothing, 2 not run yet)\n");
  ok_run(&t, "step all");
  const char *out = ok_run(&t, "passes --changed");
  CHECK(strstr(out, "  > 4     tuple-simplifier         yes") != NULL);
  CHECK(strstr(out, "    2     dce") == NULL);
  CHECK(strstr(out, "(hidden: 1 stage that changed nothing, 0 not run yet)\n") != NULL);
  sess_free(&t);
}

TEST(diff_why_decisions) {
  Sess t;
  sess_init(&t, false);
  ok_run(&t, "step all");
  CHECK_STR(ok_run(&t, "diff"),
            "diff stage 2 (dce) -> stage 3 (tuple-simplifier): 7 -> 4 instructions; 3 removed, 1 rewritten\n"
            "  removed    t                            (tuple in main)\n"
            "  removed    g0                           (get-tuple-element in main) replaced by a\n"
            "  removed    g1                           (get-tuple-element in main) replaced by a\n"
            "  rewritten  m                            operands (g0, g1) -> (a, a)\n");
  CHECK_STR(ok_run(&t, "diff 0 1"),
            "diff stage 0 (input) -> stage 1 (cse): 9 -> 8 instructions; 1 removed, 1 rewritten\n"
            "  removed    b                            (add in main) replaced by a\n"
            "  rewritten  t                            operands (a, b) -> (a, a)\n");
  same_output(&t, "diff 3", "diff 2 3");
  bool ok;
  CHECK_STR(run(&t, "diff 0 7", &ok), "error: no stage 7: the test pipeline has stages 0 to 3\n");
  /* why: one instruction */
  CHECK_STR(ok_run(&t, "why a"),
            "a: add f32[4]{0} in main\n"
            "  at stage 3 (tuple-simplifier): its own loop kernel\n"
            "  3 decisions naming a:\n"
            "#1  stage 1  cse  rewrite  b => a  accepted\n"
            "    replaced b by a: the same add of the same operands\n"
            "    metrics: users_moved=1\n"
            "#3  stage 3  tuple-simplifier  rewrite  g0 => a  accepted\n"
            "    replaced g0 (element 0 of t) by a\n"
            "    metrics: index=0\n"
            "#4  stage 3  tuple-simplifier  rewrite  g1 => a  accepted\n"
            "    replaced g1 (element 1 of t) by a\n"
            "    metrics: index=1\n");
  CHECK_STR(ok_run(&t, "why dead"),
            "dead is not in stage 3 (tuple-simplifier): last seen at stage 1 (cse)\n"
            "  1 decision naming dead:\n"
            "#2  stage 2  dce  remove  dead  accepted\n"
            "    removed dead (negate in main): no users and no side effects\n");
  CHECK_STR(ok_run(&t, "why x"), "x: parameter f32[4]{0} in main\n"
                                 "  at stage 3 (tuple-simplifier): no kernel: a parameter: its buffer is an input, "
                                 "no kernel writes it\n"
                                 "  no decision names x\n");
  CHECK_STR(run(&t, "why nope", &ok), "error: no instruction named 'nope' at any stage\n");
  CHECK(!ok);
  /* why: a pair */
  CHECK_STR(ok_run(&t, "why g0 a"), "1 decision between g0 and a; the final outcome (stage 3, tuple-simplifier): "
                                    "accepted\n"
                                    "#3  stage 3  tuple-simplifier  rewrite  g0 => a  accepted\n"
                                    "    replaced g0 (element 0 of t) by a\n"
                                    "    metrics: index=0\n");
  /* where a pair is split: the kernel boundary between them, and why no decision is there yet */
  CHECK_STR(ok_run(&t, "why a m"), "a and m at stage 3 (tuple-simplifier): a feeds m across one kernel boundary: a "
                                   "writes its result to memory and m reads it back\n"
                                   "boundary a (unfused add) -> m (unfused multiply), 16 B written to memory and read "
                                   "back: no decision: no fusion pass has run up to stage 3: every compute instruction "
                                   "is still its own kernel (step runs the next passes)\n");
  CHECK_STR(ok_run(&t, "why x m"), "no decision between x and m: x launches no kernel (a parameter: its buffer is an "
                                   "input, no kernel writes it), so no kernel boundary lies between x and m for a pass "
                                   "to decide\n");
  /* decisions, filtered */
  CHECK_STR(ok_run(&t, "decisions --pass dce"), "#2  stage 2  dce  remove  dead  accepted\n"
                                                "    removed dead (negate in main): no users and no side effects\n"
                                                "1 decision\n");
  same_output(&t, "decisions --stage 3 --accepted", "decisions --stage tuple-simplifier");
  CHECK_STR(ok_run(&t, "decisions --rejected"), "0 decisions\n");
  /* the error lists every code of the vocabulary, in its order (the golden pipeline/errors pins
     the text; built here from the table, so a new code does not touch this test) */
  char want[2048];
  size_t wl = (size_t)snprintf(want, sizeof want, "error: unknown reason code 'made_up' (codes: ");
  for (int k = 0; k < explain_reason_count() && wl < sizeof want; k++)
    wl += (size_t)snprintf(want + wl, sizeof want - wl, "%s%s", k ? ", " : "", explain_reason_code(k));
  if (wl < sizeof want) snprintf(want + wl, sizeof want - wl, ")\n");
  CHECK_STR(run(&t, "decisions --reason made_up", &ok), want);
  CHECK_STR(run(&t, "decisions --pass", &ok), "error: --pass needs a value\n");
  CHECK_STR(run(&t, "decisions --verbose", &ok),
            "error: unknown option '--verbose' (usage: decisions [--rejected | --accepted] [--reason CODE] [--pass "
            "NAME] [--stage S])\n");
  /* records survive back */
  ok_run(&t, "back 3");
  CHECK_CONTAINS(ok_run(&t, "decisions"), "4 decisions\n");
  sess_free(&t);
}

/* a = x * 2 read by sin and cos: the first instruction-fusion run refuses a -> b (two users, no
 * duplication in that run); fusion-merger merges a's fusion into b and c (XLA 2021 merges into users
 * that are no fusion yet, wrapping each) at stage 11, and multi_output_fusion makes the two one
 * kernel. `why a b` puts that final outcome first and lists the stage 9 refusal as superseded; every
 * listed decision carries the number `render --decision N` draws. */
static const char *const fan_text = "HloModule fan\n"
                                    "\n"
                                    "ENTRY %main (x: f32[1024]) -> (f32[1024], f32[1024]) {\n"
                                    "  %x = f32[1024]{0} parameter(0)\n"
                                    "  %two = f32[] constant(2)\n"
                                    "  %bc = f32[1024]{0} broadcast(%two), dimensions={}\n"
                                    "  %a = f32[1024]{0} multiply(%x, %bc)\n"
                                    "  %b = f32[1024]{0} sine(%a)\n"
                                    "  %c = f32[1024]{0} cosine(%a)\n"
                                    "  ROOT %t = (f32[1024]{0}, f32[1024]{0}) tuple(%b, %c)\n"
                                    "}\n";

TEST(why_pair_final_outcome_first_and_decision_numbers) {
  Sess t;
  sess_init_with(&t, false, fan_text, pipeline_lookup("classic"));
  ok_run(&t, "step all");
  CHECK_STR(ok_run(&t, "why a b"),
            "2 decisions between a and b; the final outcome (stage 11, fusion-merger): accepted\n"
            "#7  stage 11  fusion-merger  merge  a -> b => fusion.1  accepted\n"
            "    fusion (the fusion ending in a) merges into b (merged-to-current-bytes-ratio 0.50)\n"
            "    metrics: users=2 bytes_ratio=0.5 copies=1 operands=3\n"
            "superseded: 1 earlier decision, replaced by #7 at stage 11 (fusion-merger):\n"
            "#4  stage 9  instruction-fusion  fuse  a -> b  rejected [code_duplication]\n"
            "    a has 2 users; this run fuses only producers with one user, so fusing it would need a copy per "
            "user (the next run may duplicate it)\n"
            "    metrics: users=2\n");
  /* a single decision has nothing superseded; the siblings come in the order of x's users, as XLA
   * keeps them (a user removed gives its place to the last one: fusion.2 came before fusion.1) */
  CHECK_STR(ok_run(&t, "why b c"), "1 decision between b and c; the final outcome (stage 12, multi_output_fusion): "
                                   "accepted\n"
                                   "#9  stage 12  multi_output_fusion  sibling  c -> b => fusion.2  accepted\n"
                                   "    fusion.2 and fusion.1 both read x: one kernel with both outputs reads it once\n"
                                   "    metrics: operands=3 outputs=2\n");
  /* numbers are global: a filtered list keeps them */
  CHECK_STR(ok_run(&t, "decisions --stage 11"),
            "#7  stage 11  fusion-merger  merge  a -> b => fusion.1  accepted\n"
            "    fusion (the fusion ending in a) merges into b (merged-to-current-bytes-ratio 0.50)\n"
            "    metrics: users=2 bytes_ratio=0.5 copies=1 operands=3\n"
            "#8  stage 11  fusion-merger  merge  a -> c => fusion.2  accepted\n"
            "    fusion (the fusion ending in a) merges into c (merged-to-current-bytes-ratio 0.50)\n"
            "    metrics: users=2 bytes_ratio=0.5 copies=1 operands=3\n"
            "2 decisions\n");
  CHECK_CONTAINS(ok_run(&t, "decisions"), "#3  stage 9  instruction-fusion  fuse  a -> c  rejected [code_duplication]\n");
  /* render --decision N draws the decision listed as #N */
  char dot[] = "/tmp/fxplain_test_decisionXXXXXX";
  int fd = mkstemp(dot);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "render %s --decision 7 --format dot", dot);
  CHECK_CONTAINS(ok_run(&t, cmd), "decision #7 (stage 11, fusion-merger accepted)");
  unlink(dot);
  sess_free(&t);
  Sess j;
  sess_init_with(&j, true, fan_text, pipeline_lookup("classic"));
  ok_run(&j, "step all");
  /* report --json: what was written, in numbers */
  char html[] = "/tmp/fxplain_test_reportXXXXXX";
  fd = mkstemp(html);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  snprintf(cmd, sizeof cmd, "report %s", html);
  const char *rep = ok_run(&j, cmd);
  char want[160];
  snprintf(want, sizeof want, "{\"file\":\"%s\",\"stages\":18,\"decisions\":", html);
  CHECK(strncmp(rep, want, strlen(want)) == 0);
  CHECK_CONTAINS(rep, ",\"pipeline\":\"classic\",\"pipeline_stages\":18}\n");
  struct stat sb;
  char bytes[64];
  CHECK(stat(html, &sb) == 0 && sb.st_size > 0);
  snprintf(bytes, sizeof bytes, ",\"bytes\":%lld,", (long long)sb.st_size);
  CHECK_CONTAINS(rep, bytes);
  unlink(html);
  const char *out = ok_run(&j, "why a b");
  CHECK_CONTAINS(out, "\"final\":7,\"superseded\":[4],\"relation\":null}");
  CHECK_CONTAINS(out, "\"decisions\":[{\"number\":4,\"stage\":9,");
  sess_free(&j);
}

TEST(kernels_and_stats) {
  Sess t;
  sess_init(&t, false);
  CHECK_STR(ok_run(&t, "kernels"),
            "stage 0 (input) on rtx2080ti: 4 kernels, 4 launches per execution; 112 B read, 64 B written, 20.00 us\n"
            "  1  a                            loop     x1        in main\n"
            "       inputs:  x, y\n"
            "       outputs: f32[4]{0}\n"
            "       bytes: 32 B read, 16 B written; 5.00 us per launch\n"
            "  2  b                            loop     x1        in main\n"
            "       inputs:  y, x\n"
            "       outputs: f32[4]{0}\n"
            "       bytes: 32 B read, 16 B written; 5.00 us per launch\n"
            "  3  dead                         loop     x1        in main\n"
            "       inputs:  x\n"
            "       outputs: f32[4]{0}\n"
            "       bytes: 16 B read, 16 B written; 5.00 us per launch\n"
            "  4  m                            loop     x1        in main\n"
            "       inputs:  g0, g1\n"
            "       outputs: f32[4]{0}\n"
            "       bytes: 32 B read, 16 B written; 5.00 us per launch\n");
  ok_run(&t, "step all");
  CHECK_CONTAINS(ok_run(&t, "show-stats"), "stage 3 (tuple-simplifier) on rtx2080ti\n"
                                           "  instructions    4 in 1 computations\n"
                                           "  kernels         2; 2 launches per execution (loops multiplied out)\n"
                                           "  bytes           48 B read, 32 B written per execution\n"
                                           "  estimated time  10.00 us per execution\n"
                                           "  snapshots       4 stages in 4 snapshots, ");
  Sess j;
  sess_init(&j, true);
  ok_run(&j, "goto 2");
  CHECK_STR(ok_run(&j, "kernels"),
            "{\"stage\":2,\"device\":\"rtx2080ti\",\"launches\":2,\"bytes_read\":64,\"bytes_written\":32,"
            "\"est_us\":10.000155844155843,\"trip_counts_known\":true,\"kernels\":["
            "{\"name\":\"a\",\"kind\":\"loop\",\"computation\":\"main\",\"launches\":1,\"members\":[\"a\"],"
            "\"inputs\":[\"x\",\"y\"],\"outputs\":[\"f32[4]{0}\"],\"bytes_read\":32,\"bytes_written\":16,"
            "\"flops\":4,\"est_us\":5.000077922077922},"
            "{\"name\":\"m\",\"kind\":\"loop\",\"computation\":\"main\",\"launches\":1,\"members\":[\"m\"],"
            "\"inputs\":[\"g0\",\"g1\"],\"outputs\":[\"f32[4]{0}\"],\"bytes_read\":32,\"bytes_written\":16,"
            "\"flops\":4,\"est_us\":5.000077922077922}]}\n");
  sess_free(&j);
  sess_free(&t);
}

TEST(json_forms) {
  Sess t;
  sess_init(&t, true);
  CHECK_STR(ok_run(&t, "step 2"), "[{\"stage\":1,\"pass\":\"cse\",\"changed\":true,\"summary\":\"1 rewritten\","
                                  "\"kernels\":3},{\"stage\":2,\"pass\":\"dce\",\"changed\":true,"
                                  "\"summary\":\"1 removed\",\"kernels\":2}]\n");
  CHECK_STR(ok_run(&t, "decisions --stage 1"),
            "[{\"number\":1,\"stage\":1,\"pass\":\"cse\",\"action\":\"rewrite\",\"producer\":\"b\",\"consumer\":null,"
            "\"verdict\":\"accepted\",\"reason\":null,\"detail\":\"replaced b by a: the same add of the same "
            "operands\",\"metrics\":{\"users_moved\":1},\"suggestion\":null}]\n");
  CHECK_STR(ok_run(&t, "why dead"),
            "{\"name\":\"dead\",\"stage\":2,\"present\":false,\"last_seen_stage\":1,\"became\":null,\"decisions\":["
            "{\"number\":2,\"stage\":2,\"pass\":\"dce\",\"action\":\"remove\",\"producer\":\"dead\",\"consumer\":null,"
            "\"verdict\":\"accepted\",\"reason\":null,\"detail\":\"removed dead (negate in main): no users and no "
            "side effects\",\"metrics\":{},\"suggestion\":null}]}\n");
  CHECK_STR(ok_run(&t, "why a"), "{\"name\":\"a\",\"stage\":2,\"present\":true,\"op\":\"add\","
                                 "\"shape\":\"f32[4]{0}\",\"computation\":\"main\",\"kernel\":{\"name\":\"a\","
                                 "\"kind\":\"loop\",\"members\":1},\"decisions\":[{\"number\":1,\"stage\":1,\"pass\":\"cse\","
                                 "\"action\":\"rewrite\",\"producer\":\"b\",\"consumer\":null,\"verdict\":"
                                 "\"accepted\",\"reason\":null,\"detail\":\"replaced b by a: the same add of the "
                                 "same operands\",\"metrics\":{\"users_moved\":1},\"suggestion\":null}]}\n");
  CHECK_STR(ok_run(&t, "why x m"), "{\"names\":[\"x\",\"m\"],\"stage\":2,\"split\":\"no_kernel\",\"kernels\":[null,"
                                   "\"m\"],\"boundaries\":[],\"joined\":null,\"decisions\":[],\"final\":null,\"superseded\":[],"
                                   "\"relation\":\"x launches no kernel (a parameter: its buffer is an input, no kernel "
                                   "writes it), so no kernel boundary lies between x and m for a pass to decide\"}\n");
  CHECK_STR(ok_run(&t, "diff 0 1"), "{\"from\":0,\"to\":1,\"instructions_from\":9,\"instructions_to\":8,"
                                    "\"added\":[],\"removed\":[{\"name\":\"b\",\"op\":\"add\",\"computation\":"
                                    "\"main\",\"into\":\"a\"}],\"rewritten\":[{\"name\":\"t\",\"op\":\"tuple\","
                                    "\"computation\":\"main\",\"detail\":\"operands (a, b) -> (a, a)\"}],"
                                    "\"fused\":[]}\n");
  CHECK_STR(ok_run(&t, "stage"), "{\"stage\":2,\"last\":3,\"pipeline\":\"test\",\"pass\":\"dce\",\"changed\":"
                                 "true,\"instructions\":7,\"kernels\":2,\"next\":\"tuple-simplifier\"}\n");
  CHECK_STR(ok_run(&t, "back"), "{\"stage\":1,\"pass\":\"cse\",\"changed\":true,\"summary\":\"1 rewritten\","
                                "\"kernels\":3}\n");
  sess_free(&t);
}

/* A pass that leaves a module the verifier refuses: the add's shape no longer matches. */
static bool break_shapes(IrModule *m, PassContext *cx, bool *changed) {
  (void)cx;
  IrInstr *a = ir_module_find_instr(m, "a");
  a->shape.dims[0] = 5;
  *changed = true;
  return true;
}
static const Pass pass_breaker = {"breaker", "breaks the module", break_shapes};
static const Pass *const broken_passes[] = {&pass_cse, &pass_breaker};
static const Pipeline broken_pipeline = {"broken", "cse then a broken pass", 2, broken_passes};

TEST(a_pass_that_breaks_the_verifier_is_an_error_naming_it) {
  Sess t;
  sess_init(&t, false);
  t.s.eng.pipeline = &broken_pipeline;
  bool ok;
  const char *out = run(&t, "step all", &ok);
  CHECK(!ok);
  CHECK_CONTAINS(out, "stage 1  cse: 1 rewritten");
  CHECK_CONTAINS(out, "error: stage 2: breaker left a module that does not verify: ");
  CHECK(t.s.eng.cur == 1 && t.s.eng.nstages == 2); /* the session keeps what it had */
  CHECK(explain_log_nstages(t.s.eng.log) == 2);
  CHECK_STR(ok_run(&t, "stage"), "stage 1 of 2 (broken pipeline): after cse; 8 instructions, 3 kernels\nnext: breaker\n");
  sess_free(&t);
}

TEST(pipeline_command) {
  Sess t;
  sess_init(&t, false);
  ok_run(&t, "step");
  bool ok;
  CHECK_STR(run(&t, "pipeline fancy", &ok), "error: no pipeline named 'fancy' (pipelines: classic, priority)\n");
  CHECK(!ok && t.s.eng.pipeline == &test_pipeline && t.s.eng.nstages == 2);
  const char *out = ok_run(&t, "pipeline priority");
  CHECK(t.s.eng.pipeline == pipeline_lookup("priority") && t.s.eng.nstages == 1 && t.s.eng.cur == 0);
  const Pipeline *pr = pipeline_lookup("priority");
  char want[256];
  snprintf(want, sizeof want, "pipeline priority: %s\n  > 0  input\n    1  %-24s -\n", pr->description,
           pr->passes[0]->name);
  CHECK_CONTAINS(out, want);
  CHECK_CONTAINS(out, "pipelines: classic priority\n");
  CHECK(run(&t, "step", &ok) && ok && t.s.eng.cur == 1);
  snprintf(want, sizeof want, "  > 1  %-24s run\n", pr->passes[0]->name);
  CHECK_CONTAINS(ok_run(&t, "pipeline"), want);
  sess_free(&t);
}

TEST(nothing_loaded) {
  Sess t;
  sess_init(&t, false);
  ir_module_free(t.s.eng.stages[0].module);
  t.s.eng.stages[0].module = NULL;
  t.s.eng.nstages = 0;
  const char *cmds[] = {"step", "back", "goto 1", "stage", "passes", "diff", "why a", "decisions", "kernels",
                        "show-stats"};
  for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
    bool ok;
    CHECK_STR(run(&t, cmds[k], &ok), "error: nothing is loaded: load a module (load FILE.hlo) or define one first\n");
    CHECK(!ok);
  }
  sess_free(&t);
}

/* Every command, view (`show WHAT`) and setting (`set WHAT`) has a full description: a usage line
 * and a help text; a view or setting a help text that says more than its usage
 * line (at least one line of description under it, or beside it). */
static int nhelp_bad;
static void check_help(const ReplCommand *c, void *ctx) {
  (void)ctx;
  bool sub = strncmp(c->name, "show-", 5) == 0 || strncmp(c->name, "set-", 4) == 0;
  if (!c->usage || !c->usage[0]) {
    fprintf(stderr, "command %s has no usage line\n", c->name);
    nhelp_bad++;
  }
  /* (a command without a summary is hidden from `help`: an alias or a form of another command) */
  if (!c->help || strlen(c->help) < 20) {
    fprintf(stderr, "%s %s has no full help text\n", sub ? "view/setting" : "command", c->name);
    nhelp_bad++;
    return;
  }
  if (sub) {
    /* The description: the text after the first line, or after the usage on it. */
    const char *nl = strchr(c->help, '\n');
    const char *rest = nl ? nl + 1 : "";
    while (*rest == ' ' || *rest == '\n') rest++;
    const char *gap = strstr(c->help, "  ");
    if (strlen(rest) < 20 && !(gap && (!nl || gap < nl) && strlen(gap) > 20)) {
      fprintf(stderr, "%s: its help only repeats the usage\n", c->name);
      nhelp_bad++;
    }
  }
}

TEST(every_command_view_and_setting_has_help) {
  nhelp_bad = 0;
  repl_command_foreach(check_help, NULL);
  CHECK(nhelp_bad == 0);
  /* `help show` prints each view's description once, not its usage twice */
  Sess t;
  sess_init(&t, false);
  const char *out = ok_run(&t, "help show");
  CHECK_CONTAINS(out, "  show stats\n      The current stage in numbers");
  CHECK(!strstr(out, "  show device\n      show device"));
  sess_free(&t);
}

int main(void) {
  RUN(step_prints_one_line_per_pass);
  RUN(any_path_gives_the_same_stages);
  RUN(unchanged_stages_share_snapshots);
  RUN(passes_table);
  RUN(passes_changed_hides_unchanged_and_not_run);
  RUN(diff_why_decisions);
  RUN(why_pair_final_outcome_first_and_decision_numbers);
  RUN(kernels_and_stats);
  RUN(json_forms);
  RUN(a_pass_that_breaks_the_verifier_is_an_error_naming_it);
  RUN(pipeline_command);
  RUN(nothing_loaded);
  RUN(every_command_view_and_setting_has_help);
  return check_summary();
}
