/* format.c — the one place that prints the engine's answers, as text or JSON: stages and moves,
 * the pipeline, passes, diffs, why, decisions, kernels and stats (see format.h). The text is what
 * the shell prints; the JSON goes through the one writer (json.h). */
#include "format.h"

#include <string.h>

#include "../compiler/ir/ir.h"
#include "../compiler/fusion/fusion.h"
#include "../compiler/hlo/hlo.h"
#include "xla_dump.h"

static void fmt_time(double us, char *buf, size_t n) {
  if (us < 1000) snprintf(buf, n, "%.2f us", us);
  else if (us < 1e6) snprintf(buf, n, "%.2f ms", us / 1e3);
  else snprintf(buf, n, "%.2f s", us / 1e6);
}

/* A record as JSON, its decision number first. */
static void json_record(ExplainEngine *e, JsonWriter *w, const ExplainRecord *r) {
  explain_record_json(w, r, explain_engine_number(e, r));
}

/* One sentence on its own line, wrapped between words on a terminal (continuations indented). */
static void out_line(const ExplainOut *o, const char *text) {
  explain_print_wrapped(o->out, text, o->width, 4);
  fputc('\n', o->out);
}

/* A record as text, its decision number first ("#12  stage 4  instruction-fusion ..."). */
static void print_record(const ExplainOut *o, ExplainEngine *e, const ExplainRecord *r) {
  fprintf(o->out, "#%d  ", explain_engine_number(e, r));
  /* On a terminal the sentences wrap between words at its width, not mid-word. */
  explain_print_record_width(o->out, r, o->width);
}

/* "stage 3  dce: 5 removed → 12 kernels"; in JSON an object, written into `into` when given. */
bool explain_show_move(const ExplainOut *o, ExplainEngine *e, int stage, JsonWriter *into, FxError *err) {
  const KernelPlan *p = explain_engine_kernels(e, stage, err);
  if (!p) return false;
  const char *pass = explain_engine_stage_pass(e, stage);
  char what[256];
  explain_engine_stage_summary(e, stage, what, sizeof what);
  if (o->json) {
    JsonWriter own;
    JsonWriter *w = into;
    if (!w) {
      json_init(&own, o->out);
      w = &own;
    }
    json_object_begin(w);
    json_kv_int(w, "stage", stage);
    json_kv_str(w, "pass", pass);
    json_kv_bool(w, "changed", e->stages[stage].changed);
    json_kv_str(w, "summary", what);
    json_kv_int(w, "kernels", p->ncompute);
    json_object_end(w);
  } else {
    fprintf(o->out, "stage %d  %s: %s \xe2\x86\x92 %d kernel%s\n", stage, pass, what, p->ncompute,
            p->ncompute == 1 ? "" : "s");
  }
  return true;
}

static void print_decisions(const ExplainOut *o, ExplainEngine *e, JsonWriter *w, const ExplainRecord **res, int n) {
  if (o->json) {
    json_key(w, "decisions");
    json_array_begin(w);
    for (int k = 0; k < n; k++) json_record(e, w, res[k]);
    json_array_end(w);
  } else {
    for (int k = 0; k < n; k++) print_record(o, e, res[k]);
  }
}

/* Text: each group of identical decisions (clones of one instruction, the same pair re-judged)
 * once, with the count and the numbers of the others. */
static void print_grouped(const ExplainOut *o, ExplainEngine *e, const ExplainRecord **res, int n) {
  int *group = n ? fx_malloc(sizeof(int) * (size_t)n) : NULL;
  if (!group) {
    for (int k = 0; k < n; k++) print_record(o, e, res[k]);
    return;
  }
  explain_group_records(res, n, group);
  for (int k = 0; k < n; k++) {
    if (group[k] != k) continue;
    print_record(o, e, res[k]);
    int same = 0;
    for (int j = k + 1; j < n; j++) same += group[j] == k;
    if (!same) continue;
    fprintf(o->out, "    (and %d identical decision%s, for clones or re-runs:", same, same == 1 ? "" : "s");
    int shown = 0;
    for (int j = k + 1; j < n && shown < 12; j++)
      if (group[j] == k) fprintf(o->out, " #%d", explain_engine_number(e, res[j])), shown++;
    fprintf(o->out, "%s)\n", same > shown ? " ..." : "");
  }
  fx_free(group);
}

/* One decision on a line: "#21 (stage 12 multi_output_fusion sibling s -> fusion.2, rejected [cycle])". */
static void print_record_brief(const ExplainOut *o, ExplainEngine *e, const ExplainRecord *r) {
  fprintf(o->out, "#%d (stage %d %s %s", explain_engine_number(e, r), r->stage, r->pass, r->action);
  if (r->producer && r->consumer) fprintf(o->out, " %s -> %s", r->producer, r->consumer);
  else if (r->producer || r->consumer) fprintf(o->out, " %s", r->producer ? r->producer : r->consumer);
  fprintf(o->out, ", %s", r->accepted ? "accepted" : "rejected");
  if (r->reason) fprintf(o->out, " [%s]", r->reason);
  fputc(')', o->out);
}

/* The boundary, its decision (or why there is none), and the other decisions between its two
 * kernels in one line each. */
static void print_boundary(const ExplainOut *o, ExplainEngine *e, const ExplainStageView *v, const ExplainBoundary *bd) {
  char bytes[32];
  fx_format_bytes(bytes, sizeof bytes, (double)bd->bytes, FX_BYTES_PLAN);
  char lf[400], lt[400], nf[200], nt[200];
  explain_kernel_label(bd->from, lf, sizeof lf);
  explain_kernel_label(bd->to, lt, sizeof lt);
  /* The names the user knows inside each kernel ("input fusion: mx"). */
  char labf[600], labt[600];
  const char *ln = explain_view_kernel_names(v, bd->from, nf, sizeof nf);
  snprintf(labf, sizeof labf, "%s%s%s", explain_kernel_label(bd->from, lf, sizeof lf), ln[0] ? ": " : "", ln);
  ln = explain_view_kernel_names(v, bd->to, nt, sizeof nt);
  snprintf(labt, sizeof labt, "%s%s%s", explain_kernel_label(bd->to, lt, sizeof lt), ln[0] ? ": " : "", ln);
  char line[2400];
  size_t len;
  if (bd->bytes > 0)
    len = (size_t)snprintf(line, sizeof line, "boundary %s (%s) -> %s (%s), %s written to memory and read back: ",
                           bd->from->name, labf, bd->to->name, labt, bytes);
  else len = (size_t)snprintf(line, sizeof line, "between %s (%s) and %s (%s): ", bd->from->name, labf, bd->to->name, labt);
  if (len >= sizeof line) len = sizeof line - 1;
  if (!bd->decision) {
    snprintf(line + len, sizeof line - len, "no decision: %s", bd->none);
    out_line(o, line);
    return;
  }
  len += (size_t)snprintf(line + len, sizeof line - len, "kept apart by decision #%d", explain_engine_number(e, bd->decision));
  if (bd->same && len < sizeof line)
  {
    char times[32];
    if (bd->same == 1) snprintf(times, sizeof times, "once");
    else snprintf(times, sizeof times, "%d times", bd->same);
    snprintf(line + len, sizeof line - len, " (made again %s by later runs or for clones, last as #%d at stage %d)",
             times, explain_engine_number(e, bd->latest), bd->latest->stage);
  }
  out_line(o, line);
  print_record(o, e, bd->decision);
  int others = bd->ndecisions - 1 - bd->same;
  if (others <= 0) return;
  /* The other kinds of decision between the two kernels, one line each (one per kind). */
  ExplainFilter f;
  explain_filter_init(&f);
  f.max_stage = e->cur;
  const ExplainRecord **all;
  int n = explain_query(e->log, &f, &all);
  const ExplainRecord *seen[4];
  int shown = 0;
  for (int k = n - 1; k >= 0 && shown < 4; k--) {
    const ExplainRecord *r = all[k];
    if (r == bd->decision || !explain_view_between(v, r, bd->from, bd->to)) continue;
    bool dup = explain_records_identical(r, bd->decision);
    for (int j = 0; j < shown && !dup; j++) dup = explain_records_identical(r, seen[j]);
    if (dup) continue;
    fputs(shown ? "\n                       " : "    also between them: ", o->out);
    print_record_brief(o, e, r);
    seen[shown++] = r;
  }
  if (shown) fputc('\n', o->out);
  fx_free(all);
}

static void json_boundary(ExplainEngine *e, JsonWriter *w, const ExplainBoundary *bd) {
  json_object_begin(w);
  json_kv_str(w, "from", bd->from->name);
  json_kv_str(w, "to", bd->to->name);
  json_kv_int(w, "bytes", bd->bytes);
  if (bd->decision) {
    json_kv_int(w, "decision", explain_engine_number(e, bd->decision));
    if (bd->decision->reason) json_kv_str(w, "reason", bd->decision->reason);
    else json_kv_null(w, "reason");
    json_kv_int(w, "identical", bd->same);
    json_kv_null(w, "none");
  } else {
    json_kv_null(w, "decision");
    json_kv_null(w, "reason");
    json_kv_int(w, "identical", 0);
    json_kv_str(w, "none", bd->none);
  }
  json_kv_int(w, "decisions", bd->ndecisions);
  json_object_end(w);
}

static void shape_list(const IrShape *sh, char *buf, size_t n) {
  if (sh->type == IR_TUPLE) {
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < sh->ntuple && len < n; k++) {
      if (k) len += (size_t)snprintf(buf + len, n - len, ", ");
      if (len < n) len += (size_t)ir_shape_format(&sh->tuple[k], true, buf + len, n - len);
    }
  } else {
    ir_shape_format(sh, true, buf, n);
  }
}

/* "fusion.3" or "fusion.3.1" (element 1 of a multi-output kernel's tuple). */
static void buffer_name(const PlanBuffer *bf, char *buf, size_t n) {
  if (bf->output >= 0) snprintf(buf, n, "%s.%d", bf->producer->name, bf->output);
  else snprintf(buf, n, "%s", bf->producer->name);
}

/* Where buffer bf's live range ends: its last reader, or the caller for a live-out buffer. */
static const char *buffer_end(const PlanBuffer *bf) {
  if (bf->live_out) return "(live-out)";
  if (bf->last_use == bf->def) return "(never read)";
  if (bf->last_use >= bf->comp->ninstrs) return "(end)";
  return bf->comp->instrs[bf->last_use]->name;
}

/* The buffers that cross kernel boundaries, their live ranges and the memory each takes. */
static void print_buffers(const ExplainOut *o, const KernelPlan *p) {
  char b1[32], b2[32], nm[256], prev[256];
  fprintf(o->out, "%-28s %10s  %-22s %-22s %5s  %s\n", "buffer", "size", "computation", "last read by", "slot",
          "memory");
  for (int q = 0; q < p->nbuffers; q++) {
    const PlanBuffer *bf = &p->buffers[q];
    buffer_name(bf, nm, sizeof nm);
    fx_format_bytes(b1, sizeof b1, (double)bf->bytes, FX_BYTES_PLAN);
    fprintf(o->out, "%-28s %10s  %-22s %-22s %5d  ", nm, b1, bf->comp->name, buffer_end(bf), bf->slot);
    if (bf->live_out && bf->slot2 >= 0) {
      fprintf(o->out, "a loop's result: alternates with slot %d\n", bf->slot2);
    } else if (bf->live_out) {
      fputs("fresh (handed to the caller)\n", o->out);
    } else if (bf->reuses >= 0) {
      buffer_name(&p->buffers[bf->reuses], prev, sizeof prev);
      fx_format_bytes(b2, sizeof b2, (double)p->slot_bytes[bf->slot], FX_BYTES_PLAN);
      fprintf(o->out, "reuses %s's %s\n", prev, b2);
    } else {
      fputs("new slot\n", o->out);
    }
  }
}

static void print_buffer_summary(const ExplainOut *o, const KernelPlan *p) {
  char b1[32], b2[32];
  fx_format_bytes(b1, sizeof b1, (double)p->buffer_bytes, FX_BYTES_PLAN);
  fx_format_bytes(b2, sizeof b2, (double)p->slot_total, FX_BYTES_PLAN);
  int reused = 0;
  for (int q = 0; q < p->nbuffers; q++) reused += p->buffers[q].reuses >= 0;
  fprintf(o->out, "buffers: %d cross kernel boundaries, %d reuse dead memory; peak %s without reuse, %s with reuse "
                  "(%d slot%s)\n",
          p->nbuffers, reused, b1, b2, p->nslots, p->nslots == 1 ? "" : "s");
}

static void json_diff_list(JsonWriter *w, const ExplainDiff *d, ExplainDiffKind kind) {
  json_key(w, explain_diff_kind_name(kind));
  json_array_begin(w);
  for (int k = 0; k < d->n; k++) {
    const ExplainDiffEntry *e = &d->entries[k];
    if (e->kind != kind) continue;
    json_object_begin(w);
    json_kv_str(w, "name", e->name);
    json_kv_str(w, "op", e->op);
    json_kv_str(w, "computation", e->comp);
    if (kind == DIFF_FUSED || kind == DIFF_REMOVED) json_kv_str(w, "into", e->into);
    if (kind == DIFF_ADDED || kind == DIFF_REWRITTEN) json_kv_str(w, "detail", e->detail);
    json_object_end(w);
  }
  json_array_end(w);
}

void explain_show_pipeline(const ExplainOut *o, ExplainEngine *e) {
  const Pipeline *pl = explain_engine_pipeline(e);
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "pipeline", pl->name);
    json_kv_str(&w, "description", pl->description);
    json_kv_int(&w, "stage", e->nstages > 0 ? e->cur : 0);
    json_key(&w, "passes");
    json_array_begin(&w);
    for (int k = 0; k < pl->npasses; k++) json_str(&w, pl->passes[k]->name);
    json_array_end(&w);
    json_key(&w, "pipelines");
    json_array_begin(&w);
    for (int k = 0; k < pipeline_count(); k++) json_str(&w, pipeline_at(k)->name);
    json_array_end(&w);
    json_object_end(&w);
    return;
  }
  fprintf(o->out, "pipeline %s: %s\n", pl->name, pl->description);
  int cur = e->nstages > 0 ? e->cur : -1;
  fprintf(o->out, "  %s 0  input\n", cur == 0 ? ">" : " ");
  for (int k = 1; k <= pl->npasses; k++) {
    const Pass *p = pl->passes[k - 1];
    fprintf(o->out, "  %s %-2d %-24s %s%s\n", cur == k ? ">" : " ", k, p->name,
            k < e->nstages ? "run" : "-", pass_settings_is_disabled(&e->settings, p->name) ? " (switched off)" : "");
  }
  fputs("pipelines:", o->out);
  for (int k = 0; k < pipeline_count(); k++) fprintf(o->out, " %s", pipeline_at(k)->name);
  fputc('\n', o->out);
}

bool explain_show_stage(const ExplainOut *o, ExplainEngine *e, FxError *err) {
  const Pipeline *pl = explain_engine_pipeline(e);
  const KernelPlan *p = explain_engine_plan(e, e->cur, err);
  if (!p) return false;
  const char *pass = explain_engine_stage_pass(e, e->cur);
  const char *next = e->cur < pl->npasses ? pl->passes[e->cur]->name : NULL;
  int ninstr = ir_module_instr_count(e->stages[e->cur].module);
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", e->cur);
    json_kv_int(&w, "last", pl->npasses);
    json_kv_str(&w, "pipeline", pl->name);
    json_kv_str(&w, "pass", pass);
    json_kv_bool(&w, "changed", e->stages[e->cur].changed);
    json_kv_int(&w, "instructions", ninstr);
    json_kv_int(&w, "kernels", p->ncompute);
    json_kv_str(&w, "next", next);
    json_object_end(&w);
  } else {
    fprintf(o->out, "stage %d of %d (%s pipeline): %s%s; %d instructions, %d kernels\n", e->cur, pl->npasses,
            pl->name, e->cur == 0 ? "the input" : "after ", e->cur == 0 ? "" : pass, ninstr, p->ncompute);
    if (next) fprintf(o->out, "next: %s\n", next);
    else fputs("the pipeline is finished\n", o->out);
  }
  return true;
}

bool explain_show_passes(const ExplainOut *o, ExplainEngine *e, bool only_changed, FxError *err) {
  const Pipeline *pl = explain_engine_pipeline(e);
  JsonWriter w;
  if (o->json) {
    json_init(&w, o->out);
    json_array_begin(&w);
  } else {
    fprintf(o->out, "pipeline %s on %s\n", pl->name, e->device.name);
    fprintf(o->out, "    %-5s %-24s %-7s %12s %8s %10s %11s %12s\n", "stage", "pass", "changed", "instructions",
            "kernels", "launches", "bytes", "est. time");
  }
  bool ok = true;
  int hidden_same = 0, hidden_not_run = 0;
  for (int k = 0; k <= pl->npasses && ok; k++) {
    bool run = k < e->nstages;
    bool changed = run && e->stages[k].changed;
    /* --changed: the stages that changed the module (and the input they started from); a stage
     * not run yet has changed nothing so far. */
    if (only_changed && k > 0 && !changed) {
      if (run) hidden_same++;
      else hidden_not_run++;
      continue;
    }
    const char *pass = k == 0 ? "input" : pl->passes[k - 1]->name;
    const KernelPlan *p = NULL;
    if (run) {
      p = explain_engine_kernels(e, k, err);
      if (!p) {
        ok = false;
        break;
      }
    }
    int ninstr = run ? ir_module_instr_count(e->stages[k].module) : 0;
    if (o->json) {
      json_object_begin(&w);
      json_kv_int(&w, "stage", k);
      json_kv_str(&w, "pass", pass);
      if (run) {
        json_kv_bool(&w, "changed", changed);
        json_kv_int(&w, "instructions", ninstr);
        json_kv_int(&w, "kernels", p->ncompute);
        json_kv_int(&w, "bytes", (long long)(p->bytes_read + p->bytes_written));
        json_kv_double(&w, "est_us", p->est_us);
      } else {
        json_kv_null(&w, "changed");
        json_kv_null(&w, "instructions");
        json_kv_null(&w, "kernels");
        json_kv_null(&w, "bytes");
        json_kv_null(&w, "est_us");
      }
      json_object_end(&w);
    } else if (run) {
      char b[32], t[32];
      fx_format_bytes(b, sizeof b, (double)(p->bytes_read + p->bytes_written), FX_BYTES_PLAN);
      fmt_time(p->est_us, t, sizeof t);
      fprintf(o->out, "  %s %-5d %-24s %-7s %12d %8d %10lld %11s %12s\n", k == e->cur ? ">" : " ", k, pass,
              k == 0 ? "" : (changed ? "yes" : "no"), ninstr, p->ncompute, (long long)p->launches, b, t);
    } else {
      fprintf(o->out, "    %-5d %-24s %-7s\n", k, pass, "not run");
    }
  }
  if (o->json) json_array_end(&w);
  else if (ok && only_changed && (hidden_same || hidden_not_run))
    fprintf(o->out, "    (hidden: %d stage%s that changed nothing, %d not run yet)\n", hidden_same, hidden_same == 1 ? "" : "s",
            hidden_not_run);
  return ok;
}

bool explain_show_diff(const ExplainOut *o, ExplainEngine *e, int a, int b, FxError *err) {
  int lo = a < b ? a : b, hi = a < b ? b : a;
  ExplainDiff *d = explain_diff(e->stages[a].module, e->stages[b].module, e->log, lo, hi, err);
  if (!d) return false;
  const char *pa = a == 0 ? "input" : e->stages[a].pass, *pb = b == 0 ? "input" : e->stages[b].pass;
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_int(&w, "from", a);
    json_kv_int(&w, "to", b);
    json_kv_int(&w, "instructions_from", d->instrs_a);
    json_kv_int(&w, "instructions_to", d->instrs_b);
    json_diff_list(&w, d, DIFF_ADDED);
    json_diff_list(&w, d, DIFF_REMOVED);
    json_diff_list(&w, d, DIFF_REWRITTEN);
    json_diff_list(&w, d, DIFF_FUSED);
    json_object_end(&w);
  } else {
    fprintf(o->out, "diff stage %d (%s) -> stage %d (%s): %d -> %d instructions", a, pa, b, pb, d->instrs_a,
            d->instrs_b);
    if (d->n == 0) fputs("; no change\n", o->out);
    else {
      const char *sep = "; ";
      static const ExplainDiffKind order[] = {DIFF_FUSED, DIFF_ADDED, DIFF_REMOVED, DIFF_REWRITTEN};
      for (int k = 0; k < 4; k++)
        if (d->count[order[k]]) {
          fprintf(o->out, "%s%d %s", sep, d->count[order[k]], explain_diff_kind_name(order[k]));
          sep = ", ";
        }
      fputc('\n', o->out);
    }
    const int limit = 200;
    int shown = 0;
    for (int k = 0; k < d->n && shown < limit; k++, shown++) {
      const ExplainDiffEntry *e = &d->entries[k];
      fprintf(o->out, "  %-10s %-28s ", explain_diff_kind_name(e->kind), e->name);
      switch (e->kind) {
      case DIFF_FUSED: fprintf(o->out, "into %s\n", e->into); break;
      case DIFF_REMOVED:
        if (e->into) fprintf(o->out, "(%s in %s) replaced by %s\n", e->op, e->comp, e->into);
        else fprintf(o->out, "(%s in %s)\n", e->op, e->comp);
        break;
      case DIFF_ADDED:
        fprintf(o->out, "(%s in %s)%s%s\n", e->op, e->comp, e->detail ? " " : "", e->detail ? e->detail : "");
        break;
      case DIFF_REWRITTEN: fprintf(o->out, "%s\n", e->detail ? e->detail : ""); break;
      }
    }
    if (d->n > limit) fprintf(o->out, "  ... and %d more (diff --json lists them all)\n", d->n - limit);
  }
  explain_diff_free(d);
  return true;
}

bool explain_show_decisions(const ExplainOut *o, ExplainEngine *e, const ExplainFilter *filter, FxError *err) {
  const ExplainRecord **res;
  int n = explain_query(e->log, filter, &res);
  if (n < 0) return fx_error_set(err, NULL, 0, 0, "out of memory");
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_array_begin(&w);
    for (int k = 0; k < n; k++) json_record(e, &w, res[k]);
    json_array_end(&w);
  } else {
    for (int k = 0; k < n; k++) print_record(o, e, res[k]);
    fprintf(o->out, "%d decision%s%s\n", n, n == 1 ? "" : "s", e->nstages > 1 ? "" : " (no pass has run yet: step first)");
  }
  fx_free(res);
  return true;
}

bool explain_show_kernels(const ExplainOut *o, ExplainEngine *e, bool buffers, FxError *err) {
  const KernelPlan *p = explain_engine_plan(e, e->cur, err);
  if (!p) return false;
  const char *pass = explain_engine_stage_pass(e, e->cur);
  char buf[1024];
  if (buffers && o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", e->cur);
    json_key(&w, "buffers");
    json_array_begin(&w);
    for (int q = 0; q < p->nbuffers; q++) {
      const PlanBuffer *bf = &p->buffers[q];
      json_object_begin(&w);
      buffer_name(bf, buf, sizeof buf);
      json_kv_str(&w, "name", buf);
      json_kv_str(&w, "computation", bf->comp->name);
      json_kv_int(&w, "bytes", (long long)bf->bytes);
      json_kv_str(&w, "last_read_by", bf->live_out || bf->last_use == bf->def || bf->last_use >= bf->comp->ninstrs
                                          ? NULL
                                          : bf->comp->instrs[bf->last_use]->name);
      json_kv_bool(&w, "live_out", bf->live_out);
      json_kv_int(&w, "slot", bf->slot);
      if (bf->slot2 >= 0) json_kv_int(&w, "alternates_with_slot", bf->slot2);
      else json_kv_null(&w, "alternates_with_slot");
      if (bf->reuses >= 0) {
        buffer_name(&p->buffers[bf->reuses], buf, sizeof buf);
        json_kv_str(&w, "reuses", buf);
      } else {
        json_kv_null(&w, "reuses");
      }
      json_object_end(&w);
    }
    json_array_end(&w);
    json_kv_int(&w, "buffer_bytes", (long long)p->buffer_bytes);
    json_kv_int(&w, "buffer_bytes_reused", (long long)p->slot_total);
    json_kv_int(&w, "slots", p->nslots);
    json_object_end(&w);
    return true;
  }
  if (buffers) {
    fprintf(o->out, "stage %d (%s): buffers that cross kernel boundaries, in order\n", e->cur, pass);
    print_buffers(o, p);
    print_buffer_summary(o, p);
    return true;
  }
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", e->cur);
    json_kv_str(&w, "device", e->device.name);
    json_kv_int(&w, "launches", (long long)p->launches);
    json_kv_int(&w, "bytes_read", (long long)p->bytes_read);
    json_kv_int(&w, "bytes_written", (long long)p->bytes_written);
    json_kv_double(&w, "est_us", p->est_us);
    json_kv_bool(&w, "trip_counts_known", p->trip_counts_known);
    json_key(&w, "kernels");
    json_array_begin(&w);
    for (int k = 0; k < p->nkernels; k++) {
      const PlanKernel *kn = &p->kernels[k];
      json_object_begin(&w);
      json_kv_str(&w, "name", kn->name);
      json_kv_str(&w, "kind", plan_kernel_kind_name(kn->kind));
      json_kv_str(&w, "computation", kn->comp ? kn->comp->name : NULL);
      json_kv_int(&w, "launches", (long long)kn->launches);
      json_key(&w, "members");
      json_array_begin(&w);
      for (int j = 0; j < kn->nmembers; j++) json_str(&w, kn->members[j]->name);
      json_array_end(&w);
      json_key(&w, "inputs");
      json_array_begin(&w);
      for (int j = 0; j < kn->ninputs; j++) json_str(&w, kn->inputs[j]->name);
      json_array_end(&w);
      json_key(&w, "outputs");
      json_array_begin(&w);
      if (kn->kind != KERNEL_CONTROL) {
        if (kn->instr->shape.type == IR_TUPLE) {
          for (int j = 0; j < kn->instr->shape.ntuple; j++) {
            ir_shape_format(&kn->instr->shape.tuple[j], true, buf, sizeof buf);
            json_str(&w, buf);
          }
        } else {
          ir_shape_format(&kn->instr->shape, true, buf, sizeof buf);
          json_str(&w, buf);
        }
      }
      json_array_end(&w);
      json_kv_int(&w, "bytes_read", (long long)kn->bytes_read);
      json_kv_int(&w, "bytes_written", (long long)kn->bytes_written);
      json_kv_double(&w, "flops", kn->flops);
      json_kv_double(&w, "est_us", kn->est_us);
      if (kn->kind == KERNEL_CONTROL && kn->instr->op == IR_OP_WHILE) {
        /* how XLA:GPU runs the loop: a for loop when the trip count is known */
        if (kn->for_loop) json_kv_int(&w, "trip_count", (long long)kn->trip_count);
        else json_kv_null(&w, "trip_count");
        json_kv_bool(&w, "for_loop", kn->for_loop);
        explain_loop_control(kn, buf, sizeof buf);
        json_kv_str(&w, "loop", buf);
      }
      json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    return true;
  }
  char b1[32], b2[32], t[32];
  fx_format_bytes(b1, sizeof b1, (double)p->bytes_read, FX_BYTES_PLAN);
  fx_format_bytes(b2, sizeof b2, (double)p->bytes_written, FX_BYTES_PLAN);
  fmt_time(p->est_us, t, sizeof t);
  char ctl[48] = "";
  if (p->nkernels > p->ncompute)
    snprintf(ctl, sizeof ctl, " (+%d control, launching nothing)", p->nkernels - p->ncompute);
  fprintf(o->out, "stage %d (%s) on %s: %d kernel%s%s, %lld launch%s per execution%s; %s read, %s written, %s\n",
          e->cur, pass, e->device.name, p->ncompute, p->ncompute == 1 ? "" : "s", ctl, (long long)p->launches,
          p->launches == 1 ? "" : "es", p->trip_counts_known ? "" : " (some trip counts unknown: counted once)", b1,
          b2, t);
  for (int k = 0; k < p->nkernels; k++) {
    const PlanKernel *kn = &p->kernels[k];
    fprintf(o->out, "%3d  %-28s %-8s x%-8lld in %s\n", k + 1, kn->name, plan_kernel_kind_name(kn->kind),
            (long long)kn->launches, kn->comp ? kn->comp->name : "?");
    if (kn->kind == KERNEL_CONTROL) {
      if (kn->instr->op == IR_OP_WHILE) {
        explain_loop_control(kn, buf, sizeof buf);
        fprintf(o->out, "       %s\n", buf);
      } else {
        fputs("       branch control: the branch index is read back to the host\n", o->out);
      }
      continue;
    }
    if (kn->nmembers > 1 || kn->instr->op == IR_OP_FUSION) {
      fputs("       members:", o->out);
      for (int j = 0; j < kn->nmembers && j < 12; j++) fprintf(o->out, "%s %s", j ? "," : "", kn->members[j]->name);
      if (kn->nmembers > 12) fprintf(o->out, ", ... (%d in all)", kn->nmembers);
      fputc('\n', o->out);
    }
    fputs("       inputs: ", o->out);
    if (kn->ninputs == 0) fputs(" none", o->out);
    for (int j = 0; j < kn->ninputs && j < 12; j++) fprintf(o->out, "%s %s", j ? "," : "", kn->inputs[j]->name);
    if (kn->ninputs > 12) fprintf(o->out, ", ... (%d in all)", kn->ninputs);
    shape_list(&kn->instr->shape, buf, sizeof buf);
    fx_format_bytes(b1, sizeof b1, (double)kn->bytes_read, FX_BYTES_PLAN);
    fx_format_bytes(b2, sizeof b2, (double)kn->bytes_written, FX_BYTES_PLAN);
    fmt_time(kn->est_us, t, sizeof t);
    fprintf(o->out, "\n       outputs: %s\n       bytes: %s read, %s written; %s per launch\n", buf, b1, b2, t);
  }
  return true;
}

bool explain_show_stats(const ExplainOut *o, ExplainEngine *e, FxError *err) {
  IrModule *m = e->stages[e->cur].module;
  const KernelPlan *p = explain_engine_plan(e, e->cur, err);
  if (!p) return false;
  int distinct;
  size_t all_snaps;
  size_t mem = explain_engine_snapshot_bytes(e, &distinct, &all_snaps);
  size_t log_mem = explain_log_bytes(e->log);
  const char *pass = explain_engine_stage_pass(e, e->cur);
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", e->cur);
    json_kv_str(&w, "pass", pass);
    json_kv_str(&w, "device", e->device.name);
    json_kv_int(&w, "instructions", ir_module_instr_count(m));
    json_kv_int(&w, "computations", m->ncomps);
    json_kv_int(&w, "kernels", p->ncompute);
    json_kv_int(&w, "launches", (long long)p->launches);
    json_kv_bool(&w, "trip_counts_known", p->trip_counts_known);
    json_kv_int(&w, "bytes_read", (long long)p->bytes_read);
    json_kv_int(&w, "bytes_written", (long long)p->bytes_written);
    json_kv_double(&w, "est_us", p->est_us);
    json_kv_int(&w, "stages", e->nstages);
    json_kv_int(&w, "snapshots", distinct);
    json_kv_int(&w, "snapshot_bytes", (long long)mem);
    json_kv_int(&w, "index_bytes", (long long)(all_snaps - mem));
    json_kv_int(&w, "log_bytes", (long long)log_mem);
    json_kv_int(&w, "decisions", explain_log_total(e->log));
    json_kv_int(&w, "stage_bytes", (long long)(all_snaps + log_mem));
    json_object_end(&w);
  } else {
    char b1[32], b2[32], b3[32], t[32];
    fx_format_bytes(b1, sizeof b1, (double)p->bytes_read, FX_BYTES_PLAN);
    fx_format_bytes(b2, sizeof b2, (double)p->bytes_written, FX_BYTES_PLAN);
    fx_format_bytes(b3, sizeof b3, (double)mem, FX_BYTES_PLAN);
    fmt_time(p->est_us, t, sizeof t);
    fprintf(o->out, "stage %d (%s) on %s\n", e->cur, pass, e->device.name);
    fprintf(o->out, "  instructions    %d in %d computations\n", ir_module_instr_count(m), m->ncomps);
    fprintf(o->out, "  kernels         %d; %lld launches per execution (loops multiplied out%s)\n", p->ncompute,
            (long long)p->launches, p->trip_counts_known ? "" : "; some trip counts unknown, counted once");
    fprintf(o->out, "  bytes           %s read, %s written per execution\n", b1, b2);
    fprintf(o->out, "  estimated time  %s per execution\n", t);
    fprintf(o->out, "  snapshots       %d stage%s in %d snapshot%s, %s\n", e->nstages, e->nstages == 1 ? "" : "s",
            distinct, distinct == 1 ? "" : "s", b3);
    if (distinct > 1) {
      /* What the stages hold in all, once a pass has made a snapshot of its own. */
      char b4[32], b5[32], b6[32];
      fx_format_bytes(b4, sizeof b4, (double)(all_snaps + log_mem), FX_BYTES_PLAN);
      fx_format_bytes(b5, sizeof b5, (double)(all_snaps - mem), FX_BYTES_PLAN);
      fx_format_bytes(b6, sizeof b6, (double)log_mem, FX_BYTES_PLAN);
      fprintf(o->out, "  stage memory    %s: snapshots %s, name indexes %s, decision log %s (%d decisions)\n", b4, b3,
              b5, b6, explain_log_total(e->log));
    }
  }
  return true;
}

bool explain_show_why_one(const ExplainOut *o, ExplainEngine *e, const char *name, int *unknown, FxError *err) {
  ExplainWhyOne q;
  if (!explain_engine_why_one(e, name, &q, unknown, err)) {
    explain_why_one_free(&q);
    return false;
  }
  const IrInstr *i = q.instr;
  const PlanKernel *kn = q.kernel;
  const ExplainRecord **res = q.decisions;
  int n = q.n, at = q.last_seen, later = q.first_later;
  const char *pass = explain_engine_stage_pass(e, e->cur);
  char shape[256] = "";
  if (i) ir_shape_format(&i->shape, true, shape, sizeof shape);
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "name", name);
    json_kv_int(&w, "stage", e->cur);
    json_kv_bool(&w, "present", i != NULL);
    if (i) {
      json_kv_str(&w, "op", ir_op_name(i->op));
      json_kv_str(&w, "shape", shape);
      json_kv_str(&w, "computation", i->parent->name);
      json_key(&w, "kernel");
      if (kn) {
        json_object_begin(&w);
        json_kv_str(&w, "name", kn->name);
        json_kv_str(&w, "kind", plan_kernel_kind_name(kn->kind));
        json_kv_int(&w, "members", kn->nmembers);
        json_object_end(&w);
      } else {
        json_null(&w);
      }
    } else {
      if (at >= 0 || later >= 0) json_kv_int(&w, "last_seen_stage", at >= 0 ? at : later);
      else json_kv_null(&w, "last_seen_stage");
      /* what the passes that removed it made of it, at this stage */
      if (q.became) json_kv_str(&w, "became", q.became->name);
      else json_kv_null(&w, "became");
    }
    print_decisions(o, e, &w, res, n);
    json_object_end(&w);
  } else if (i) {
    /* A loaded XLA module: the name the user's JAX program gave it, too. */
    char jax[200];
    xla_user_name(i, jax, sizeof jax);
    if (jax[0] && strcmp(jax, name) != 0)
      fprintf(o->out, "%s (JAX: %s): %s %s in %s\n", name, jax, ir_op_name(i->op), shape, i->parent->name);
    else
      fprintf(o->out, "%s: %s %s in %s\n", name, ir_op_name(i->op), shape, i->parent->name);
    char lab[400];
    if (kn && kn->instr == i && kn->nmembers <= 1 && kn->kind == KERNEL_LIBRARY) {
      explain_kernel_label(kn, lab, sizeof lab);
      /* "an XLA top-k kernel", "a cuDNN convolution" */
      fprintf(o->out, "  at stage %d (%s): its own library kernel, %s %s\n", e->cur, pass,
              lab[0] && strchr("AEIOUaeiouX", lab[0]) ? "an" : "a", lab);
    }
    else if (kn && kn->instr == i && kn->nmembers <= 1)
      fprintf(o->out, "  at stage %d (%s): its own %s kernel\n", e->cur, pass, plan_kernel_kind_name(kn->kind));
    else if (kn && kn->kind == KERNEL_CONTROL && i->op == IR_OP_WHILE) {
      explain_loop_control(kn, lab, sizeof lab);
      fprintf(o->out, "  at stage %d (%s): runs on the host; %s\n", e->cur, pass, lab);
    } else if (kn && kn->kind == KERNEL_CONTROL)
      fprintf(o->out, "  at stage %d (%s): runs on the host; its branch index is read back\n", e->cur, pass);
    else if (kn)
      fprintf(o->out, "  at stage %d (%s): in kernel %s (%s, %d instructions)\n", e->cur, pass, kn->name,
              plan_kernel_kind_name(kn->kind), kn->nmembers);
    else if (i->op == IR_OP_WHILE || i->op == IR_OP_CALL || i->op == IR_OP_CONDITIONAL)
      fprintf(o->out, "  at stage %d (%s): control flow; its computations' kernels run in its place\n", e->cur, pass);
    else
      fprintf(o->out, "  at stage %d (%s): no kernel: %s\n", e->cur, pass, explain_no_kernel_reason(i));
  } else if (at >= 0) {
    fprintf(o->out, "%s is not in stage %d (%s): last seen at stage %d (%s)", name, e->cur, pass, at,
            explain_engine_stage_pass(e, at));
    /* "; it became fusion.2 (in kernel fusion.2)" when it can be followed */
    if (q.became) {
      fprintf(o->out, "; it became %s", q.became->name);
      if (q.became_kernel && q.became_kernel->instr != q.became) fprintf(o->out, " (in kernel %s)", q.became_kernel->name);
    }
    fputc('\n', o->out);
  } else if (later >= 0) {
    fprintf(o->out, "%s is not in stage %d (%s): it first appears at stage %d (%s)\n", name, e->cur, pass, later,
            e->stages[later].pass);
  } else {
    /* made and rewritten again within one pass: only its decisions hold it */
    fprintf(o->out, "%s is in no stage: it lived only inside stage %d, where %s made it and replaced it again\n", name,
            res[0]->stage, res[0]->pass);
  }
  if (!o->json) {
    if (n == 0) fprintf(o->out, "  no decision names %s%s\n", name, e->nstages > 1 ? "" : " (no pass has run yet)");
    else fprintf(o->out, "  %d decision%s naming %s:\n", n, n == 1 ? "" : "s", name);
    print_grouped(o, e, res, n);
  }
  explain_why_one_free(&q);
  return true;
}

/* A loaded XLA module: the names the user's JAX program gave the pair ("in your program: tanh.0 is
 * layer/tanh, exp.1.0 is exp"); nothing when neither has one. */
static void print_jax_names(const ExplainOut *o, ExplainEngine *e, const char *a, const char *b) {
  const char *names[2] = {a, b};
  char jax[2][200];
  bool any = false;
  for (int k = 0; k < 2; k++) {
    jax[k][0] = 0;
    /* The latest stage that still has it (a fused instruction is gone from later ones). */
    int at = explain_engine_stage_with(e, names[k], e->cur);
    const IrInstr *i = at >= 0 ? ir_module_find_instr(explain_engine_module(e, at), names[k]) : NULL;
    if (i) xla_user_name(i, jax[k], sizeof jax[k]);
    any = any || (jax[k][0] && strcmp(jax[k], names[k]) != 0);
  }
  if (!any) return;
  fprintf(o->out, "  in your program:");
  for (int k = 0; k < 2; k++)
    if (jax[k][0]) fprintf(o->out, "%s %s is %s", k && jax[0][0] ? "," : "", names[k], jax[k]);
  fputc('\n', o->out);
}

bool explain_show_why_pair(const ExplainOut *o, ExplainEngine *e, const char *a, const char *b, int *unknown, FxError *err) {
  ExplainWhyPair q;
  if (!explain_engine_why_pair(e, a, b, &q, unknown, err))
    return false;
  const ExplainRecord **res = q.decisions;
  int n = q.n;
  ExplainSplit *sp = q.split;
  ExplainStageView *v = q.view;
  bool have_split = q.have_split, split = q.apart;
  const char *rel = q.relation;
  const ExplainRecord *final = q.final;
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_key(&w, "names");
    json_array_begin(&w);
    json_str(&w, a);
    json_str(&w, b);
    json_array_end(&w);
    json_kv_int(&w, "stage", e->cur);
    if (have_split) {
      json_kv_str(&w, "split", explain_split_kind_name(sp->kind));
      json_key(&w, "kernels");
      json_array_begin(&w);
      if (sp->ka) json_str(&w, sp->ka->name);
      else json_null(&w);
      if (sp->kb) json_str(&w, sp->kb->name);
      else json_null(&w);
      json_array_end(&w);
      json_key(&w, "boundaries");
      json_array_begin(&w);
      for (int k = 0; k < sp->nboundaries; k++) json_boundary(e, &w, &sp->boundaries[k]);
      json_array_end(&w);
      if (sp->joined) json_kv_int(&w, "joined", explain_engine_number(e, sp->joined));
      else json_kv_null(&w, "joined");
    }
    print_decisions(o, e, &w, res, n);
    if (final) json_kv_int(&w, "final", explain_engine_number(e, final));
    else json_kv_null(&w, "final");
    json_key(&w, "superseded");
    json_array_begin(&w);
    for (int k = 0; k + 1 < n; k++) json_int(&w, explain_engine_number(e, res[k]));
    json_array_end(&w);
    if (n == 0 || split) json_kv_str(&w, "relation", rel);
    else json_kv_null(&w, "relation");
    json_object_end(&w);
  } else if (split && (sp->nboundaries > 0 || n == 0)) {
    const char *pass = explain_engine_stage_pass(e, e->cur);
    char head[1200];
    snprintf(head, sizeof head, "%s and %s at stage %d (%s): %s", a, b, e->cur, pass, rel);
    out_line(o, head);
    for (int k = 0; k < sp->nboundaries; k++) print_boundary(o, e, v, &sp->boundaries[k]);
    if (sp->total_boundaries > sp->nboundaries)
      fprintf(o->out, "... and %d more boundaries\n", sp->total_boundaries - sp->nboundaries);
    if (sp->kind == EXPLAIN_SPLIT_SIBLINGS && sp->nboundaries == 0)
      fprintf(o->out, "no decision between %s and %s: no pass took them as siblings up to stage %d\n",
              sp->ka->name, sp->kb->name, e->cur);
  } else if (have_split && sp->kind == EXPLAIN_SPLIT_NONE && (n == 0 || !final->accepted)) {
    /* Together now, though no decision between the two names says so: the one that made their
     * kernel, then what was said about the pair before. */
    const char *pass = explain_engine_stage_pass(e, e->cur);
    char head[1200];
    snprintf(head, sizeof head, "%s and %s at stage %d (%s): %s", a, b, e->cur, pass, rel);
    out_line(o, head);
    if (sp->joined) {
      fprintf(o->out, "joined by decision #%d:\n", explain_engine_number(e, sp->joined));
      print_record(o, e, sp->joined);
    }
    if (n > 0) {
      fprintf(o->out, "superseded: %d earlier decision%s between %s and %s:\n", n, n == 1 ? "" : "s", a, b);
      for (int k = 0; k < n; k++) print_record(o, e, res[k]);
    }
  } else if (n == 0) {
    char head[1200];
    snprintf(head, sizeof head, "no decision between %s and %s: %s", a, b, rel);
    out_line(o, head);
  } else {
    fprintf(o->out, "%d decision%s between %s and %s; the final outcome (stage %d, %s): %s\n", n, n == 1 ? "" : "s", a,
            b, final->stage, final->pass, final->accepted ? "accepted" : "rejected");
    print_record(o, e, final);
    if (n > 1) {
      fprintf(o->out, "superseded: %d earlier decision%s, replaced by #%d at stage %d (%s):\n", n - 1,
              n == 2 ? "" : "s", explain_engine_number(e, final), final->stage, final->pass);
      for (int k = 0; k + 1 < n; k++) print_record(o, e, res[k]);
    }
  }
  if (!o->json) print_jax_names(o, e, a, b);
  explain_why_pair_free(&q);
  return true;
}

bool explain_show_comparison(const ExplainOut *o, const ExplainComparison *c, const char *what) {
  JsonWriter w;
  if (o->json) {
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "change", what);
    json_kv_int(&w, "kernels_before", c->kernels_before);
    json_kv_int(&w, "kernels_after", c->kernels_after);
    json_kv_int(&w, "launches_before", c->launches_before);
    json_kv_int(&w, "launches_after", c->launches_after);
    json_key(&w, "changed");
    json_array_begin(&w);
  } else {
    fprintf(o->out, "decisions that change with %s:\n", what);
  }
  for (int k = 0; k < c->nchanges; k++) {
    const ExplainKeyedDecision *old = c->changes[k].before, *now = c->changes[k].after;
    if (o->json) {
      json_object_begin(&w);
      json_kv_str(&w, "decision", c->changes[k].key);
      json_kv_str(&w, "before", old ? old->verdict : NULL);
      json_kv_str(&w, "before_reason", old && old->reason[0] ? old->reason : NULL);
      json_kv_str(&w, "after", now ? now->verdict : NULL);
      json_kv_str(&w, "after_reason", now && now->reason[0] ? now->reason : NULL);
      json_kv_str(&w, "detail", now ? now->detail : old->detail);
      json_object_end(&w);
    } else {
      fprintf(o->out, "  %s\n", c->changes[k].key);
      if (old) fprintf(o->out, "    - %s%s%s: %s\n", old->verdict, old->reason[0] ? " " : "", old->reason, old->detail);
      else fprintf(o->out, "    - (not evaluated)\n");
      if (now) fprintf(o->out, "    + %s%s%s: %s\n", now->verdict, now->reason[0] ? " " : "", now->reason, now->detail);
      else fprintf(o->out, "    + (not evaluated)\n");
    }
  }
  if (o->json) {
    json_array_end(&w);
    json_object_end(&w);
    fputc('\n', o->out);
  } else {
    int ndiff = c->nchanges, nonly = c->one_run_only;
    fprintf(o->out, "%d decision%s changed; kernels %d -> %d, launches per run %lld -> %lld\n", ndiff,
            ndiff == 1 ? "" : "s", c->kernels_before, c->kernels_after, c->launches_before, c->launches_after);
    if (nonly)
      fprintf(o->out, "(%d more decision%s made in one run only, on parts of the graph that differ: add --all)\n",
              nonly, nonly == 1 ? " was" : "s were");
  }
  return true;
}

void explain_settings_json(JsonWriter *w, const PassSettings *ps) {
  json_kv_int(w, "dup_limit", ps->concat_user_limit);
  json_kv_int(w, "max_duplication", ps->max_duplication);
  json_kv_int(w, "operand_budget", ps->operand_budget);
  json_kv_int(w, "unroll", ps->unroll);
  json_key(w, "library");
  json_object_begin(w);
  json_kv_bool(w, "dot", ps->dot_is_library);
  json_kv_bool(w, "conv", ps->conv_is_library);
  json_kv_bool(w, "rng", ps->rng_is_library);
  json_object_end(w);
}

void explain_show_device(const ExplainOut *out, const DeviceProfile *d) {
  if (out->json) {
    JsonWriter w;
    json_init(&w, out->out);
    json_object_begin(&w);
    json_kv_str(&w, "device", d->name);
    json_kv_bool(&w, "gpu", d->is_gpu);
    json_kv_int(&w, "sm_count", d->sm_count);
    json_kv_int(&w, "max_threads_per_block", d->max_threads_per_block);
    json_kv_int(&w, "shared_mem_per_block", d->shared_mem_per_block);
    json_kv_int(&w, "registers_per_sm", d->registers_per_sm);
    json_kv_int(&w, "max_registers_per_thread", d->max_registers_per_thread);
    json_kv_double(&w, "dram_gbps", d->dram_gbps);
    json_kv_double(&w, "peak_gflops", d->peak_gflops);
    json_kv_double(&w, "launch_us", d->launch_us);
    json_kv_str(&w, "arch", d->arch);
    json_kv_double(&w, "clock_ghz", d->clock_ghz);
    json_kv_int(&w, "fpus_per_sm", d->fpus_per_sm);
    json_kv_int(&w, "max_threads_per_sm", d->max_threads_per_sm);
    json_kv_int(&w, "registers_per_block", d->registers_per_block);
    json_kv_int(&w, "shared_mem_per_sm", d->shared_mem_per_sm);
    json_kv_int(&w, "shared_mem_per_block_optin", d->shared_mem_per_block_optin);
    json_kv_int(&w, "l2_cache_bytes", d->l2_cache_bytes);
    json_kv_int(&w, "l1_cache_bytes_per_sm", d->l1_cache_bytes_per_sm);
    json_object_end(&w);
    fputc('\n', out->out);
    return;
  }
  FILE *o = out->out;
  fprintf(o, "device %s%s\n", d->name, d->is_gpu ? "" : " (the CPU: kernels are parallel loops)");
  fprintf(o, "  SMs                       %d\n", d->sm_count);
  fprintf(o, "  threads per block         %d\n", d->max_threads_per_block);
  fprintf(o, "  shared memory per block   %d B\n", d->shared_mem_per_block);
  fprintf(o, "  registers                 %d per SM, at most %d per thread\n", d->registers_per_sm,
          d->max_registers_per_thread);
  fprintf(o, "  DRAM bandwidth            %.1f GB/s\n", d->dram_gbps);
  fprintf(o, "  peak f32                  %.0f GFLOP/s\n", d->peak_gflops);
  fprintf(o, "  launch overhead           %.1f us\n", d->launch_us);
  if (d->arch[0]) fprintf(o, "  architecture              %s\n", d->arch);
}

void explain_show_settings(const ExplainOut *out, ExplainEngine *e) {
  const PassSettings *ps = &e->settings;
  const char *dev = e->device.name[0] ? e->device.name : device_default()->name;
  if (out->json) {
    JsonWriter w;
    json_init(&w, out->out);
    json_object_begin(&w);
    json_kv_str(&w, "pipeline", e->pipeline ? e->pipeline->name : "classic");
    json_kv_str(&w, "device", dev);
    explain_settings_json(&w, ps);
    json_key(&w, "expensive");
    json_object_begin(&w);
    for (int k = 0; k < IR_OP_COUNT; k++)
      if (ps->expensive_override[k]) json_kv_bool(&w, ir_op_name((IrOpcode)k), ps->expensive_override[k] > 0);
    json_object_end(&w);
    json_kv_str(&w, "passes_off", ps->disabled_passes);
    json_kv_bool(&w, "registers_checked", fusion_register_hook_installed());
    json_object_end(&w);
    fputc('\n', out->out);
    return;
  }
  FILE *o = out->out;
  fprintf(o, "  pipeline          %s\n", e->pipeline ? e->pipeline->name : "classic");
  fprintf(o, "  device            %s\n", dev);
  fprintf(o, "  dup_limit         %d   (users a concatenate, pad, dot or reduce may have and still fuse; XLA 1, the paper's patch 3)\n",
          ps->concat_user_limit);
  fprintf(o, "  max_duplication   %d  (emitted copies of a producer before code_duplication)\n", ps->max_duplication);
  fprintf(o, "  operand_budget    %d  (operands + outputs per fusion; 64 in 2021, 96 today)\n", ps->operand_budget);
  fprintf(o, "  unroll            %d%s\n", ps->unroll, ps->unroll <= 1 ? "   (loops are not unrolled)" : "");
  fprintf(o, "  library           dot %s, conv %s, rng %s\n", ps->dot_is_library ? "on" : "off",
          ps->conv_is_library ? "on" : "off", ps->rng_is_library ? "on" : "off");
  char ov[600] = "";
  for (int k = 0; k < IR_OP_COUNT; k++)
    if (ps->expensive_override[k])
      snprintf(ov + strlen(ov), sizeof ov - strlen(ov), "%s%s %s", ov[0] ? ", " : "", ir_op_name((IrOpcode)k),
               ps->expensive_override[k] > 0 ? "on" : "off");
  fprintf(o, "  expensive         %s\n", ov[0] ? ov : "XLA's table (GPU: exp, rsqrt, divide cheap for f32/f16)");
  fprintf(o, "  passes off        %s\n", ps->disabled_passes[0] ? ps->disabled_passes : "(none)");
  fprintf(o, "  registers         %s\n", fusion_registers_note());
}

void explain_show_all_settings(const ExplainOut *o, ExplainEngine *e, unsigned long long max_memory,
                               const char *const *settable, int nsettable) {
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_key(&w, "settings");
    json_object_begin(&w);
    /* Every key is a name `set` accepts, with the value it takes. */
    json_kv_str(&w, "pipeline", e->pipeline ? e->pipeline->name : NULL);
    json_kv_str(&w, "device", e->device.name[0] ? e->device.name : NULL);
    explain_settings_json(&w, &e->settings);
    json_kv_str(&w, "pass", e->settings.disabled_passes);
    json_kv_int(&w, "max_memory", (int64_t)max_memory);
    json_object_end(&w);
    json_key(&w, "settable");
    json_array_begin(&w);
    for (int i = 0; i < nsettable; i++) json_str(&w, settable[i]);
    json_array_end(&w);
    json_object_end(&w);
    return;
  }
  /* The same table as `show settings`: each line named as `set` takes it. */
  explain_show_settings(o, e);
  if (max_memory) fprintf(o->out, "  max_memory        %llu bytes\n", max_memory);
  else fprintf(o->out, "  max_memory        0 (unlimited)\n");
  for (int i = 0; i < nsettable; i++)
    fprintf(o->out, "%s%s%s", i ? ", " : "change with 'set WHAT VALUE'; WHAT is one of: ", settable[i],
            i + 1 == nsettable ? "\n" : "");
}

void explain_show_setting_change(const ExplainOut *o, const ExplainSettingChange *ch, bool have_stages) {
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "setting", ch->what);
    json_kv_str(&w, "old", ch->old);
    json_kv_str(&w, "new", ch->now);
    json_object_end(&w);
    fputc('\n', o->out);
  } else {
    fprintf(o->out, "%s: %s -> %s%s\n", ch->what, ch->old, ch->now,
            have_stages ? " (the next step recomputes the stages)" : "");
  }
}

void explain_show_unfused(const ExplainOut *o, int n, int kernels_before, int kernels_after) {
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_int(&w, "unfused", n);
    json_kv_int(&w, "kernels_before", kernels_before);
    json_kv_int(&w, "kernels_after", kernels_after);
    json_object_end(&w);
    fputc('\n', o->out);
  } else if (n == 0) {
    fprintf(o->out, "no fusions to unfuse: the module is already as it was before fusion\n");
  } else {
    fprintf(o->out, "unfused %d fusion%s: %d kernels (XLA's) -> %d kernels; step through the pipeline to compare our "
            "decisions with XLA's\n", n, n == 1 ? "" : "s", kernels_before, kernels_after);
  }
}

void explain_show_saved(const ExplainOut *o, const ExplainEngine *e, const char *path) {
  const IrModule *m = explain_engine_module(e, e->cur);
  const char *pass = explain_engine_stage_pass(e, e->cur);
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_key(&w, "saved");
    json_object_begin(&w);
    json_kv_str(&w, "file", path);
    json_kv_str(&w, "module", m->name);
    json_kv_int(&w, "stage", e->cur);
    json_kv_str(&w, "pass", pass);
    json_object_end(&w);
    json_object_end(&w);
  } else {
    char shown[160];
    fprintf(o->out, "saved stage %d (%s) of %s to %s\n", e->cur, pass, m->name, fx_printable(shown, sizeof shown, path));
  }
}

void explain_json_loaded_begin(JsonWriter *w, FILE *f, const char *module) {
  json_init(w, f);
  json_object_begin(w);
  json_key(w, "loaded");
  json_object_begin(w);
  json_kv_str(w, "module", module);
}

void explain_show_loaded(const ExplainOut *o, const IrModule *m, const char *path, const HloProtoIds *ids) {
  bool have_ids = ids && ids->path[0];
  if (o->json) {
    JsonWriter w;
    explain_json_loaded_begin(&w, o->out, m->name);
    json_kv_str(&w, "file", path);
    json_kv_int(&w, "computations", m->ncomps);
    json_kv_int(&w, "instructions", ir_module_instr_count(m));
    if (have_ids) {
      json_key(&w, "xla_ids");
      json_object_begin(&w);
      json_kv_str(&w, "file", ids->path);
      json_kv_bool(&w, "applied", ids->applied);
      json_kv_int(&w, "matched", ids->matched);
      json_kv_int(&w, "in_proto", ids->in_proto);
      json_object_end(&w);
    }
    json_object_end(&w);
    json_object_end(&w);
  } else {
    /* a file named on the command line can hold any byte: shown escaped */
    char shown[1100];
    fprintf(o->out, "loaded %s from %s: %d computations, %d instructions\n", m->name,
            fx_printable(shown, sizeof shown, path), m->ncomps, ir_module_instr_count(m));
    if (have_ids && ids->applied)
      fprintf(o->out, "  instruction ids: XLA's own, from %s (priority-fusion breaks ties by them, as XLA)\n",
              fx_printable(shown, sizeof shown, ids->path));
    else if (have_ids)
      fprintf(o->out, "  %s beside it is not a dump of this module (%d of its %d instructions match the %d here%s%s): "
              "instruction ids follow the text, as when XLA parses it\n",
              fx_printable(shown, sizeof shown, ids->path), ids->matched, ids->in_proto, ids->in_module,
              ids->first_missing[0] ? "; it lacks " : "", ids->first_missing);
  }
}

bool explain_show_hlo(const ExplainOut *o, const ExplainEngine *e, FxError *err) {
  const IrModule *m = explain_engine_module(e, e->cur);
  if (!m) return fx_error_set(err, NULL, 0, 0, EXPLAIN_NOTHING_LOADED);
  if (o->json) {
    char *text = hlo_print_string(m);
    if (!text) return fx_error_set(err, NULL, 0, 0, "out of memory");
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "module", m->name);
    json_kv_int(&w, "stage", e->cur);
    json_kv_str(&w, "pass", explain_engine_stage_pass(e, e->cur));
    json_kv_str(&w, "hlo", text);
    json_object_end(&w);
    fx_free(text);
    return true;
  }
  FxError perr;
  fx_error_clear(&perr);
  if (!hlo_print(o->out, m, &perr)) return fx_error_set(err, NULL, 0, 0, "cannot print the module: %s", perr.msg);
  return true;
}
