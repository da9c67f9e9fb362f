/* cmd_run.c — the run commands of the shell: `run`, `profile`, `compare`, and the settings they
 * read: `set max_memory`, `set threads`, `set vecmath`.
 *
 * They take a stage's module (the current one, or --stage S), make its inputs (seeded random data,
 * or .npy files), execute it on a backend (runtime/backend.h: interp, cpu, or gpu when present),
 * and print what came out and what it cost: kernels launched, bytes moved, time (the median of
 * --repeat runs). `--check` runs the reference interpreter on the same inputs and fails with the
 * worst element when they differ beyond the type's tolerance. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../explain/json.h"
#include "args.h"
#include "repl.h"
#include "session.h"
#include "../compiler/plan/plan.h"
#include "../runtime/backend.h"
#include "../runtime/cuda/cuda.h"

/* An option error, located at argument argi of the command (0: the command word). */
static bool usage_error(Session *s, FxError *err, int argi, const char *msg, const char *arg) {
  return repl_arg_error(s, err, argi, "%s%s%s", msg, arg ? ": " : "", arg ? arg : "");
}

static bool parse_int(const char *s, long long lo, long long hi, long long *out) { return fx_parse_int(s, 10, lo, hi, out) == 0; }

static bool split_pair(char *arg, const char **name, const char **file) {
  char *eq = strchr(arg, '=');
  if (!eq || eq == arg || !eq[1]) return false;
  *eq = 0;
  *name = arg;
  *file = eq + 1;
  return true;
}

bool repl_run_args(Session *s, int argc, char **argv, bool variants, RunArgs *a, FxError *err) {
  memset(a, 0, sizeof *a);
  a->backend = "auto";
  a->stage = -1;
  a->repeat = 1;
  for (int k = 1; k < argc; k++) {
    const char *o = argv[k];
    bool has = k + 1 < argc;
    long long v;
    if (variants && strcmp(o, "--run") == 0) continue;
    if (variants && strcmp(o, "--check") != 0 && strcmp(o, "--backend") != 0 && strcmp(o, "--repeat") != 0 &&
        strcmp(o, "--seed") != 0 && strcmp(o, "--uniform") != 0) {
      char shown[64];
      return repl_arg_error(s, err, k, "unknown option '%s' (variants --run [--backend B] [--repeat N] [--seed N] [--check] "
                            "[--uniform PATTERN=LO:HI])", fx_printable(shown, sizeof shown, o));
    }
    if (strcmp(o, "--check") == 0) a->check = true;
    else if (strcmp(o, "--backend") == 0 && has) {
      a->backend = argv[++k];
      if (strcmp(a->backend, "auto") != 0 && !rt_backend_lookup(a->backend))
        return repl_arg_error(s, err, k, "unknown backend '%s' (interp, cpu, gpu or auto)", a->backend);
    }
    else if (strcmp(o, "--stage") == 0 && has) {
      if (!parse_int(argv[++k], 0, s->eng.nstages - 1, &v)) return usage_error(s, err, k, "--stage needs a stage number that exists", argv[k]);
      a->stage = (int)v;
    } else if (strcmp(o, "--seed") == 0 && has) {
      if (!parse_int(argv[++k], 0, INT64_MAX, &v)) return usage_error(s, err, k, "--seed needs a non-negative integer", argv[k]);
      a->seed = (uint64_t)v;
    } else if (strcmp(o, "--repeat") == 0 && has) {
      if (!parse_int(argv[++k], 1, 100000, &v)) return usage_error(s, err, k, "--repeat needs 1 to 100000", argv[k]);
      a->repeat = (int)v;
    } else if (strcmp(o, "--input") == 0 && has) {
      if (a->nin == REPL_MAX_IO || !split_pair(argv[++k], &a->in[a->nin].name, &a->in[a->nin].file))
        return usage_error(s, err, k, "--input needs NAME=FILE.npy", argv[k]);
      a->nin++;
    } else if (strcmp(o, "--save") == 0 && has) {
      if (a->nsave == REPL_MAX_IO || !split_pair(argv[++k], &a->save_name[a->nsave], &a->save_file[a->nsave]))
        return usage_error(s, err, k, "--save needs NAME=FILE.npy", argv[k]);
      a->save_arg[a->nsave] = k;
      a->nsave++;
    } else if (strcmp(o, "--uniform") == 0 && has) {
      if (a->nuniform == REPL_MAX_IO) return usage_error(s, err, k + 1, "too many --uniform rules", argv[k + 1]);
      if (!repl_uniform_parse(s, argv, ++k, &a->uniform[a->nuniform], err)) return false;
      a->nuniform++;
    } else if (strcmp(o, "--trace") == 0 && has) {
      a->trace = argv[++k];
      a->trace_arg = k;
    }
    else if (strcmp(o, "--stages") == 0 && has) a->stages = argv[++k];
    else return usage_error(s, err, k, "unknown or incomplete option", o);
  }
  return true;
}


/* The entry's arguments: --input files by parameter, the rest random (--uniform rules checked). */
static RtTensor **make_inputs(Session *s, const IrModule *m, RunArgs *a, FxError *err) {
  if (!repl_uniform_check(s, a->uniform, a->nuniform, &m, 1, "", err)) return NULL;
  return rt_inputs_make(m, a->in, a->nin, a->seed, a->uniform, a->nuniform, s->interrupted,
                        s->interactive && !s->json && isatty(fileno(stderr)), err);
}

static bool execute(Session *s, const IrModule *m, const RunArgs *a, RtTensor **args, RtStageRun *res, FxError *err) {
  memset(res, 0, sizeof *res);
  RtOptions o = {.seed = a->seed, .interrupted = s->interrupted, .kernel_times = a->kernel_times};
  bool ok = rt_stage_run(a->backend, m, args, &o, a->repeat, NULL, res, err);
  if (res->note && res->note[0] && !s->json) fprintf(s->out, "note: %s\n", res->note);
  return ok;
}

/* One run of a stage: the module, the inputs made for it, what the backend returned, and
 * whether the run itself succeeded. */
typedef struct {
  const IrModule *m;
  RtTensor **args;
  RtStageRun res;
  bool ok;
} StageRun;

/* The stage a.stage names (the current one by default), its inputs made and one run on the
 * backend: false with err filled (and nothing to free) when any of it fails before the run;
 * otherwise r->ok says how the run went and stage_run_free releases it. */
static bool run_stage(Session *s, RunArgs *a, StageRun *r, FxError *err) {
  r->m = repl_computed_stage(s, a->stage, "cannot run", err);
  if (!r->m || !(r->args = make_inputs(s, r->m, a, err))) return false;
  r->ok = execute(s, r->m, a, r->args, &r->res, err);
  return true;
}

static void stage_run_free(StageRun *r) {
  rt_stage_run_free(&r->res);
  rt_inputs_free(r->m, r->args);
}

static bool cmd_compare(Session *s, int argc, char **argv, FxError *err);

/* What --check found: every output within the tolerance (worst: the worst element's error), and
 * whether that took a second run with libm (sleef_differs: what differed with SLEEF). */
typedef struct {
  bool done, libm;
  double worst;
  char sleef_differs[600];
} RunCheck;

/* The CPU backend's kernels call SLEEF (within 1 ulp per call) where the interpreter calls libm,
 * so a long computation can drift past --check's tolerance with every kernel right: a chaotic
 * simulation loop over 10,000 steps does. When the check fails with SLEEF, the stage runs once
 * more on the same inputs with libm and is compared with the same reference; if that agrees, the
 * kernels are right and the output says what differed and why; if not, the check fails as it
 * would have. */
static bool check_with_libm(Session *s, const RunArgs *a, const StageRun *r, const RtTensor *want,
                            const RtCheck *sleef, RunCheck *out, FxError *err) {
  RunArgs once = *a;
  once.repeat = 1;
  cpu_set_default_vecmath(false);
  RtStageRun res;
  bool ok = execute(s, r->m, &once, r->args, &res, err);
  cpu_set_default_vecmath(true);
  RtCheck c2 = {0};
  if (ok) rt_check_against(res.result, want, &c2);
  rt_stage_run_free(&res);
  if (!ok) return false;
  if (!c2.agrees) return fx_error_set(err, NULL, 0, 0, "check failed: %s", sleef->differs);
  out->libm = true;
  out->worst = c2.worst;
  snprintf(out->sleef_differs, sizeof out->sleef_differs, "%s", sleef->differs);
  return true;
}

/* --check: the reference interpreter on the same inputs; false with err filled when an output
 * differs beyond the tolerance. */
static bool run_check(Session *s, const RunArgs *a, const StageRun *r, RunCheck *out, FxError *err) {
  RtOptions o = {.seed = a->seed, .interrupted = s->interrupted};
  RtCheck c;
  RtTensor *want = NULL;
  bool ok = rt_check_reference(r->m, r->m, r->args, &o, &want, err);
  if (ok) rt_check_against(r->res.result, want, &c);
  if (ok && !c.agrees && r->res.backend == &rt_backend_cpu && cpu_vecmath_is_sleef())
    ok = check_with_libm(s, a, r, want, &c, out, err);
  else if (ok && !c.agrees) ok = fx_error_set(err, NULL, 0, 0, "check failed: %s", c.differs);
  else if (ok) out->worst = c.worst;
  out->done = ok;
  rt_tensor_unref(want);
  return ok;
}

static void print_check(FILE *f, const RunCheck *c) {
  if (!c->done) return;
  if (c->libm)
    fprintf(f,
            "check: with SLEEF's vector math %s; run again with libm (as the interpreter computes), every output "
            "agrees (worst error %.3g): the kernels are right, and the difference is SLEEF's rounding (at most 1 ulp "
            "per call) grown by the computation that follows (`set vecmath libm` to run that way)\n",
            c->sleef_differs, c->worst);
  else
    fprintf(f, "check: every output agrees with the reference interpreter (worst error %.3g)\n", c->worst);
}

/* ---------- JSON forms ---------- */

/* One object per output array (rt_tensor_each_output's, with a tuple's elements as out.0, ...). */
static void json_output(void *ctx, const char *name, const RtTensor *t) {
  JsonWriter *w = ctx;
  RtSummary u;
  rt_tensor_summarize(t, &u);
  json_object_begin(w);
  json_kv_str(w, "name", name);
  json_kv_str(w, "shape", u.desc);
  json_kv_int(w, "elements", u.has_values ? (long long)t->count : 0);
  if (u.has_values) {
    json_kv_bool(w, "complex", u.is_complex);
    json_kv_double(w, u.is_complex ? "min_abs" : "min", u.min);
    json_kv_double(w, u.is_complex ? "max_abs" : "max", u.max);
    json_key(w, "mean");
    if (u.is_complex) {
      json_array_begin(w);
      json_double(w, u.mean);
      json_double(w, u.mean_im);
      json_array_end(w);
    } else {
      json_double(w, u.mean);
    }
    json_key(w, "first");
    json_array_begin(w);
    for (int k = 0; k < u.nfirst; k++) {
      if (u.is_complex) {
        json_array_begin(w);
        json_double(w, u.first[k]);
        json_double(w, u.first_im[k]);
        json_array_end(w);
      } else if (u.is_float) {
        json_double(w, u.first[k]);
      } else if (u.first_u64) {
        json_uint(w, (unsigned long long)(uint64_t)u.first_int[k]);
      } else {
        json_int(w, (long long)u.first_int[k]);
      }
    }
    json_array_end(w);
  }
  json_object_end(w);
}

/* What the backend counted and how long it took: the members every run form shares. */
static void json_measured(JsonWriter *w, const RtStageRun *res, int repeat) {
  json_kv_int(w, "launches", (long long)res->stats.counters.launches);
  json_kv_int(w, "bytes_read", (long long)res->stats.counters.bytes_read);
  json_kv_int(w, "bytes_written", (long long)res->stats.counters.bytes_written);
  json_kv_double(w, "time_ns", res->median_ns);
  json_kv_int(w, "repeat", repeat);
}

static void json_backend(JsonWriter *w, const RtStageRun *res) {
  json_kv_str(w, "backend", res->backend ? res->backend->name : NULL);
  if (res->backend == &rt_backend_cpu) {
    char d[300];
    cpu_vecmath_describe(d, sizeof d);
    json_kv_int(w, "threads", cpu_default_threads());
    json_kv_str(w, "vecmath", d);
  }
  json_kv_str(w, "note", res->note && res->note[0] ? res->note : NULL);
}

/* The kernel plan's figures for the stage, beside what was measured. */
static void json_plan(JsonWriter *w, Session *s, int stage) {
  FxError perr = {0};
  const KernelPlan *plan = explain_engine_plan(&s->eng, stage, &perr);
  json_key(w, "plan");
  if (!plan) {
    json_null(w);
    return;
  }
  json_object_begin(w);
  json_kv_str(w, "device", s->eng.device.name);
  json_kv_int(w, "launches", (long long)plan->launches);
  json_kv_int(w, "bytes", (long long)(plan->bytes_read + plan->bytes_written));
  json_kv_double(w, "est_us", plan->est_us);
  json_kv_bool(w, "trip_counts_known", plan->trip_counts_known);
  json_object_end(w);
}

static void json_check(JsonWriter *w, const RunCheck *c) {
  json_key(w, "check");
  if (!c->done) {
    json_null(w);
    return;
  }
  json_object_begin(w);
  json_kv_bool(w, "agrees", true);
  json_kv_double(w, "worst_error", c->worst);
  json_kv_str(w, "with", c->libm ? "libm" : NULL);
  json_kv_str(w, "detail", c->libm ? c->sleef_differs : NULL);
  json_object_end(w);
}

static bool cmd_run(Session *s, int argc, char **argv, FxError *err) {
  RunArgs a;
  if (!repl_run_args(s, argc, argv, false, &a, err)) return false;
  if (a.trace) return usage_error(s, err, 0, "--trace belongs to `profile`", NULL);
  if (a.stages) {
    /* run --stages A,B is compare A B with the other options */
    char buf[64], *cargv[64];
    snprintf(buf, sizeof buf, "%s", a.stages);
    char *comma = strchr(buf, ',');
    if (!comma) return usage_error(s, err, 0, "--stages needs A,B", a.stages);
    *comma = 0;
    int n = 0;
    cargv[n++] = "compare";
    cargv[n++] = buf;
    cargv[n++] = comma + 1;
    for (int k = 1; k < argc && n < 63; k++) {
      if (strcmp(argv[k], "--stages") == 0) {
        k++;
        continue;
      }
      cargv[n++] = argv[k];
    }
    return cmd_compare(s, n, cargv, err);
  }
  StageRun r;
  if (!run_stage(s, &a, &r, err)) return false;
  bool ok = r.ok;
  int stage = a.stage >= 0 ? a.stage : s->eng.cur;
  if (ok && !s->json) {
    FILE *f = s->out;
    fprintf(f, "stage %d on %s:\n", stage, r.res.backend->name);
    if (r.res.backend == &rt_backend_cpu) {
      char d[300];
      cpu_vecmath_describe(d, sizeof d);
      fprintf(f, "cpu: %d threads, vector math %s\n", cpu_default_threads(), d);
    }
    rt_tensor_print_summary(f, "out", r.res.result);
    char rb[32], wb[32], tm[32];
    fx_format_bytes(rb, sizeof rb, (double)r.res.stats.counters.bytes_read, FX_BYTES_RUN);
    fx_format_bytes(wb, sizeof wb, (double)r.res.stats.counters.bytes_written, FX_BYTES_RUN);
    fx_format_time(tm, sizeof tm, r.res.median_ns, FX_TIME_RUN);
    fprintf(f, "kernels launched %lld, bytes read %s, written %s, time %s (median of %d)\n",
            (long long)r.res.stats.counters.launches, rb, wb, tm, a.repeat);
    ExplainOut eo = repl_out(s); /* the kernel plan's figures, for comparison with what was measured */
    explain_show_plan_line(&eo, &s->eng, stage);
    if (r.res.stats.slot_outputs > 0) {
      char sb[32];
      fx_format_bytes(sb, sizeof sb, (double)r.res.stats.slot_bytes, FX_BYTES_RUN);
      fprintf(f,
              "buffers: %lld kernel outputs went into %s of buffer slots, reused across the run "
              "(the plan's buffer assignment)\n",
              (long long)r.res.stats.slot_outputs, sb);
    }
  }
  for (int q = 0; ok && q < a.nsave; q++) {
    const RtTensor *t = rt_tensor_output(r.res.result, a.save_name[q]);
    if (!t) ok = fx_error_set(err, NULL, 0, 0, "--save %s: no such output (out, out.0, out.1, ...)", a.save_name[q]);
    else if (!(ok = rt_npy_write(a.save_file[q], t, err))) repl_error_at(s, err, a.save_arg[q], err); /* "FILE: message" at its --save word */
  }
  RunCheck ck = {0};
  if (ok && a.check) ok = run_check(s, &a, &r, &ck, err);
  if (ok && !s->json) print_check(s->out, &ck);
  if (ok && s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", stage);
    json_backend(&w, &r.res);
    json_key(&w, "outputs");
    json_array_begin(&w);
    rt_tensor_each_output(r.res.result, "out", json_output, &w);
    json_array_end(&w);
    json_measured(&w, &r.res, a.repeat);
    json_plan(&w, s, stage);
    json_kv_int(&w, "buffer_slot_outputs", (long long)r.res.stats.slot_outputs);
    json_kv_int(&w, "buffer_slot_bytes", (long long)r.res.stats.slot_bytes);
    json_key(&w, "saved");
    json_array_begin(&w);
    for (int q = 0; q < a.nsave; q++) {
      json_object_begin(&w);
      json_kv_str(&w, "output", a.save_name[q]);
      json_kv_str(&w, "file", a.save_file[q]);
      json_object_end(&w);
    }
    json_array_end(&w);
    json_check(&w, &ck);
    json_object_end(&w);
  }
  stage_run_free(&r);
  return ok;
}

/* Chrome trace-event JSON (Perfetto opens it): one complete event per kernel with its total time. */
static bool write_trace(const char *path, const RtRunStats *st) {
  FILE *t = fopen(path, "w");
  if (!t) return false;
  fprintf(t, "{\"traceEvents\": [\n");
  double ts = 0;
  for (int k = 0; k < st->nkernels; k++) {
    const RtKernelStat *ks = &st->kernels[k];
    fprintf(t, "%s  {\"name\": ", k ? ",\n" : "");
    json_write_string(t, ks->instr->name, strlen(ks->instr->name));
    fprintf(t, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, \"tid\": 1, "
               "\"args\": {\"launches\": %lld, \"bytes\": %lld, \"op\": \"%s\"}}",
            ks->how, ts / 1e3, ks->total_ns / 1e3, (long long)ks->launches, (long long)ks->bytes, ir_op_name(ks->instr->op));
    ts += ks->total_ns;
  }
  fprintf(t, "\n], \"displayTimeUnit\": \"ms\"}\n");
  return fclose(t) == 0;
}

/* profile --json: one object per kernel, as the table has them; a kernel run inside a compiled
 * entry or loop has null times (its time is in that row). */
static bool profile_json(Session *s, const RunArgs *a, const StageRun *r, FxError *err) {
  if (a->trace && !write_trace(a->trace, &r->res.stats))
    return repl_arg_error(s, err, a->trace_arg, "cannot write the trace %s: %s", a->trace, strerror(errno));
  JsonWriter w;
  json_init(&w, s->out);
  json_object_begin(&w);
  json_kv_int(&w, "stage", a->stage >= 0 ? a->stage : s->eng.cur);
  json_backend(&w, &r->res);
  json_key(&w, "kernels");
  json_array_begin(&w);
  for (int k = 0; k < r->res.stats.nkernels; k++) {
    const RtKernelStat *ks = &r->res.stats.kernels[k];
    bool timed = ks->total_ns > 0 || ks->launches == 0;
    json_object_begin(&w);
    json_kv_str(&w, "name", ks->instr->name);
    json_kv_str(&w, "how", ks->how);
    json_kv_str(&w, "op", ir_op_name(ks->instr->op));
    json_kv_int(&w, "launches", (long long)ks->launches);
    if (timed) {
      json_kv_double(&w, "total_ns", ks->total_ns);
      json_kv_double(&w, "mean_ns", ks->launches ? ks->total_ns / (double)ks->launches : 0);
      json_kv_double(&w, "gb_per_s", ks->total_ns > 0 ? (double)ks->bytes / ks->total_ns : 0);
    } else {
      json_kv_null(&w, "total_ns");
      json_kv_null(&w, "mean_ns");
      json_kv_null(&w, "gb_per_s");
    }
    json_kv_int(&w, "bytes", (long long)ks->bytes);
    json_key(&w, "holds");
    json_array_begin(&w);
    const IrComputation *fc = ir_fused_computation(ks->instr);
    for (int q = 0; fc && q < fc->ninstrs; q++)
      if (fc->instrs[q]->op != IR_OP_PARAMETER) json_str(&w, ir_op_name(fc->instrs[q]->op));
    if (!fc) json_str(&w, ir_op_name(ks->instr->op));
    json_array_end(&w);
    json_kv_str(&w, "not_generated", ks->why);
    json_object_end(&w);
  }
  json_array_end(&w);
  json_measured(&w, &r->res, a->repeat);
  json_kv_str(&w, "trace", a->trace);
  json_object_end(&w);
  return true;
}

static bool cmd_profile(Session *s, int argc, char **argv, FxError *err) {
  RunArgs a;
  if (!repl_run_args(s, argc, argv, false, &a, err)) return false;
  a.kernel_times = true;
  StageRun r;
  if (!run_stage(s, &a, &r, err)) return false;
  bool ok = r.ok;
  if (ok && s->json) {
    ok = profile_json(s, &a, &r, err);
  } else if (ok) {
    FILE *f = s->out;
    fprintf(f, "%-28s %-11s %9s %12s %12s %12s %9s  holds\n", "kernel", "how", "launches", "total", "mean", "bytes", "GB/s");
    int untimed = 0;
    for (int k = 0; k < r.res.stats.nkernels; k++) {
      const RtKernelStat *ks = &r.res.stats.kernels[k];
      char tot[32], mean[32], by[32], gb[32];
      /* A kernel the backend ran inside a compiled entry or loop was counted but not timed on its
       * own (a clock read per launch would cost as much as a small kernel): its time is in that
       * row, and this one says so rather than 0. */
      bool timed = ks->total_ns > 0 || ks->launches == 0;
      untimed += !timed;
      fx_format_time(tot, sizeof tot, ks->total_ns, FX_TIME_RUN);
      fx_format_time(mean, sizeof mean, ks->launches ? ks->total_ns / (double)ks->launches : 0, FX_TIME_RUN);
      fx_format_bytes(by, sizeof by, (double)ks->bytes, FX_BYTES_RUN);
      snprintf(gb, sizeof gb, "%.2f", ks->total_ns > 0 ? (double)ks->bytes / ks->total_ns : 0);
      if (!timed) {
        snprintf(tot, sizeof tot, "-");
        snprintf(mean, sizeof mean, "-");
        snprintf(gb, sizeof gb, "-");
      }
      fprintf(f, "%-28s %-11s %9lld %12s %12s %12s %9s  ", ks->instr->name, ks->how, (long long)ks->launches, tot, mean, by, gb);
      const IrComputation *fc = ir_fused_computation(ks->instr);
      if (fc) {
        int shown = 0;
        for (int q = 0; q < fc->ninstrs; q++) {
          const IrInstr *mi = fc->instrs[q];
          if (mi->op == IR_OP_PARAMETER) continue;
          if (shown < 6) fprintf(f, "%s%s", shown ? " " : "", ir_op_name(mi->op));
          shown++;
        }
        if (shown > 6) fprintf(f, " (+%d)", shown - 6);
        fputc('\n', f);
      } else {
        fprintf(f, "%s\n", ir_op_name(ks->instr->op));
      }
      if (ks->why) fprintf(f, "    (not generated: %s)\n", ks->why);
    }
    char tm[32];
    fx_format_time(tm, sizeof tm, r.res.median_ns, FX_TIME_RUN);
    fprintf(f, "total %s, %lld launches\n", tm, (long long)r.res.stats.counters.launches);
    if (untimed)
      fprintf(f, "'-': %d kernel%s ran inside the compiled stage or a compiled loop and %s not timed alone; "
                 "their time is in the entry and loop rows\n", untimed, untimed == 1 ? "" : "s", untimed == 1 ? "was" : "were");
    if (a.trace && !write_trace(a.trace, &r.res.stats))
      ok = repl_arg_error(s, err, a.trace_arg, "cannot write the trace %s: %s", a.trace, strerror(errno));
    else if (a.trace) fprintf(f, "trace written to %s (open it in Perfetto or chrome://tracing)\n", a.trace);
  }
  stage_run_free(&r);
  return ok;
}

static bool cmd_compare(Session *s, int argc, char **argv, FxError *err) {
  if (argc < 3) return usage_error(s, err, argc, "usage: compare STAGE_A STAGE_B [--backend B] [--repeat N] [--seed N]", NULL);
  RunArgs a;
  char *rest[64];
  int nr = 0;
  rest[nr++] = argv[0];
  for (int k = 3; k < argc && nr < 64; k++) rest[nr++] = argv[k];
  if (!repl_run_args(s, nr, rest, false, &a, err)) return false;
  for (int q = 0; q < a.nuniform; q++) a.uniform[q].argi = 0; /* its word moved: point at the command */
  long long st[2];
  for (int q = 0; q < 2; q++)
    if (!parse_int(argv[1 + q], 0, s->eng.nstages - 1, &st[q])) return usage_error(s, err, 1 + q, "no such stage", argv[1 + q]);
  RtStageRun res[2];
  memset(res, 0, sizeof res);
  bool ok = true;
  for (int q = 0; q < 2 && ok; q++) {
    const IrModule *m = repl_computed_stage(s, (int)st[q], "cannot run", err);
    if (!m) return false;
    RtTensor **args = make_inputs(s, m, &a, err);
    if (!args) ok = false;
    else ok = execute(s, m, &a, args, &res[q], err);
    rt_inputs_free(m, args);
  }
  if (ok && s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_backend(&w, &res[0]);
    json_key(&w, "stages");
    json_array_begin(&w);
    for (int q = 0; q < 2; q++) {
      json_object_begin(&w);
      json_kv_int(&w, "stage", st[q]);
      json_measured(&w, &res[q], a.repeat);
      json_object_end(&w);
    }
    json_array_end(&w);
    if (res[1].median_ns > 0) json_kv_double(&w, "speedup", res[0].median_ns / res[1].median_ns);
    else json_kv_null(&w, "speedup");
    RtCompare c;
    rt_compare(res[1].result, res[0].result, &c);
    json_kv_str(&w, "outputs_differ", c.ok ? NULL : c.what);
    json_object_end(&w);
  } else if (ok) {
    FILE *f = s->out;
    fprintf(f, "%-10s %12s %14s %14s %12s\n", "stage", "kernels", "bytes read", "bytes written", "time");
    for (int q = 0; q < 2; q++) {
      char rb[32], wb[32], tm[32];
      fx_format_bytes(rb, sizeof rb, (double)res[q].stats.counters.bytes_read, FX_BYTES_RUN);
      fx_format_bytes(wb, sizeof wb, (double)res[q].stats.counters.bytes_written, FX_BYTES_RUN);
      fx_format_time(tm, sizeof tm, res[q].median_ns, FX_TIME_RUN);
      fprintf(f, "%-10lld %12lld %14s %14s %12s\n", st[q], (long long)res[q].stats.counters.launches, rb, wb, tm);
    }
    if (res[1].median_ns > 0) fprintf(f, "speedup %.2fx\n", res[0].median_ns / res[1].median_ns);
    RtCompare c;
    rt_compare(res[1].result, res[0].result, &c);
    if (!c.ok) fprintf(f, "note: the stages' outputs differ: %s\n", c.what);
  }
  rt_stage_run_free(&res[0]);
  rt_stage_run_free(&res[1]);
  return ok;
}

/* `set NAME VALUE` with --json, for the run settings: {"setting":NAME,"old":N,"new":N}, as the
 * fusion knobs answer. */
static bool json_setting(Session *s, const char *name, long long old, long long now) {
  JsonWriter w;
  json_init(&w, s->out);
  json_object_begin(&w);
  json_kv_str(&w, "setting", name);
  json_kv_int(&w, "old", old);
  json_kv_int(&w, "new", now);
  json_object_end(&w);
  return true;
}

static bool cmd_set_max_memory(Session *s, int argc, char **argv, FxError *err) {
  if (argc != 2) return usage_error(s, err, 0, "usage: set max_memory BYTES (K, M, G suffixes: KiB, MiB, GiB; 0 = unlimited)", NULL);
  double v;
  if (!fx_parse_bytes(argv[1], &v)) return usage_error(s, err, 1, "max_memory needs a byte count", argv[1]);
  uint64_t old = rt_max_memory();
  rt_set_max_memory((uint64_t)v);
  char iec[32];
  fx_format_bytes(iec, sizeof iec, v, FX_BYTES_SHORT);
  if (s->json) return json_setting(s, "max_memory", (long long)old, (long long)rt_max_memory());
  if (v == 0) fprintf(s->out, "max_memory = 0 bytes (unlimited)\n");
  else if (v < 1024) fprintf(s->out, "max_memory = %llu bytes\n", (unsigned long long)v);
  else fprintf(s->out, "max_memory = %llu bytes (%s)\n", (unsigned long long)v, iec);
  return true;
}

static bool cmd_set_threads(Session *s, int argc, char **argv, FxError *err) {
  if (argc != 2) return usage_error(s, err, 0, "usage: set threads N (0 = every core)", NULL);
  char *e;
  errno = 0;
  long v = strtol(argv[1], &e, 10);
  if (errno || *e || e == argv[1] || v < 0 || v > 64) return usage_error(s, err, 1, "threads needs a count from 0 to 64", argv[1]);
  int old = cpu_default_threads();
  cpu_set_default_threads((int)v);
  if (s->json) return json_setting(s, "threads", old, cpu_default_threads());
  fprintf(s->out, "threads = %d%s: kernels of at least %d elements, or that took %.0f us on one thread, split over them\n",
          cpu_default_threads(), v == 0 ? " (every core)" : "", CPU_PARALLEL_MIN, CPU_PARALLEL_MIN_NS / 1e3);
  return true;
}

static bool cmd_set_vecmath(Session *s, int argc, char **argv, FxError *err) {
  if (argc != 2 || (strcmp(argv[1], "sleef") != 0 && strcmp(argv[1], "libm") != 0))
    return usage_error(s, err, argc == 2 ? 1 : 0, "usage: set vecmath sleef|libm", argc == 2 ? argv[1] : NULL);
  bool was = cpu_vecmath_is_sleef();
  cpu_set_default_vecmath(strcmp(argv[1], "sleef") == 0);
  char d[300];
  cpu_vecmath_describe(d, sizeof d);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "setting", "vecmath");
    json_kv_str(&w, "old", was ? "sleef" : "libm");
    json_kv_str(&w, "new", cpu_vecmath_is_sleef() ? "sleef" : "libm");
    json_kv_str(&w, "detail", d);
    json_object_end(&w);
    return true;
  }
  fprintf(s->out, "vector math: %s\n", d);
  return true;
}

const ReplCommand repl_cmds_run[] = {
    {"run", "run [--backend interp|cpu|gpu|auto] [--stage S] [--input NAME=FILE.npy] [--uniform PATTERN=LO:HI] [--seed N] [--repeat N] [--check] [--save NAME=FILE.npy]",
     "run a stage and show its outputs, kernels, bytes and time",
     "Runs the current stage (or --stage S) on a backend: interp (the reference interpreter), cpu (kernels\n"
     "generated as C and compiled natively), gpu, or auto (gpu when present, else cpu). Inputs are seeded\n"
     "random data (floats in [-1, 1), integers in [0, 16)) unless --input NAME=FILE.npy gives a\n"
     "parameter's values; --uniform PATTERN=LO:HI draws the floats of the parameters whose name matches\n"
     "the shell pattern from [LO, HI) instead (the first matching rule wins). Prints each output's shape,\n"
     "min, max, mean and first values, then kernels launched, bytes moved and the median time of\n"
     "--repeat runs, and the kernel plan's launches, bytes and estimated time for the device profile.\n"
     "--check runs the same stage on the same inputs in the reference interpreter and compares every\n"
     "output (exact for integers, relative 1e-5 for f32): it checks the backend's kernels, and fails\n"
     "with the worst element; on the CPU with SLEEF, a stage that differs runs again with libm, and\n"
     "agreement then is reported as SLEEF's rounding, not a failure. Whether the passes kept the\n"
     "program's meaning: `compare 0 S` says when two stages' outputs differ.\n"
     "--save out=FILE.npy (out.0, out.1 for tuple results) writes outputs.",
     cmd_run},
    {"profile", "profile [--trace FILE.json] [run options]", "per-kernel launches, time, bytes and GB/s of a stage",
     "Runs the stage like `run` and prints, per kernel: how it ran (generated, blas, interpreter),\n"
     "launches, total and mean time, bytes, achieved GB/s and the instructions it holds. --trace writes\n"
     "Chrome trace-event JSON that Perfetto opens.",
     cmd_profile},
    {"compare", "compare STAGE_A STAGE_B [run options]", "two stages' kernels, bytes and measured time side by side",
     "Runs both stages on the same inputs (same backend, seed and repeats) and prints kernels launched,\n"
     "bytes read and written and the median time of each, then the speedup, and a note when their\n"
     "outputs differ beyond --check's tolerance. `run --stages A,B` is the same.",
     cmd_compare},
    {"set-max_memory", "set max_memory BYTES", NULL,
     "set max_memory BYTES\n  The most memory `run` may allocate for tensors (K, M, G suffixes are KiB, MiB, GiB; 0 is\n"
     "  unlimited; the default is three quarters of the machine's memory). A run that would need more\n"
     "  stops with an error instead of swapping.",
     cmd_set_max_memory},
    {"set-threads", "set threads N", NULL,
     "set threads N\n  How many threads the CPU backend splits a large kernel over (its outer loop, for kernels of\n"
     "  at least 262,144 elements or whose last launch took 20 us on one thread); 0, the default, is\n"
     "  every online core.",
     cmd_set_threads},
    {"set-vecmath", "set vecmath sleef|libm", NULL,
     "set vecmath sleef|libm\n  The math the CPU backend's generated kernels call. sleef (the default): SLEEF's vector\n"
     "  functions (libsleef-dev) let the C compiler vectorize elementwise loops that call sin, cos, exp,\n"
     "  log, tanh, ... at the widest SIMD the machine has; results are within 1 ulp of libm's, inside\n"
     "  --check's tolerance, not bit for bit the interpreter's. libm: scalar calls, as the interpreter\n"
     "  makes them. Without SLEEF installed the kernels use libm and `run` says so.",
     cmd_set_vecmath},
    {0},
};
