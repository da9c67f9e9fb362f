/* test_hostile.c — hostile input that is too big to keep as a file: generated chains and lines
 * (issue 17). Each test builds its input, runs it through the shell's own entry points (load, the
 * .fx statements, step, run, kernels --source) and checks that the session finishes with a result
 * or one located error. Before the fixes each of these crashed with a stack overflow or ran for
 * minutes; the small hand-made reproductions live in tests/hlo/errors, tests/fx/errors and
 * tests/repl/command_errors.txt. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "../../compiler/fx/fx.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../compiler/ir/ir.h"
#include "../../repl/repl.h"
#include "../../repl/session.h"

static char dir[64];
static char *outbuf, *errbuf;
static size_t outlen, errlen;

/* A growing string. */
typedef struct {
  char *s;
  size_t n;
  FILE *f;
} Text;

static void text_open(Text *t) {
  t->s = NULL;
  t->n = 0;
  t->f = open_memstream(&t->s, &t->n);
}

static char *text_close(Text *t) {
  fclose(t->f);
  return t->s;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* Runs the script text on a fresh session; returns whether it succeeded, output in outbuf and
 * errors in errbuf. */
static bool run_script(const char *text) {
  free(outbuf);
  free(errbuf);
  FILE *out = open_memstream(&outbuf, &outlen), *err = open_memstream(&errbuf, &errlen);
  Session *s = session_new(out, err);
  bool ok = s && repl_run_text(s, text, "<-e>");
  if (s) session_free(s);
  fclose(out);
  fclose(err);
  return ok;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* An HLO chain of n dependent adds: %aK = add(%aK-1, %p). */
static void write_add_chain(const char *path, int n) {
  Text t;
  text_open(&t);
  fprintf(t.f, "HloModule chain\n\nENTRY %%main (p: f32[4]) -> f32[4] {\n  %%p = f32[4] parameter(0)\n  %%a0 = f32[4] add(%%p, %%p)\n");
  for (int k = 1; k < n; k++) fprintf(t.f, "  %sa%d = f32[4] add(%%a%d, %%p)\n", k == n - 1 ? "ROOT %" : "%", k, k - 1);
  fprintf(t.f, "}\n");
  write_file(path, text_close(&t));
  free(t.s);
}

/* Defect 2: the code emitter recursed once per instruction of a fused chain (gen_op/gen_which)
 * and overflowed the stack at about 1,500 adds. */
TEST(emitter_long_chain) {
  char path[128], script[512];
  snprintf(path, sizeof path, "%s/chain.hlo", dir);
  write_add_chain(path, 3000);
  snprintf(script, sizeof script, "load %s; step all; kernels --source; run --backend cpu --check", path);
  double t0 = now();
  CHECK(run_script(script));
  CHECK_CONTAINS(outbuf, "out0[i0] = v3000;");
  CHECK_CONTAINS(outbuf, "check: every output agrees with the reference interpreter");
  CHECK(now() - t0 < 60);
}

/* Defect 2: a chain of ops that are not walked without recursion (3,000 pads) is bounded: past
 * 200 levels the kernel runs on the interpreter instead of overflowing the stack. */
TEST(emitter_long_pad_chain) {
  char path[128], script[512];
  snprintf(path, sizeof path, "%s/pads.hlo", dir);
  Text t;
  text_open(&t);
  fprintf(t.f, "HloModule pads\n\nENTRY %%main (p: f32[4]) -> f32[4] {\n  %%p = f32[4] parameter(0)\n  %%z = f32[] constant(0)\n"
               "  %%a0 = f32[4] pad(%%p, %%z), padding=0_0\n");
  for (int k = 1; k < 3000; k++) fprintf(t.f, "  %sa%d = f32[4] pad(%%a%d, %%z), padding=0_0\n", k == 2999 ? "ROOT %" : "%", k, k - 1);
  fprintf(t.f, "}\n");
  write_file(path, text_close(&t));
  free(t.s);
  snprintf(script, sizeof script, "load %s; step all; run --backend cpu --check; kernels --source", path);
  CHECK(run_script(script));
  CHECK_CONTAINS(outbuf, "check: every output agrees with the reference interpreter");
  CHECK_CONTAINS(outbuf, "// kernel fusion: not generated, runs on host: a2799: the kernel nests more than 200 ops deep");
}

/* Defect 2, from .fx: 1,500 lines of y = y * 1.0001. */
TEST(emitter_long_fx_chain) {
  Text t;
  text_open(&t);
  fprintf(t.f, "param x: f32[4]\ny = x + 1.0\n");
  for (int k = 0; k < 1500; k++) fprintf(t.f, "y = y * 1.0001\n");
  fprintf(t.f, "out y\nstep all\nrun --backend cpu --check\n");
  char *s = text_close(&t);
  CHECK(run_script(s));
  CHECK_CONTAINS(outbuf, "check: every output agrees with the reference interpreter");
  free(s);
}

/* Defect 1: x + x + ... + x is a left spine as long as the line; lowering it recursed once per
 * term (5,000 terms overflowed the stack), and adding each use of x scanned x's users. */
TEST(fx_left_assoc_chain) {
  Text t;
  text_open(&t);
  fprintf(t.f, "param x: f32[4]\ny = x");
  for (int k = 1; k < 200000; k++) fprintf(t.f, " + x");
  fprintf(t.f, "\nout y\nshow stats\n");
  char *s = text_close(&t);
  double t0 = now();
  CHECK(run_script(s));
  CHECK_CONTAINS(outbuf, "instructions");
  CHECK(now() - t0 < 30);
  free(s);
  /* the same with '*' and '-', in a nested call */
  text_open(&t);
  fprintf(t.f, "param x: f32[4]\ny = sin(x");
  for (int k = 1; k < 20000; k++) fprintf(t.f, " %c x", "*-"[k % 2]);
  fprintf(t.f, ")\nout y\n");
  s = text_close(&t);
  CHECK(run_script(s));
  free(s);
  /* A 40 MB line (10 million terms) is refused at its place before it is held in memory, and a
   * statement of more than 500,000 expression nodes when it is parsed. */
  text_open(&t);
  fprintf(t.f, "param x: f32[4]\ny = x");
  for (int k = 1; k < 10000000; k++) fputs(" + x", t.f);
  fprintf(t.f, "\nout y\n");
  s = text_close(&t);
  CHECK(!run_script(s));
  CHECK_CONTAINS(errbuf, ":2:2000001: error: this statement is too long (more than 1000000 tokens)");
  free(s);
  text_open(&t);
  fprintf(t.f, "param x: f32[4]\ny = -(-(x");
  for (int k = 1; k < 300000; k++) fputs(" + x", t.f);
  fprintf(t.f, "))\nout y\n");
  s = text_close(&t);
  CHECK(!run_script(s));
  CHECK_CONTAINS(errbuf, "error: this statement has more than 500000 operations");
  free(s);
}

/* Issue 17, "recursion must be iterative everywhere": a rewrite that frees a long dead chain
 * (simp_drop_dead) recursed once per instruction. */
TEST(drop_long_dead_chain) {
  Text t;
  text_open(&t);
  int n = 50000;
  fprintf(t.f, "HloModule dead\n\nENTRY %%main (p: f32[4]) -> f32[4] {\n  %%p = f32[4] parameter(0)\n  %%a0 = f32[4] add(%%p, %%p)\n");
  for (int k = 1; k < n; k++) fprintf(t.f, "  %%a%d = f32[4] add(%%a%d, %%p)\n", k, k - 1);
  fprintf(t.f, "  ROOT %%r = f32[4] negate(%%p)\n}\n");
  char *s = text_close(&t);
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(s, strlen(s), "dead.hlo", &err);
  free(s);
  CHECK(m != NULL);
  if (!m) return;
  IrComputation *c = m->entry;
  CHECK_NEAR(simp_drop_dead(c->instrs[c->ninstrs - 2]), n, 0);
  CHECK(ir_verify(m, &err));
  ir_module_free(m);
}

/* Truncates every cached fx_*.so to half its size; returns how many. */
static int truncate_cached(const char *cache) {
  DIR *d = opendir(cache);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 3, ".so") != 0) continue;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", cache, e->d_name);
    struct stat st;
    if (stat(p, &st) == 0 && truncate(p, st.st_size / 2) == 0) n++;
  }
  closedir(d);
  return n;
}

/* Defect 3: a truncated cached kernel made dlopen die with SIGBUS on every later run. The cache
 * entry is now checked (size and checksum beside it) and rebuilt. */
TEST(truncated_cached_kernel) {
  char cache[128];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  const char *script = "load tests/repl/data/small.hlo; run --backend cpu";
  CHECK(run_script(script));
  CHECK_CONTAINS(outbuf, "out: f32[4]");
  CHECK(truncate_cached(cache) > 0);
  CHECK(run_script(script));
  CHECK_CONTAINS(outbuf, "out: f32[4]");
  /* and the rebuilt entry is whole again: a third run loads it */
  CHECK(run_script(script));
  CHECK_CONTAINS(outbuf, "out: f32[4]");
}

/* Defect 10: the .fx module name was the file name unchanged, so `save` wrote HloModule lines
 * that `load` could not read back. */
TEST(save_load_odd_file_names) {
  const char *names[] = {"model copy.fx", "2layer.fx", "net(1).fx"};
  for (int k = 0; k < 3; k++) {
    char fx[256], script[700];
    snprintf(fx, sizeof fx, "%s/%s", dir, names[k]);
    write_file(fx, "param x: f32[4]\ny = sin(x)\nout y\n");
    snprintf(script, sizeof script, "load '%s'; save %s/saved.hlo; load %s/saved.hlo; run --backend interp", fx, dir, dir);
    CHECK(run_script(script));
    CHECK_CONTAINS(outbuf, ": f32[4]  min");
  }
}

/* Defect 10: save replaced a symbolic link or a device node with a regular file. */
TEST(save_through_links_not_over_devices) {
  char target[128], link[128], script[400];
  snprintf(target, sizeof target, "%s/target.hlo", dir);
  snprintf(link, sizeof link, "%s/link.hlo", dir);
  write_file(target, "old");
  CHECK(symlink("target.hlo", link) == 0);
  snprintf(script, sizeof script, "load tests/repl/data/small.hlo; save %s", link);
  CHECK(run_script(script));
  struct stat st;
  CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
  FILE *f = fopen(target, "r");
  char head[64] = "";
  if (f) {
    CHECK(fgets(head, sizeof head, f) != NULL);
    fclose(f);
  }
  CHECK_STR(head, "HloModule small\n");
  CHECK(!run_script("load tests/repl/data/small.hlo; save /dev/full"));
  CHECK_CONTAINS(errbuf, "error: cannot write '/dev/full': it is a device");
  CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
}

/* Defect 9: a file name given on the command line is printed with its control bytes escaped. */
TEST(file_names_escaped) {
  char path[128];
  snprintf(path, sizeof path, "%s/a\x1b]0;title\x07.hlo", dir);
  FILE *src = fopen("tests/repl/data/small.hlo", "rb");
  char text[4096];
  size_t n = src ? fread(text, 1, sizeof text - 1, src) : 0;
  if (src) fclose(src);
  text[n] = 0;
  write_file(path, text);
  free(outbuf);
  free(errbuf);
  FILE *out = open_memstream(&outbuf, &outlen), *err = open_memstream(&errbuf, &errlen);
  Session *s = session_new(out, err);
  FxError e;
  fx_error_clear(&e);
  bool is_hlo = false;
  CHECK(repl_run_path(s, path, &e, &is_hlo));
  session_free(s);
  fclose(out);
  fclose(err);
  CHECK_CONTAINS(outbuf, "a\\x1b]0;title\\x07.hlo");
  CHECK(!strchr(outbuf, 0x1b) && !strchr(outbuf, 0x07));
}

/* Defect 11 (and the compiler half of 8): a cache directory that cannot be used (a file, a path
 * longer than the limit, silently cut before) or a compiler that fails or hangs made run --backend
 * cpu fail or wait without end; now the kernels run on the interpreter and the run says why. */
TEST(unusable_cache_or_compiler_falls_back) {
  char cache[128], file[128], longp[700], slow[128], old_cc[256] = "";
  const char *cc = getenv("CC");
  if (cc) snprintf(old_cc, sizeof old_cc, "%s", cc);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(file, sizeof file, "%s/not_a_dir", dir);
  write_file(file, "x");
  const char *script = "load tests/repl/data/small.hlo; run --backend cpu";
  setenv("FXPLAIN_CACHE_DIR", file, 1);
  CHECK(run_script(script));
  CHECK_CONTAINS(outbuf, "note: the kernel cache cannot be used");
  CHECK_CONTAINS(outbuf, "out: f32[4]");
  int n = snprintf(longp, sizeof longp, "%s/", dir);
  while (n < 600) longp[n++] = 'd';
  longp[n] = 0;
  setenv("FXPLAIN_CACHE_DIR", longp, 1);
  CHECK(run_script(script));
  CHECK_CONTAINS(outbuf, "path is 6");
  CHECK_CONTAINS(outbuf, "out: f32[4]");
  /* a fresh cache, so the compiler really runs */
  char fresh[160];
  snprintf(fresh, sizeof fresh, "%s/cache_cc", dir);
  setenv("FXPLAIN_CACHE_DIR", fresh, 1);
  setenv("CC", "false", 1);
  CHECK(run_script(script));
  CHECK_CONTAINS(outbuf, "could not be compiled (the C compiler (false) failed on generated kernels");
  CHECK_CONTAINS(outbuf, "exit status 1");
  snprintf(slow, sizeof slow, "%s/slowcc", dir);
  write_file(slow, "#!/bin/sh\nexec sleep 20\n");
  chmod(slow, 0700);
  setenv("CC", slow, 1);
  setenv("FXPLAIN_CC_TIMEOUT", "1", 1);
  double t0 = now();
  CHECK(run_script(script));
  CHECK(now() - t0 < 10);
  CHECK_CONTAINS(outbuf, "stopped after the 1 s time limit");
  CHECK_CONTAINS(outbuf, "out: f32[4]");
  if (old_cc[0]) setenv("CC", old_cc, 1);
  else unsetenv("CC");
  unsetenv("FXPLAIN_CC_TIMEOUT");
  setenv("FXPLAIN_CACHE_DIR", cache, 1);
}

/* Defect 12: with no budget by default, a parameter of 400 GB was allocated (and filled) before
 * anything said no; the default budget is now three quarters of the machine's memory, checked
 * before the allocation. */
TEST(default_memory_budget) {
  char path[128], script[256];
  snprintf(path, sizeof path, "%s/bigparam.hlo", dir);
  write_file(path, "HloModule m\n\nENTRY %main {\n  %a = f32[100000000000] parameter(0)\n  ROOT %n = f32[100000000000] negate(%a)\n}\n");
  snprintf(script, sizeof script, "load %s; run --backend interp", path);
  double t0 = now();
  CHECK(!run_script(script));
  CHECK_CONTAINS(errbuf, "out of memory budget: a f32 tensor of 400000000000 bytes");
  CHECK(now() - t0 < 10);
}

/* Defect 8, generated code: stack([x]*10000) made one 1.9 MB kernel that cc -O3 compiled for
 * minutes; kernels past 256 KB of C run on the interpreter and the run says so. */
TEST(huge_kernel_falls_back) {
  Text t;
  text_open(&t);
  fprintf(t.f, "param x: f32[4]\ny = stack([x");
  for (int k = 1; k < 10000; k++) fprintf(t.f, ", x");
  fprintf(t.f, "])\nout y\nstep all\nrun --backend cpu --check\n");
  char *s = text_close(&t);
  double t0 = now();
  CHECK(run_script(s));
  CHECK_CONTAINS(outbuf, "its generated code is too large");
  CHECK_CONTAINS(outbuf, "check: every output agrees with the reference interpreter");
  CHECK(now() - t0 < 30);
  free(s);
}

/* Defect 8, .fx: checking each statement re-lowered every statement before it, so 5,000 lines
 * took over a minute; the lowering is now kept between statements. An error discards it and the
 * next statement rebuilds it from the accepted ones. */
TEST(fx_many_statements_incremental) {
  Text t;
  text_open(&t);
  fprintf(t.f, "param x: f32[4]\ny = x + 1.0\n");
  for (int k = 0; k < 5000; k++) fprintf(t.f, "y = y * 1.0001\n");
  fprintf(t.f, "out y\nshow stats\n");
  char *s = text_close(&t);
  double t0 = now();
  CHECK(run_script(s));
  CHECK_CONTAINS(outbuf, "instructions");
  CHECK(now() - t0 < 20);
  free(s);
  FxState *st = fx_state_new();
  FxError err;
  fx_error_clear(&err);
  CHECK(fx_feed(st, "param x: f32[4]", "<t>", 1, &err));
  CHECK(fx_feed(st, "y = sin(x)", "<t>", 2, &err));
  CHECK(!fx_feed(st, "z = y + nope", "<t>", 3, &err));
  fx_error_clear(&err);
  CHECK(fx_feed(st, "z = y * 2.0", "<t>", 4, &err));
  CHECK(fx_feed(st, "out z", "<t>", 5, &err));
  IrModule *m = fx_build_module(st, "inc", &err);
  CHECK(m != NULL);
  if (m) CHECK(ir_verify(m, &err));
  ir_module_free(m);
  fx_state_free(st);
}

/* Defect 13: errors about files named in run/profile options point at the option's argument
 * (they had no column: "FILE: error: ..."). */
TEST(file_option_errors_located) {
  CHECK(!run_script("load tests/repl/data/small.hlo; profile --backend interp --trace /nonexistent/dir/t.json"));
  CHECK_CONTAINS(errbuf, "<-e>:1:66: error: cannot write the trace /nonexistent/dir/t.json: No such file or directory");
  CHECK(!run_script("load tests/repl/data/small.hlo; run --backend interp --save out=/nonexistent/dir/o.npy"));
  CHECK_CONTAINS(errbuf, "<-e>:1:61: error: /nonexistent/dir/o.npy: cannot write");
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/fxhostXXXXXX");
  if (!mkdtemp(dir)) return 1;
  char cache[96];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  setenv("FXPLAIN_CACHE_DIR", cache, 1);
  setenv("NO_COLOR", "1", 1);
  RUN(emitter_long_chain);
  RUN(emitter_long_pad_chain);
  RUN(emitter_long_fx_chain);
  RUN(fx_left_assoc_chain);
  RUN(drop_long_dead_chain);
  RUN(truncated_cached_kernel);
  RUN(save_load_odd_file_names);
  RUN(save_through_links_not_over_devices);
  RUN(file_names_escaped);
  RUN(unusable_cache_or_compiler_falls_back);
  RUN(default_memory_budget);
  RUN(huge_kernel_falls_back);
  RUN(fx_many_statements_incremental);
  RUN(file_option_errors_located);
  free(outbuf);
  free(errbuf);
  char cmdl[128];
  snprintf(cmdl, sizeof cmdl, "rm -rf %s", dir);
  if (system(cmdl) != 0) return 1;
  return check_summary();
}
