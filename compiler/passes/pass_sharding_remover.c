/* pass_sharding_remover.c — sharding-remover: the sharding annotations of a single-device
 * program go (XLA's ShardingRemover, which XLA:GPU runs before its optimization passes).
 *
 * JAX writes a custom call `Sharding` (and `SPMDFullToShardShape` / `SPMDShardToFullShape` around
 * shard_map) to carry sharding hints to the SPMD partitioner. With one device there is nothing to
 * partition, so XLA forwards each such call's users to its operand and the call, now unused, goes
 * with dead code. Left in place it would be an opaque custom call: a kernel XLA never builds, and
 * a fusion boundary. Each removal is reported:
 * "removed custom-call.1 (custom_call_target=\"Sharding\"): a sharding hint; one device has
 * nothing to partition". Runs in the priority pipeline only. */
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* Whether i is one of the sharding custom calls ShardingRemover removes. */
static const char *sharding_target(const IrInstr *i) {
  if (i->op != IR_OP_CUSTOM_CALL || i->noperands != 1 || !i->operands[0]) return NULL;
  static const char *const targets[] = {"\"Sharding\"", "\"SPMDShardToFullShape\"", "\"SPMDFullToShardShape\""};
  const char *t = ir_attr_text(i, "custom_call_target");
  if (!t) return NULL;
  for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++)
    if (strcmp(t, targets[k]) == 0) return targets[k];
  return NULL;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  int removed = 0;
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    for (int k = comp->ninstrs - 1; k >= 0; k--) {
      if (k >= comp->ninstrs) continue;
      IrInstr *i = comp->instrs[k];
      const char *target = sharding_target(i);
      /* One device: the shapes on both sides of the call are the same. */
      if (!target || i->dead || !ir_shape_equal(&i->shape, &i->operands[0]->shape)) continue;
      IrInstr *x = i->operands[0];
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "remove", .producer = i->name,
                        .result = x->name, .accepted = true};
      pass_emit(cx->sink, &d, "removed %s (custom_call_target=%s): a sharding hint; one device has nothing to partition, so its users read %s",
                i->name, target, x->name);
      ir_replace_all_uses(i, x);
      /* The call is pure once it is a hint: it goes now rather than wait for dce. */
      ir_set_operand(i, 0, NULL);
      ir_instr_remove(i);
      removed++;
    }
  }
  *changed = removed > 0;
  return true;
}

const Pass pass_sharding_remover = {"sharding-remover",
                                    "removes JAX's sharding hints (custom calls Sharding, SPMD*Shape): one device has nothing to partition",
                                    run};
