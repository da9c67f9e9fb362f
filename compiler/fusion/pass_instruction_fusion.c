/* pass_instruction_fusion.c — XLA's instruction-fusion, run twice in the classic pipeline: first
 * without duplication, then allowing a cheap producer to be duplicated into several consumers.
 *
 * The walk is XLA's: for each computation holding sequential code (the entry, loop bodies and
 * conditions, called computations), consumers in reverse post-order (from the root back); for
 * each consumer its operands in order of decreasing position; the first operand the rules
 * accept is fused, and the consumer (now a fusion) is looked at again. Every candidate is
 * reported: accepted ones with the fusion they went into, refused ones with the reason of the
 * last evaluation (a producer refused while the consumer was a plain instruction may be accepted
 * once it is a fusion, and then only the acceptance is reported). A consumer that never fuses
 * (the loop's tuple, a library call) reports one refusal per computed operand: those are the
 * kernel boundaries `why` explains. */
#include <string.h>

#include "fusion_build.h"
#include "fusion_rules.h"
#include "../passes/passes.h"

typedef struct {
  IrInstr *producer;
  const char *consumer_label;
  FusionVerdict v;
} Pending;

/* Whether a producer is worth talking about: parameters, get-tuple-elements, tuples and
 * constants that are not scalars are just memory, never candidates. */
static bool is_candidate_producer(const IrInstr *p) {
  switch (p->op) {
  case IR_OP_PARAMETER:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_TUPLE:
  case IR_OP_AFTER_ALL:
  case IR_OP_PARTITION_ID:
  case IR_OP_REPLICA_ID: return false;
  default: return true;
  }
}

/* The instruction inside consumer (a fusion) that reads producer, for the decision record: users
 * ask `why concatenate.12 select.5`, not about fusion.3. */
const char *fusion_consumer_label(const IrInstr *consumer, const IrInstr *producer) {
  IrComputation *fc = ir_fused_computation(consumer);
  if (!fc) return consumer->name;
  for (int k = 0; k < consumer->noperands && k < fc->nparams; k++)
    if (consumer->operands[k] == producer && fc->params[k] && fc->params[k]->nusers > 0)
      return fc->params[k]->users[0]->name;
  return consumer->name;
}

/* Producers that cannot go into all of their users (XLA's global analysis before the duplicating
 * run): the first user that refuses, per producer id. */
static IrInstr **unfusible_users(IrComputation *c, const PassContext *cx) {
  IrModule *m = c->module;
  IrInstr **bad = fx_calloc((size_t)m->next_id + 1, sizeof(IrInstr *));
  if (!bad) return NULL;
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *p = c->instrs[k];
    if (p->nusers < 2 || !is_candidate_producer(p)) continue;
    for (int u = 0; u < p->nusers; u++) {
      FusionVerdict v;
      memset(&v, 0, sizeof v);
      if (!fusion_check_consumer(p->users[u], cx, &v)) {
        bad[p->id] = p->users[u];
        break;
      }
    }
  }
  return bad;
}

/* Kind refusals (not_fusible, custom_call: a tuple, a library call) never change from one run to
 * the next, so only the first run reports them; `first` says whether this is that run. */
static bool kind_reason(const FusionVerdict *v) {
  return v->reason && (strcmp(v->reason, FR_NOT_FUSIBLE) == 0 || strcmp(v->reason, FR_CUSTOM_CALL) == 0);
}

static bool fuse_computation(IrComputation *c, PassContext *cx, bool may_dup, bool first, int *nfused) {
  IrModule *m = c->module;
  int n = c->ninstrs;
  IrInstr **order = fx_malloc(sizeof(IrInstr *) * (size_t)(n ? n : 1));
  if (!order) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  memcpy(order, c->instrs, sizeof(IrInstr *) * (size_t)n);
  IrInstr **bad = may_dup ? unfusible_users(c, cx) : NULL;
  if (may_dup && !bad) {
    fx_free(order);
    return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  }
  int maxid = m->next_id;
  /* Each instruction's place in c, as a key that keeps its order: its index at the start, and
   * for a fusion made here its consumer's (fusion_wrap puts the fusion where the consumer was,
   * and moving or removing instructions keeps the others' order). Sorting the operands by key
   * gives the order a scan of c->instrs would, without the scan (which made the pass quadratic). */
  int nkey = maxid + 1;
  int *key = fx_malloc(sizeof(int) * (size_t)nkey);
  if (!key) {
    fx_free(bad);
    fx_free(order);
    return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  }
  for (int j = 0; j < nkey; j++) key[j] = -1;
  for (int j = 0; j < n; j++)
    if (order[j]->id >= 0 && order[j]->id < nkey) key[order[j]->id] = j;
  Pending *pend = NULL;
  int npend = 0, cappend = 0;
  bool ok = true;
  for (int k = n - 1; k >= 0 && ok && !pass_interrupted(cx); k--) {
    IrInstr *consumer = order[k];
    if (consumer->dead || consumer->parent != c) continue;
    FusionVerdict kindv;
    memset(&kindv, 0, sizeof kindv);
    bool consumer_ok = fusion_check_consumer(consumer, cx, &kindv);
    if (!consumer_ok) {
      /* get-tuple-element and bitcast only name memory: no boundary worth reporting. */
      if (!first || consumer->op == IR_OP_GET_TUPLE_ELEMENT || consumer->op == IR_OP_BITCAST) continue;
      /* A boundary: one record per computed operand (fusions included). */
      for (int o = 0; o < consumer->noperands; o++) {
        IrInstr *p = consumer->operands[o];
        if (!p || !is_candidate_producer(p) || fusion_op_never_fuses(p->op)) continue;
        bool seen = false;
        for (int q = 0; q < o; q++) seen = seen || consumer->operands[q] == p;
        if (seen || (p->op == IR_OP_CONSTANT && ir_shape_elements(&p->shape) <= 1)) continue;
        fusion_verdict_emit(cx, "fuse", p->name, consumer->name, NULL, &kindv);
      }
      continue;
    }
    bool again = true;
    while (again && ok) {
      again = false;
      npend = 0;
      /* Operands by decreasing position in the computation. */
      IrInstr *ops[512];
      int nops = 0;
      for (int o = 0; o < consumer->noperands && nops < 512; o++) {
        IrInstr *p = consumer->operands[o];
        bool seen = false;
        for (int q = 0; q < nops; q++) seen = seen || ops[q] == p;
        if (!p || seen || !is_candidate_producer(p) || p->parent != c) continue;
        ops[nops++] = p;
      }
      /* Positions: the keys above (the same order as the index in c->instrs). */
      int pos[512];
      for (int q = 0; q < nops; q++) pos[q] = ops[q]->id >= 0 && ops[q]->id < nkey ? key[ops[q]->id] : -1;
      for (int a = 1; a < nops; a++)
        for (int b = a; b > 0 && pos[b] > pos[b - 1]; b--) {
          int tp = pos[b];
          pos[b] = pos[b - 1];
          pos[b - 1] = tp;
          IrInstr *ti = ops[b];
          ops[b] = ops[b - 1];
          ops[b - 1] = ti;
        }
      for (int q = 0; q < nops && !again; q++) {
        IrInstr *p = ops[q];
        /* A producer that is already a fusion belongs to fusion-merger. */
        if (p->op == IR_OP_FUSION) continue;
        FusionVerdict v;
        bool fuse = fusion_should_fuse(p, consumer, cx, may_dup ? FUSION_MODE_DUPLICATION : FUSION_MODE_NO_DUPLICATION, &v);
        if (fuse && may_dup && bad && p->id <= maxid && bad[p->id] && p->nusers > 1) {
          IrInstr *who = bad[p->id];
          fusion_refuse(&v, FR_CODE_DUPLICATION,
                        "%s has %d users and %s cannot take it, so it stays a kernel of its own anyway; "
                        "duplicating it into the others would only add work",
                        p->name, p->nusers, who->name);
          fusion_verdict_metric(&v, "users", p->nusers);
          fuse = false;
        }
        const char *label = fusion_consumer_label(consumer, p);
        if (fuse) {
          bool dup = p->nusers > 1;
          char pname[256], clabel[256];
          snprintf(pname, sizeof pname, "%s", p->name);
          snprintf(clabel, sizeof clabel, "%s", label);
          IrInstr *f = fusion_fuse(consumer, p);
          if (!f) {
            ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory fusing %s", cx->pass, pname);
            break;
          }
          if (f->id >= nkey) {
            int nn = f->id * 2 + 16;
            int *nk = fx_realloc(key, sizeof(int) * (size_t)nn);
            if (!nk) {
              ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
              break;
            }
            for (int j = nkey; j < nn; j++) nk[j] = -1;
            key = nk;
            nkey = nn;
          }
          if (f != consumer) key[f->id] = key[consumer->id];
          fusion_verdict_metric(&v, "kernel_instructions", fusion_body_size(f));
          fusion_verdict_emit(cx, dup ? "duplicate" : "fuse", pname, clabel, f->name, &v);
          (*nfused)++;
          consumer = f;
          again = true;
          break;
        }
        if (npend == cappend) {
          int nc = cappend ? cappend * 2 : 16;
          Pending *np = fx_realloc(pend, sizeof(Pending) * (size_t)nc);
          if (!np) {
            ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
            break;
          }
          pend = np;
          cappend = nc;
        }
        pend[npend].producer = p;
        pend[npend].consumer_label = label;
        pend[npend].v = v;
        npend++;
      }
    }
    for (int q = 0; q < npend && ok; q++)
      if (first || !kind_reason(&pend[q].v))
        fusion_verdict_emit(cx, "fuse", pend[q].producer->name, pend[q].consumer_label, NULL, &pend[q].v);
    npend = 0;
  }
  fx_free(pend);
  fx_free(key);
  fx_free(bad);
  fx_free(order);
  if (*nfused) ir_computation_sort(c);
  return ok;
}

/* Reports a pass switched off with `set pass NAME off`. */
bool fusion_pass_disabled(PassContext *cx, const char *name) {
  if (!pass_settings_is_disabled(cx->settings, name)) return false;
  FusionVerdict v;
  memset(&v, 0, sizeof v);
  fusion_refuse(&v, FR_POLICY, "%s is switched off, so it made no decisions", name);
  fusion_suggest(&v, "`set pass %s on` to run it again", name);
  fusion_verdict_emit(cx, "fuse", NULL, NULL, NULL, &v);
  return true;
}

/* The pass's runs in the classic pipeline. */
typedef enum {
  RUN_FIRST,       /* without duplication; the only run that reports why consumers take no fusion */
  RUN_DUPLICATING, /* duplicating cheap producers into each user */
  RUN_AGAIN,       /* the second round, without duplication */
} InstructionFusionRun;

static bool run(IrModule *m, PassContext *cx, bool *changed, InstructionFusionRun which) {
  bool may_dup = which == RUN_DUPLICATING, first = which == RUN_FIRST;
  *changed = false;
  if (fusion_pass_disabled(cx, "instruction-fusion")) return true;
  IrComputation *comps[1024];
  int n = fusion_control_computations(m, comps, 1024);
  int fused = 0;
  for (int k = 0; k < n; k++)
    if (!fuse_computation(comps[k], cx, may_dup, first, &fused)) return false;
  *changed = fused > 0;
  return true;
}

static bool run_first(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, RUN_FIRST); }
static bool run_dup(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, RUN_DUPLICATING); }
static bool run_again(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, RUN_AGAIN); }

const Pass pass_instruction_fusion = {
    "instruction-fusion",
    "fuse each producer into its consumer when the rules allow (no duplication: producers with one user)",
    run_first,
};

const Pass pass_instruction_fusion_dup = {
    "instruction-fusion",
    "fuse producers into consumers again, duplicating cheap producers into each of their users",
    run_dup,
};

const Pass pass_instruction_fusion_round2 = {
    "instruction-fusion",
    "second round of XLA's fixed-point fusion loop: instruction-fusion again on what the first round left",
    run_again,
};

const Pass pass_instruction_fusion_dup_round2 = {
    "instruction-fusion",
    "second round of XLA's fixed-point fusion loop: instruction-fusion again on what the first round left",
    run_dup,
};
