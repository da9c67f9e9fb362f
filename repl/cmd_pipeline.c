/* cmd_pipeline.c — the pipeline commands: choosing a pipeline, moving through its stages, and
 * asking what each pass did.
 *
 *   pipeline [NAME]          show or choose the pipeline (choosing goes back to stage 0)
 *   passes [--changed]       the pipeline as a table of stages and their numbers
 *   step [N | PASS | all]    run (or revisit) the next stages
 *   back [N], goto STAGE     move through the stages already run (goto runs what is missing)
 *   stage                    where we are
 *   diff [A [B]]             what changed between two stages
 *   why NAME [NAME]          everything recorded about an instruction, or about a pair
 *   decisions [filters]      the decision log
 *   kernels                  the kernel plan of the current stage
 *   show stats               instructions, kernels, bytes and time of the current stage
 *
 * Each command parses its words, asks the engine (explain/engine.h: the stages, the pipeline run,
 * the decision log, the plans) and prints its answer through explain/format.h. Stage 0 is the
 * input; stage k is the module after the pipeline's pass k-1; moving back and forth never re-runs
 * a pass, so every way of reaching a stage shows the same contents. */
#include <stdlib.h>
#include <string.h>

#include "../compiler/hlo/hlo.h"
#include "../compiler/plan/plan.h"
#include "../explain/explain.h"
#include "../explain/format.h"
#include "args.h"
#include "../explain/json.h"
#include "repl.h"
#include "session.h"

/* ---------- stages ---------- */

/* A stage number, or a pass name meaning its first stage (the engine reads the word). */
static bool parse_stage(Session *s, const char *w, int argi, int *out, FxError *err) {
  char why[300];
  if (explain_engine_stage_word(&s->eng, w, out, why, sizeof why)) return true;
  return repl_arg_error(s, err, argi, "%s", why);
}

/* ---------- pipeline, step, back, goto, stage ---------- */

static bool cmd_pipeline(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 0, 1, err)) return false;
  if (argc == 2) {
    const Pipeline *pl = explain_engine_find_pipeline(&s->eng, argv[1]);
    if (!pl) {
      char names[256] = "";
      for (int k = 0; k < pipeline_count(); k++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", pipeline_at(k)->name);
      return repl_arg_error(s, err, 1, "no pipeline named '%s' (pipelines: %s)", argv[1], names);
    }
    explain_engine_set_pipeline(&s->eng, pl);
  }
  ExplainOut o = repl_out(s);
  explain_show_pipeline(&o, &s->eng);
  return true;
}

/* Moves to stage target one stage at a time, printing a line per stage (text) or an array of
 * moves (JSON). */
static bool step_to(Session *s, int target, FxError *err) {
  ExplainOut o = repl_out(s);
  JsonWriter w;
  if (s->json) {
    json_init(&w, s->out);
    json_array_begin(&w);
  }
  bool ok = true;
  while (s->eng.cur < target) {
    if (!explain_engine_ensure(&s->eng, s->eng.cur + 1, err)) {
      ok = false;
      break;
    }
    s->eng.cur++;
    if (!explain_show_move(&o, &s->eng, s->eng.cur, s->json ? &w : NULL, err)) {
      ok = false;
      break;
    }
  }
  if (s->json) json_array_end(&w);
  return ok;
}

static bool cmd_step(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 1, err)) return false;
  int target;
  bool clamped;
  char why[300];
  if (!explain_engine_step_target(&s->eng, argc == 2 ? argv[1] : NULL, &target, &clamped, why, sizeof why))
    return repl_arg_error(s, err, 1, "%s", why);
  if (s->eng.cur >= explain_engine_last_stage(&s->eng))
    return repl_arg_error(s, err, 0, "already at the last stage (%d) of the %s pipeline", s->eng.cur, explain_engine_pipeline(&s->eng)->name);
  int from = s->eng.cur;
  if (!step_to(s, target, err)) return false;
  /* A count past the end stops at the last stage, and says so (as back does at stage 0). */
  if (clamped && !s->json)
    fprintf(s->out, "(step %s: only %d stage%s after stage %d; stopped at the last stage, %d)\n", argv[1],
            explain_engine_last_stage(&s->eng) - from, explain_engine_last_stage(&s->eng) - from == 1 ? "" : "s", from, target);
  return true;
}

static bool cmd_back(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 1, err)) return false;
  int target;
  bool clamped;
  char why[300];
  if (!explain_engine_back_target(&s->eng, argc == 2 ? argv[1] : NULL, &target, &clamped, why, sizeof why))
    return repl_arg_error(s, err, 1, "%s", why);
  if (s->eng.cur == 0) return repl_arg_error(s, err, 0, "already at stage 0 (the input)");
  int from = s->eng.cur;
  s->eng.cur = target;
  ExplainOut o = repl_out(s);
  if (!explain_show_move(&o, &s->eng, s->eng.cur, NULL, err)) return false;
  /* A count past the input stops at stage 0, and says so (goto, an absolute stage, refuses one
   * that does not exist). */
  if (clamped && !s->json)
    fprintf(s->out, "(back %s: only %d stage%s before stage %d; stopped at stage 0, the input)\n", argv[1], from,
            from == 1 ? "" : "s", from);
  return true;
}

static bool cmd_goto(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 1, 1, err)) return false;
  int target;
  if (!parse_stage(s, argv[1], 1, &target, err)) return false;
  if (!explain_engine_ensure(&s->eng, target, err)) return false;
  s->eng.cur = target;
  ExplainOut o = repl_out(s);
  return explain_show_move(&o, &s->eng, target, NULL, err);
}

static bool cmd_stage(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 0, err)) return false;
  ExplainOut o = repl_out(s);
  return explain_show_stage(&o, &s->eng, err);
}

/* ---------- passes ---------- */

static bool cmd_passes(Session *s, int argc, char **argv, FxError *err) {
  bool only_changed = false;
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--changed") == 0) only_changed = true;
    else return repl_arg_error(s, err, k, "unknown option '%s' (usage: passes [--changed])", argv[k]);
  }
  if (!repl_need_input(s, err)) return false;
  ExplainOut o = repl_out(s);
  return explain_show_passes(&o, &s->eng, only_changed, err);
}

/* ---------- diff ---------- */

static bool stage_run(Session *s, const char *w, int argi, int *out, FxError *err) {
  if (!parse_stage(s, w, argi, out, err)) return false;
  if (*out >= s->eng.nstages)
    return repl_arg_error(s, err, argi, "stage %d has not been run yet (step or goto %d first)", *out, *out);
  return true;
}

static bool cmd_diff(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 2, err)) return false;
  int a, b;
  if (argc == 1) {
    if (s->eng.cur == 0) return repl_arg_error(s, err, 0, "at stage 0 (the input) there is no pass to compare: step first, or diff A B");
    a = s->eng.cur - 1;
    b = s->eng.cur;
  } else if (argc == 2) {
    if (!stage_run(s, argv[1], 1, &a, err)) return false;
    b = s->eng.cur;
    if (a == b) {
      if (a == 0) return repl_arg_error(s, err, 0, "stage 0 is the input: give two stages to compare");
      a = b - 1;
    }
  } else {
    if (!stage_run(s, argv[1], 1, &a, err) || !stage_run(s, argv[2], 2, &b, err)) return false;
  }
  ExplainOut o = repl_out(s);
  return explain_show_diff(&o, &s->eng, a, b, err);
}

/* ---------- why ---------- */

static bool cmd_why(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 1, 2, err)) return false;
  const char *a = argv[1][0] == '%' ? argv[1] + 1 : argv[1];
  const char *b = argc == 2 ? NULL : argv[2][0] == '%' ? argv[2] + 1 : argv[2];
  ExplainOut o = repl_out(s);
  int unknown = 0;
  bool ok = b ? explain_show_why_pair(&o, &s->eng, a, b, &unknown, err) : explain_show_why_one(&o, &s->eng, a, &unknown, err);
  if (unknown) {
    const char *name = unknown == 1 ? a : b, *near = repl_nearest_instruction(s, name);
    if (near) return repl_arg_error(s, err, unknown, "no instruction named '%s' at any stage (did you mean '%s'?)", name, near);
    return repl_arg_error(s, err, unknown, "no instruction named '%s' at any stage", name);
  }
  if (!ok) return false;
  repl_xla_source_note(s, a, b); /* where they came from in the user's program, when XLA said */
  return true;
}

/* ---------- decisions ---------- */

static bool cmd_decisions(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  ExplainFilter f;
  explain_filter_init(&f);
  f.max_stage = s->eng.nstages - 1;
  for (int k = 1; k < argc; k++) {
    const char *o = argv[k];
    if (strcmp(o, "--rejected") == 0) f.verdict = 0;
    else if (strcmp(o, "--accepted") == 0) f.verdict = 1;
    else if (strcmp(o, "--reason") == 0 || strcmp(o, "--pass") == 0 || strcmp(o, "--stage") == 0) {
      if (k + 1 >= argc) return repl_arg_error(s, err, argc, "%s needs a value", o);
      const char *v = argv[++k];
      if (strcmp(o, "--reason") == 0) {
        if (!explain_reason_meaning(v)) {
          char codes[600] = "";
          for (int r = 0; r < explain_reason_count(); r++)
            snprintf(codes + strlen(codes), sizeof codes - strlen(codes), "%s%s", r ? ", " : "", explain_reason_code(r));
          return repl_arg_error(s, err, k, "unknown reason code '%s' (codes: %s)", v, codes);
        }
        f.reason = v;
      } else if (strcmp(o, "--pass") == 0) {
        if (!pass_lookup(v)) return repl_arg_error(s, err, k, "no pass named '%s'", v);
        f.pass = v;
      } else {
        int st;
        if (!parse_stage(s, v, k, &st, err)) return false;
        f.stage = st;
      }
    } else {
      return repl_arg_error(s, err, k, "unknown option '%s' (usage: decisions [--rejected | --accepted] [--reason CODE] "
                       "[--pass NAME] [--stage S])", o);
    }
  }
  ExplainOut o = repl_out(s);
  return explain_show_decisions(&o, &s->eng, &f, err);
}

/* ---------- kernels and stats ---------- */

static bool cmd_kernels(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  /* kernels --source / --resources: the GPU views (cmd_gpu.c). */
  if (argc >= 2 && (strcmp(argv[1], "--source") == 0 || strcmp(argv[1], "--resources") == 0)) {
    const ReplCommand *v = repl_command_lookup(argv[1][2] == 's' ? "kernels-source" : "kernels-resources");
    if (v) return v->run(s, argc - 1, argv + 1, err);
  }
  bool buffers = argc >= 2 && strcmp(argv[1], "--buffers") == 0;
  if (!repl_check_argc(s, argc, argv, 0, buffers ? 1 : 0, err)) return false;
  ExplainOut o = repl_out(s);
  return explain_show_kernels(&o, &s->eng, buffers, err);
}

static bool cmd_show_stats(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 0, err)) return false;
  ExplainOut o = repl_out(s);
  return explain_show_stats(&o, &s->eng, err);
}

const ReplCommand repl_cmds_pipeline[] = {
    {"pipeline", "pipeline [NAME]", "show or choose the pass pipeline (classic, priority)",
     "pipeline            shows the chosen pipeline, its passes and where we are.\n"
     "pipeline NAME       chooses a pipeline (classic: XLA's rule-based fusion as the paper describes it;\n"
     "                    priority: today's cost-model-driven fusion) and goes back to stage 0.",
     cmd_pipeline},
    {"passes", "passes [--changed]", "the pipeline's stages: changed?, instructions, kernels, bytes, time",
     "passes              one row per stage: the pass, whether it changed the module, instructions,\n"
     "                    kernels, launches per execution, bytes moved and estimated time on the\n"
     "                    device profile. Stages not run yet are listed as such.\n"
     "passes --changed    only the stages that changed the module (and the input), and how many\n"
     "                    stages it hid: those whose pass changed nothing and those not run yet.\n"
     "With --json: one object per stage {stage, pass, changed, instructions, kernels, bytes, est_us}.",
     cmd_passes},
    {"step", "step [N | PASS | all]", "run the next pass (or N, up to PASS, or all)",
     "step                runs the next pass and shows what it did:\n"
     "                    \"stage 4  instruction-fusion: 14 fused, 3 rejected -> 6 kernels\".\n"
     "step N              N passes; step PASS: up to the next stage made by PASS; step all: to the end.\n"
     "Stages already run (after back) are revisited, not run again.",
     cmd_step},
    {"back", "back [N]", "go back one stage (or N)", "back [N]            moves back N stages (default 1); nothing is lost.",
     cmd_back},
    {"goto", "goto STAGE", "go to a stage by number or pass name",
     "goto STAGE          moves to stage STAGE (a number, or a pass name for its first stage), running\n"
     "                    the passes up to it when they have not run yet.",
     cmd_goto},
    {"stage", "stage", "where we are in the pipeline",
     "stage               the current stage: its number, the pass that made it, its instructions and\n"
     "                    kernels, and the pass the next `step` runs.",
     cmd_stage},
    {"diff", "diff [A [B]]", "what changed between two stages",
     "diff                what the last pass changed (the previous stage against the current one).\n"
     "diff A              stage A against the current stage (A-1 against A when A is the current one).\n"
     "diff A B            stage A against stage B.\n"
     "Lists instructions fused (and into which fusion), added, removed and rewritten.",
     cmd_diff},
    {"why", "why NAME [NAME]", "why an instruction is where it is, or why two are in different kernels",
     "why NAME            where NAME is at the current stage (which kernel it runs in; a name a pass\n"
     "                    removed is followed to what it became) and every decision any pass made\n"
     "                    about it, with reason, numbers and suggestion; identical decisions (clones,\n"
     "                    re-runs) are listed once with their count.\n"
     "why A B             where A and B (instructions or kernels) are split at the current stage: every\n"
     "                    kernel boundary on the paths between their kernels, either direction, with\n"
     "                    the value written to memory there and the decision that kept it there\n"
     "                    (reason, numbers, suggestion; the other decisions between the two kernels\n"
     "                    one line each); or that they are independent siblings, already in one kernel\n"
     "                    (and the decision that joined them), or why no pass decided (none has run, a\n"
     "                    library kernel fusion never opens, loop control, a parameter, ...).\n"
     "Each decision is listed with its number #N: `render --decision N` draws it, and `show graph`\n"
     "tags each value crossing kernels with the #N that kept it in memory.",
     cmd_why},
    {"decisions", "decisions [--rejected | --accepted] [--reason CODE] [--pass NAME] [--stage S]",
     "the decision log, filtered",
     "decisions           every decision recorded for the stages run so far, each with its number #N\n"
     "                    (`render --decision N` draws it).\n"
     "  --rejected / --accepted   only one verdict\n"
     "  --reason CODE             only one reason code (not_fusible, code_duplication, ...)\n"
     "  --pass NAME               only one pass\n"
     "  --stage S                 only one stage (a number or a pass name)",
     cmd_decisions},
    {"kernels", "kernels [--buffers | --source [INSTRUCTION] | --resources]", "the kernel plan of the current stage",
     "kernels             each kernel of the current stage: kind (loop, input, output, library,\n"
     "                    control), launches per execution, member instructions, inputs, outputs,\n"
     "                    bytes read and written and estimated time per launch.\n"
     "kernels --buffers   the buffers that cross kernel boundaries: size, computation, last reader,\n"
     "                    the memory slot each is assigned and whose dead memory it reuses (a\n"
     "                    buffer whose last reader has run holds a later output of the same or\n"
     "                    smaller size); live-out buffers go to the caller and take fresh memory.\n"
     "kernels --source [INSTRUCTION]\n"
     "                    the kernels' CUDA C, as NVRTC compiles it (one kernel with INSTRUCTION).\n"
     "kernels --resources\n"
     "                    ptxas' figures per kernel: registers, spills, shared memory, stack,\n"
     "                    block size and occupancy on the device profile (no GPU needed).",
     cmd_kernels},
    {"show-stats", "show stats", NULL,
     "show stats\n  The current stage in numbers: instructions, kernels and launches, bytes read and written,\n"
     "  and the estimated time on the device profile; then the memory the stages hold: their\n"
     "  snapshots (a pass that changed nothing shares the previous one, and a new one shares the\n"
     "  names, shapes and literals it did not change), their name indexes and the decision log.",
     cmd_show_stats},
    {0},
};
