/* test_variants.c — the variants table of a case study, run end to end on a small CartPole.
 *
 * The CartPole walkthrough (scripts/cartpole_walkthrough.fx) is run as written, on copies of its
 * three programs with `let steps = 50` (and 20), up to its last command; then `variants --run
 * --check` with the walkthrough's own options runs every recorded variant on the CPU backend.
 * Checked: every variant's outputs agree with the reference interpreter, the kernels each run
 * launched equal what the kernel plan predicts at both step counts, the paper column, the JSON
 * shape of `variants` and `variants --run`, that the table survives `load` and `reset` empties it,
 * Ctrl-C, and the errors. Times are never asserted (they vary); only that they are there. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../repl/repl.h"
#include "../../repl/session.h"
#include "../check.h"

/* ---------- a small JSON reader (enough to check shapes and values) ---------- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } JType;
typedef struct J J;
struct J {
  JType t;
  double num;
  bool b;
  char *str;  /* J_STR */
  char **keys; /* J_OBJ */
  J **items;  /* J_ARR, J_OBJ values */
  int n;
};

static void jfree(J *j) {
  if (!j) return;
  for (int k = 0; k < j->n; k++) {
    jfree(j->items[k]);
    if (j->keys) free(j->keys[k]);
  }
  free(j->items);
  free(j->keys);
  free(j->str);
  free(j);
}

static const char *jws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  return p;
}

static J *jparse(const char **pp);

static char *jstring(const char **pp) {
  const char *p = *pp + 1;
  size_t cap = 64, n = 0;
  char *s = malloc(cap);
  while (*p && *p != '"') {
    char c = *p++;
    if (c == '\\') {
      c = *p++;
      if (c == 'n') c = '\n';
      else if (c == 't') c = '\t';
      else if (c == 'u') {
        p += 4; /* not needed by these checks */
        c = '?';
      }
    }
    if (n + 2 > cap) s = realloc(s, cap *= 2);
    s[n++] = c;
  }
  s[n] = 0;
  *pp = *p ? p + 1 : p;
  return s;
}

static void jpush(J *j, J *v, char *key) {
  j->items = realloc(j->items, sizeof *j->items * (size_t)(j->n + 1));
  if (j->t == J_OBJ) {
    j->keys = realloc(j->keys, sizeof *j->keys * (size_t)(j->n + 1));
    j->keys[j->n] = key;
  }
  j->items[j->n++] = v;
}

static J *jparse(const char **pp) {
  const char *p = jws(*pp);
  J *j = calloc(1, sizeof *j);
  if (*p == '{' || *p == '[') {
    bool obj = *p == '{';
    j->t = obj ? J_OBJ : J_ARR;
    p = jws(p + 1);
    while (*p && *p != (obj ? '}' : ']')) {
      char *key = NULL;
      if (obj) {
        if (*p != '"') break;
        key = jstring(&p);
        p = jws(p);
        if (*p != ':') {
          free(key);
          break;
        }
        p++;
      }
      J *v = jparse(&p);
      if (!v) {
        free(key);
        break;
      }
      jpush(j, v, key);
      p = jws(p);
      if (*p == ',') p = jws(p + 1);
    }
    if (*p != (obj ? '}' : ']')) {
      jfree(j);
      return NULL;
    }
    p++;
  } else if (*p == '"') {
    j->t = J_STR;
    j->str = jstring(&p);
  } else if (strncmp(p, "true", 4) == 0 || strncmp(p, "false", 5) == 0) {
    j->t = J_BOOL;
    j->b = *p == 't';
    p += j->b ? 4 : 5;
  } else if (strncmp(p, "null", 4) == 0) {
    j->t = J_NULL;
    p += 4;
  } else {
    char *e;
    j->t = J_NUM;
    j->num = strtod(p, &e);
    if (e == p) {
      jfree(j);
      return NULL;
    }
    p = e;
  }
  *pp = p;
  return j;
}

/* The whole text must be one JSON value (and a newline). */
static J *jparse_all(const char *text) {
  const char *p = text;
  J *j = jparse(&p);
  if (j && *jws(p)) {
    jfree(j);
    return NULL;
  }
  return j;
}

static J *jget(const J *j, const char *key) {
  if (!j || j->t != J_OBJ) return NULL;
  for (int k = 0; k < j->n; k++)
    if (strcmp(j->keys[k], key) == 0) return j->items[k];
  return NULL;
}

static double jnum(const J *j, const char *key) {
  J *v = jget(j, key);
  return v && v->t == J_NUM ? v->num : NAN;
}

static bool jis(const J *j, const char *key, JType t) {
  J *v = jget(j, key);
  return v && v->t == t;
}

/* ---------- a session on memory streams ---------- */

static char *outbuf, *errbuf;
static size_t outlen, errlen;

static void streams_open(Session *s) {
  free(outbuf);
  free(errbuf);
  outbuf = errbuf = NULL;
  s->out = open_memstream(&outbuf, &outlen);
  s->err = open_memstream(&errbuf, &errlen);
}

static void streams_close(Session *s) {
  fclose(s->out);
  fclose(s->err);
  s->out = stdout;
  s->err = stderr;
}

/* Runs `-e` text; output in outbuf, errors in errbuf (text) or outbuf (JSON). */
static bool run(Session *s, const char *text) {
  streams_open(s);
  bool ok = repl_run_text(s, text, "<test>");
  streams_close(s);
  return ok;
}

static char tmpdir[64];

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

/* Copies scripts/NAME.fx into tmpdir with `let steps = STEPS`. */
static bool write_scaled(const char *name, int steps) {
  char path[256];
  snprintf(path, sizeof path, "scripts/%s.fx", name);
  char *src = read_all(path);
  if (!src) return false;
  snprintf(path, sizeof path, "%s/%s.fx", tmpdir, name);
  FILE *f = fopen(path, "w");
  bool found = false;
  for (char *line = src; *line;) {
    char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (strncmp(line, "let steps = ", 12) == 0) {
      fprintf(f, "let steps = %d\n", steps);
      found = true;
    } else {
      fprintf(f, "%.*s\n", (int)len, line);
    }
    line += len + (nl ? 1 : 0);
  }
  fclose(f);
  free(src);
  return found;
}

/* The walkthrough with its programs loaded from tmpdir, up to (without) its `variants --run`
 * line, which goes into run_line. */
static bool write_walkthrough(char *run_line, size_t n) {
  char *src = read_all("scripts/cartpole_walkthrough.fx");
  if (!src) return false;
  char path[256];
  snprintf(path, sizeof path, "%s/walkthrough.fx", tmpdir);
  FILE *f = fopen(path, "w");
  run_line[0] = 0;
  for (char *line = src; *line;) {
    char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (strncmp(line, "variants --run", 14) == 0) {
      snprintf(run_line, n, "%.*s", (int)len, line);
      break;
    }
    if (strncmp(line, "load scripts/", 13) == 0) fprintf(f, "load %s/%.*s\n", tmpdir, (int)len - 13, line + 13);
    else fprintf(f, "%.*s\n", (int)len, line);
    line += len + (nl ? 1 : 0);
  }
  fclose(f);
  free(src);
  return run_line[0] != 0;
}

static const char *const labels[] = {"baseline", "precomputed-rng", "dup_limit-3", "separate-values", "unroll-10"};
static const double papers[] = {1.0, 1.87, 2.06, 3.41, 10.56};

/* A session that has run the walkthrough on STEPS-step programs; *run_line gets its last command. */
static Session *walkthrough_session(int steps, char *run_line, size_t n) {
  CHECK(write_scaled("cartpole", steps));
  CHECK(write_scaled("cartpole_pre_rng", steps));
  CHECK(write_scaled("cartpole_separate", steps));
  CHECK(write_walkthrough(run_line, n));
  Session *s = session_new(stdout, stderr);
  char path[256];
  snprintf(path, sizeof path, "%s/walkthrough.fx", tmpdir);
  streams_open(s);
  bool ok = repl_run_path(s, path, NULL, NULL);
  streams_close(s);
  CHECK(ok);
  if (!ok) fprintf(stderr, "%s%s", outbuf, errbuf);
  return s;
}

/* The line of the table that starts with label. */
static const char *row_of(const char *text, const char *label) {
  size_t n = strlen(label);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, label, n) == 0 && p[n] == ' ') return p;
  return NULL;
}

/* `variants --run` in JSON at STEPS steps: checks the shape and returns each row's launches. */
static void check_run_json(Session *s, const char *run_line, int steps, long long launches[5]) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s --backend cpu --check --repeat 2", run_line);
  s->json = true;
  bool ok = run(s, cmd);
  s->json = false;
  CHECK(ok);
  J *j = jparse_all(outbuf);
  CHECK(j && j->t == J_OBJ);
  if (!j) {
    fprintf(stderr, "not one JSON value:\n%s\n", outbuf);
    return;
  }
  J *b = jget(j, "backend");
  CHECK(b && b->t == J_STR && strcmp(b->str, "cpu") == 0);
  CHECK(jnum(j, "repeat") == 2);
  CHECK(jnum(j, "seed") == 0);
  CHECK(jis(j, "check", J_BOOL) && jget(j, "check")->b);
  J *u = jget(j, "uniform");
  CHECK(u && u->t == J_ARR && u->n == 2);
  if (u && u->n == 2) {
    CHECK_STR(jget(u->items[0], "pattern")->str, "actions");
    CHECK(jnum(u->items[0], "lo") == 0 && jnum(u->items[0], "hi") == 1);
    CHECK_STR(jget(u->items[1], "pattern")->str, "*");
    CHECK(jnum(u->items[1], "lo") == -0.05 && jnum(u->items[1], "hi") == 0.05);
  }
  J *vs = jget(j, "variants");
  CHECK(vs && vs->t == J_ARR && vs->n == 5);
  for (int k = 0; vs && k < vs->n && k < 5; k++) {
    J *v = vs->items[k];
    J *name = jget(v, "variant");
    CHECK(name && name->t == J_STR && strcmp(name->str, labels[k]) == 0);
    CHECK(jnum(v, "steps") == steps);
    /* kernels launched: what the backend counted equals the plan's prediction */
    CHECK(jis(v, "launches", J_NUM) && jis(v, "plan_launches", J_NUM));
    CHECK(jnum(v, "launches") == jnum(v, "plan_launches"));
    CHECK(jnum(v, "launches") > steps / 10);
    launches[k] = (long long)jnum(v, "launches");
    /* bytes moved: the plan's bytes of the kernels the backend launched */
    CHECK(jnum(v, "bytes") > 0 && jnum(v, "bytes") == jnum(v, "plan_bytes"));
    /* times: present, never compared */
    CHECK(jis(v, "time_ns", J_NUM) && jis(v, "us_per_step", J_NUM));
    J *ts = jget(v, "times_ns");
    CHECK(ts && ts->t == J_ARR && ts->n == 2);
    CHECK(jis(v, "speedup", J_NUM));
    CHECK_NEAR(jnum(v, "paper"), papers[k], 1e-12);
    J *c = jget(v, "check");
    CHECK(c && c->t == J_OBJ && jis(c, "agrees", J_BOOL) && jget(c, "agrees")->b);
    CHECK(jis(c, "worst_error", J_NUM) && jnum(c, "worst_error") <= 1e-5);
    CHECK(jis(c, "detail", J_NULL));
    J *set = jget(v, "settings");
    CHECK(set && set->t == J_OBJ);
    CHECK_STR(jget(set, "pipeline")->str, "classic");
    CHECK_STR(jget(set, "device")->str, "rtx2080ti");
    CHECK(jnum(set, "concat_user_limit") == (k == 2 ? 3 : 1));
    CHECK(jnum(set, "unroll") == (k == 4 ? 10 : 1));
  }
  jfree(j);
}

/* `variants --json`, the plan's rows: checks them, and fills each row's plan launches. */
static void plan_rows(Session *s, int steps, const long long launches[5], long long plan[5]) {
  s->json = true;
  CHECK(run(s, "variants"));
  s->json = false;
  J *j = jparse_all(outbuf);
  CHECK(j && j->t == J_ARR && j->n == 5);
  for (int k = 0; j && k < j->n && k < 5; k++) {
    J *v = j->items[k];
    CHECK_STR(jget(v, "variant")->str, labels[k]);
    CHECK(jnum(v, "steps") == steps && jnum(v, "stage") == 17);
    CHECK(jnum(v, "kernel_launches") == (double)launches[k]);
    CHECK(jis(v, "kernel_bytes", J_NUM) && jnum(v, "kernel_bytes") > 0);
    plan[k] = (long long)jnum(v, "launches");
    CHECK_NEAR(jnum(v, "launches_per_step"), jnum(v, "launches") / steps, 1e-12);
    CHECK_NEAR(jnum(v, "paper"), papers[k], 1e-12);
    CHECK(jis(v, "kernels", J_NUM) && jis(v, "bytes", J_NUM) && jis(v, "est_us", J_NUM));
    CHECK(jis(v, "est_us_per_step", J_NUM) && jis(v, "est_speedup", J_NUM) && jis(v, "settings", J_OBJ));
    CHECK(jis(v, "trip_counts_known", J_BOOL) && jget(v, "trip_counts_known")->b);
  }
  jfree(j);
}

TEST(walkthrough_variants_run_and_check) {
  char run_line[512];
  long long l50[5] = {0}, l20[5] = {0};
  Session *s = walkthrough_session(50, run_line, sizeof run_line);
  /* the walkthrough's own inputs: actions in [0, 1), the other floats in [-0.05, 0.05) */
  CHECK_STR(run_line, "variants --run --repeat 3 --uniform actions=0:1 --uniform '*=-0.05:0.05'");

  /* the plan table: five rows, with their paper ratios and settings */
  CHECK(run(s, "variants"));
  for (int k = 0; k < 5; k++) {
    const char *r = row_of(outbuf, labels[k]);
    CHECK(r != NULL);
    char pa[32];
    snprintf(pa, sizeof pa, " %.2fx  classic", papers[k]);
    if (r) CHECK(strstr(r, pa) && strstr(r, pa) < strchr(r, '\n'));
  }
  CHECK_CONTAINS(row_of(outbuf, "dup_limit-3"), "classic, dup_limit 3\n");
  CHECK_CONTAINS(row_of(outbuf, "unroll-10"), "classic, unroll 10\n");

  /* text: a row per variant, each agreeing with the interpreter, launches as the plan says */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "%s --backend cpu --check --repeat 1", run_line);
  CHECK(run(s, cmd));
  CHECK_CONTAINS(outbuf, "running 5 variants on cpu, one run each, seed 0\n");
  CHECK_CONTAINS(outbuf, "inputs: the floats of parameters matching 'actions' from [0, 1) and '*' from [-0.05, 0.05), the rest as `run` makes them\n");
  CHECK_CONTAINS(outbuf, "variant                    launches  bytes moved       time    us/step   speedup    paper  check\n");
  for (int k = 0; k < 5; k++) {
    const char *r = row_of(outbuf, labels[k]);
    CHECK(r != NULL);
    if (!r) continue;
    const char *end = strchr(r, '\n');
    const char *ag = strstr(r, "  agrees (worst error ");
    CHECK(ag && ag < end);
    char pa[32];
    snprintf(pa, sizeof pa, "%.2fx  agrees", papers[k]);
    CHECK(strstr(r, pa) && strstr(r, pa) < end);
    const char *pr = strstr(r, "plan predicts");
    CHECK(!pr || pr > end);
  }
  CHECK(row_of(outbuf, "baseline") && strstr(row_of(outbuf, "baseline"), "1.00x    1.00x"));
  CHECK_CONTAINS(outbuf, "speedup: over the first row, baseline; us/step: time per loop step; paper: ");

  check_run_json(s, run_line, 50, l50);

  long long p50[5] = {0}, p20[5] = {0};
  plan_rows(s, 50, l50, p50);

  /* The same walkthrough at 20 steps. Against the plan at both step counts: the plan counts the
   * body's kernels once per loop iteration and, the trip count being known, the condition's never
   * (a for loop, as XLA:GPU runs it), as a run launches them. So launches = plan launches at both
   * step counts, and they differ by the kernels per iteration. */
  Session *s20 = walkthrough_session(20, run_line, sizeof run_line);
  check_run_json(s20, run_line, 20, l20);
  plan_rows(s20, 20, l20, p20);
  for (int k = 0; k < 5; k++) {
    int unroll = k == 4 ? 10 : 1;
    CHECK(l50[k] == p50[k] && l20[k] == p20[k]);
    CHECK((l50[k] - l20[k]) % (30 / unroll) == 0 && l50[k] > l20[k]);
  }
  session_free(s20);

  /* `load` keeps the table; `reset` empties it */
  CHECK(run(s, "load tests/repl/data/small.hlo; variants"));
  CHECK(row_of(outbuf, "unroll-10") != NULL);
  CHECK(run(s, "reset"));
  CHECK(run(s, "variants"));
  CHECK_STR(outbuf, "no variants recorded yet: step a program through the pipeline, then `variant NAME`\n");
  CHECK(!run(s, "variants --run"));
  CHECK_CONTAINS(errbuf, "error: no variants recorded: step a program through the pipeline and record it with `variant NAME` first\n");
  session_free(s);
}

TEST(variant_rows_and_errors) {
  char run_line[512];
  Session *s = walkthrough_session(20, run_line, sizeof run_line);
  /* recording a name again replaces its row (the walkthrough ends on the baseline through today's
   * pipeline: load the separate-values program again) */
  char again[512];
  snprintf(again, sizeof again, "load %s/cartpole_separate.fx; step all; variant separate-values --paper 9", tmpdir);
  CHECK(run(s, again));
  /* 2 kernels per step (the simulation and the counter); the loop's trip count is known, so it
     runs as XLA:GPU runs it, as a for loop, and the condition's kernel never runs: 2 * 20 / 20 */
  CHECK_CONTAINS(outbuf, "separate-values: 2.00 launches and ");
  CHECK_CONTAINS(outbuf, "(20 steps, stage 17) (replaces the row of that name)\n");
  s->json = true;
  CHECK(run(s, "variants"));
  J *j = jparse_all(outbuf);
  CHECK(j && j->n == 5);
  if (j && j->n == 5) CHECK(jnum(j->items[3], "paper") == 9 && jnum(j->items[3], "stage") == 17);
  jfree(j);
  CHECK(run(s, "variant extra"));
  j = jparse_all(outbuf);
  CHECK(j && jnum(j, "row") == 6 && jis(j, "replaced", J_BOOL) && !jget(j, "replaced")->b && jis(j, "paper", J_NULL));
  jfree(j);
  s->json = false;

  /* errors: one clear located message each, the table kept */
  CHECK(!run(s, "variants --run --backend bogus"));
  CHECK_CONTAINS(errbuf, "<test>:1:26: error: unknown backend 'bogus' (interp, cpu, gpu or auto)\n");
  CHECK(!run(s, "variants --run --uniform nothing=0:1"));
  CHECK_CONTAINS(errbuf, "<test>:1:26: error: --uniform 'nothing' names no parameter of any variant\n");
  CHECK(!run(s, "variants --run --uniform actions=1:0"));
  CHECK_CONTAINS(errbuf, "error: --uniform needs LO < HI (got 1:0)\n");
  CHECK(!run(s, "variants --run --uniform actions"));
  CHECK_CONTAINS(errbuf, "error: --uniform needs PATTERN=LO:HI, e.g. --uniform 'actions=0:1'\n");
  CHECK(!run(s, "variants --run --repeat 0"));
  CHECK_CONTAINS(errbuf, "--repeat");
  CHECK(!run(s, "variants --frobnicate"));
  CHECK_CONTAINS(errbuf, "error: unknown option '--frobnicate' (variants [--run [OPTIONS] | --clear])\n");
  CHECK(!run(s, "variant"));
  CHECK_CONTAINS(errbuf, "error: usage: variant NAME [--paper X]");
  CHECK(!run(s, "variant a --paper -2"));
  CHECK_CONTAINS(errbuf, "<test>:1:19: error: --paper needs a positive number (the paper's speedup, e.g. 1.87)\n");
  CHECK(!run(s, "variant a --fast"));
  CHECK_CONTAINS(errbuf, "<test>:1:11: error: unknown option '--fast' (variant NAME [--paper X])\n");
  CHECK(!run(s, "variant a_name_that_is_much_too_long_for_a_table_row_really"));
  CHECK_CONTAINS(errbuf, "error: a variant's name has at most 40 characters (this one has 51)\n");
  if (access("/dev/nvidia0", F_OK) != 0) {
    CHECK(!run(s, "variants --run --backend gpu"));
    CHECK_CONTAINS(errbuf, "error: no GPU to run on: ");
  }

  /* Ctrl-C: the run stops with a clear error and the table stays */
  {
    /* as a Ctrl-C during the run leaves it (the script runner clears the flag before a command) */
    char *argv[] = {"variants", "--run", "--backend", "cpu", NULL};
    FxError e;
    fx_error_clear(&e);
    *s->interrupted = 1;
    streams_open(s);
    CHECK(!repl_command_lookup("variants")->run(s, 4, argv, &e));
    streams_close(s);
    *s->interrupted = 0;
    CHECK_CONTAINS(e.msg, "interrupted: execution stopped by Ctrl-C");
  }
  CHECK(run(s, "variants"));
  CHECK(row_of(outbuf, "extra") != NULL);

  /* --clear */
  CHECK(run(s, "variants --clear"));
  CHECK_STR(outbuf, "variants: 6 rows cleared\n");
  CHECK(!run(s, "variants --run"));
  CHECK_CONTAINS(errbuf, "no variants recorded");
  session_free(s);
}

/* `run --uniform`: the same input rule for one stage. small.hlo computes (x + y) * y. */
TEST(run_uniform_inputs) {
  Session *s = session_new(stdout, stderr);
  CHECK(run(s, "load tests/repl/data/small.hlo; run --backend interp --uniform '*=2:3'"));
  const char *o = strstr(outbuf, "out: f32[4]  min ");
  double mn = 0, mx = 0;
  CHECK(o && sscanf(o, "out: f32[4]  min %lf max %lf", &mn, &mx) == 2);
  CHECK(mn >= 8 && mx < 18); /* x, y in [2, 3) */
  CHECK(run(s, "run --backend interp --uniform y=0:0.5 --uniform '*=2:3'"));
  o = strstr(outbuf, "out: f32[4]  min ");
  CHECK(o && sscanf(o, "out: f32[4]  min %lf max %lf", &mn, &mx) == 2);
  CHECK(mn >= 0 && mx < 1.75); /* the first matching rule wins: y in [0, 0.5) */
  /* variants --run takes the same rules */
  CHECK(run(s, "variant small; variants --run --backend interp --uniform y=0:0.5 --uniform '*=2:3' --check"));
  CHECK_CONTAINS(outbuf, "agrees (worst error 0)");
  CHECK(!run(s, "run --uniform zz=0:1"));
  CHECK_CONTAINS(errbuf, "<test>:1:15: error: --uniform 'zz' names no parameter\n");
  CHECK(!run(s, "run --uniform 'x=3:2'"));
  CHECK_CONTAINS(errbuf, "<test>:1:15: error: --uniform needs LO < HI (got 3:2)\n");
  session_free(s);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/fxplain-variants-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  /* compiled kernels go where the other tests keep theirs */
  char cache[160];
  const char *t = getenv("TMPDIR");
  snprintf(cache, sizeof cache, "%s/fxplain-test-cache-%d", t ? t : "/tmp", (int)getuid());
  if (!getenv("FXPLAIN_CACHE_DIR")) setenv("FXPLAIN_CACHE_DIR", cache, 1);
  RUN(walkthrough_variants_run_and_check);
  RUN(variant_rows_and_errors);
  RUN(run_uniform_inputs);
  char rm[160];
  snprintf(rm, sizeof rm, "rm -rf '%s'", tmpdir);
  if (system(rm) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  free(outbuf);
  free(errbuf);
  return check_summary();
}
