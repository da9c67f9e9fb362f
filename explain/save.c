/* save.c — writing a stage's module as HLO text to a file, safely: a temporary file next to the
 * target renamed over it (a failed save never leaves a half-written file), a symbolic link
 * followed to its file, and anything that is not a regular file (a directory, a device, a pipe)
 * refused rather than replaced. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../compiler/hlo/hlo.h"
#include "engine.h"

/* Writes m to the regular file path (old: its status when it exists, to keep its mode). */
static bool save_to(const IrModule *m, const char *path, const struct stat *old, const char *shown, FxError *err) {
  size_t n = strlen(path) + 32;
  char *tmp = fx_malloc(n);
  if (!tmp) return fx_error_set(err, NULL, 0, 0, "out of memory");
  snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fx_error_set(err, NULL, 0, 0, "cannot write '%s': %s", shown, strerror(errno));
    fx_free(tmp);
    return false;
  }
  if (old) fchmod(fileno(f), old->st_mode & 07777);
  FxError perr;
  fx_error_clear(&perr);
  bool ok = hlo_print(f, m, &perr);
  bool closed = fclose(f) == 0;
  if (!ok || !closed) {
    int e = errno;
    remove(tmp);
    fx_free(tmp);
    if (!ok) return fx_error_set(err, NULL, 0, 0, "cannot print the module: %s", perr.msg);
    return fx_error_set(err, NULL, 0, 0, "cannot write '%s': %s", shown, strerror(e));
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    fx_free(tmp);
    return fx_error_set(err, NULL, 0, 0, "cannot write '%s': %s", shown, strerror(e));
  }
  fx_free(tmp);
  return true;
}

bool explain_engine_save(const ExplainEngine *e, int k, const char *path, FxError *err) {
  const IrModule *m = explain_engine_module(e, k);
  if (!m) return fx_error_set(err, NULL, 0, 0, EXPLAIN_NOTHING_LOADED);
  char shown[160];
  fx_printable(shown, sizeof shown, path);
  char *real = NULL;
  struct stat lst, st;
  bool exists = lstat(path, &lst) == 0;
  if (exists && S_ISLNK(lst.st_mode)) {
    real = realpath(path, NULL);
    if (!real) return fx_error_set(err, NULL, 0, 0, "cannot write '%s': it is a symbolic link to nothing (%s)", shown, strerror(errno));
    path = real;
    exists = stat(path, &st) == 0;
  } else {
    st = lst;
  }
  if (exists && !S_ISREG(st.st_mode)) {
    free(real);
    const char *kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISFIFO(st.st_mode)                            ? "a pipe"
                                                                         : "not a regular file";
    return fx_error_set(err, NULL, 0, 0, "cannot write '%s': it is %s (save writes regular files only)", shown, kind);
  }
  bool ok = save_to(m, path, exists ? &st : NULL, shown, err);
  free(real);
  return ok;
}
