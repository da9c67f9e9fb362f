/* pass_fusion_merger.c — XLA's fusion-merger (2021): merge a loop fusion into all of its users, or
 * into none.
 *
 * Runs after the two instruction-fusion runs. For each loop fusion with users, in post-order, XLA's
 * FusionInstructionMerger::HandleFusion checks in its order: every user must be able to take it
 * (IsProducerConsumerFusible, not a bitcast; a user that is no fusion yet is wrapped in one, as
 * the reduce of WillMergeIntoUnfusedConsumer); the merged / current bytes transferred must stay at
 * most 1.10 (XLA's "merged-to-current-bytes-ratio"); an expensive body is merged only into a
 * single user that does not reuse its elements (or when merging moves far fewer bytes); no merge
 * may duplicate code beyond the limits (the paper's concatenate, which CodeDuplicationTooHigh kept
 * apart) or be too large. Every user's verdict is reported; a merge is reported once per user with
 * action "merge".
 *
 * XLA runs its fusion passes in a loop until nothing changes, so a fusion refused because it had
 * several readers is tried again once those readers have merged into one. Here the pass sweeps the
 * computation again after a sweep that merged something, revisiting only the fusions whose readers
 * a merge just changed, until a sweep merges nothing. A later sweep records the merges it makes
 * (with the metric "sweep"); a fusion it still cannot merge keeps its first sweep's refusal. */
#include <string.h>

#include "fusion_build.h"
#include "fusion_rules.h"
#include "../passes/passes.h"

#define MERGER_MAX_SWEEPS 32

/* The instructions a sweep's merges produced or grew: the next sweep revisits their producers. */
typedef struct {
  IrInstr **v;
  int n, cap;
} Touched;

static bool touched_add(Touched *t, IrInstr *i) {
  for (int k = 0; k < t->n; k++)
    if (t->v[k] == i) return true;
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 16;
    IrInstr **v = fx_realloc(t->v, sizeof(IrInstr *) * (size_t)cap);
    if (!v) return false;
    t->v = v;
    t->cap = cap;
  }
  t->v[t->n++] = i;
  return true;
}

static bool touched_has(const Touched *t, const IrInstr *i) {
  for (int k = 0; k < t->n; k++)
    if (t->v[k] == i) return true;
  return false;
}

/* Whether a reader of f (a user, or a user of one of its get-tuple-elements) is in t. */
static bool reader_touched(const IrInstr *f, const Touched *t) {
  for (int u = 0; u < f->nusers; u++) {
    const IrInstr *x = f->users[u];
    if (touched_has(t, x)) return true;
    if (x->op == IR_OP_GET_TUPLE_ELEMENT)
      for (int w = 0; w < x->nusers; w++)
        if (touched_has(t, x->users[w])) return true;
  }
  return false;
}

/* XLA's estimate of bytes a fusion moves now: it reads its operands, writes its result, and each
 * user reads the result again. */
static double current_bytes(const IrInstr *f) {
  return (double)fusion_bytes_read(f) + (double)fusion_bytes_written(f) * (double)(f->nusers + 1);
}

/* ... and once merged: every user reads the fusion's operands itself. */
static double merged_bytes(const IrInstr *f) { return (double)fusion_bytes_read(f) * (double)f->nusers; }

static const char *kib(double bytes, char *buf, size_t n) {
  fx_format_bytes(buf, n, bytes, FX_BYTES_MIB);
  return buf;
}

/* Evaluates one user (XLA 2021: IsProducerConsumerFusible and not a bitcast; a user that is not a
 * fusion yet is wrapped in one); fills v. */
static bool user_ok(const IrInstr *f, const IrInstr *u, const PassContext *cx, FusionVerdict *v) {
  if (u->op == IR_OP_BITCAST)
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a bitcast; fusion-merger does not merge into bitcasts", u->name);
  return fusion_producer_consumer_fusible(f, u, cx, v);
}

/* A multi-output fusion whose every output is read by one and the same fusion merges into it:
 * nothing need be written out (the multi-output fusion was made before its consumer could take
 * it; XLA's fixed-point loop gets there by merging before grouping). Returns whether it merged. */
static bool merge_outputs(IrInstr *f, PassContext *cx, int sweep, Touched *next, int *merged, bool *ok) {
  IrInstr *readers[16];
  int nr = 0;
  for (int u = 0; u < f->nusers; u++) {
    IrInstr *x = f->users[u];
    if (x->op != IR_OP_GET_TUPLE_ELEMENT || x->is_root) return false;
    for (int w = 0; w < x->nusers; w++) {
      IrInstr *r = x->users[w];
      bool seen = false;
      for (int q = 0; q < nr; q++) seen = seen || readers[q] == r;
      if (seen) continue;
      if (nr == 16 || r->op != IR_OP_FUSION || r->parent != f->parent) return false;
      readers[nr++] = r;
    }
  }
  if (nr == 0) return false;
  /* Bytes: now f reads its inputs and writes its outputs, which the readers read back; merged,
   * each reader reads f's inputs itself. */
  double cur = (double)fusion_bytes_read(f) + (double)fusion_bytes_written(f) * 2.0;
  double mer = (double)fusion_bytes_read(f) * (double)nr;
  double ratio = mer / (cur > 1.0 ? cur : 1.0);
  int nout = f->shape.type == IR_TUPLE ? f->shape.ntuple : 1;
  FusionVerdict v;
  for (int q = 0; q < nr; q++) {
    memset(&v, 0, sizeof v);
    fusion_verdict_metric(&v, "bytes_ratio", ratio);
    if (sweep > 1) fusion_verdict_metric(&v, "sweep", sweep);
    bool fine = fusion_check_consumer(readers[q], cx, &v) && fusion_check_too_large(f, readers[q], cx, FUSION_SIZE_MERGE, &v);
    if (fine && ratio > FUSION_MERGE_BYTES_RATIO) {
      char names[160] = "";
      size_t len = 0;
      for (int r = 0; r < nr && len + 40 < sizeof names; r++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", r ? ", " : "", readers[r]->name);
      fine = fusion_refuse(&v, FR_BYTES_INCREASE,
                           "merged-to-current-bytes-ratio of %.2f is not favorable: %s's %d outputs are read by %d "
                           "kernels (%s), and each would read its inputs again (limit %.2f)",
                           ratio, f->name, nout, nr, names, FUSION_MERGE_BYTES_RATIO);
    }
    if (!fine) {
      if (sweep == 1) fusion_verdict_emit(cx, "merge", f->name, readers[q]->name, NULL, &v);
      return false;
    }
  }
  char fname[256];
  snprintf(fname, sizeof fname, "%s", f->name);
  for (int q = 0; q < nr; q++) {
    char gname[256];
    snprintf(gname, sizeof gname, "%s", readers[q]->name);
    memset(&v, 0, sizeof v);
    fusion_verdict_metric(&v, "bytes_ratio", ratio);
    fusion_verdict_metric(&v, "outputs", nout);
    if (sweep > 1) fusion_verdict_metric(&v, "sweep", sweep);
    if (nr == 1)
      fusion_verdict_ok(&v,
                        "every output of %s is read by %s alone: merged into it, so its %d outputs are no longer "
                        "written out (merged-to-current-bytes-ratio %.2f)",
                        fname, gname, nout, ratio);
    else
      fusion_verdict_ok(&v,
                        "the %d outputs of %s are read only by %d kernels: merged into each, so they are no longer "
                        "written out (merged-to-current-bytes-ratio %.2f)",
                        nout, fname, nr, ratio);
    if (!fusion_merge_outputs(readers[q], f, q == nr - 1) || !touched_add(next, readers[q])) {
      *ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory merging %s", cx->pass, fname);
      return false;
    }
    fusion_verdict_emit(cx, "merge", fname, gname, gname, &v);
  }
  (*merged)++;
  return true;
}

/* One sweep over c in post-order. prev == NULL: every loop fusion; otherwise only those whose
 * readers prev holds. The merges' results go to next. */
static bool merge_computation(IrComputation *c, PassContext *cx, int sweep, const Touched *prev, Touched *next,
                              int *merged) {
  int n = c->ninstrs;
  IrInstr **order = fx_malloc(sizeof(IrInstr *) * (size_t)(n ? n : 1));
  if (!order) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  memcpy(order, c->instrs, sizeof(IrInstr *) * (size_t)n);
  bool ok = true;
  for (int k = 0; k < n && ok && !pass_interrupted(cx); k++) {
    IrInstr *f = order[k];
    if (f->dead || f->parent != c || f->op != IR_OP_FUSION || f->nusers == 0) continue;
    const char *kind = ir_fusion_kind(f);
    if (!kind || strcmp(kind, "kLoop") != 0) continue;
    IrComputation *fc = ir_fused_computation(f);
    if (!fc || !fc->root) continue;
    if (prev && !reader_touched(f, prev)) continue;
    if (fc->root->op == IR_OP_TUPLE) {
      merge_outputs(f, cx, sweep, next, merged, &ok);
      continue;
    }
    int nu = f->nusers;
    /* Every user's verdict, XLA's order: kinds, expensive, bytes, size, duplication. */
    IrInstr **users = fx_malloc(sizeof(IrInstr *) * (size_t)nu);
    FusionVerdict *vs = fx_calloc((size_t)nu, sizeof(FusionVerdict));
    char (*labels)[128] = fx_calloc((size_t)nu, 128);
    if (!users || !vs || !labels) {
      fx_free(users);
      fx_free(vs);
      fx_free(labels);
      ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
      break;
    }
    memcpy(users, f->users, sizeof(IrInstr *) * (size_t)nu);
    bool all = true;
    double cur = current_bytes(f), mer = merged_bytes(f);
    double ratio = mer / (cur > 1.0 ? cur : 1.0);
    const IrInstr *exp = fusion_expensive_member(f, cx->settings);
    char b1[32], b2[32];
    for (int u = 0; u < nu; u++) {
      FusionVerdict *v = &vs[u];
      memset(v, 0, sizeof *v);
      fusion_verdict_metric(v, "users", nu);
      fusion_verdict_metric(v, "bytes_ratio", ratio);
      if (sweep > 1) fusion_verdict_metric(v, "sweep", sweep);
      if (!user_ok(f, users[u], cx, v)) {
        all = false;
        continue;
      }
      if (ratio > FUSION_MERGE_BYTES_RATIO) {
        fusion_verdict_metric(v, "limit", FUSION_MERGE_BYTES_RATIO);
        fusion_refuse(v, FR_BYTES_INCREASE,
                      "merged-to-current-bytes-ratio of %.2f is not favorable: merging %s into its %d %s would "
                      "move %s instead of %s (limit %.2f)",
                      ratio, f->name, nu, nu == 1 ? "user" : "users", kib(mer, b1, sizeof b1),
                      kib(cur, b2, sizeof b2), FUSION_MERGE_BYTES_RATIO);
        all = false;
        continue;
      }
      if (exp) {
        double times = 1;
        bool reuse = false;
        for (int o = 0; o < users[u]->noperands; o++)
          if (users[u]->operands[o] == f && fusion_reuses_operand(users[u], o, &times)) reuse = true;
        bool cheap_enough = nu == 1 || (ratio < 0.3 && cur > 1024);
        if (reuse) {
          fusion_verdict_metric(v, "reuse", times);
          if (times > 1)
            fusion_refuse(v, FR_EXPENSIVE_REUSE,
                          "%s holds an expensive %s (%s) and %s reads each of its elements %.0f times; merged, it "
                          "would be recomputed for every read",
                          f->name, ir_op_name(exp->op), exp->name, users[u]->name, times);
          else
            fusion_refuse(v, FR_EXPENSIVE_REUSE,
                          "%s holds an expensive %s (%s) and %s reuses its elements (XLA's OperandElementUse); "
                          "merged, it would be recomputed for every use",
                          f->name, ir_op_name(exp->op), exp->name, users[u]->name);
          fusion_suggest(v, "if %s is cheap on your device, `set expensive %s off`", ir_op_name(exp->op),
                         ir_op_name(exp->op));
          all = false;
          continue;
        }
        if (!cheap_enough) {
          fusion_refuse(v, FR_EXPENSIVE_DUPLICATION,
                        "%s holds an expensive %s (%s) and has %d users; merging would compute it in each of them",
                        f->name, ir_op_name(exp->op), exp->name, nu);
          fusion_suggest(v, "if %s is cheap on your device, `set expensive %s off`", ir_op_name(exp->op),
                         ir_op_name(exp->op));
          all = false;
          continue;
        }
      }
      if (!fusion_check_code_duplication(f, users[u], cx, v)) {
        all = false;
        continue;
      }
      if (!fusion_check_too_large(f, users[u], cx, FUSION_SIZE_MERGE, v)) {
        all = false;
        continue;
      }
      /* The header names the fused root; the sentence names both, so the two agree. */
      if (strcmp(f->name, fc->root->name) != 0)
        fusion_verdict_ok(v, "%s (the fusion ending in %s) merges into %s (merged-to-current-bytes-ratio %.2f)",
                          f->name, fc->root->name, users[u]->name, ratio);
      else
        fusion_verdict_ok(v, "%s merges into %s (merged-to-current-bytes-ratio %.2f)", f->name, users[u]->name, ratio);
    }
    char fname[256], plabel[256], flabel[600];
    snprintf(fname, sizeof fname, "%s", f->name);
    snprintf(flabel, sizeof flabel, strcmp(f->name, fc->root->name) != 0 ? "%s (the fusion ending in %s)" : "%s",
             f->name, fc->root->name);
    /* Decisions name the fused root (`why new_state` finds them); the detail names the fusion. */
    snprintf(plabel, sizeof plabel, "%s", fc->root->name);
    if (!all) {
      /* A user that can never take a fusion (a tuple, a library call) was reported by
       * instruction-fusion; here the users that could take it say why they do not. */
      const char *blocker = NULL;
      for (int u = 0; u < nu && !blocker; u++)
        if (!vs[u].ok && vs[u].reason &&
            (strcmp(vs[u].reason, FR_NOT_FUSIBLE) == 0 || strcmp(vs[u].reason, FR_CUSTOM_CALL) == 0) &&
            (users[u]->op != IR_OP_FUSION))
          blocker = users[u]->name;
      for (int u = 0; u < nu; u++) {
        if (vs[u].ok && blocker)
          fusion_refuse(&vs[u], FR_CODE_DUPLICATION,
                        "%s could merge into %s but not into %s, and fusion-merger merges a fusion into all of "
                        "its users or none",
                        flabel, fusion_consumer_label(users[u], f), blocker);
        if (vs[u].ok) continue;
        if (blocker && strcmp(users[u]->name, blocker) == 0) continue;
        if (blocker && vs[u].reason && strcmp(vs[u].reason, FR_NOT_FUSIBLE) == 0 && users[u]->op != IR_OP_FUSION &&
            fusion_op_never_fuses(users[u]->op))
          continue;
        size_t len = strlen(vs[u].detail);
        if (nu > 1 && len + 60 < sizeof vs[u].detail)
          snprintf(vs[u].detail + len, sizeof vs[u].detail - len, "; so %s is merged into none of its %d users",
                   fname, nu);
        if (sweep == 1) fusion_verdict_emit(cx, "merge", plabel, fusion_consumer_label(users[u], f), NULL, &vs[u]);
      }
      fx_free(users);
      fx_free(vs);
      fx_free(labels);
      continue;
    }
    for (int u = 0; u < nu; u++) snprintf(labels[u], sizeof labels[u], "%s", fusion_consumer_label(users[u], f));
    for (int u = 0; u < nu && ok; u++) {
      IrInstr *g = fusion_fuse(users[u], f);
      if (!g || !touched_add(next, g)) {
        ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory merging %s", cx->pass, fname);
        break;
      }
      fusion_verdict_emit(cx, "merge", plabel, labels[u], g->name, &vs[u]);
    }
    fx_free(users);
    fx_free(vs);
    fx_free(labels);
    (*merged)++;
  }
  fx_free(order);
  if (*merged) ir_computation_sort(c);
  return ok;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (fusion_pass_disabled(cx, "fusion-merger")) return true;
  IrComputation *comps[1024];
  int n = fusion_control_computations(m, comps, 1024);
  int merged = 0;
  bool ok = true;
  Touched prev = {0}, next = {0};
  for (int sweep = 1; sweep <= MERGER_MAX_SWEEPS && ok; sweep++) {
    int before = merged;
    next.n = 0;
    for (int k = 0; k < n && ok; k++) ok = merge_computation(comps[k], cx, sweep, sweep > 1 ? &prev : NULL, &next, &merged);
    if (merged == before) break;
    Touched t = prev;
    prev = next;
    next = t;
  }
  fx_free(prev.v);
  fx_free(next.v);
  *changed = merged > 0;
  return ok;
}

const Pass pass_fusion_merger = {
    "fusion-merger",
    "merge a loop fusion into all of its users, or none (bytes, duplication and size permitting)",
    run,
};

const Pass pass_fusion_merger_round2 = {
    "fusion-merger",
    "second round of XLA's fixed-point fusion loop: fusion-merger again on what the first round left",
    run,
};
