/* check.h — the tiny assertion kit the unit tests use.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_STR(a, "b"); }
 *   int main(void) { RUN(name); return check_summary(); }
 * Prints "N passed, N failed" at the end; exits 1 on any failure. */
#ifndef FXPLAIN_CHECK_H
#define FXPLAIN_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed, check_cur_failed;

#define TEST(name) static void name(void)
#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
      check_cur_failed = 1;                                                           \
    }                                                                                 \
  } while (0)
#define CHECK_STR(a, b)                                                                           \
  do {                                                                                            \
    const char *ca_ = (a), *cb_ = (b);                                                            \
    if (!ca_ || !cb_ || strcmp(ca_, cb_) != 0) {                                                  \
      fprintf(stderr, "%s:%d: expected \"%s\", got \"%s\"\n", __FILE__, __LINE__, cb_ ? cb_ : "(null)", \
              ca_ ? ca_ : "(null)");                                                              \
      check_cur_failed = 1;                                                                       \
    }                                                                                             \
  } while (0)
#define CHECK_CONTAINS(hay, needle)                                                                 \
  do {                                                                                              \
    const char *ch_ = (hay), *cn_ = (needle);                                                       \
    if (!ch_ || !strstr(ch_, cn_)) {                                                                \
      fprintf(stderr, "%s:%d: expected to find \"%s\" in:\n%s\n", __FILE__, __LINE__, cn_, ch_ ? ch_ : "(null)"); \
      check_cur_failed = 1;                                                                         \
    }                                                                                               \
  } while (0)
#define CHECK_NEAR(a, b, tol)                                                                      \
  do {                                                                                             \
    double na_ = (a), nb_ = (b);                                                                   \
    if (!(fabs(na_ - nb_) <= (tol))) {                                                             \
      fprintf(stderr, "%s:%d: %s = %g, expected %g (tol %g)\n", __FILE__, __LINE__, #a, na_, nb_, (double)(tol)); \
      check_cur_failed = 1;                                                                        \
    }                                                                                              \
  } while (0)
#define RUN(name)                                   \
  do {                                              \
    check_cur_failed = 0;                           \
    name();                                         \
    if (check_cur_failed) {                         \
      check_failed++;                               \
      fprintf(stderr, "FAIL %s\n", #name);          \
    } else {                                        \
      check_passed++;                               \
    }                                               \
  } while (0)

static inline int check_summary(void) {
  printf("%d passed, %d failed\n", check_passed, check_failed);
  return check_failed ? 1 : 0;
}

#endif
