/* xla_dump.c — an XLA dump folder read in: its modules, and one module's per-pass snapshots as
 * the stages of the `xla` pipeline (see xla_dump.h for the flow).
 *
 * XLA names every file after its module, `module_NNNN.NAME.`, then either a fixed suffix
 * (`before_optimizations.txt`, `priority_fusion_dump.txt`, `sm_9.0a_gpu_after_optimizations.txt`)
 * or, for each pass that changed the module, `NNNN.PIPELINE.after_PASS.before_NEXT.txt`. Module
 * names may hold dots (`fused_slice.1`), pipeline and pass names do not, so a snapshot's name is
 * read from its end. */
#include "xla_dump.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../compiler/hlo/hlo.h"

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool all_digits(const char *s, size_t n) {
  if (n == 0) return false;
  for (size_t k = 0; k < n; k++)
    if (!isdigit((unsigned char)s[k])) return false;
  return true;
}

/* The module a file belongs to: "module_0001.jit_f.REST" -> id "0001"; *rest points at REST. */
static bool split_module(const char *fname, const char **id, size_t *idn, const char **rest) {
  if (strncmp(fname, "module_", 7) != 0) return false;
  const char *p = fname + 7;
  const char *dot = strchr(p, '.');
  if (!dot || !all_digits(p, (size_t)(dot - p))) return false;
  *id = p;
  *idn = (size_t)(dot - p);
  *rest = dot + 1;
  return true;
}

static XlaDumpModule *module_for(XlaDump *d, const char *id, size_t idn) {
  for (int k = 0; k < d->nmods; k++)
    if (strlen(d->mods[k].id) == idn && strncmp(d->mods[k].id, id, idn) == 0) return &d->mods[k];
  if (arena_grow(&d->arena, (void **)&d->mods, &d->mods_cap, d->nmods + 1, sizeof *d->mods) < 0) return NULL;
  XlaDumpModule *m = &d->mods[d->nmods++];
  memset(m, 0, sizeof *m);
  m->id = arena_strndup(&d->arena, id, idn);
  m->ninstrs = -1;
  return m->id ? m : NULL;
}

/* "NAME.NNNN.PIPELINE.after_PASS.before_NEXT.txt": fills the snapshot and the module name. */
static bool parse_snapshot(Arena *a, const char *rest, XlaSnapshot *s, const char **modname) {
  if (!ends_with(rest, ".txt")) return false;
  size_t n = strlen(rest) - 4;
  const char *dots[4];
  int nd = 0;
  for (size_t k = n; k-- > 0 && nd < 4;)
    if (rest[k] == '.') dots[nd++] = rest + k;
  if (nd == 3 && strncmp(dots[0] + 1, "after_", 6) == 0) {
    /* "NAME.NNNN.PIPELINE.after_PASS.txt": a pipeline's last snapshot has no next pass. */
    const char *after = dots[0] + 1, *pipe = dots[1] + 1, *seq = dots[2] + 1;
    if (!all_digits(seq, (size_t)(pipe - 1 - seq))) return false;
    s->seq = atoi(seq);
    s->pipeline = arena_strndup(a, pipe, (size_t)(dots[0] - pipe));
    s->pass = arena_strndup(a, after + 6, (size_t)(rest + n - after - 6));
    s->next = "-";
    *modname = arena_strndup(a, rest, (size_t)(dots[2] - rest));
    return s->pipeline && s->pass && *modname;
  }
  if (nd < 4) return false;
  /* dots[0] before "before_NEXT", dots[1] before "after_PASS", dots[2] before PIPELINE,
   * dots[3] before NNNN. */
  const char *before = dots[0] + 1, *after = dots[1] + 1, *pipe = dots[2] + 1, *seq = dots[3] + 1;
  if (strncmp(before, "before_", 7) != 0 || strncmp(after, "after_", 6) != 0) return false;
  if (!all_digits(seq, (size_t)(pipe - 1 - seq))) return false;
  s->seq = atoi(seq);
  s->pipeline = arena_strndup(a, pipe, (size_t)(dots[1] - pipe));
  s->pass = arena_strndup(a, after + 6, (size_t)(dots[0] - after - 6));
  s->next = arena_strndup(a, before + 7, (size_t)(rest + n - before - 7));
  *modname = arena_strndup(a, rest, (size_t)(dots[3] - rest));
  return s->pipeline && s->pass && s->next && *modname;
}

static int by_seq(const void *a, const void *b) {
  return ((const XlaSnapshot *)a)->seq - ((const XlaSnapshot *)b)->seq;
}

/* Instructions in a module's text: lines "  [ROOT ]%name = ..." inside computations. */
static int count_instrs(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  bool mid = false; /* inside a long line */
  while (fgets(line, sizeof line, f)) {
    bool head = !mid;
    mid = strchr(line, '\n') == NULL;
    if (!head || line[0] != ' ' || line[1] != ' ') continue;
    const char *p = line + 2;
    if (strncmp(p, "ROOT ", 5) == 0) p += 5;
    const char *eq = strstr(p, " = ");
    const char *sp = strchr(p, ' ');
    if (eq && sp == eq) n++;
  }
  fclose(f);
  return n;
}

bool xla_dump_is_dump_dir(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) return false;
  bool found = false;
  struct dirent *e;
  while (!found && (e = readdir(dp)))
    found = strncmp(e->d_name, "module_", 7) == 0 && ends_with(e->d_name, ".txt");
  closedir(dp);
  return found;
}

XlaDump *xla_dump_scan(const char *dir, FxError *err) {
  DIR *dp = opendir(dir);
  if (!dp) {
    fx_error_set(err, NULL, 0, 0, "cannot open the folder '%s': %s", dir, strerror(errno));
    return NULL;
  }
  XlaDump *d = fx_calloc(1, sizeof *d);
  if (!d) {
    closedir(dp);
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  arena_init(&d->arena);
  d->chosen = -1;
  d->dir = arena_strdup(&d->arena, dir);
  bool oom = !d->dir;
  struct dirent *e;
  while (!oom && (e = readdir(dp))) {
    const char *id, *rest;
    size_t idn;
    if (!ends_with(e->d_name, ".txt") || !split_module(e->d_name, &id, &idn, &rest)) continue;
    char *path = arena_printf(&d->arena, "%s/%s", dir, e->d_name);
    XlaDumpModule *m = path ? module_for(d, id, idn) : NULL;
    if (!m) {
      oom = true;
      break;
    }
    XlaSnapshot s;
    const char *name = NULL;
    if (ends_with(rest, ".before_optimizations.txt")) {
      m->before = path;
      name = arena_strndup(&d->arena, rest, strlen(rest) - strlen(".before_optimizations.txt"));
    } else if (ends_with(rest, ".priority_fusion_dump.txt")) {
      m->fusion_log = path;
      name = arena_strndup(&d->arena, rest, strlen(rest) - strlen(".priority_fusion_dump.txt"));
    } else if (ends_with(rest, "after_optimizations.txt")) {
      m->after = path;
    } else if (parse_snapshot(&d->arena, rest, &s, &name)) {
      s.file = path;
      if (arena_grow(&d->arena, (void **)&m->snaps, &m->snaps_cap, m->nsnaps + 1, sizeof *m->snaps) < 0) {
        oom = true;
        break;
      }
      m->snaps[m->nsnaps++] = s;
    }
    if (name && !m->name) m->name = name;
  }
  closedir(dp);
  if (oom) {
    xla_dump_free(d);
    fx_error_set(err, NULL, 0, 0, "out of memory reading the folder '%s'", dir);
    return NULL;
  }
  /* Files that only look like a module's (memory reports, thunk sequences) make no module. */
  int kept = 0;
  for (int k = 0; k < d->nmods; k++) {
    XlaDumpModule *m = &d->mods[k];
    if (!m->before && !m->nsnaps && !m->fusion_log && !m->after) continue;
    if (!m->name) {
      /* Named only by its after_optimizations file: "NAME.sm_9.0a_gpu_after_optimizations.txt". */
      m->name = "?";
    }
    qsort(m->snaps, (size_t)m->nsnaps, sizeof *m->snaps, by_seq);
    const char *first = m->before ? m->before : m->nsnaps ? m->snaps[0].file : m->after;
    if (first) m->ninstrs = count_instrs(first);
    d->mods[kept++] = *m;
  }
  d->nmods = kept;
  if (d->nmods == 0) {
    xla_dump_free(d);
    fx_error_set(err, NULL, 0, 0,
                 "'%s' is a directory, and not an XLA dump: it holds no module_NNNN.NAME.*.txt files (make "
                 "one with XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=.*')",
                 dir);
    return NULL;
  }
  /* By id, so the listing follows XLA's order. */
  for (int a = 1; a < d->nmods; a++)
    for (int b = a; b > 0 && strcmp(d->mods[b - 1].id, d->mods[b].id) > 0; b--) {
      XlaDumpModule t = d->mods[b];
      d->mods[b] = d->mods[b - 1];
      d->mods[b - 1] = t;
    }
  return d;
}

void xla_dump_free(XlaDump *d) {
  if (!d) return;
  xla_fusion_log_free(d->log);
  arena_free(&d->arena);
  fx_free(d);
}

bool xla_dump_select(XlaDump *d, const char *which, FxError *err) {
  int pick = -1;
  if (which) {
    char *end;
    long v = strtol(which, &end, 10);
    for (int k = 0; k < d->nmods && pick < 0; k++) {
      if (strcmp(d->mods[k].name, which) == 0) pick = k;
      else if (*which && !*end && atol(d->mods[k].id) == v) pick = k;
    }
    if (pick < 0) {
      char names[512] = "";
      for (int k = 0; k < d->nmods && strlen(names) < 400; k++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s (%s)", k ? ", " : "", d->mods[k].name,
                 d->mods[k].id);
      return fx_error_set(err, NULL, 0, 0, "the dump has no module '%s' (modules: %s)", which, names);
    }
  } else {
    for (int k = 0; k < d->nmods; k++)
      if (pick < 0 || d->mods[k].nsnaps > d->mods[pick].nsnaps) pick = k;
  }
  XlaDumpModule *m = &d->mods[pick];
  if (!m->before && !m->nsnaps && !m->after)
    return fx_error_set(err, NULL, 0, 0, "module %s (%s) of the dump has no HLO text (only %s)", m->name, m->id,
                        m->fusion_log ? "its priority_fusion_dump.txt" : "other files");
  int np = m->nsnaps;
  /* Without snapshots, the final module is the one stage after the input. */
  bool final_only = np == 0 && m->after && m->before;
  if (final_only) np = 1;
  Pass *passes = arena_alloc(&d->arena, sizeof *passes * (size_t)(np ? np : 1));
  const Pass **list = arena_alloc(&d->arena, sizeof *list * (size_t)(np ? np : 1));
  if (!passes || !list) return fx_error_set(err, NULL, 0, 0, "out of memory");
  for (int k = 0; k < m->nsnaps; k++) {
    /* Each sub-pipeline's first snapshot is "after pipeline-start": named by its pipeline. */
    passes[k].name = strcmp(m->snaps[k].pass, "pipeline-start") == 0
                         ? arena_printf(&d->arena, "%s:pipeline-start", m->snaps[k].pipeline)
                         : m->snaps[k].pass;
    passes[k].description =
        arena_printf(&d->arena, "XLA's snapshot %04d: pipeline %s, after %s (before %s)", m->snaps[k].seq,
                     m->snaps[k].pipeline, m->snaps[k].pass, m->snaps[k].next);
    list[k] = &passes[k];
  }
  if (final_only) {
    passes[0].name = "optimizations";
    passes[0].description = "XLA's whole optimization pipeline (the dump has no per-pass snapshots)";
    list[0] = &passes[0];
  }
  XlaFusionLog *log = NULL;
  if (m->fusion_log) {
    log = xla_fusion_log_load(m->fusion_log, err);
    if (!log) return false;
    if (log->module_text) {
      /* The log holds the module it was made on: every name it uses must be there. */
      IrModule *pre = hlo_parse(log->module_text, strlen(log->module_text), m->fusion_log, err);
      bool ok = pre && xla_fusion_log_check(log, pre, err);
      if (pre) ir_module_free(pre);
      if (!ok) {
        xla_fusion_log_free(log);
        return false;
      }
    }
  }
  xla_fusion_log_free(d->log);
  d->log = log;
  d->passes = passes;
  d->pass_list = list;
  d->pipeline = (Pipeline){.name = "xla",
                           .description = arena_printf(&d->arena, "XLA's own passes on %s, read from its dump %s",
                                                       m->name, d->dir),
                           .npasses = np,
                           .passes = list};
  d->chosen = pick;
  return true;
}

const Pipeline *xla_dump_pipeline(const XlaDump *d) { return d && d->chosen >= 0 ? &d->pipeline : NULL; }

IrModule *xla_dump_stage(const XlaDump *d, int k, const IrModule *prev, FxError *err) {
  const XlaDumpModule *m = &d->mods[d->chosen];
  if (d->log_only) {
    if (k == 0) return hlo_parse(d->log->module_text, strlen(d->log->module_text), m->fusion_log, err);
    if (!prev) {
      fx_error_set(err, NULL, 0, 0, "no module to replay XLA's fusion log on");
      return NULL;
    }
    return xla_fusion_log_replay(d->log, prev, err);
  }
  const char *file;
  if (k == 0) file = m->before ? m->before : m->nsnaps ? m->snaps[0].file : m->after;
  else if (m->nsnaps == 0) file = m->after;
  else file = m->snaps[k - 1].file;
  /* With --xla_dump_hlo_as_proto XLA wrote the snapshot as a proto too (STEM.hlo.pb): XLA's
   * instruction ids, by which fxplain's own priority-fusion on it breaks ties as XLA's did. */
  HloProtoIds ids;
  IrModule *mod = hlo_load_file_with_ids(file, &ids, err);
  if (!mod && err->set) {
    FxError was = *err;
    fx_error_clear(err);
    const char *base = strrchr(file, '/');
    fx_error_set(err, was.file[0] ? was.file : NULL, was.line, was.col, "XLA's snapshot %s does not load (line %d): %s",
                 base ? base + 1 : file, was.line, was.msg);
    memcpy(err->source, was.source, sizeof err->source);
    err->caret = was.caret;
  }
  return mod;
}

int xla_dump_fusion_stage(const XlaDump *d) {
  const Pipeline *pl = xla_dump_pipeline(d);
  if (!pl) return -1;
  for (int k = 0; k < pl->npasses; k++)
    if (strcmp(pl->passes[k]->name, "priority-fusion") == 0) return k + 1;
  return -1;
}

XlaDump *xla_dump_from_log(const char *path, FxError *err) {
  XlaFusionLog *log = xla_fusion_log_load(path, err);
  if (!log) return NULL;
  if (!log->module_text) {
    fx_error_set(err, path, 0, 0,
                 "XLA's fusion log '%s' holds no hlo_module_before_fusion: load the dump folder it came from instead",
                 path);
    xla_fusion_log_free(log);
    return NULL;
  }
  IrModule *m = hlo_parse(log->module_text, strlen(log->module_text), path, err);
  if (!m || !xla_fusion_log_check(log, m, err)) {
    if (m) ir_module_free(m);
    xla_fusion_log_free(log);
    return NULL;
  }
  XlaDump *d = fx_calloc(1, sizeof *d);
  Pass *pass = NULL;
  const Pass **list = NULL;
  if (d) {
    arena_init(&d->arena);
    d->mods = arena_alloc(&d->arena, sizeof *d->mods);
    pass = arena_alloc(&d->arena, sizeof *pass);
    list = arena_alloc(&d->arena, sizeof *list);
  }
  if (!d || !d->mods || !pass || !list) {
    ir_module_free(m);
    xla_fusion_log_free(log);
    xla_dump_free(d);
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  d->dir = arena_strdup(&d->arena, path);
  d->nmods = d->mods_cap = 1;
  d->mods[0] = (XlaDumpModule){.id = "-", .name = arena_strdup(&d->arena, m->name), .fusion_log = d->dir,
                               .ninstrs = ir_module_instr_count(m)};
  ir_module_free(m);
  pass->name = "priority-fusion";
  pass->description = "XLA's priority-fusion: its recorded fusion steps replayed on the module it received";
  list[0] = pass;
  d->passes = pass;
  d->pass_list = list;
  d->pipeline = (Pipeline){.name = "xla", .description = "XLA's priority-fusion, read from its decision log",
                           .npasses = 1, .passes = list};
  d->chosen = 0;
  d->log = log;
  d->log_only = true;
  return d;
}

#define OWN_PASS XLA_OWN_PASS

IrModule *xla_dump_next_stage(const XlaDump *d, int k, const IrModule *prev, const DeviceProfile *device,
                              const PassSettings *settings, DecisionSink *sink, FxError *err) {
  IrModule *m = xla_dump_stage(d, k, prev, err);
  if (!m) return NULL;
  const char *pass = d->pipeline.passes[k - 1]->name;
  if (!(d->log && strcmp(pass, "priority-fusion") == 0)) {
    PassDecision pd = {.stage = k, .pass = pass, .action = "snapshot", .accepted = true};
    const XlaDumpModule *dm = &d->mods[d->chosen];
    const XlaSnapshot *sn = dm->nsnaps >= k ? &dm->snaps[k - 1] : NULL;
    pass_emit(sink, &pd, "XLA's snapshot after %s%s%s: %d instructions (%+d)", pass, sn ? " in pipeline " : "",
              sn ? sn->pipeline : "", ir_module_instr_count(m), ir_module_instr_count(m) - ir_module_instr_count(prev));
    return m;
  }
  if (!xla_fusion_log_check(d->log, prev, err)) {
    ir_module_free(m);
    return NULL;
  }
  /* fxplain's own priority-fusion on the same input, for a verdict beside each of XLA's. */
  ExplainLog *own = explain_log_new();
  bool have_own = false;
  if (own && explain_log_begin_stage(own, k, OWN_PASS)) {
    DecisionSink os = explain_log_sink(own);
    FxError pe;
    fx_error_clear(&pe);
    PassContext cx = {&os, device, settings, k, OWN_PASS, &pe, NULL, false};
    IrModule *mine = NULL;
    bool ch = false;
    const Pass *p = pass_lookup("priority-fusion");
    have_own = p && pass_run_stage(p, prev, &cx, &mine, &ch);
    if (mine) ir_module_free(mine);
  }
  /* fxplain's verdicts first, so that XLA's recorded decision is each pair's final word. */
  for (int j = 0; have_own && j < explain_stage_count(own, k); j++) {
    const ExplainRecord *r = explain_stage_record(own, k, j);
    PassDecision pd = {.stage = k, .pass = OWN_PASS, .action = r->action, .producer = r->producer,
                       .consumer = r->consumer, .accepted = r->accepted, .reason = r->reason, .detail = r->detail,
                       .suggestion = r->suggestion, .result = r->result, .nmetrics = r->nmetrics};
    memcpy(pd.metrics, r->metrics, sizeof pd.metrics);
    sink->emit(sink->ctx, &pd);
  }
  xla_fusion_log_emit(d->log, sink, pass, have_own ? own : NULL, k, prev, NULL);
  if (own) explain_log_free(own);
  return m;
}
