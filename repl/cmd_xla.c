/* cmd_xla.c — the commands around XLA's own dumps (the engine is explain/xla_dump.h):
 *
 *   load DIR [--module NAME|ID]   an XLA dump folder: list its modules, load one; its per-pass
 *                                 snapshots become the stages of the pipeline `xla`
 *   load FILE.priority_fusion_dump.txt   XLA's fusion log alone (stage 1: its steps replayed)
 *   find FILE:LINE | LINE | SCOPE the instructions (and the kernels holding them) from a source line
 *                                 or a JAX name scope
 *   xla [--device h100|a100]      compile the loaded module with real XLA:GPU and load its dump
 *   compare-modules A B           two compilations (dump folders or HLO files): kernels and bytes
 *
 * And the hooks the other commands call: repl_xla_load (cmd_load), repl_xla_source_note (why).
 * The `xla` pipeline's stages are made by the engine (explain/engine.c, from the dump). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../compiler/fx.h"
#include "../compiler/hlo.h"
#include "../compiler/plan.h"
#include "../explain/explain.h"
#include "../explain/xla_dump.h"
#include "../viz/viz.h"
#include "args.h"
#include "../explain/format.h"
#include "../explain/json.h"
#include "repl.h"

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ---------- load ---------- */

static void print_modules(Session *s, const XlaDump *d) {
  if (s->json) return;
  fprintf(s->out, "XLA dump %s: %d module%s\n", d->dir, d->nmods, d->nmods == 1 ? "" : "s");
  fprintf(s->out, "  %-6s %-28s %12s %7s  %s\n", "id", "module", "instructions", "passes", "dumped");
  for (int k = 0; k < d->nmods; k++) {
    const XlaDumpModule *m = &d->mods[k];
    char what[400] = "";
    size_t n = 0;
    if (m->before) n += (size_t)snprintf(what + n, sizeof what - n, "before_optimizations ");
    if (m->nsnaps) {
      int shown = 0;
      n += (size_t)snprintf(what + n, sizeof what - n, "snapshots:");
      for (int j = 0; j < m->nsnaps && n < 300; j++) {
        bool dup = false;
        for (int i = 0; i < j && !dup; i++) dup = strcmp(m->snaps[i].pass, m->snaps[j].pass) == 0;
        if (dup) continue;
        if (shown++ == 6) {
          n += (size_t)snprintf(what + n, sizeof what - n, " ...");
          break;
        }
        n += (size_t)snprintf(what + n, sizeof what - n, " %s", m->snaps[j].pass);
      }
      n += (size_t)snprintf(what + n, sizeof what - n, " ");
    }
    if (m->fusion_log && n < sizeof what) n += (size_t)snprintf(what + n, sizeof what - n, "priority_fusion_dump ");
    if (m->after && n < sizeof what) snprintf(what + n, sizeof what - n, "after_optimizations");
    fprintf(s->out, "%s %-6s %-28s %12d %7d  %s\n", k == d->chosen ? ">" : " ", m->id, m->name, m->ninstrs, m->nsnaps,
            what);
  }
}

static void json_modules(JsonWriter *w, const XlaDump *d) {
  json_key(w, "modules");
  json_array_begin(w);
  for (int k = 0; k < d->nmods; k++) {
    const XlaDumpModule *m = &d->mods[k];
    json_object_begin(w);
    json_kv_str(w, "id", m->id);
    json_kv_str(w, "name", m->name);
    json_kv_int(w, "instructions", m->ninstrs);
    json_kv_int(w, "snapshots", m->nsnaps);
    json_kv_bool(w, "fusion_log", m->fusion_log != NULL);
    json_object_end(w);
  }
  json_array_end(w);
}

/* Makes d the session's input: stage 0 loaded, the `xla` pipeline chosen. Takes d. */
static bool adopt(Session *s, XlaDump *d, const char *path, FxError *err) {
  IrModule *m0 = xla_dump_stage(d, 0, NULL, err);
  if (!m0) {
    xla_dump_free(d);
    return false;
  }
  explain_engine_set_dump(&s->eng, m0, d); /* frees the old dump */
  explain_engine_fx_clear(&s->eng);
  /* fxplain's own verdicts are for the GPU XLA compiled for, when the log names one we know. */
  if (d->log && d->log->device) {
    const DeviceProfile *dp = strstr(d->log->device, "H100") ? device_lookup("h100")
                              : strstr(d->log->device, "A100") ? device_lookup("a100")
                                                                : NULL;
    if (dp && strcmp(s->eng.device.name, dp->name) != 0) {
      s->eng.device = *dp;
      if (!s->json) fprintf(s->out, "device: %s (XLA compiled for %s)\n", dp->name, d->log->device);
    }
  }
  const XlaDumpModule *m = &d->mods[d->chosen];
  int fs = xla_dump_fusion_stage(d);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_key(&w, "loaded");
    json_object_begin(&w);
    json_kv_str(&w, "module", m->name);
    json_kv_str(&w, "id", m->id);
    json_kv_str(&w, "dump", path);
    json_kv_str(&w, "pipeline", "xla");
    json_kv_int(&w, "stages", d->pipeline.npasses + 1);
    json_kv_int(&w, "instructions", ir_module_instr_count(m0));
    if (fs > 0) json_kv_int(&w, "priority_fusion_stage", fs);
    else json_kv_null(&w, "priority_fusion_stage");
    if (d->log) {
      json_key(&w, "fusion_log");
      json_object_begin(&w);
      json_kv_int(&w, "fusions", d->log->nfusions);
      json_kv_int(&w, "ineligible", d->log->nineligible);
      json_kv_int(&w, "priority_updates", d->log->npriority);
      json_object_end(&w);
    }
    json_modules(&w, d);
    json_object_end(&w);
    json_object_end(&w);
    fputc('\n', s->out);
  } else {
    if (!d->log_only) print_modules(s, d);
    fprintf(s->out, "loaded %s (module %s) from %s: %d instructions; pipeline xla: %d stages, XLA's own passes%s\n",
            m->name, m->id, path, ir_module_instr_count(m0), d->pipeline.npasses + 1,
            d->log_only ? " (its fusion steps replayed)" : "");
    if (d->log)
      fprintf(s->out, "XLA's priority-fusion log: %d fusions, %d ineligible producers, %d priority updates%s%d\n",
              d->log->nfusions, d->log->nineligible, d->log->npriority, fs > 0 ? "; stage " : "", fs > 0 ? fs : 0);
    if (d->nmods > 1 && !d->log_only)
      fprintf(s->out, "(another module: load %s --module NAME|ID)\n", path);
  }
  return true;
}

bool repl_xla_load(Session *s, int argc, char **argv, FxError *err, bool *handled) {
  *handled = false;
  if (argc < 2) return true;
  const char *path = argv[1];
  const char *which = NULL;
  bool want = is_dir(path) || ends_with(path, ".priority_fusion_dump.txt");
  for (int k = 2; k < argc; k++) want = want || strcmp(argv[k], "--module") == 0;
  if (!want) return true; /* a file: `load` itself */
  for (int k = 2; k < argc; k++) {
    if (strcmp(argv[k], "--module") == 0 && k + 1 < argc) {
      which = argv[++k];
      want = true;
    } else if (strcmp(argv[k], "--module") == 0) {
      *handled = true;
      return repl_arg_error(s, err, k, "--module needs a module name or id");
    } else {
      *handled = true;
      return repl_arg_error(s, err, k, "unexpected argument '%s'; usage: load FILE | DIR [--module NAME|ID]", argv[k]);
    }
  }
  *handled = true;
  char shown[200];
  fx_printable(shown, sizeof shown, path);
  FxError e;
  fx_error_clear(&e);
  XlaDump *d;
  if (!is_dir(path)) {
    if (which) return repl_arg_error(s, err, 2, "--module is for a dump folder; '%s' is a file", shown);
    d = xla_dump_from_log(path, &e);
  } else {
    d = xla_dump_scan(path, &e);
    if (d && !xla_dump_select(d, which, &e)) {
      xla_dump_free(d);
      d = NULL;
    }
  }
  if (!d || !adopt(s, d, path, &e)) {
    if (e.file[0] && e.line > 0) {
      *err = e;
      return false;
    }
    return repl_arg_error(s, err, which && strstr(e.msg, "no module") ? 3 : 1, "%s", e.msg);
  }
  return true;
}

/* ---------- source lines ---------- */

void repl_xla_source_note(Session *s, const char *a, const char *b) {
  IrModule *m = explain_engine_module(&s->eng, s->eng.cur);
  if (!m || s->json) return;
  const char *names[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    if (!names[k]) continue;
    const IrInstr *i = ir_module_find_instr(m, names[k]);
    if (!i && s->eng.nstages > 0) i = ir_module_find_instr(s->eng.stages[0].module, names[k]);
    if (!i) continue;
    XlaSource src;
    char buf[1536];
    if (!xla_source_of(m, i, &src, buf, sizeof buf)) continue;
    fprintf(s->out, "  source of %s: ", names[k]);
    if (src.file) fprintf(s->out, "%s:%d", src.file, src.line);
    if (src.function) fprintf(s->out, " in %s", src.function);
    if (src.op_name) fprintf(s->out, "%s(%s)", src.file ? " " : "", src.op_name);
    fputc('\n', s->out);
  }
}

/* ---------- find ---------- */

/* The kernel holding instruction i: the top-level instruction of its computation chain. */
static const IrInstr *kernel_of(const IrInstr *i) {
  while (i->parent && i->parent->fusion_instr) i = i->parent->fusion_instr;
  return i;
}

static bool cmd_find(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 1, 1, err)) return false;
  IrModule *m = explain_engine_module(&s->eng, s->eng.cur);
  if (!m) return repl_arg_error(s, err, 0, "nothing is loaded (load a module first)");
  const char *where = argv[1];
  JsonWriter w;
  if (s->json) {
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "find", where);
    json_kv_int(&w, "stage", s->eng.cur);
    json_key(&w, "instructions");
    json_array_begin(&w);
  }
  int found = 0, nk = 0;
  const IrInstr **kernels = fx_calloc((size_t)ir_module_instr_count(m) + 1, sizeof *kernels);
  if (!kernels) return repl_arg_error(s, err, 0, "out of memory");
  /* What launches work at this stage (the kernel plan): a parameter or bitcast holds no kernel. */
  FxError pe;
  fx_error_clear(&pe);
  const KernelPlan *plan = explain_engine_plan(&s->eng, s->eng.cur, &pe);
  for (int c = 0; c < m->ncomps; c++) {
    const IrComputation *comp = m->comps[c];
    for (int j = 0; j < comp->ninstrs; j++) {
      const IrInstr *i = comp->instrs[j];
      if (i->dead || !xla_source_matches(m, i, where)) continue;
      found++;
      const IrInstr *kern = kernel_of(i);
      bool launches = !plan;
      for (int q = 0; plan && q < plan->nkernels && !launches; q++) launches = plan->kernels[q].instr == kern;
      bool seen = !launches;
      for (int q = 0; q < nk && !seen; q++) seen = kernels[q] == kern;
      if (!seen) kernels[nk++] = kern;
      if (!launches) kern = NULL;
      char loc[300];
      xla_source_short(m, i, loc, sizeof loc);
      XlaSource src;
      char buf[1536];
      xla_source_of(m, i, &src, buf, sizeof buf);
      if (s->json) {
        json_object_begin(&w);
        json_kv_str(&w, "name", i->name);
        json_kv_str(&w, "op", ir_op_name(i->op));
        json_kv_str(&w, "computation", comp->name);
        json_kv_str(&w, "kernel", kern ? kern->name : NULL);
        json_kv_str(&w, "source", loc[0] ? loc : NULL);
        json_kv_str(&w, "scope", src.op_name);
        json_object_end(&w);
      } else {
        fprintf(s->out, "  %-24s %-18s in %-22s %s %s\n", i->name, ir_op_name(i->op),
                !kern ? "(no kernel)" : kern != i ? kern->name : "(its own kernel)", loc, src.op_name ? src.op_name : "");
      }
    }
  }
  if (s->json) {
    json_array_end(&w);
    json_key(&w, "kernels");
    json_array_begin(&w);
    for (int q = 0; q < nk; q++) json_str(&w, kernels[q]->name);
    json_array_end(&w);
    json_object_end(&w);
    fputc('\n', s->out);
  } else if (found) {
    fprintf(s->out, "%d instruction%s from %s at stage %d, in %d kernel%s:", found, found == 1 ? "" : "s", where,
            s->eng.cur, nk, nk == 1 ? "" : "s");
    for (int q = 0; q < nk && q < 40; q++) fprintf(s->out, " %s", kernels[q]->name);
    fputs(nk > 40 ? " ...\n" : "\n", s->out);
  }
  fx_free(kernels);
  if (!found && !s->json)
    fprintf(s->out, "no instruction of stage %d comes from %s (the module %s source positions)\n", s->eng.cur, where,
            strstr(m->prologue ? m->prologue : "", "FileLocations") || strstr(m->epilogue ? m->epilogue : "", "FileLocations")
                ? "has"
                : "may carry no");
  return true;
}

/* ---------- xla: real XLA:GPU ---------- */

static bool exe_dir(char *buf, size_t n) {
  ssize_t k = readlink("/proc/self/exe", buf, n - 1);
  if (k <= 0) return false;
  buf[k] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) return false;
  *slash = 0;
  return true;
}

static bool cmd_xla(Session *s, int argc, char **argv, FxError *err) {
  const char *device = "h100";
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--device") == 0 && k + 1 < argc) {
      device = argv[++k];
      if (strcmp(device, "h100") != 0 && strcmp(device, "a100") != 0)
        return repl_arg_error(s, err, k, "XLA's target configs here are h100 and a100, not '%s'", device);
    } else {
      return repl_arg_error(s, err, k, "unknown option '%s' (usage: xla [--device h100|a100])", argv[k]);
    }
  }
  if (s->eng.nstages == 0) return repl_arg_error(s, err, 0, "nothing is loaded (load a module first)");
  char dir[PATH_MAX], script[PATH_MAX + 64];
  const char *env = getenv("FXPLAIN_XLA_REFERENCE");
  if (env) snprintf(script, sizeof script, "%s", env);
  else if (exe_dir(dir, sizeof dir)) snprintf(script, sizeof script, "%s/../scripts/xla_reference.py", dir);
  else snprintf(script, sizeof script, "scripts/xla_reference.py");
  if (access(script, R_OK) != 0)
    return repl_arg_error(s, err, 0, "cannot find scripts/xla_reference.py (set FXPLAIN_XLA_REFERENCE to its path)");
  const char *py = getenv("FXPLAIN_PYTHON");
  if (!py || !*py) py = "python3";
  char tmpl[] = "/tmp/fxplain-xla-XXXXXX";
  if (!mkdtemp(tmpl)) return repl_arg_error(s, err, 0, "cannot make a temporary folder: %s", strerror(errno));
  char in[PATH_MAX], cmd[4 * PATH_MAX];
  snprintf(in, sizeof in, "%s/input.hlo", tmpl);
  FILE *f = fopen(in, "w");
  FxError pe;
  fx_error_clear(&pe);
  IrModule *m = s->eng.stages[0].module;
  bool ok = f && hlo_print(f, m, &pe);
  if (f && fclose(f) != 0) ok = false;
  if (!ok) return repl_arg_error(s, err, 0, "cannot write the module for XLA: %s", pe.set ? pe.msg : strerror(errno));
  snprintf(cmd, sizeof cmd, "'%s' '%s' --device %s --keep-dump --no-gzip '%s' '%s/out' > '%s/log.txt' 2>&1", py,
           script, device, in, tmpl, tmpl);
  if (!s->json) {
    fprintf(s->out, "compiling %s with real XLA:GPU for %s (deviceless) ...\n", m->name, device);
    fflush(s->out);
  }
  int rc = system(cmd);
  int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  if (code == 3 || code == 127)
    return repl_arg_error(s, err, 0,
                          "jax and its CUDA plugin are not installed for %s: pip install jax==0.10.2 jaxlib==0.10.2 "
                          "jax-cuda13-plugin==0.10.2 jax-cuda13-pjrt==0.10.2 (or set FXPLAIN_PYTHON to a python that "
                          "has them)",
                          py);
  char dump[PATH_MAX + 64];
  snprintf(dump, sizeof dump, "%s/out/input.xla_dump", tmpl);
  if (code != 0 && !is_dir(dump))
    return repl_arg_error(s, err, 0, "real XLA failed (exit %d); its output is in %s/log.txt", code, tmpl);
  char *args[] = {"load", dump, NULL};
  if (!repl_command_lookup("load")->run(s, 2, args, err)) return false;
  int last = s->eng.pipeline->npasses;
  int same = 0;
  XlaSideBySide sbs;
  xla_dump_side_by_side(s->eng.xla, &s->eng.device, &s->eng.settings, &sbs);
  int xla_kernels = sbs.nxla, mine_kernels = sbs.nmine;
  const XlaKernelPair *pairs = sbs.pairs;
  for (int k = 0; k < xla_kernels; k++) same += pairs[k].same;
  if (!s->json && xla_kernels >= 0) {
    fprintf(s->out, "XLA's kernels after %s beside fxplain's priority-fusion + multi_output_fusion on the same input:\n",
                    last > 0 ? s->eng.pipeline->passes[last - 1]->name : "input");
    fprintf(s->out, "  %-34s %-34s %s\n", "XLA", "fxplain", "");
    int shown = 0;
    for (int k = 0; k < xla_kernels; k++) {
      if (shown++ >= 30) {
        fprintf(s->out, "  ... %d more\n", xla_kernels - 30);
        break;
      }
      char st[64];
      if (pairs[k].same) snprintf(st, sizeof st, "same (%d instructions)", pairs[k].xla_n);
      else snprintf(st, sizeof st, "differs: %d of XLA's %d, %d of fxplain's %d in common", pairs[k].common,
                    pairs[k].xla_n, pairs[k].common, pairs[k].mine_n);
      fprintf(s->out, "  %-34s %-34s %s\n", pairs[k].xla, pairs[k].mine ? pairs[k].mine : "-", st);
    }
  }
  xla_side_by_side_free(&sbs);
  /* Where the two part: step to XLA's priority-fusion and list the decisions fxplain disagrees with. */
  int fs = xla_dump_fusion_stage(s->eng.xla);
  int ndis = 0;
  if (fs > 0) {
    char num[16];
    snprintf(num, sizeof num, "%d", fs);
    char *gargs[] = {"goto", num, NULL};
    FILE *keep = s->out;
    FILE *sink = fopen("/dev/null", "w");
    if (sink) s->out = sink;
    bool moved = repl_command_lookup("goto")->run(s, 2, gargs, err);
    s->out = keep;
    if (sink) fclose(sink);
    if (!moved) return false;
    const ExplainRecord *first[5];
    ndis = xla_disagreements(s->eng.log, fs, first, 5);
    for (int k = 0; k < ndis && k < 5 && !s->json; k++) {
      if (k == 0) fputs("where fxplain parts from XLA's recorded decisions (first 5):\n", s->out);
      explain_print_record(s->out, first[k]);
    }
    if (!s->json)
      fprintf(s->out, "%d of XLA's priority-fusion decisions differ from fxplain's verdict on the same pair (now at stage %d; "
                      "`decisions --pass priority-fusion` lists them all)\n",
              ndis, fs);
  }
  if (!s->json)
    fprintf(s->out,
            "kernels: real XLA %d (after its last dumped pass, %s) vs fxplain %d on %s, %d the same; XLA's dump "
            "is kept in %s\n(step through XLA's passes with step/goto; `decisions` at the priority-fusion stage shows XLA's and "
            "fxplain's verdict on each pair)\n",
            xla_kernels, last > 0 ? s->eng.pipeline->passes[last - 1]->name : "input", mine_kernels, s->eng.device.name, same,
            dump);
  return true;
}

/* ---------- compare-modules ---------- */

static bool cmd_compare_modules(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 2, 2, err)) return false;
  ExplainOut o = {s->out, s->json, 0};
  FxError e;
  fx_error_clear(&e);
  int bad = 0;
  if (xla_compare_modules(&o, &s->eng.device, argv[1], argv[2], &bad, &e)) return true;
  return repl_arg_error(s, err, bad, "%s", e.msg);
}

const ReplCommand repl_cmds_xla[] = {
    {"find", "find FILE:LINE | LINE | SCOPE", "the instructions and kernels that came from a source line or JAX scope",
     "Lists the current stage's instructions whose XLA metadata points at the place: FILE:LINE (FILE\n"
     "matched as the end of the path; a line inside an op's line range counts), a bare LINE, or a\n"
     "JAX name scope such as jit(step)/attention or attention. Each line gives the instruction, its\n"
     "opcode, the kernel that holds it and its source; the last line lists the kernels. Reads both\n"
     "metadata={source_file= source_line=} and today's stack_frame_id= with the module's tables.",
     cmd_find},
    {"xla", "xla [--device h100|a100]", "compile the loaded module with real XLA:GPU and load its dump",
     "Compiles stage 0 with real XLA:GPU, deviceless (scripts/xla_reference.py: needs pip's jax,\n"
     "jaxlib, jax-cuda13-plugin and jax-cuda13-pjrt 0.10.2; FXPLAIN_PYTHON names the python), then\n"
     "loads XLA's dump as the `xla` pipeline (XLA's fusion passes as stages, its priority-fusion log as\n"
     "decisions), and shows XLA's kernels beside fxplain's (priority-fusion and multi_output_fusion\n"
     "on the module XLA's priority-fusion received, matched by what they compute), then the decisions\n"
     "of XLA's where fxplain's verdict on the same pair differs.",
     cmd_xla},
    {"compare-modules", "compare-modules A B", "compare two compilations: kernels, bytes, time, fusions only one has",
     "A and B are XLA dump folders (their final module) or HLO files. Prints each one's kernels,\n"
     "bytes moved and estimated time on the current device, then the fusions only one of them has,\n"
     "with the source line of each.",
     cmd_compare_modules},
    {0},
};

/* ---------- source lines per kernel (show graph) ---------- */

/* Adds the distinct "file:line" of i and, for a fusion, of its body into list (n entries of 64). */
static void gather_sources(const IrModule *m, const IrInstr *i, char (*list)[64], int *n, int max) {
  char loc[300];
  xla_source_short(m, i, loc, sizeof loc);
  if (loc[0]) {
    bool seen = false;
    for (int k = 0; k < *n && !seen; k++) seen = strcmp(list[k], loc) == 0;
    if (!seen && *n < max) snprintf(list[(*n)++], 64, "%s", loc);
  }
  const IrComputation *c = ir_instr_is_fusion(i) ? ir_fused_computation(i) : NULL;
  for (int j = 0; c && j < c->ninstrs; j++)
    if (c->instrs[j]->op != IR_OP_PARAMETER) gather_sources(m, c->instrs[j], list, n, max);
}

void repl_xla_kernel_sources(Session *s, const IrModule *m, const KernelPlan *p) {
  if (s->json || !p) return;
  bool any = false;
  for (int k = 0; k < p->nkernels; k++) {
    if (!p->kernels[k].instr) continue;
    char list[8][64];
    int n = 0;
    gather_sources(m, p->kernels[k].instr, list, &n, 8);
    if (!n) continue;
    if (!any) fputs("source lines each kernel holds (XLA's metadata):\n", s->out);
    any = true;
    fprintf(s->out, "  %-28s", p->kernels[k].name);
    for (int j = 0; j < n; j++) fprintf(s->out, "%s%s", j ? ", " : " ", list[j]);
    fputs(n == 8 ? ", ...\n" : "\n", s->out);
  }
}

/* ---------- render --group scope ---------- */

bool repl_xla_render_scope(Session *s, int argc, char **argv, FxError *err) {
  const char *file = NULL, *format = NULL;
  long long depth = 0;
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--group") == 0) {
      if (k + 1 >= argc || strcmp(argv[k + 1], "scope") != 0)
        return repl_arg_error(s, err, k + 1 < argc ? k + 1 : k, "--group takes 'scope' (JAX name scopes)");
      k++;
    } else if (strcmp(argv[k], "--depth") == 0) {
      if (k + 1 >= argc) return repl_arg_error(s, err, k, "--depth needs a value");
      if (!repl_parse_int(s, argv, ++k, 0, 64, &depth, err)) return false;
    } else if (strcmp(argv[k], "--format") == 0) {
      if (k + 1 >= argc) return repl_arg_error(s, err, k, "--format needs a value");
      format = argv[++k];
    } else if (argv[k][0] == '-' && argv[k][1]) {
      return repl_arg_error(s, err, k, "with --group scope, render takes FILE, --depth D and --format F, not '%s'",
                            argv[k]);
    } else if (!file) {
      file = argv[k];
    } else {
      return repl_arg_error(s, err, k, "unexpected argument '%s'", argv[k]);
    }
  }
  VizFormat f = VIZ_SVG;
  const char *ext = file ? strrchr(file, '.') : NULL;
  if (format && !viz_format_lookup(format, &f)) return repl_arg_error(s, err, 0, "unknown format '%s'", format);
  if (!format && ext && !viz_format_lookup(ext + 1, &f)) f = VIZ_SVG;
  IrModule *m = explain_engine_module(&s->eng, s->eng.cur);
  char title[200], path[PATH_MAX];
  snprintf(title, sizeof title, "%s, stage %d (%s), by JAX name scope%s", m->name, s->eng.cur,
           s->eng.cur ? s->eng.stages[s->eng.cur].pass : "input", depth ? "" : "");
  if (!file) {
    const char *dir = getenv("FXPLAIN_OUT_DIR");
    snprintf(path, sizeof path, "%s%s%s.stage%d.scopes.%s", dir && *dir ? dir : "", dir && *dir ? "/" : "", m->name,
             s->eng.cur, viz_format_name(f));
    file = path;
  }
  FxError e;
  fx_error_clear(&e);
  VizGraph *g = viz_scope_graph_build(m, (int)depth, title, &e);
  if (!g) return repl_arg_error(s, err, 0, "%s", e.msg);
  /* dot takes minutes on hundreds of scopes: draw fewer levels, and say so (DOT text has all). */
  int full = viz_graph_stats(g)->nodes, used = (int)depth;
  for (int d = 12; f != VIZ_DOT && viz_graph_stats(g)->nodes > 100 && d >= 1; d--) {
    if (depth && d >= depth) continue;
    VizGraph *g2 = viz_scope_graph_build(m, d, title, &e);
    if (!g2) break;
    viz_graph_free(g);
    g = g2;
    used = d;
  }
  if (used != (int)depth && !s->json)
    fprintf(s->out, "(%d scopes at %s: drawn at --depth %d, %d scopes; --format dot writes them all)\n", full,
            depth ? "that depth" : "full depth", used, viz_graph_stats(g)->nodes);
  VizRenderer *r = viz_renderer_new(&e);
  bool ok = r && viz_render_file(r, g, f, file, &e);
  int nodes = viz_graph_stats(g)->nodes, edges = viz_graph_stats(g)->memory_edges;
  viz_renderer_free(r);
  viz_graph_free(g);
  if (!ok) return repl_arg_error(s, err, 0, "%s", e.msg);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "wrote", file);
    json_kv_int(&w, "scopes", nodes);
    json_kv_int(&w, "edges", edges);
    json_object_end(&w);
    fputc('\n', s->out);
  } else {
    fprintf(s->out, "wrote %s: stage %d by JAX name scope, %d scopes, %d flows between them\n", file, s->eng.cur, nodes,
            edges);
  }
  return true;
}
