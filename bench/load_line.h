/* load_line.h — the machine's load, printed by the benches so that each figure says how busy the
 * (shared) machine was when it was measured. */
#ifndef FXPLAIN_BENCH_LOAD_LINE_H
#define FXPLAIN_BENCH_LOAD_LINE_H

#include <stdio.h>
#include <unistd.h>

/* "load average WHEN: 1.00 0.80 0.50 (2 cores)" from /proc/loadavg (zeros when unreadable). */
static inline void bench_load_line(const char *when) {
  FILE *f = fopen("/proc/loadavg", "r");
  double a = 0, b = 0, c = 0;
  if (f) {
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3) a = b = c = 0;
    fclose(f);
  }
  printf("load average %s: %.2f %.2f %.2f (%ld cores)\n", when, a, b, c, sysconf(_SC_NPROCESSORS_ONLN));
}

#endif
