/* inputs.c — the shell's side of the input rules of the run commands: `--uniform PATTERN=LO:HI`
 * parsed with its place for errors, and a rule that names no parameter reported there. The rules
 * themselves and the inputs they shape are runtime/'s (runtime.h: RtUniform, rt_inputs_fill). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime.h"
#include "args.h"
#include "repl.h"

bool repl_uniform_parse(Session *s, char **argv, int argi, RtUniform *r, FxError *err) {
  const char *arg = argv[argi];
  const char *msg = "--uniform needs PATTERN=LO:HI, e.g. --uniform 'actions=0:1'";
  const char *eq = strrchr(arg, '=');
  if (!eq || eq == arg) return repl_arg_error(s, err, argi, "%s", msg);
  const char *colon = strchr(eq + 1, ':');
  if (!colon) return repl_arg_error(s, err, argi, "%s", msg);
  char lo_text[64];
  size_t ll = (size_t)(colon - (eq + 1));
  if (ll == 0 || ll >= sizeof lo_text) return repl_arg_error(s, err, argi, "%s", msg);
  memcpy(lo_text, eq + 1, ll);
  lo_text[ll] = 0;
  char *e1, *e2;
  errno = 0;
  double lo = strtod(lo_text, &e1);
  double hi = strtod(colon + 1, &e2);
  if (errno || *e1 || e2 == colon + 1 || *e2 || !isfinite(lo) || !isfinite(hi))
    return repl_arg_error(s, err, argi, "%s", msg);
  if (!(lo < hi)) return repl_arg_error(s, err, argi, "--uniform needs LO < HI (got %g:%g)", lo, hi);
  size_t plen = (size_t)(eq - arg);
  if (plen >= sizeof r->pattern) return repl_arg_error(s, err, argi, "--uniform: the pattern is too long");
  memcpy(r->pattern, arg, plen);
  r->pattern[plen] = 0;
  r->lo = lo;
  r->hi = hi;
  r->argi = argi;
  r->matched = false;
  return true;
}

bool repl_uniform_check(Session *s, RtUniform *rules, int n, const IrModule *const *mods, int nmods, const char *scope,
                        FxError *err) {
  int k = rt_uniform_unmatched(rules, n, mods, nmods);
  if (k >= 0) return repl_arg_error(s, err, rules[k].argi, "--uniform '%s' names no parameter%s", rules[k].pattern, scope);
  return true;
}
