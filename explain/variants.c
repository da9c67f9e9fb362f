/* variants.c — the variants table: recording the engine's current stage as a row, printing the
 * rows with their plan figures, and printing what `variants --run` measured (see variants.h). */
#include "variants.h"

#include <stdio.h>
#include <string.h>

#include "../compiler/ir/ir.h"

static void variant_drop(ExplainVariant *v) {
  if (v->stage) ir_module_free(v->stage);
  if (v->input) ir_module_free(v->input);
  memset(v, 0, sizeof *v);
}

void explain_variants_free(ExplainVariants *t) {
  if (!t) return;
  for (int k = 0; k < t->n; k++) variant_drop(&t->rows[k]);
  fx_free(t);
}

/* Steps of the input's loop: the largest trip count among the input's while loops (the input is
 * never unrolled, so this counts the program's steps). 1 when there is no loop. */
static int64_t input_steps(const IrModule *m) {
  int64_t best = 1;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const IrInstr *i = m->comps[c]->instrs[k];
      if (i->op != IR_OP_WHILE) continue;
      int64_t t = plan_while_trip_count(i);
      if (t > best) best = t;
    }
  return best;
}

/* The kernel launches one run of the plan's module makes, and the bytes they move, to compare with
 * what a backend counts: the plan's totals (a loop with a known trip count runs as a for loop and
 * never launches its condition; an unknown one's condition is counted once more than the loop
 * iterates; the read-backs, which launch nothing, left out). */
static void plan_kernel_run(const KernelPlan *p, int64_t *launches, int64_t *bytes) {
  *launches = p->launches;
  *bytes = p->bytes_read + p->bytes_written;
}

void explain_variant_settings_summary(const ExplainVariant *v, char *buf, size_t n) {
  PassSettings d;
  pass_settings_default(&d);
  const PassSettings *p = &v->settings;
  size_t o = 0;
  buf[0] = 0;
#define ADD(...)                                                                     \
  do {                                                                               \
    if (o < n) o += (size_t)snprintf(buf + o, n - o, "%s", o ? ", " : "");         \
    if (o < n) o += (size_t)snprintf(buf + o, n - o, __VA_ARGS__);                 \
  } while (0)
  ADD("%s", v->pipeline);
  if (p->concat_user_limit != d.concat_user_limit) ADD("dup_limit %d", p->concat_user_limit);
  if (p->max_duplication != d.max_duplication) ADD("max_duplication %d", p->max_duplication);
  if (p->operand_budget != d.operand_budget) ADD("operand_budget %d", p->operand_budget);
  if (p->unroll != d.unroll) ADD("unroll %d", p->unroll);
  if (p->dot_is_library != d.dot_is_library) ADD("library dot %s", p->dot_is_library ? "on" : "off");
  if (p->conv_is_library != d.conv_is_library) ADD("library conv %s", p->conv_is_library ? "on" : "off");
  if (p->rng_is_library != d.rng_is_library) ADD("library rng %s", p->rng_is_library ? "on" : "off");
  for (int op = 0; op < IR_OP_COUNT; op++)
    if (p->expensive_override[op]) ADD("expensive %s %s", ir_op_name((IrOpcode)op), p->expensive_override[op] > 0 ? "on" : "off");
  if (p->disabled_passes[0]) ADD("passes off: %s", p->disabled_passes);
#undef ADD
}

void explain_variant_settings_json(JsonWriter *w, const ExplainVariant *v) {
  const PassSettings *p = &v->settings;
  json_key(w, "settings");
  json_object_begin(w);
  json_kv_str(w, "pipeline", v->pipeline);
  json_kv_str(w, "device", v->device.name);
  json_kv_int(w, "concat_user_limit", p->concat_user_limit);
  json_kv_int(w, "max_duplication", p->max_duplication);
  json_kv_int(w, "operand_budget", p->operand_budget);
  json_kv_int(w, "unroll", p->unroll);
  json_kv_bool(w, "dot_is_library", p->dot_is_library);
  json_kv_bool(w, "conv_is_library", p->conv_is_library);
  json_kv_bool(w, "rng_is_library", p->rng_is_library);
  json_kv_str(w, "disabled_passes", p->disabled_passes);
  json_object_end(w);
}

void explain_variant_paper_json(JsonWriter *w, const ExplainVariant *v) {
  if (v->paper > 0) json_kv_double(w, "paper", v->paper);
  else json_kv_null(w, "paper");
}

bool explain_variants_record(ExplainVariants **table, ExplainEngine *e, const char *label, double paper, int *slot_out,
                             bool *replaced_out, FxError *err) {
  if (!*table) {
    *table = fx_calloc(1, sizeof **table);
    if (!*table) return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  ExplainVariants *t = *table;
  int slot = -1;
  for (int k = 0; k < t->n; k++)
    if (strcmp(t->rows[k].label, label) == 0) slot = k;
  bool replaced = slot >= 0;
  if (!replaced && t->n >= EXPLAIN_VARIANTS_MAX)
    return fx_error_set(err, NULL, 0, 0, "the variant table is full (%d rows); `variants --clear` empties it", EXPLAIN_VARIANTS_MAX);
  const IrModule *cur = e->stages[e->cur].module;
  const KernelPlan *p = explain_engine_plan(e, e->cur, err);
  if (!p) return false;
  ExplainVariant v;
  memset(&v, 0, sizeof v);
  snprintf(v.label, sizeof v.label, "%s", label);
  v.paper = paper;
  v.stage = ir_module_clone(cur);
  v.input = ir_module_clone(e->stages[0].module);
  if (!v.stage || !v.input) {
    variant_drop(&v);
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  v.stage_no = e->cur;
  snprintf(v.pass, sizeof v.pass, "%s", e->stages[e->cur].pass ? e->stages[e->cur].pass : "");
  snprintf(v.pipeline, sizeof v.pipeline, "%s", e->pipeline ? e->pipeline->name : "");
  v.device = e->device;
  v.settings = e->settings;
  v.steps = input_steps(e->stages[0].module);
  v.kernels = p->ncompute;
  v.launches = p->launches;
  v.bytes = p->bytes_read + p->bytes_written;
  v.est_us = p->est_us;
  v.trip_counts_known = p->trip_counts_known;
  plan_kernel_run(p, &v.kernel_launches, &v.kernel_bytes);
  if (replaced) {
    variant_drop(&t->rows[slot]);
    t->rows[slot] = v;
  } else {
    slot = t->n++;
    t->rows[slot] = v;
  }
  *slot_out = slot;
  *replaced_out = replaced;
  return true;
}

void explain_show_variant_recorded(const ExplainOut *o, const ExplainVariant *v, int slot, bool replaced) {
  double steps = (double)v->steps;
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "variant", v->label);
    json_kv_int(&w, "row", slot + 1);
    json_kv_bool(&w, "replaced", replaced);
    json_kv_int(&w, "stage", v->stage_no);
    json_kv_int(&w, "steps", v->steps);
    json_kv_int(&w, "kernels", v->kernels);
    json_kv_double(&w, "launches_per_step", (double)v->launches / steps);
    json_kv_double(&w, "bytes_per_step", (double)v->bytes / steps);
    json_kv_double(&w, "est_us_per_step", v->est_us / steps);
    explain_variant_paper_json(&w, v);
    json_object_end(&w);
  } else {
    fprintf(o->out, "%s: %.2f launches and %.1f KiB per step (%lld step%s, stage %d)%s\n", v->label,
            (double)v->launches / steps, (double)v->bytes / steps / 1024.0, (long long)v->steps, v->steps == 1 ? "" : "s",
            v->stage_no, replaced ? " (replaces the row of that name)" : "");
  }
}

static bool same_device(const ExplainVariants *t) {
  for (int k = 1; k < t->n; k++)
    if (strcmp(t->rows[k].device.name, t->rows[0].device.name) != 0) return false;
  return true;
}

void explain_variant_paper_text(char *buf, size_t n, double paper) {
  if (paper > 0) snprintf(buf, n, "%.2fx", paper);
  else snprintf(buf, n, "-");
}

void explain_show_variants(const ExplainOut *o, const ExplainVariants *t) {
  int n = t ? t->n : 0;
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_array_begin(&w);
    for (int k = 0; k < n; k++) {
      const ExplainVariant *v = &t->rows[k];
      double steps = (double)v->steps;
      json_object_begin(&w);
      json_kv_str(&w, "variant", v->label);
      json_kv_int(&w, "stage", v->stage_no);
      json_kv_str(&w, "pass", v->pass);
      json_kv_int(&w, "steps", v->steps);
      json_kv_int(&w, "kernels", v->kernels);
      json_kv_int(&w, "launches", v->launches);
      json_kv_int(&w, "kernel_launches", v->kernel_launches);
      json_kv_int(&w, "kernel_bytes", v->kernel_bytes);
      json_kv_int(&w, "bytes", v->bytes);
      json_kv_double(&w, "est_us", v->est_us);
      json_kv_bool(&w, "trip_counts_known", v->trip_counts_known);
      json_kv_double(&w, "launches_per_step", (double)v->launches / steps);
      json_kv_double(&w, "bytes_per_step", (double)v->bytes / steps);
      json_kv_double(&w, "est_us_per_step", v->est_us / steps);
      json_kv_double(&w, "est_speedup", v->est_us > 0 ? t->rows[0].est_us / v->est_us : 0.0);
      explain_variant_paper_json(&w, v);
      explain_variant_settings_json(&w, v);
      json_object_end(&w);
    }
    json_array_end(&w);
    return;
  }
  if (n == 0) {
    fprintf(o->out, "no variants recorded yet: step a program through the pipeline, then `variant NAME`\n");
    return;
  }
  bool one_device = same_device(t);
  fprintf(o->out, "%-22s %8s %18s %16s %14s %9s %8s  %s\n", "variant", "kernels", "launches per step", "KiB per step",
          "est us/step", "speedup", "paper", "settings");
  for (int k = 0; k < n; k++) {
    const ExplainVariant *v = &t->rows[k];
    double steps = (double)v->steps;
    char pa[32], set[400];
    explain_variant_paper_text(pa, sizeof pa, v->paper);
    explain_variant_settings_summary(v, set, sizeof set);
    fprintf(o->out, "%-22s %8d %18.2f %16.1f %14.2f %8.2fx %8s  %s%s%s\n", v->label, v->kernels,
            (double)v->launches / steps, (double)v->bytes / steps / 1024.0, v->est_us / steps,
            v->est_us > 0 ? t->rows[0].est_us / v->est_us : 0.0, pa, set, one_device ? "" : ", on ",
            one_device ? "" : v->device.name);
  }
  if (one_device)
    fprintf(o->out, "estimated on %s; `variants --run` measures them on this machine\n", t->rows[0].device.name);
}

/* ---------- variants --run ---------- */

void explain_show_run_header(const ExplainOut *out, const ExplainRunSpec *o, int n) {
  FILE *f = out->out;
  fprintf(f, "running %d variant%s on %s, ", n, n == 1 ? "" : "s", o->backend);
  if (o->repeat == 1) fprintf(f, "one run each");
  else fprintf(f, "median of %d runs each", o->repeat);
  fprintf(f, ", seed %llu\n", (unsigned long long)o->seed);
  if (o->nrules) {
    fprintf(f, "inputs: the floats of parameters matching");
    for (int r = 0; r < o->nrules; r++)
      fprintf(f, "%s '%s' from [%g, %g)", r ? (r + 1 == o->nrules ? " and" : ",") : "", o->pattern[r], o->lo[r],
              o->hi[r]);
    fprintf(f, ", the rest as `run` makes them\n");
  }
  fprintf(f, "%-22s %12s %12s %10s %10s %9s %8s%s\n", "variant", "launches", "bytes moved", "time", "us/step", "speedup",
          "paper", o->check ? "  check" : "");
  fflush(f);
}

void explain_show_run_row(const ExplainOut *out, const ExplainRunSpec *o, const ExplainVariant *v, const ExplainMeasured *m,
                          double base_ns) {
  FILE *f = out->out;
  char ln[48], by[32], tm[32], ps[32], su[32], pa[32];
  fx_format_count(ln, sizeof ln, (long long)m->launches);
  fx_format_bytes(by, sizeof by, (double)m->bytes, FX_BYTES_RUN);
  fx_format_time(tm, sizeof tm, m->median_ns, FX_TIME_TABLE);
  snprintf(ps, sizeof ps, "%.2f", m->median_ns / 1e3 / (double)v->steps);
  if (m->median_ns > 0 && base_ns > 0) snprintf(su, sizeof su, "%.2fx", base_ns / m->median_ns);
  else snprintf(su, sizeof su, "-");
  explain_variant_paper_text(pa, sizeof pa, v->paper);
  fprintf(f, "%-22s %12s %12s %10s %10s %9s %8s", v->label, ln, by, tm, ps, su, pa);
  if (o->check) {
    if (m->agrees) fprintf(f, "  agrees (worst error %.2g)", m->worst);
    else fprintf(f, "  DIFFERS: %s", m->differs);
  }
  if (m->launches != v->kernel_launches || m->bytes != v->kernel_bytes) {
    char pl[48], pb[32];
    fx_format_count(pl, sizeof pl, (long long)v->kernel_launches);
    fx_format_bytes(pb, sizeof pb, (double)v->kernel_bytes, FX_BYTES_RUN);
    fprintf(f, "  (the plan predicts %s launches, %s)", pl, pb);
  }
  fputc('\n', f);
  fflush(f);
}

void explain_show_run_json(const ExplainOut *out, const ExplainRunSpec *o, const ExplainVariants *t,
                           const ExplainMeasured *ms) {
  JsonWriter w;
  json_init(&w, out->out);
  json_object_begin(&w);
  json_kv_str(&w, "backend", o->backend);
  json_kv_int(&w, "repeat", o->repeat);
  json_kv_int(&w, "seed", (long long)o->seed);
  json_kv_bool(&w, "check", o->check);
  json_key(&w, "uniform");
  json_array_begin(&w);
  for (int r = 0; r < o->nrules; r++) {
    json_object_begin(&w);
    json_kv_str(&w, "pattern", o->pattern[r]);
    json_kv_double(&w, "lo", o->lo[r]);
    json_kv_double(&w, "hi", o->hi[r]);
    json_object_end(&w);
  }
  json_array_end(&w);
  json_key(&w, "variants");
  json_array_begin(&w);
  for (int k = 0; k < t->n; k++) {
    const ExplainVariant *v = &t->rows[k];
    const ExplainMeasured *m = &ms[k];
    json_object_begin(&w);
    json_kv_str(&w, "variant", v->label);
    json_kv_int(&w, "stage", v->stage_no);
    json_kv_int(&w, "steps", v->steps);
    json_kv_int(&w, "launches", m->launches);
    json_kv_int(&w, "plan_launches", v->kernel_launches);
    json_kv_int(&w, "bytes", m->bytes);
    json_kv_int(&w, "plan_bytes", v->kernel_bytes);
    json_kv_double(&w, "time_ns", m->median_ns);
    json_key(&w, "times_ns");
    json_array_begin(&w);
    for (int r = 0; r < o->repeat; r++) json_double(&w, m->times_ns[r]);
    json_array_end(&w);
    json_kv_double(&w, "us_per_step", m->median_ns / 1e3 / (double)v->steps);
    if (m->median_ns > 0 && ms[0].median_ns > 0) json_kv_double(&w, "speedup", ms[0].median_ns / m->median_ns);
    else json_kv_null(&w, "speedup");
    explain_variant_paper_json(&w, v);
    json_key(&w, "check");
    if (!m->checked) {
      json_null(&w);
    } else {
      json_object_begin(&w);
      json_kv_bool(&w, "agrees", m->agrees);
      json_kv_double(&w, "worst_error", m->worst);
      if (m->agrees) json_kv_null(&w, "detail");
      else json_kv_str(&w, "detail", m->differs);
      json_object_end(&w);
    }
    explain_variant_settings_json(&w, v);
    json_object_end(&w);
  }
  json_array_end(&w);
  json_object_end(&w);
}

void explain_show_run_footer(const ExplainOut *o, const ExplainVariants *t) {
  bool any_paper = false;
  for (int k = 0; k < t->n; k++) any_paper |= t->rows[k].paper > 0;
  fprintf(o->out, "speedup: over the first row, %s; us/step: time per loop step", t->rows[0].label);
  if (any_paper) fprintf(o->out, "; paper: the ratio each row was recorded with (variant NAME --paper X)");
  fputc('\n', o->out);
}
