/* test_run_cmds.c — the run commands on a session: `run` with .npy inputs computes the exact
 * values and saves them, --check agrees with the interpreter, profile writes a Chrome trace,
 * compare shows two stages, set max_memory stops an oversized run, and bad options give clear
 * errors. Times vary, so the checks look at everything else. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../check.h"
#include "../../compiler/hlo/hlo.h"
#include "../../repl/session.h"
#include "../../runtime/backend.h"
#include "../../runtime/runtime.h"

static const char *const module_text =
    "HloModule t\n"
    "ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {\n"
    "  %x = f32[4]{0} parameter(0)\n"
    "  %y = f32[4]{0} parameter(1)\n"
    "  %a = f32[4]{0} add(%x, %y)\n"
    "  %b = f32[4]{0} subtract(%x, %y)\n"
    "  ROOT %m = f32[4]{0} multiply(%a, %b)\n"
    "}\n";

static char dir[64];

static bool starts_with(const char *s, const char *prefix) { return s && strncmp(s, prefix, strlen(prefix)) == 0; }
static char *outbuf;
static size_t outlen;

static void sess_init(Session *s) {
  memset(s, 0, sizeof *s);
  explain_engine_init(&s->eng);
  s->input_name = "<test>";
  FxError err = {0};
  IrModule *m = hlo_parse(module_text, strlen(module_text), "t.hlo", &err);
  explain_engine_set_input(&s->eng, m);
  s->err = stderr;
}

static void sess_free(Session *s) {
  explain_engine_fini(&s->eng);
}

/* Runs one command line (split on spaces); returns its success, output in outbuf. */
static bool cmd(Session *s, const char *line, FxError *err) {
  char copy[512];
  snprintf(copy, sizeof copy, "%s", line);
  char *argv[32];
  int argc = 0;
  for (char *t = strtok(copy, " "); t && argc < 32; t = strtok(NULL, " ")) argv[argc++] = t;
  free(outbuf);
  outbuf = NULL;
  s->out = open_memstream(&outbuf, &outlen);
  const ReplCommand *c = repl_command_lookup(argv[0]);
  fx_error_clear(err);
  bool ok = c && c->run(s, argc, argv, err);
  fclose(s->out);
  return ok;
}

static void write_vec(const char *name, const float *v) {
  FxError e = {0};
  int64_t n = 4;
  RtTensor *t = rt_tensor_new(IR_F32, 1, &n, &e);
  memcpy(t->data, v, sizeof(float) * 4);
  char p[128];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  rt_npy_write(p, t, &e);
  rt_tensor_unref(t);
}

TEST(run_with_npy_inputs_and_save) {
  Session s;
  sess_init(&s);
  FxError e;
  const float x[4] = {1, 2, 3, 4}, y[4] = {0.5f, 1, -1, 2};
  write_vec("x.npy", x);
  write_vec("y.npy", y);
  char line[400];
  snprintf(line, sizeof line, "run --backend cpu --input x=%s/x.npy --input 1=%s/y.npy --check --save out=%s/o.npy", dir,
           dir, dir);
  CHECK(cmd(&s, line, &e));
  CHECK_CONTAINS(outbuf, "stage 0 on cpu:\n");
  /* (x+y)(x-y) = x^2 - y^2: 0.75 3 8 12 */
  CHECK_CONTAINS(outbuf, "out: f32[4]  min 0.75  max 12  mean 5.9375  first 0.75 3 8 12\n");
  CHECK_CONTAINS(outbuf, "kernels launched 3, bytes read 96 B, written 48 B, time ");
  /* the bytes the run counts are the plan's: 96 + 48 */
  CHECK_CONTAINS(outbuf, "kernel plan: 3 launches, 144 B moved, ");
  /* x+y and x-y are read by the product only: their buffers are the plan's slots, not fresh memory */
  CHECK_CONTAINS(outbuf, "buffers: 2 kernel outputs went into 32 B of buffer slots, reused across the run");
  CHECK_CONTAINS(outbuf, "check: every output agrees with the reference interpreter (worst error 0)\n");
  snprintf(line, sizeof line, "%s/o.npy", dir);
  RtTensor *o = rt_npy_read(line, &e);
  CHECK(o && o->count == 4 && rt_get_f(o, 3) == 12.0f);
  rt_tensor_unref(o);
  /* the interpreter backend computes the same and counts the same kernels */
  snprintf(line, sizeof line, "run --backend interp --input x=%s/x.npy --input y=%s/y.npy", dir, dir);
  CHECK(cmd(&s, line, &e));
  CHECK_CONTAINS(outbuf, "stage 0 on interp:\n");
  CHECK_CONTAINS(outbuf, "first 0.75 3 8 12\n");
  CHECK_CONTAINS(outbuf, "kernels launched 3, ");
  sess_free(&s);
}

TEST(run_errors) {
  Session s;
  sess_init(&s);
  FxError e;
  CHECK(!cmd(&s, "run --stage 9", &e));
  CHECK_STR(e.msg, "--stage needs a stage number that exists: 9");
  CHECK(!cmd(&s, "run --backend bogus", &e));
  CHECK_STR(e.msg, "unknown backend 'bogus' (interp, cpu, gpu or auto)");
  CHECK(!cmd(&s, "run --input z=nothing.npy", &e));
  CHECK_STR(e.msg, "--input z: the entry has no parameter of that name");
  CHECK(!cmd(&s, "run --input x=/nonexistent/x.npy", &e));
  CHECK_CONTAINS(e.msg, "cannot open");
  CHECK_STR(e.file, "/nonexistent/x.npy");
  CHECK(!cmd(&s, "run --repeat 0", &e));
  CHECK_STR(e.msg, "--repeat needs 1 to 100000: 0");
  CHECK(!cmd(&s, "run --frobnicate", &e));
  CHECK_STR(e.msg, "unknown or incomplete option: --frobnicate");
  CHECK(!cmd(&s, "run --save nope=x.npy", &e));
  CHECK_STR(e.msg, "--save nope: no such output (out, out.0, out.1, ...)");
  /* a wrongly shaped input names the file and both shapes */
  FxError e2 = {0};
  int64_t n = 3;
  RtTensor *t = rt_tensor_new(IR_F32, 1, &n, &e2);
  char p[128];
  snprintf(p, sizeof p, "%s/bad.npy", dir);
  rt_npy_write(p, t, &e2);
  rt_tensor_unref(t);
  char line[256];
  snprintf(line, sizeof line, "run --input x=%s", p);
  CHECK(!cmd(&s, line, &e));
  CHECK_STR(e.msg, "holds f32[3] but parameter x is f32[4]");
  sess_free(&s);
}

TEST(memory_budget_stops_a_run) {
  Session s;
  sess_init(&s);
  FxError e;
  CHECK(cmd(&s, "set-max_memory 40", &e));
  CHECK_STR(outbuf, "max_memory = 40 bytes\n");
  CHECK(!cmd(&s, "run --backend interp", &e));
  CHECK_CONTAINS(e.msg, "out of memory budget");
  CHECK(cmd(&s, "set-max_memory 1.5K", &e));
  CHECK_STR(outbuf, "max_memory = 1536 bytes (1.5 KiB)\n");
  CHECK(!cmd(&s, "set-max_memory 2X", &e));
  CHECK_STR(e.msg, "max_memory needs a byte count: 2X");
  CHECK(!cmd(&s, "set-max_memory -1", &e));
  CHECK(cmd(&s, "set-max_memory 0", &e));
  CHECK(cmd(&s, "run --backend interp", &e));
  CHECK(rt_live_bytes() == 0);
  sess_free(&s);
}

/* set threads and set vecmath: the next cpu run says what it uses, and computes the same */
TEST(threads_and_vecmath_settings) {
  Session s;
  sess_init(&s);
  FxError e;
  CHECK(cmd(&s, "set-threads 1", &e));
  CHECK_CONTAINS(outbuf, "threads = 1: ");
  CHECK(cmd(&s, "set-vecmath libm", &e));
  CHECK_CONTAINS(outbuf, "vector math: libm (scalar: set vecmath libm)");
  CHECK(cmd(&s, "run --backend cpu --check", &e));
  CHECK_CONTAINS(outbuf, "cpu: 1 threads, vector math libm");
  CHECK_CONTAINS(outbuf, "check: every output agrees with the reference interpreter");
  CHECK(!cmd(&s, "set-threads many", &e));
  CHECK(!cmd(&s, "set-threads 65", &e));
  CHECK(!cmd(&s, "set-vecmath fast", &e));
  CHECK(cmd(&s, "set-threads 0", &e));
  CHECK_CONTAINS(outbuf, "(every core)");
  CHECK(cmd(&s, "set-vecmath sleef", &e));
  CHECK_CONTAINS(outbuf, "vector math: ");
  CHECK(cmd(&s, "run --backend cpu --check", &e));
  CHECK_CONTAINS(outbuf, "check: every output agrees with the reference interpreter");
  /* with --json, each answers with the old and the new value, as the fusion knobs do */
  s.json = true;
  int before = cpu_default_threads();
  CHECK(cmd(&s, "set-threads 1", &e));
  char want[96];
  snprintf(want, sizeof want, "{\"setting\":\"threads\",\"old\":%d,\"new\":1}\n", before);
  CHECK_STR(outbuf, want);
  CHECK(cmd(&s, "set-threads 0", &e));
  CHECK_CONTAINS(outbuf, "{\"setting\":\"threads\",\"old\":1,\"new\":");
  CHECK(cmd(&s, "set-vecmath libm", &e));
  CHECK(starts_with(outbuf, "{\"setting\":\"vecmath\",\"old\":"));
  CHECK_CONTAINS(outbuf, ",\"new\":\"libm\",\"detail\":\"libm (scalar: set vecmath libm)\"}\n");
  CHECK(cmd(&s, "set-vecmath sleef", &e));
  CHECK(cmd(&s, "set-max_memory 1M", &e));
  CHECK_CONTAINS(outbuf, ",\"new\":1048576}\n");
  CHECK(cmd(&s, "set-max_memory 0", &e));
  CHECK_STR(outbuf, "{\"setting\":\"max_memory\",\"old\":1048576,\"new\":0}\n");
  s.json = false;
  sess_free(&s);
}

/* x <- sin(997 x), 60 times: each step multiplies a difference in the last bit by about 1000, so
 * SLEEF's sin (within 1 ulp) and libm's part ways; --check then runs the stage again with libm,
 * which agrees, and says so instead of failing. */
static const char *const chaotic_text =
    "HloModule chaotic\n\n"
    "cond {\n  s = (s32[], f32[64]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
    "  n = s32[] constant(60)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n\n"
    "body {\n  s = (s32[], f32[64]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
    "  x = f32[64] get-tuple-element(s), index=1\n  one = s32[] constant(1)\n  i2 = s32[] add(i, one)\n"
    "  k = f32[] constant(997)\n  kb = f32[64] broadcast(k), dimensions={}\n  y = f32[64] multiply(x, kb)\n"
    "  z = f32[64] sine(y)\n  ROOT out = (s32[], f32[64]) tuple(i2, z)\n}\n\n"
    "ENTRY main {\n  x0 = f32[64] parameter(0)\n  zero = s32[] constant(0)\n"
    "  init = (s32[], f32[64]) tuple(zero, x0)\n  w = (s32[], f32[64]) while(init), condition=cond, body=body\n"
    "  ROOT r = f32[64] get-tuple-element(w), index=1\n}\n";

TEST(check_tells_sleef_drift_from_wrong_kernels) {
  Session s;
  memset(&s, 0, sizeof s);
  explain_engine_init(&s.eng);
  s.input_name = "<test>";
  s.err = stderr;
  FxError e = {0};
  IrModule *m = hlo_parse(chaotic_text, strlen(chaotic_text), "chaotic.hlo", &e);
  CHECK(m != NULL);
  if (!m) return;
  explain_engine_set_input(&s.eng, m);
  CHECK(cmd(&s, "set-vecmath libm", &e));
  CHECK(cmd(&s, "run --backend cpu --check", &e));
  CHECK_CONTAINS(outbuf, "check: every output agrees with the reference interpreter (worst error 0)");
  CHECK(cmd(&s, "set-vecmath sleef", &e));
  if (cpu_vecmath_is_sleef()) {
    bool ok = cmd(&s, "run --backend cpu --check", &e);
    if (!ok) fprintf(stderr, "%s\n", e.msg);
    CHECK(ok);
    CHECK_CONTAINS(outbuf, "check: with SLEEF's vector math out element [");
    CHECK_CONTAINS(outbuf, "run again with libm (as the interpreter computes), every output agrees (worst error 0)");
    CHECK(cpu_vecmath_is_sleef()); /* the setting is back */
    s.json = true; /* the same outcome as JSON */
    CHECK(cmd(&s, "run --backend cpu --check", &e));
    CHECK_CONTAINS(outbuf, "\"check\":{\"agrees\":true,\"worst_error\":0,\"with\":\"libm\",\"detail\":\"out element [");
    s.json = false;
  } else {
    printf("SLEEF not installed: its part of check_tells_sleef_drift_from_wrong_kernels skipped\n");
  }
  explain_engine_fini(&s.eng);
}

TEST(profile_trace_and_compare) {
  Session s;
  sess_init(&s);
  FxError e;
  char line[256];
  snprintf(line, sizeof line, "profile --backend cpu --trace %s/t.json", dir);
  CHECK(cmd(&s, line, &e));
  CHECK_CONTAINS(outbuf, "kernel                       how          launches");
  CHECK_CONTAINS(outbuf, "\nm                            generated           1");
  /* the CPU backend runs the stage as one compiled function: its kernels are counted, not timed
   * alone, and the table says so instead of showing 0 */
  CHECK_CONTAINS(outbuf, "\nm                            generated           1            -            -");
  CHECK_CONTAINS(outbuf, "ran inside the compiled stage or a compiled loop and were not timed alone; their time is "
                         "in the entry and loop rows\n");
  CHECK_CONTAINS(outbuf, "trace written to ");
  snprintf(line, sizeof line, "%s/t.json", dir);
  FILE *f = fopen(line, "r");
  char buf[4096] = {0};
  CHECK(f && fread(buf, 1, sizeof buf - 1, f) > 0);
  if (f) fclose(f);
  CHECK(strncmp(buf, "{\"traceEvents\": [", 17) == 0);
  CHECK_CONTAINS(buf, "{\"name\": \"m\", \"cat\": \"generated\", \"ph\": \"X\"");
  CHECK_CONTAINS(buf, "\"args\": {\"launches\": 1, \"bytes\": 48, \"op\": \"multiply\"}}");
  CHECK(cmd(&s, "compare 0 0 --backend cpu", &e));
  CHECK_CONTAINS(outbuf, "stage           kernels     bytes read  bytes written         time\n");
  CHECK_CONTAINS(outbuf, "speedup ");
  CHECK(cmd(&s, "run --stages 0,0 --backend interp", &e));
  CHECK_CONTAINS(outbuf, "stage           kernels     bytes read  bytes written         time\n");
  CHECK_CONTAINS(outbuf, "\n0                     3           96 B           48 B ");
  CHECK(!cmd(&s, "run --stages 0", &e));
  CHECK_STR(e.msg, "--stages needs A,B: 0");
  sess_free(&s);
}

/* With --json, run, profile and compare print one JSON object each, with the same figures the
 * text shows (times vary: only their presence is checked). */
TEST(json_forms_of_run_profile_and_compare) {
  Session s;
  sess_init(&s);
  s.json = true;
  FxError e;
  const float x[4] = {1, 2, 3, 4}, y[4] = {0.5f, 1, -1, 2};
  write_vec("jx.npy", x);
  write_vec("jy.npy", y);
  char line[400], want[400];
  snprintf(line, sizeof line, "run --backend cpu --input x=%s/jx.npy --input y=%s/jy.npy --check --save out=%s/jo.npy", dir, dir,
           dir);
  CHECK(cmd(&s, line, &e));
  CHECK(starts_with(outbuf, "{\"stage\":0,\"backend\":\"cpu\",\"threads\":"));
  CHECK(strchr(outbuf, '\n') == outbuf + outlen - 1); /* one line */
  CHECK_CONTAINS(outbuf, "\"outputs\":[{\"name\":\"out\",\"shape\":\"f32[4]\",\"elements\":4,\"complex\":false,"
                         "\"min\":0.75,\"max\":12,\"mean\":5.9375,\"first\":[0.75,3,8,12]}]");
  CHECK_CONTAINS(outbuf, "\"launches\":3,\"bytes_read\":96,\"bytes_written\":48,\"time_ns\":");
  CHECK_CONTAINS(outbuf, "\"repeat\":1,\"plan\":{\"device\":\"rtx2080ti\",\"launches\":3,\"bytes\":144,\"est_us\":");
  CHECK_CONTAINS(outbuf, "\"buffer_slot_outputs\":2,\"buffer_slot_bytes\":32,");
  snprintf(want, sizeof want, "\"saved\":[{\"output\":\"out\",\"file\":\"%s/jo.npy\"}]", dir);
  CHECK_CONTAINS(outbuf, want);
  CHECK_CONTAINS(outbuf, "\"check\":{\"agrees\":true,\"worst_error\":0,\"with\":null,\"detail\":null}}\n");
  /* without --check, check is null; the interpreter has no threads or vector math */
  snprintf(line, sizeof line, "run --backend interp --input x=%s/jx.npy --input y=%s/jy.npy", dir, dir);
  CHECK(cmd(&s, line, &e));
  CHECK(starts_with(outbuf, "{\"stage\":0,\"backend\":\"interp\",\"note\":null,\"outputs\":"));
  CHECK_CONTAINS(outbuf, "\"saved\":[],\"check\":null}\n");
  /* a failed check is an error, not a JSON answer */
  CHECK(!cmd(&s, "run --backend cpu --save nope=x.npy", &e));
  CHECK_STR(e.msg, "--save nope: no such output (out, out.0, out.1, ...)");

  CHECK(cmd(&s, "profile --backend cpu", &e));
  CHECK(starts_with(outbuf, "{\"stage\":0,\"backend\":\"cpu\","));
  /* kernels run inside the compiled stage have null times */
  CHECK_CONTAINS(outbuf, "{\"name\":\"m\",\"how\":\"generated\",\"op\":\"multiply\",\"launches\":1,\"total_ns\":null,"
                         "\"mean_ns\":null,\"gb_per_s\":null,\"bytes\":48,\"holds\":[\"multiply\"],\"not_generated\":null}");
  CHECK_CONTAINS(outbuf, "\"launches\":3,\"bytes_read\":96,\"bytes_written\":48,\"time_ns\":");
  CHECK_CONTAINS(outbuf, "\"trace\":null}\n");

  CHECK(cmd(&s, "compare 0 0 --backend interp --repeat 2", &e));
  CHECK(starts_with(outbuf, "{\"backend\":\"interp\",\"note\":null,\"stages\":[{\"stage\":0,\"launches\":3,\"bytes_read\":96,"
                        "\"bytes_written\":48,\"time_ns\":"));
  CHECK_CONTAINS(outbuf, "\"repeat\":2},{\"stage\":0,\"launches\":3,");
  CHECK_CONTAINS(outbuf, "\"speedup\":");
  CHECK_CONTAINS(outbuf, "\"outputs_differ\":null}\n");
  sess_free(&s);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/fxrunXXXXXX");
  if (!mkdtemp(dir)) return 1;
  char cache[96];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  setenv("FXPLAIN_CACHE_DIR", cache, 1);
  RUN(run_with_npy_inputs_and_save);
  RUN(run_errors);
  RUN(memory_budget_stops_a_run);
  RUN(threads_and_vecmath_settings);
  RUN(check_tells_sleef_drift_from_wrong_kernels);
  RUN(profile_trace_and_compare);
  RUN(json_forms_of_run_profile_and_compare);
  free(outbuf);
  char cmdl[128];
  snprintf(cmdl, sizeof cmdl, "rm -rf %s", dir);
  if (system(cmdl) != 0) return 1;
  return check_summary();
}
