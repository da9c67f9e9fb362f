/* settings.c — the engine's fusion settings by name: what `set NAME VALUE...` changes in the pass
 * settings and the device profile, checked and applied in one place, with the old and new value
 * in words (the front end prints them). The engine remembers the settings before its last change,
 * so `compare-decisions` with no argument can show what that change changed.
 *
 *   device NAME                 a device profile (compiler/plan/device.h)
 *   dup_limit N                 users a concatenate-like producer may have and still fuse
 *   max_duplication N           emitted copies of a producer before code_duplication
 *   operand_budget N            operands + outputs per fusion
 *   unroll N                    while-loop-unroll factor (1 = off)
 *   expensive OP on|off|default
 *   pass NAME on|off            switch a pass off (its stage repeats the previous one)
 *   library dot|conv|rng on|off */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

typedef enum { KNOB_DEVICE, KNOB_INT, KNOB_EXPENSIVE, KNOB_PASS, KNOB_LIBRARY } KnobKind;

static const struct {
  const char *name;
  KnobKind kind;
  int words;     /* values after the name */
  size_t field;  /* KNOB_INT: offset of the int in PassSettings */
  int lo, hi;
} knobs[] = {
    {"device", KNOB_DEVICE, 1, 0, 0, 0},
    {"dup_limit", KNOB_INT, 1, offsetof(PassSettings, concat_user_limit), 1, 1000000},
    {"max_duplication", KNOB_INT, 1, offsetof(PassSettings, max_duplication), 1, 1000000},
    {"operand_budget", KNOB_INT, 1, offsetof(PassSettings, operand_budget), 2, 1000000},
    {"unroll", KNOB_INT, 1, offsetof(PassSettings, unroll), 1, 1000},
    {"expensive", KNOB_EXPENSIVE, 2, 0, 0, 0},
    {"pass", KNOB_PASS, 2, 0, 0, 0},
    {"library", KNOB_LIBRARY, 2, 0, 0, 0},
};
#define NKNOBS ((int)(sizeof knobs / sizeof knobs[0]))

static int knob_index(const char *name) {
  for (int k = 0; name && k < NKNOBS; k++)
    if (strcmp(knobs[k].name, name) == 0) return k;
  return -1;
}

int explain_setting_words(const char *name) {
  int k = knob_index(name);
  return k < 0 ? -1 : knobs[k].words;
}

/* A located failure: the message in err, the offending word's index in *bad. */
static bool bad_word(int *bad, int word, FxError *err, const char *fmt, const char *a, const char *b) {
  *bad = word;
  char msg[900];
  snprintf(msg, sizeof msg, fmt, a, b ? b : "");
  return fx_error_set(err, NULL, 0, 0, "%s", msg);
}

static bool parse_onoff(const char *v, bool *out, int *bad, FxError *err) {
  char buf[80];
  if (strcmp(v, "on") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0) *out = true;
  else if (strcmp(v, "off") == 0 || strcmp(v, "false") == 0 || strcmp(v, "0") == 0) *out = false;
  else return bad_word(bad, 2, err, "expected on or off, not '%s'", fx_printable(buf, sizeof buf, v), NULL);
  return true;
}

/* Rewrites the disabled_passes list with `name` in or out. */
static bool set_disabled(PassSettings *ps, const char *name, bool off) {
  char out[sizeof ps->disabled_passes] = "";
  const char *p = ps->disabled_passes;
  size_t n = strlen(name);
  while (*p) {
    size_t len = strcspn(p, ",");
    if (!(len == n && strncmp(p, name, n) == 0) && len > 0)
      snprintf(out + strlen(out), sizeof out - strlen(out), "%s%.*s", out[0] ? "," : "", (int)len, p);
    p += len;
    if (*p == ',') p++;
  }
  if (off) {
    if (strlen(out) + n + 2 >= sizeof out) return false;
    snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? "," : "", name);
  }
  memcpy(ps->disabled_passes, out, sizeof out);
  return true;
}

static const char *onoff(bool v) { return v ? "on" : "off"; }

bool explain_setting_apply(PassSettings *ps, DeviceProfile *dev, char **w, ExplainSettingChange *ch, int *bad,
                           FxError *err) {
  memset(ch, 0, sizeof *ch);
  *bad = 0;
  int k = knob_index(w[0]);
  char buf[80];
  if (k < 0) return bad_word(bad, 0, err, "unknown setting '%.60s'", w[0], NULL);
  switch (knobs[k].kind) {
  case KNOB_DEVICE: {
    const DeviceProfile *d = device_lookup(w[1]);
    if (!d) {
      char names[256] = "";
      for (int q = 0; q < device_count(); q++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", q ? ", " : "", device_at(q)->name);
      return bad_word(bad, 1, err, "no device profile named '%s' (profiles: %s)", fx_printable(buf, sizeof buf, w[1]), names);
    }
    snprintf(ch->what, sizeof ch->what, "device");
    snprintf(ch->old, sizeof ch->old, "%s", dev->name[0] ? dev->name : "(none)");
    snprintf(ch->now, sizeof ch->now, "%s", d->name);
    *dev = *d;
    return true;
  }
  case KNOB_INT: {
    int *field = (int *)(void *)((char *)ps + knobs[k].field);
    char *end;
    long x = strtol(w[1], &end, 10);
    if (!*w[1] || *end || x < knobs[k].lo || x > knobs[k].hi) {
      *bad = 1;
      return fx_error_set(err, NULL, 0, 0, "%s wants a whole number from %d to %d, not '%s'", knobs[k].name,
                          knobs[k].lo, knobs[k].hi, fx_printable(buf, sizeof buf, w[1]));
    }
    snprintf(ch->what, sizeof ch->what, "%s", knobs[k].name);
    snprintf(ch->old, sizeof ch->old, "%d", *field);
    snprintf(ch->now, sizeof ch->now, "%ld", x);
    *field = (int)x;
    return true;
  }
  case KNOB_EXPENSIVE: {
    IrOpcode op;
    if (!ir_op_lookup(w[1], strlen(w[1]), &op))
      return bad_word(bad, 1, err, "unknown op '%.60s' (ops use HLO spelling: exponential, log, divide, ...)", w[1], NULL);
    signed char v = 0;
    if (strcmp(w[2], "default") != 0) {
      bool on;
      if (!parse_onoff(w[2], &on, bad, err)) return false;
      v = on ? 1 : -1;
    }
    signed char cur = ps->expensive_override[op];
    snprintf(ch->what, sizeof ch->what, "expensive %s", ir_op_name(op));
    snprintf(ch->old, sizeof ch->old, "%s", cur == 0 ? "default" : onoff(cur > 0));
    snprintf(ch->now, sizeof ch->now, "%s", v == 0 ? "default" : onoff(v > 0));
    ps->expensive_override[op] = v;
    return true;
  }
  case KNOB_PASS: {
    const Pass *p = pass_lookup(w[1]);
    if (!p) {
      char names[600] = "";
      for (int q = 0; q < pass_count(); q++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", q ? ", " : "", pass_at(q)->name);
      return bad_word(bad, 1, err, "no pass named '%.60s' (passes: %s)", w[1], names);
    }
    bool on;
    if (!parse_onoff(w[2], &on, bad, err)) return false;
    bool was_off = pass_settings_is_disabled(ps, p->name);
    PassSettings next = *ps;
    if (!set_disabled(&next, p->name, !on)) return bad_word(bad, 0, err, "too many passes switched off", NULL, NULL);
    snprintf(ch->what, sizeof ch->what, "pass %s", p->name);
    snprintf(ch->old, sizeof ch->old, "%s", onoff(!was_off));
    snprintf(ch->now, sizeof ch->now, "%s", onoff(on));
    *ps = next;
    return true;
  }
  case KNOB_LIBRARY: {
    bool *field = NULL;
    if (strcmp(w[1], "dot") == 0) field = &ps->dot_is_library;
    else if (strcmp(w[1], "conv") == 0 || strcmp(w[1], "convolution") == 0) field = &ps->conv_is_library;
    else if (strcmp(w[1], "rng") == 0) field = &ps->rng_is_library;
    else return bad_word(bad, 1, err, "library calls are dot, conv and rng, not '%.40s'", w[1], NULL);
    bool on;
    if (!parse_onoff(w[2], &on, bad, err)) return false;
    snprintf(ch->what, sizeof ch->what, "library %s", w[1]);
    snprintf(ch->old, sizeof ch->old, "%s", onoff(*field));
    snprintf(ch->now, sizeof ch->now, "%s", onoff(on));
    *field = on;
    return true;
  }
  }
  return bad_word(bad, 0, err, "unknown setting '%.60s'", w[0], NULL);
}

bool explain_engine_set(ExplainEngine *e, char **w, ExplainSettingChange *ch, int *bad, FxError *err) {
  PassSettings ps = e->settings;
  DeviceProfile dev = e->device;
  if (!explain_setting_apply(&ps, &dev, w, ch, bad, err)) return false;
  e->prev_settings = e->settings;
  e->prev_device = e->device;
  e->have_prev = true;
  snprintf(e->last_change, sizeof e->last_change, "%s", ch->what);
  e->settings = ps;
  e->device = dev;
  if (e->nstages > 1) explain_engine_truncate(e, 1);
  return true;
}
