/* format_kernels.c — what a backend says about a stage's kernels (compiler/plan/kernel_report.h),
 * printed as text or JSON: `kernels --source` (the CUDA of every kernel, or of one) and
 * `kernels --resources` (ptxas' figures, block and occupancy per kernel). */
#include "format.h"

/* An rng kernel: cuRAND's device API, compiled on its own (launched as fx_rng). */
static void print_rng(FILE *out, const KernelRecord *k) {
  fprintf(out, "// kernel %s: rng -> cuRAND (its own unit, launched as fx_rng over %lld threads)\n%s", k->label,
          (long long)k->threads, k->source ? k->source : "");
}

void explain_show_kernel_source(const ExplainOut *o, const KernelReport *r, bool one) {
  if (one) {
    /* One kernel is shown as text (its source, or how it runs; an rng kernel's unit but in JSON). */
    const KernelRecord *k = &r->rows[0];
    if (k->rng && !o->json) print_rng(o->out, k);
    else if (!k->generated) fprintf(o->out, "%s runs on %s%s%s\n", k->kernel, k->runs_as, k->why[0] ? ": " : "", k->why);
    else fputs(k->source, o->out);
    return;
  }
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", r->stage);
    json_kv_str(&w, "source", r->unit);
    json_key(&w, "rng_kernels"); /* each rng's cuRAND kernel, its own unit */
    json_array_begin(&w);
    for (int q = 0; q < r->nrows; q++) {
      if (!r->rows[q].rng) continue;
      json_object_begin(&w);
      json_kv_str(&w, "kernel", r->rows[q].kernel);
      json_kv_str(&w, "source", r->rows[q].source ? r->rows[q].source : "");
      json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    return;
  }
  fputs(r->unit, o->out);
  for (int q = 0; q < r->nrows; q++)
    if (r->rows[q].rng) print_rng(o->out, &r->rows[q]);
  /* kernels with no source say so, rather than missing silently (a chain nested too deeply) */
  for (int q = 0; q < r->nrows; q++) {
    const KernelRecord *k = &r->rows[q];
    if (!k->rng && !k->generated)
      fprintf(o->out, "// kernel %s: not generated, runs on %s%s%s\n", k->kernel, k->runs_as, k->why[0] ? ": " : "",
              k->why);
  }
}

void explain_show_kernel_resources(const ExplainOut *o, const KernelReport *r) {
  JsonWriter w;
  if (o->json) {
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", r->stage);
    json_kv_str(&w, "arch", r->arch);
    json_kv_str(&w, "device", r->device);
    json_key(&w, "kernels");
    json_array_begin(&w);
  } else {
    fprintf(o->out, "stage %d: %d kernel%s compiled for %s by NVRTC %s; occupancy on %s\n", r->stage, r->nkernels,
            r->nkernels == 1 ? "" : "s", r->arch, r->compiler, r->device);
    fprintf(o->out, "  %-28s %-9s %5s %6s %11s %6s %6s %5s  %s\n", "kernel", "runs as", "parts", "regs", "spill st/ld",
            "smem", "stack", "block", "occupancy");
  }
  for (int q = 0; q < r->nrows; q++) {
    const KernelRecord *k = &r->rows[q];
    if (!k->compiled) {
      if (o->json) {
        json_object_begin(&w);
        json_kv_str(&w, "kernel", k->kernel);
        json_kv_str(&w, "runs_as", k->runs_as);
        if (k->why[0]) json_kv_str(&w, "why", k->why);
        json_object_end(&w);
      } else {
        fprintf(o->out, "  %-28s %-9s %5s %6s %11s %6s %6s %5s  %s\n", k->kernel, k->runs_as, "-", "-", "-", "-", "-",
                "-", k->host ? "(not generated)" : "(library)");
      }
      continue;
    }
    if (o->json) {
      json_object_begin(&w);
      json_kv_str(&w, "kernel", k->kernel);
      json_kv_int(&w, "part", k->part);
      json_kv_str(&w, "runs_as", k->rng ? "rng" : "generated");
      json_kv_str(&w, "symbol", k->symbol);
      json_kv_int(&w, "registers", k->registers);
      json_kv_int(&w, "spill_stores", k->spill_stores);
      json_kv_int(&w, "spill_loads", k->spill_loads);
      json_kv_int(&w, "shared_bytes", k->shared_bytes);
      json_kv_int(&w, "stack_bytes", k->stack_bytes);
      json_kv_int(&w, "block", k->block);
      json_kv_double(&w, "occupancy", k->occupancy);
      json_kv_str(&w, "occupancy_limit", k->occupancy_limit);
      json_object_end(&w);
      continue;
    }
    char spill[32], name[64];
    snprintf(spill, sizeof spill, "%d/%d", k->spill_stores, k->spill_loads);
    if (k->nparts > 1) snprintf(name, sizeof name, "%s/%d", k->kernel, k->part);
    else snprintf(name, sizeof name, "%s", k->kernel);
    fprintf(o->out, "  %-28s %-9s %5d %6d %11s %6d %6d %5d  %3.0f%% (%s)%s\n", name, k->rng ? "rng" : "generated",
            k->nparts, k->registers, spill, k->shared_bytes, k->stack_bytes, k->block, k->occupancy * 100,
            k->occupancy_limit, k->rng ? " cuRAND Philox4_32_10" : "");
  }
  if (o->json) {
    json_array_end(&w);
    json_object_end(&w);
  }
}

void explain_show_plan_line(const ExplainOut *o, ExplainEngine *e, int stage) {
  FxError perr = {0};
  const KernelPlan *plan = explain_engine_plan(e, stage, &perr);
  if (!plan) return;
  char pb[32], pt[32];
  fx_format_bytes(pb, sizeof pb, (double)(plan->bytes_read + plan->bytes_written), FX_BYTES_RUN);
  fx_format_time(pt, sizeof pt, plan->est_us * 1e3, FX_TIME_RUN);
  fprintf(o->out, "kernel plan: %lld launches%s, %s moved, estimated %s on %s\n", (long long)plan->launches,
          plan->trip_counts_known ? "" : " (some loop trip counts unknown)", pb, pt, e->device.name);
}
