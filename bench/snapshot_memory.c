/* snapshot_memory.c — how much memory a session's stage snapshots take: the peak resident memory
 * of `fxplain` stepping a whole pipeline over a large module, and what `show stats` says the
 * stages hold.
 *
 *   build/bench/bench_snapshot_memory [--fxplain PATH] [--before PATH] [--corpus DIR]
 *                                     [--sizes N,N,...] [--pipelines classic,priority] [--timeout S]
 *
 * For each module (the largest corpus module, hlo_gemma4_2b_bf16.hlo, and synthetic modules of
 * the given sizes, written as HLO text to a temporary file) and each pipeline it runs the real
 * shell in a child process, as a user would:
 *
 *   fxplain --json -e 'load FILE; pipeline P; step all; show stats'
 *
 * and reads the child's peak resident set size (getrusage's ru_maxrss through wait4), its wall
 * time, and the stage memory `show stats` reports (snapshot_bytes; and, where the binary reports
 * them, the name indexes, the decision log and their sum). A second child runs only `load FILE`
 * so the cost of the stages can be told from the cost of the input. With --before PATH another
 * binary (an older build) runs each case too, in the same run, and the ratios are printed. The
 * machine's load (uptime) is printed first: the times move with it, the memory does not.
 *
 * The synthetic module is the one bench_pipeline builds (bench/synthetic.c): blocks of
 * about 16 instructions (elementwise chains, broadcasts, a reduction, a duplicate for cse, dead
 * code, a tuple taken apart) over three parameters, every block's reduction an output. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../compiler/hlo/hlo.h"
#include "synthetic.h"
#include "../compiler/ir/ir.h"

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}


/* ---------- running the shell in a child ---------- */

typedef struct {
  bool ok;
  double wall;
  long maxrss_kb;
  long long snapshot_bytes, index_bytes, log_bytes, stage_bytes;
  int snapshots, stages;
  char note[160];
} Child;

/* The integer after "key": in a line of JSON; -1 when absent. */
static long long json_int(const char *text, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(text, pat);
  return p ? atoll(p + strlen(pat)) : -1;
}

static Child run_child(const char *fxplain, const char *commands, int timeout_s) {
  Child r = {0};
  char out_path[] = "/tmp/fxplain-memXXXXXX";
  int fd = mkstemp(out_path);
  if (fd < 0) {
    snprintf(r.note, sizeof r.note, "mkstemp: %s", strerror(errno));
    return r;
  }
  double t0 = wall_s();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 1);
    execl(fxplain, fxplain, "--json", "-e", commands, (char *)NULL);
    _exit(127);
  }
  struct rusage ru;
  int st = 0;
  bool timed_out = false;
  for (;;) {
    pid_t w = wait4(pid, &st, WNOHANG, &ru);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (wall_s() - t0 > timeout_s && !timed_out) {
      kill(pid, SIGKILL);
      timed_out = true;
    }
    usleep(20000);
  }
  r.wall = wall_s() - t0;
  r.maxrss_kb = ru.ru_maxrss;
  FILE *f = fdopen(fd, "r");
  char *text = NULL;
  size_t len = 0;
  if (f) {
    fseek(f, 0, SEEK_SET);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
      char *grown = realloc(text, len + n + 1);
      if (!grown) break;
      text = grown;
      memcpy(text + len, buf, n);
      len += n;
      text[len] = 0;
    }
    fclose(f);
  } else {
    close(fd);
  }
  unlink(out_path);
  if (timed_out) {
    snprintf(r.note, sizeof r.note, "did not finish in %d s", timeout_s);
  } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    snprintf(r.note, sizeof r.note, "exit status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  } else {
    r.ok = true;
  }
  if (text) {
    /* The last line is show stats' object. */
    const char *last = strstr(text, "\"snapshot_bytes\"") ? strrchr(text, '{') : NULL;
    if (last) {
      r.snapshot_bytes = json_int(last, "snapshot_bytes");
      r.index_bytes = json_int(last, "index_bytes");
      r.log_bytes = json_int(last, "log_bytes");
      r.stage_bytes = json_int(last, "stage_bytes");
      r.snapshots = (int)json_int(last, "snapshots");
      r.stages = (int)json_int(last, "stages");
    }
  }
  free(text);
  return r;
}

static void mib(long long bytes, char *out, size_t n) {
  if (bytes < 0) snprintf(out, n, "-");
  else snprintf(out, n, "%.1f MiB", (double)bytes / (1 << 20));
}

static void print_row(const char *who, const char *pipeline, const Child *r) {
  char b1[32], b2[32], b3[32], b4[32], b5[32];
  mib(r->snapshot_bytes, b1, sizeof b1);
  mib(r->index_bytes, b2, sizeof b2);
  mib(r->log_bytes, b3, sizeof b3);
  mib(r->stage_bytes, b4, sizeof b4);
  mib((long long)r->maxrss_kb * 1024, b5, sizeof b5);
  printf("   %-7s %-9s %6d %5d %11s %11s %11s %11s %11s %8.1f s  %s%s\n", who, pipeline, r->stages, r->snapshots, b1,
         b2, b3, b4, b5, r->wall, r->ok ? "" : "FAILED: ", r->note);
}

static void measure(const char *fxplain, const char *before, const char *label, const char *path, int ninstr,
                    const char *pipelines, int timeout_s) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "load %s", path);
  Child base = run_child(fxplain, cmd, timeout_s);
  char b0[32];
  mib((long long)base.maxrss_kb * 1024, b0, sizeof b0);
  printf("\n== %s: %d instructions; `load` alone: peak %s, %.2f s\n", label, ninstr, b0, base.wall);
  printf("   %-7s %-9s %6s %5s %11s %11s %11s %11s %11s %10s\n", "binary", "pipeline", "stages", "snaps",
         "snapshots", "indexes", "log", "all stages", "peak RSS", "wall");
  for (const char *p = pipelines; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), p);
    snprintf(cmd, sizeof cmd, "load %s; pipeline %s; step all; show stats", path, name);
    Child old = {0};
    if (before) {
      old = run_child(before, cmd, timeout_s);
      print_row("before", name, &old);
    }
    Child r = run_child(fxplain, cmd, timeout_s);
    print_row(before ? "after" : "", name, &r);
    if (before && old.ok && r.ok && r.snapshot_bytes > 0)
      printf("   %-7s %-9s %12s %11.2fx %35s %11.2fx\n", "ratio", name, "", (double)old.snapshot_bytes / (double)r.snapshot_bytes,
             "", (double)old.maxrss_kb / (double)r.maxrss_kb);
    fflush(stdout);
    p = e ? e + 1 : p + n;
  }
}

int main(int argc, char **argv) {
  const char *fxplain = "build/fxplain", *before = NULL, *corpus = getenv("FXPLAIN_HLO_CORPUS");
  const char *sizes = "100000", *pipelines = "classic,priority";
  int timeout_s = 600;
  if (!corpus || !*corpus) corpus = "tests/data/hlo-corpus";
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--fxplain") == 0 && k + 1 < argc) fxplain = argv[++k];
    else if (strcmp(argv[k], "--before") == 0 && k + 1 < argc) before = argv[++k];
    else if (strcmp(argv[k], "--corpus") == 0 && k + 1 < argc) corpus = argv[++k];
    else if (strcmp(argv[k], "--sizes") == 0 && k + 1 < argc) sizes = argv[++k];
    else if (strcmp(argv[k], "--pipelines") == 0 && k + 1 < argc) pipelines = argv[++k];
    else if (strcmp(argv[k], "--timeout") == 0 && k + 1 < argc) timeout_s = atoi(argv[++k]);
    else {
      fprintf(stderr, "usage: bench_snapshot_memory [--fxplain PATH] [--before PATH] [--corpus DIR] [--sizes N,N,...] "
                      "[--pipelines classic,priority] [--timeout S]\n");
      return 2;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("stage snapshot memory: %s, peak RSS of `load; pipeline P; step all; show stats`\n", fxplain);
  fflush(stdout);
  if (system("uptime") != 0) printf("(uptime failed)\n");
  char path[1024];
  snprintf(path, sizeof path, "%s/hlo_gemma4_2b_bf16.hlo", corpus);
  FxError err;
  fx_error_clear(&err);
  IrModule *g = hlo_load_file(path, &err);
  if (g) {
    measure(fxplain, before, "hlo_gemma4_2b_bf16.hlo", path, ir_module_instr_count(g), pipelines, timeout_s);
    ir_module_free(g);
  } else {
    fx_error_print(stderr, &err);
  }
  for (const char *p = sizes; *p;) {
    int n = atoi(p);
    IrModule *m = bench_synthetic_module(n);
    char tmp[] = "/tmp/fxplain-synthXXXXXX";
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    char hlo[64];
    snprintf(hlo, sizeof hlo, "%s.hlo", tmp);
    if (!f || !hlo_print(f, m, &err) || fclose(f) != 0 || rename(tmp, hlo) != 0) {
      fprintf(stderr, "cannot write the synthetic module\n");
      return 1;
    }
    char label[64];
    snprintf(label, sizeof label, "synthetic %d", n);
    measure(fxplain, before, label, hlo, ir_module_instr_count(m), pipelines, timeout_s);
    unlink(hlo);
    ir_module_free(m);
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  return 0;
}
