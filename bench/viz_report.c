/* viz_report.c — how long `report` takes, module by module, for two fxplain binaries side by side
 * in the same run (before and after a change), with the machine's load.
 *
 *   build/bench/bench_viz_report [--before BIN] [--after BIN] [--pipelines classic,priority]
 *                                [--cap S] [--only NAME] [--compare] [MODULE.hlo | DUMP_DIR ...]
 *
 * Default modules: every .hlo file of tests/data/hlo-corpus through each pipeline, then each XLA dump
 * folder named on the command line (tests/xla_dumps/make_dumps.py writes them: the paper's
 * CartPole, a transformer block, a training step) through XLA's own passes. Each binary runs
 * `load M; [pipeline P;] step all; echo @@report; report FILE.html` in a child process; the report
 * is timed from the moment the echo's line arrives to the end: wall time, and CPU time (the
 * process's and its layout children's, from /proc at the mark and wait4 at the end). A run still
 * going after --cap seconds (default 300) is stopped and shown as such. Before and after run back
 * to back, module by module, so that both see the same load. With --compare, each pair of pages
 * goes through bench/report_compare.py (the same text and the same picture contents).
 * --after defaults to the fxplain built beside this program. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "load_line.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU seconds of pid and of the children it has waited for, from /proc/PID/stat. */
static double proc_cpu(pid_t pid) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
  if (!p) return 0;
  unsigned long long v[20] = {0};
  /* After ") ": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14)
   * stime cutime cstime. */
  int got = sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3]);
  if (got != 4) return 0;
  return (double)(v[0] + v[1] + v[2] + v[3]) / (double)sysconf(_SC_CLK_TCK);
}

typedef struct {
  bool ok, stopped;
  double wall, cpu; /* the report's */
  long long bytes;  /* the page's size */
  int summarized;   /* pictures the page says it did not draw */
  char last[300];   /* the last line fxplain printed (the report's, or its error) */
} Run;

/* Runs bin on script, timing what follows the "@@report" line. */
static Run run_report(const char *bin, const char *script, const char *page, int cap) {
  Run r = {0};
  int fds[2];
  if (pipe(fds) != 0) return r;
  pid_t pid = fork();
  if (pid < 0) return r;
  if (pid == 0) {
    setpgid(0, 0); /* its own group: a stopped run takes its layout processes with it */
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    setenv("FXPLAIN_HISTORY", "/dev/null", 1);
    /* Line-buffered (coreutils' stdbuf), so that the mark's line comes when it is printed. */
    execlp("stdbuf", "stdbuf", "-oL", "-eL", bin, "--keep-going", "-e", script, (char *)NULL);
    execl(bin, bin, "--keep-going", "-e", script, (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  /* The child's output, read as it comes (raw reads: a FILE would keep lines select cannot see)
   * and split into lines; a cap that passes kills it. */
  char buf[8192], line[4096];
  size_t have = 0;
  double t_mark = -1, cpu_mark = 0, t_end = 0;
  double deadline = now() + cap;
  bool killed = false, open = true;
  while (open) {
    double left = deadline - now();
    if (left <= 0) {
      kill(-pid, SIGKILL);
      killed = true;
      break;
    }
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(fds[0], &rs);
    struct timeval tv = {(long)left, (long)((left - (long)left) * 1e6)};
    int sel = select(fds[0] + 1, &rs, NULL, NULL, &tv);
    if (sel <= 0) continue;
    ssize_t n = read(fds[0], buf + have, sizeof buf - 1 - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) open = false;
    else have += (size_t)n;
    /* Whole lines (or a full buffer, or what is left at the end). */
    for (;;) {
      char *nl = memchr(buf, '\n', have);
      size_t len = nl ? (size_t)(nl - buf) : (have == sizeof buf - 1 || !open) ? have : 0;
      if (!len && !nl) break;
      snprintf(line, sizeof line, "%.*s", (int)len, buf);
      size_t used = nl ? len + 1 : len;
      memmove(buf, buf + used, have - used);
      have -= used;
      if (strncmp(line, "@@report", 8) == 0) {
        t_mark = now();
        cpu_mark = proc_cpu(pid);
      } else if (line[0]) {
        snprintf(r.last, sizeof r.last, "%s", line);
      }
      if (!have) break;
    }
  }
  close(fds[0]);
  t_end = now();
  int st = 0;
  struct rusage ru;
  while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
               1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  r.stopped = killed;
  r.ok = !killed && WIFEXITED(st) && WEXITSTATUS(st) == 0 && t_mark > 0;
  r.wall = t_mark > 0 ? t_end - t_mark : 0;
  r.cpu = t_mark > 0 ? cpu - cpu_mark : 0;
  struct stat sb;
  if (r.ok && stat(page, &sb) == 0) r.bytes = (long long)sb.st_size;
  FILE *f = r.ok ? fopen(page, "r") : NULL;
  if (f) {
    char *buf = NULL;
    size_t cap2 = 0;
    ssize_t n;
    while ((n = getline(&buf, &cap2, f)) > 0)
      for (char *p = buf; (p = strstr(p, "class=\"picture too-large\"")); p++) r.summarized++;
    free(buf);
    fclose(f);
  }
  return r;
}

static void show(const Run *r, int cap) {
  if (r->stopped) printf(" %16s", "> cap");
  else if (!r->ok) printf(" %16s", "failed");
  else printf(" %7.2f (%6.2f)", r->wall, r->cpu);
  (void)cap;
}

typedef struct {
  char path[1024];
  char name[200];
  const char *pipeline; /* NULL: an XLA dump folder (its own passes) */
} Module;

static int by_name(const void *a, const void *b) { return strcmp(((const Module *)a)->name, ((const Module *)b)->name); }

int main(int argc, char **argv) {
  const char *before = NULL, *after = NULL, *pipelines = "classic,priority", *only = NULL;
  int cap = 300;
  bool compare = false;
  Module *mods = calloc(4096, sizeof *mods);
  int nmods = 0, nextra = 0;
  char self[1024];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  self[sl > 0 ? sl : 0] = 0;
  char def_after[1100];
  snprintf(def_after, sizeof def_after, "%s", self);
  char *slash = strrchr(def_after, '/');
  if (slash) {
    *slash = 0;
    slash = strrchr(def_after, '/');
    if (slash) strcpy(slash + 1, "fxplain");
  }
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--before") == 0 && k + 1 < argc) before = argv[++k];
    else if (strcmp(argv[k], "--after") == 0 && k + 1 < argc) after = argv[++k];
    else if (strcmp(argv[k], "--pipelines") == 0 && k + 1 < argc) pipelines = argv[++k];
    else if (strcmp(argv[k], "--cap") == 0 && k + 1 < argc) cap = atoi(argv[++k]);
    else if (strcmp(argv[k], "--only") == 0 && k + 1 < argc) only = argv[++k];
    else if (strcmp(argv[k], "--compare") == 0) compare = true;
    else if (argv[k][0] != '-' && nmods < 4000) {
      struct stat sb;
      bool dir = stat(argv[k], &sb) == 0 && S_ISDIR(sb.st_mode);
      Module *m = &mods[nmods++];
      snprintf(m->path, sizeof m->path, "%s", argv[k]);
      const char *base = strrchr(argv[k], '/');
      snprintf(m->name, sizeof m->name, "%s", base && base[1] ? base + 1 : argv[k]);
      m->pipeline = dir ? NULL : "priority";
      nextra++;
    } else {
      fprintf(stderr, "usage: bench_viz_report [--before BIN] [--after BIN] [--pipelines classic,priority] [--cap S] "
                      "[--only NAME] [--compare] [MODULE.hlo | DUMP_DIR ...]\n");
      return 2;
    }
  }
  if (!after) after = def_after;
  /* The corpus, through each pipeline, first. */
  Module *corpus = calloc(4096, sizeof *corpus);
  int ncorpus = 0;
  DIR *d = opendir("tests/data/hlo-corpus");
  for (struct dirent *e; d && (e = readdir(d)) && ncorpus < 1000;) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".hlo") != 0) continue;
    Module *m = &corpus[ncorpus++];
    snprintf(m->path, sizeof m->path, "tests/data/hlo-corpus/%s", e->d_name);
    snprintf(m->name, sizeof m->name, "%.*s", (int)(n - 4), e->d_name);
  }
  if (d) closedir(d);
  qsort(corpus, (size_t)ncorpus, sizeof *corpus, by_name);
  Module *all = calloc(8192, sizeof *all);
  int nall = 0;
  for (const char *p = pipelines; *p;) {
    const char *comma = strchr(p, ',');
    static char names[8][32];
    static int nnames;
    int len = (int)(comma ? comma - p : (long)strlen(p));
    if (nnames < 8) snprintf(names[nnames], sizeof names[0], "%.*s", len, p);
    for (int k = 0; k < ncorpus && nnames < 8; k++) {
      all[nall] = corpus[k];
      all[nall++].pipeline = names[nnames];
    }
    nnames++;
    p = comma ? comma + 1 : p + strlen(p);
  }
  for (int k = 0; k < nextra; k++) all[nall++] = mods[k];
  setvbuf(stdout, NULL, _IOLBF, 0);
  bench_load_line("at start");
  printf("before: %s\nafter:  %s\n", before ? before : "(none)", after);
  printf("report time in seconds, wall (cpu: fxplain and its layout processes); capped at %d s\n\n", cap);
  printf("%-52s %-9s %17s %17s %8s %10s %10s%s\n", "module", "pipeline", "before", "after", "speedup", "page MiB",
         "summarized", compare ? "  same?" : "");
  char tmp[] = "/tmp/fxplain_bench_report.XXXXXX";
  if (!mkdtemp(tmp)) return 1;
  double tb = 0, ta = 0, cb = 0, ca = 0, worst = 0;
  char worst_what[300] = "";
  int nb = 0, na = 0, stopped_b = 0, differ = 0;
  for (int k = 0; k < nall; k++) {
    const Module *m = &all[k];
    if (only && !strstr(m->name, only)) continue;
    char script[3000], pb[1200], pa[1200];
    snprintf(pb, sizeof pb, "%s/before.html", tmp);
    snprintf(pa, sizeof pa, "%s/after.html", tmp);
    Run rb = {0}, ra;
    if (m->pipeline)
      snprintf(script, sizeof script, "load %s; pipeline %s; step all; echo @@report; report %s", m->path, m->pipeline,
               "PAGE");
    else snprintf(script, sizeof script, "load %s; step all; echo @@report; report %s", m->path, "PAGE");
    char run[3200];
    char *at = strstr(script, "PAGE");
    if (before) {
      snprintf(run, sizeof run, "%.*s%s", (int)(at - script), script, pb);
      rb = run_report(before, run, pb, cap);
    }
    snprintf(run, sizeof run, "%.*s%s", (int)(at - script), script, pa);
    ra = run_report(after, run, pa, cap);
    printf("%-52.52s %-9s", m->name, m->pipeline ? m->pipeline : "xla dump");
    if (before) show(&rb, cap);
    else printf(" %17s", "-");
    show(&ra, cap);
    if (before && rb.ok && ra.ok && ra.wall > 0) printf(" %7.1fx", rb.wall / ra.wall);
    else if (before && rb.stopped && ra.ok) printf(" %7s", "> cap");
    else printf(" %8s", "");
    printf(" %10.1f %10d", ra.ok ? (double)ra.bytes / (1024.0 * 1024.0) : 0.0, ra.summarized);
    if (compare && before && rb.ok && ra.ok) {
      char cmd[3000];
      snprintf(cmd, sizeof cmd, "python3 bench/report_compare.py %s %s > %s/compare.txt 2>&1", pb, pa, tmp);
      int rc = system(cmd);
      printf("  %s", rc == 0 ? "same" : "DIFFERS");
      differ += rc != 0;
    }
    printf("\n");
    if (!ra.ok && !ra.stopped) printf("    after: %s\n", ra.last);
    if (before && !rb.ok && !rb.stopped) printf("    before: %s\n", rb.last);
    if (rb.ok) tb += rb.wall, cb += rb.cpu, nb++;
    stopped_b += rb.stopped;
    if (ra.ok) {
      ta += ra.wall, ca += ra.cpu, na++;
      if (ra.wall > worst) {
        worst = ra.wall;
        snprintf(worst_what, sizeof worst_what, "%s (%s)", m->name, m->pipeline ? m->pipeline : "xla dump");
      }
    }
  }
  printf("\n");
  if (before)
    printf("before: %d reports in %.1f s wall, %.1f s cpu; %d stopped at the %d s cap\n", nb, tb, cb, stopped_b, cap);
  printf("after:  %d reports in %.1f s wall, %.1f s cpu; the slowest %.2f s, %s\n", na, ta, ca, worst, worst_what);
  if (compare && before) printf("pages that differ: %d\n", differ);
  bench_load_line("at end");
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  if (system(cmd) != 0) return 1;
  free(mods);
  free(corpus);
  free(all);
  return 0;
}
