/* engine_xla.c — the engine's questions about XLA's own output (see xla_dump.h): loading a dump
 * folder or a fusion log as the input, where an instruction came from, which instructions (and
 * kernels) came from a source line or JAX scope, the source lines each kernel holds, and
 * compiling the input with real XLA:GPU through the Python driver, then where fxplain parts from
 * XLA. Data only: format_xla.c prints it. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../compiler/hlo/hlo.h"
#include "engine.h"
#include "xla_dump.h"

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

XlaPathKind xla_path_kind(const char *path) {
  if (is_dir(path)) return XLA_PATH_FOLDER;
  const char *suffix = ".priority_fusion_dump.txt";
  size_t a = strlen(path), b = strlen(suffix);
  return a >= b && strcmp(path + a - b, suffix) == 0 ? XLA_PATH_LOG : XLA_PATH_OTHER;
}

/* ---------- load ---------- */

bool explain_engine_load_xla(ExplainEngine *e, const char *path, const char *which, const DeviceProfile **switched,
                             FxError *err) {
  *switched = NULL;
  XlaDump *d;
  if (!is_dir(path)) {
    d = xla_dump_from_log(path, err);
  } else {
    d = xla_dump_scan(path, err);
    if (d && !xla_dump_select(d, which, err)) {
      xla_dump_free(d);
      d = NULL;
    }
  }
  if (!d) return false;
  IrModule *m0 = xla_dump_stage(d, 0, NULL, err);
  if (!m0) {
    xla_dump_free(d);
    return false;
  }
  explain_engine_set_dump(e, m0, d); /* frees the old dump */
  explain_engine_fx_clear(e);        /* .fx definitions typed before belonged to the module replaced */
  /* fxplain's own verdicts are for the GPU XLA compiled for, when the log names one we know. */
  if (d->log && d->log->device) {
    const DeviceProfile *dp = strstr(d->log->device, "H100") ? device_lookup("h100")
                              : strstr(d->log->device, "A100") ? device_lookup("a100")
                                                                : NULL;
    if (dp && strcmp(e->device.name, dp->name) != 0) {
      e->device = *dp;
      *switched = dp;
    }
  }
  return true;
}

/* ---------- source lines ---------- */

bool explain_engine_source_of(const ExplainEngine *e, const char *name, XlaSource *src, char *buf, size_t n) {
  IrModule *m = explain_engine_module(e, e->cur);
  if (!m) return false;
  const IrInstr *i = ir_module_find_instr(m, name);
  if (!i && e->nstages > 0) i = ir_module_find_instr(e->stages[0].module, name);
  return i && xla_source_of(m, i, src, buf, n);
}

/* The kernel holding instruction i: the top-level instruction of its computation chain. */
static const IrInstr *kernel_of(const IrInstr *i) {
  while (i->parent && i->parent->fusion_instr) i = i->parent->fusion_instr;
  return i;
}

bool explain_engine_find(ExplainEngine *e, const char *where, XlaFind *out, FxError *err) {
  memset(out, 0, sizeof *out);
  arena_init(&out->arena);
  out->stage = e->cur;
  IrModule *m = explain_engine_module(e, e->cur);
  if (!m) return fx_error_set(err, NULL, 0, 0, EXPLAIN_NOTHING_LOADED);
  int cap = ir_module_instr_count(m) + 1;
  out->found = arena_alloc(&out->arena, (size_t)cap * sizeof *out->found);
  out->kernels = arena_alloc(&out->arena, (size_t)cap * sizeof *out->kernels);
  if (!out->found || !out->kernels) return fx_error_set(err, NULL, 0, 0, "out of memory");
  /* What launches work at this stage (the kernel plan): a parameter or bitcast holds no kernel. */
  FxError pe;
  fx_error_clear(&pe);
  const KernelPlan *plan = explain_engine_plan(e, e->cur, &pe);
  for (int c = 0; c < m->ncomps; c++) {
    const IrComputation *comp = m->comps[c];
    for (int j = 0; j < comp->ninstrs; j++) {
      const IrInstr *i = comp->instrs[j];
      if (i->dead || !xla_source_matches(m, i, where)) continue;
      const IrInstr *kern = kernel_of(i);
      bool launches = !plan;
      for (int q = 0; plan && q < plan->nkernels && !launches; q++) launches = plan->kernels[q].instr == kern;
      bool seen = !launches;
      for (int q = 0; q < out->nkernels && !seen; q++) seen = out->kernels[q] == kern;
      if (!seen) out->kernels[out->nkernels++] = kern;
      char loc[300];
      xla_source_short(m, i, loc, sizeof loc);
      XlaSource src;
      char buf[1536];
      xla_source_of(m, i, &src, buf, sizeof buf);
      XlaFound *f = &out->found[out->n++];
      *f = (XlaFound){i, comp, launches ? kern : NULL, NULL, NULL};
      if ((loc[0] && !(f->source = arena_strdup(&out->arena, loc))) ||
          (src.op_name && !(f->scope = arena_strdup(&out->arena, src.op_name))))
        return fx_error_set(err, NULL, 0, 0, "out of memory");
    }
  }
  out->has_positions = strstr(m->prologue ? m->prologue : "", "FileLocations") ||
                       strstr(m->epilogue ? m->epilogue : "", "FileLocations");
  return true;
}

void xla_find_free(XlaFind *f) {
  arena_free(&f->arena);
  memset(f, 0, sizeof *f);
}

/* Adds the distinct "file:line" of i and, for a fusion, of its body into ks. */
static void gather_sources(const IrModule *m, const IrInstr *i, XlaKernelSources *ks) {
  char loc[300];
  xla_source_short(m, i, loc, sizeof loc);
  if (loc[0]) {
    bool seen = false;
    for (int k = 0; k < ks->n && !seen; k++) seen = strcmp(ks->lines[k], loc) == 0;
    if (!seen && ks->n < XLA_KERNEL_SOURCES) snprintf(ks->lines[ks->n++], sizeof ks->lines[0], "%s", loc);
  }
  const IrComputation *c = ir_instr_is_fusion(i) ? ir_fused_computation(i) : NULL;
  for (int j = 0; c && j < c->ninstrs; j++)
    if (c->instrs[j]->op != IR_OP_PARAMETER) gather_sources(m, c->instrs[j], ks);
}

int xla_kernel_sources(const IrModule *m, const KernelPlan *p, XlaKernelSources **out) {
  *out = fx_calloc((size_t)p->nkernels + 1, sizeof **out);
  if (!*out) return -1;
  int n = 0;
  for (int k = 0; k < p->nkernels; k++) {
    if (!p->kernels[k].instr) continue;
    XlaKernelSources *ks = &(*out)[n];
    ks->kernel = p->kernels[k].name;
    gather_sources(m, p->kernels[k].instr, ks);
    if (ks->n) n++;
    else memset(ks, 0, sizeof *ks);
  }
  return n;
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

bool xla_run_prepare(const ExplainEngine *e, const char *device, XlaRun *run, FxError *err) {
  memset(run, 0, sizeof *run);
  run->device = device;
  if (e->nstages == 0) return fx_error_set(err, NULL, 0, 0, EXPLAIN_NOTHING_LOADED);
  char dir[PATH_MAX], script[PATH_MAX + 64];
  const char *env = getenv("FXPLAIN_XLA_REFERENCE");
  if (env) snprintf(script, sizeof script, "%s", env);
  else if (exe_dir(dir, sizeof dir)) snprintf(script, sizeof script, "%s/../scripts/xla_reference.py", dir);
  else snprintf(script, sizeof script, "scripts/xla_reference.py");
  if (access(script, R_OK) != 0)
    return fx_error_set(err, NULL, 0, 0, "cannot find scripts/xla_reference.py (set FXPLAIN_XLA_REFERENCE to its path)");
  const char *py = getenv("FXPLAIN_PYTHON");
  run->python = py && *py ? py : "python3";
  snprintf(run->dir, sizeof run->dir, "/tmp/fxplain-xla-XXXXXX");
  if (!mkdtemp(run->dir)) return fx_error_set(err, NULL, 0, 0, "cannot make a temporary folder: %s", strerror(errno));
  char in[PATH_MAX];
  snprintf(in, sizeof in, "%s/input.hlo", run->dir);
  FILE *f = fopen(in, "w");
  FxError pe;
  fx_error_clear(&pe);
  run->module = e->stages[0].module;
  bool ok = f && hlo_print(f, run->module, &pe);
  if (f && fclose(f) != 0) ok = false;
  if (!ok) return fx_error_set(err, NULL, 0, 0, "cannot write the module for XLA: %s", pe.set ? pe.msg : strerror(errno));
  snprintf(run->cmd, sizeof run->cmd, "'%s' '%s' --device %s --keep-dump --no-gzip '%s' '%s/out' > '%s/log.txt' 2>&1",
           run->python, script, device, in, run->dir, run->dir);
  snprintf(run->dump, sizeof run->dump, "%s/out/input.xla_dump", run->dir);
  return true;
}

bool xla_run(const XlaRun *run, FxError *err) {
  int rc = system(run->cmd);
  int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  if (code == 3 || code == 127)
    return fx_error_set(err, NULL, 0, 0,
                        "jax and its CUDA plugin are not installed for %s: pip install jax==0.10.2 jaxlib==0.10.2 "
                        "jax-cuda13-plugin==0.10.2 jax-cuda13-pjrt==0.10.2 (or set FXPLAIN_PYTHON to a python that "
                        "has them)",
                        run->python);
  if (code != 0 && !is_dir(run->dump))
    return fx_error_set(err, NULL, 0, 0, "real XLA failed (exit %d); its output is in %s/log.txt", code, run->dir);
  return true;
}

bool explain_engine_xla_verdicts(ExplainEngine *e, XlaVerdicts *v, FxError *err) {
  memset(v, 0, sizeof *v);
  v->fusion_stage = e->xla ? xla_dump_fusion_stage(e->xla) : -1;
  if (v->fusion_stage <= 0) return true;
  if (!explain_engine_ensure(e, v->fusion_stage, err)) return false;
  e->cur = v->fusion_stage;
  v->ndisagree = xla_disagreements(e->log, v->fusion_stage, v->first, 5);
  return true;
}
