/* format_xla.c — the engine's answers about XLA's own output printed, as text or JSON (see
 * xla_dump.h): what `load` says of a dump, where an instruction came from, `find`, each kernel's
 * source lines after `show graph`, and what `xla` says while and after real XLA compiles. The text
 * is what the shell prints; the JSON goes through the one writer (json.h). */
#include <string.h>

#include "format.h"
#include "xla_dump.h"

/* ---------- load ---------- */

/* The table of the dump's modules: id, name, instructions, snapshots and what was dumped. */
static void print_modules(FILE *out, const XlaDump *d) {
  fprintf(out, "XLA dump %s: %d module%s\n", d->dir, d->nmods, d->nmods == 1 ? "" : "s");
  fprintf(out, "  %-6s %-28s %12s %7s  %s\n", "id", "module", "instructions", "passes", "dumped");
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
    fprintf(out, "%s %-6s %-28s %12d %7d  %s\n", k == d->chosen ? ">" : " ", m->id, m->name, m->ninstrs, m->nsnaps,
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

void explain_show_xla_loaded(const ExplainOut *o, ExplainEngine *e, const char *path, const DeviceProfile *switched) {
  const XlaDump *d = e->xla;
  const XlaDumpModule *m = &d->mods[d->chosen];
  const IrModule *m0 = explain_engine_module(e, 0);
  int fs = xla_dump_fusion_stage(d);
  if (o->json) {
    JsonWriter w;
    explain_json_loaded_begin(&w, o->out, m->name);
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
    fputc('\n', o->out);
    return;
  }
  if (switched) fprintf(o->out, "device: %s (XLA compiled for %s)\n", switched->name, d->log->device);
  if (!d->log_only) print_modules(o->out, d);
  fprintf(o->out, "loaded %s (module %s) from %s: %d instructions; pipeline xla: %d stages, XLA's own passes%s\n",
          m->name, m->id, path, ir_module_instr_count(m0), d->pipeline.npasses + 1,
          d->log_only ? " (its fusion steps replayed)" : "");
  if (d->log)
    fprintf(o->out, "XLA's priority-fusion log: %d fusions, %d ineligible producers, %d priority updates%s%d\n",
            d->log->nfusions, d->log->nineligible, d->log->npriority, fs > 0 ? "; stage " : "", fs > 0 ? fs : 0);
  if (d->nmods > 1 && !d->log_only) fprintf(o->out, "(another module: load %s --module NAME|ID)\n", path);
}

/* ---------- source lines ---------- */

void explain_show_source_note(const ExplainOut *o, const ExplainEngine *e, const char *a, const char *b) {
  if (o->json) return;
  const char *names[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    XlaSource src;
    char buf[1536];
    if (!names[k] || !explain_engine_source_of(e, names[k], &src, buf, sizeof buf)) continue;
    fprintf(o->out, "  source of %s: ", names[k]);
    if (src.file) fprintf(o->out, "%s:%d", src.file, src.line);
    if (src.function) fprintf(o->out, " in %s", src.function);
    if (src.op_name) fprintf(o->out, "%s(%s)", src.file ? " " : "", src.op_name);
    fputc('\n', o->out);
  }
}

void explain_show_find(const ExplainOut *o, const XlaFind *f, const char *where) {
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "find", where);
    json_kv_int(&w, "stage", f->stage);
    json_key(&w, "instructions");
    json_array_begin(&w);
    for (int k = 0; k < f->n; k++) {
      const XlaFound *x = &f->found[k];
      json_object_begin(&w);
      json_kv_str(&w, "name", x->instr->name);
      json_kv_str(&w, "op", ir_op_name(x->instr->op));
      json_kv_str(&w, "computation", x->comp->name);
      json_kv_str(&w, "kernel", x->kernel ? x->kernel->name : NULL);
      json_kv_str(&w, "source", x->source);
      json_kv_str(&w, "scope", x->scope);
      json_object_end(&w);
    }
    json_array_end(&w);
    json_key(&w, "kernels");
    json_array_begin(&w);
    for (int q = 0; q < f->nkernels; q++) json_str(&w, f->kernels[q]->name);
    json_array_end(&w);
    json_object_end(&w);
    fputc('\n', o->out);
    return;
  }
  for (int k = 0; k < f->n; k++) {
    const XlaFound *x = &f->found[k];
    fprintf(o->out, "  %-24s %-18s in %-22s %s %s\n", x->instr->name, ir_op_name(x->instr->op),
            !x->kernel ? "(no kernel)" : x->kernel != x->instr ? x->kernel->name : "(its own kernel)",
            x->source ? x->source : "", x->scope ? x->scope : "");
  }
  int nk = f->nkernels;
  if (f->n) {
    fprintf(o->out, "%d instruction%s from %s at stage %d, in %d kernel%s:", f->n, f->n == 1 ? "" : "s", where,
            f->stage, nk, nk == 1 ? "" : "s");
    for (int q = 0; q < nk && q < 40; q++) fprintf(o->out, " %s", f->kernels[q]->name);
    fputs(nk > 40 ? " ...\n" : "\n", o->out);
  } else {
    fprintf(o->out, "no instruction of stage %d comes from %s (the module %s source positions)\n", f->stage, where,
            f->has_positions ? "has" : "may carry no");
  }
}

void explain_show_kernel_sources(const ExplainOut *o, const IrModule *m, const KernelPlan *p) {
  if (o->json || !p) return;
  XlaKernelSources *ks;
  int n = xla_kernel_sources(m, p, &ks);
  for (int k = 0; k < n; k++) {
    if (k == 0) fputs("source lines each kernel holds (XLA's metadata):\n", o->out);
    fprintf(o->out, "  %-28s", ks[k].kernel);
    for (int j = 0; j < ks[k].n; j++) fprintf(o->out, "%s%s", j ? ", " : " ", ks[k].lines[j]);
    fputs(ks[k].n == XLA_KERNEL_SOURCES ? ", ...\n" : "\n", o->out);
  }
  if (n >= 0) fx_free(ks);
}

/* ---------- xla ---------- */

void explain_show_xla_compiling(const ExplainOut *o, const XlaRun *run) {
  if (o->json) return;
  fprintf(o->out, "compiling %s with real XLA:GPU for %s (deviceless) ...\n", run->module->name, run->device);
  fflush(o->out);
}

/* The pass XLA's last dumped snapshot is after ("input" when there is none). */
static const char *last_pass(ExplainEngine *e) {
  int last = e->pipeline->npasses;
  return last > 0 ? e->pipeline->passes[last - 1]->name : "input";
}

void explain_show_xla_kernels(const ExplainOut *o, ExplainEngine *e, const XlaSideBySide *sbs) {
  if (o->json || sbs->nxla < 0) return;
  fprintf(o->out, "XLA's kernels after %s beside fxplain's priority-fusion + multi_output_fusion on the same input:\n",
          last_pass(e));
  fprintf(o->out, "  %-34s %-34s %s\n", "XLA", "fxplain", "");
  for (int k = 0; k < sbs->nxla; k++) {
    const XlaKernelPair *pr = &sbs->pairs[k];
    if (k >= 30) {
      fprintf(o->out, "  ... %d more\n", sbs->nxla - 30);
      break;
    }
    char st[64];
    if (pr->same) snprintf(st, sizeof st, "same (%d instructions)", pr->xla_n);
    else snprintf(st, sizeof st, "differs: %d of XLA's %d, %d of fxplain's %d in common", pr->common, pr->xla_n,
                  pr->common, pr->mine_n);
    fprintf(o->out, "  %-34s %-34s %s\n", pr->xla, pr->mine ? pr->mine : "-", st);
  }
}

void explain_show_xla_verdicts(const ExplainOut *o, ExplainEngine *e, const XlaSideBySide *sbs, const XlaVerdicts *v,
                               const XlaRun *run) {
  if (o->json) return;
  int fs = v->fusion_stage;
  if (fs > 0) {
    for (int k = 0; k < v->ndisagree && k < 5; k++) {
      if (k == 0) fputs("where fxplain parts from XLA's recorded decisions (first 5):\n", o->out);
      explain_print_record(o->out, v->first[k]);
    }
    fprintf(o->out, "%d of XLA's priority-fusion decisions differ from fxplain's verdict on the same pair (now at stage %d; "
                    "`decisions --pass priority-fusion` lists them all)\n",
            v->ndisagree, fs);
  }
  int same = 0;
  for (int k = 0; k < sbs->nxla; k++) same += sbs->pairs[k].same;
  fprintf(o->out,
          "kernels: real XLA %d (after its last dumped pass, %s) vs fxplain %d on %s, %d the same; XLA's dump "
          "is kept in %s\n(step through XLA's passes with step/goto; `decisions` at the priority-fusion stage shows XLA's and "
          "fxplain's verdict on each pair)\n",
          sbs->nxla, last_pass(e), sbs->nmine, e->device.name, same, run->dump);
}
