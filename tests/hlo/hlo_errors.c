/* hlo_errors.c — the HLO error corpus: every malformed input in tests/hlo/errors/NAME.hlo must
 * fail to load with exactly the error in NAME.err (FILE:LINE:COL: error: MESSAGE, the source line
 * and the caret, as the shell prints it).  Run under ASan in CI, so a failed load that leaks or
 * reads out of bounds fails too.
 *
 * Usage: hlo_errors DIR.  With UPDATE_GOLDEN=1 the .err files are (re)written instead. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../compiler/hlo/hlo.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  if (b) b[n] = 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc < 2 || chdir(argv[1]) != 0) {
    fprintf(stderr, "usage: hlo_errors DIR\n");
    return 2;
  }
  bool update = getenv("UPDATE_GOLDEN") && strcmp(getenv("UPDATE_GOLDEN"), "1") == 0;
  DIR *d = opendir(".");
  if (!d) return 2;
  char **names = NULL;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".hlo") == 0) {
      if (n == cap) {
        cap = cap ? cap * 2 : 64;
        names = realloc(names, sizeof *names * (size_t)cap);
      }
      names[n++] = strdup(e->d_name);
    }
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  int failed = 0;
  for (int k = 0; k < n; k++) {
    FxError err;
    fx_error_clear(&err);
    IrModule *m = hlo_load_file(names[k], &err);
    char errpath[512];
    snprintf(errpath, sizeof errpath, "%.*s.err", (int)(strlen(names[k]) - 4), names[k]);
    if (m) {
      fprintf(stderr, "FAIL %s: loaded without an error\n", names[k]);
      ir_module_free(m);
      failed++;
      free(names[k]);
      continue;
    }
    char *got = NULL;
    size_t gl = 0;
    FILE *mf = open_memstream(&got, &gl);
    fx_error_print(mf, &err);
    fclose(mf);
    if (update) {
      FILE *f = fopen(errpath, "wb");
      if (f) {
        fputs(got, f);
        fclose(f);
      }
    } else {
      char *want = slurp(errpath);
      if (!want) {
        fprintf(stderr, "FAIL %s: no %s\n", names[k], errpath);
        failed++;
      } else if (strcmp(want, got) != 0) {
        fprintf(stderr, "FAIL %s:\n--- expected\n%s--- got\n%s", names[k], want, got);
        failed++;
      } else if (err.line < 1 || err.col < 1 || strcmp(err.file, names[k]) != 0) {
        fprintf(stderr, "FAIL %s: error is not located: %s:%d:%d\n", names[k], err.file, err.line, err.col);
        failed++;
      }
      free(want);
    }
    free(got);
    free(names[k]);
  }
  free(names);
  printf("%d malformed inputs, %d failed\n", n, failed);
  return failed || n == 0 ? 1 : 0;
}
