/* pass_simplify_fp_conversions.c — simplify-fp-conversions: a chain of conversions between
 * floating-point types is one conversion, or none (XLA's SimplifyFPConversions, which XLA:GPU runs
 * right after float normalization because excess precision is allowed by default:
 * xla_allow_excess_precision), for the priority pipeline.
 *
 * For each instruction, the conversions to floating-point types it is the end of are followed
 * back to what the first one reads; when there are two or more, the instruction becomes that
 * value (when its type is the instruction's) or one conversion of it. So f32 -> bf16 -> f32 is
 * the f32 value itself: the rounding to bf16 is gone (XLA keeps the better precision), and the
 * bf16 -> f32 -> bf16 pairs float-normalization-bf16 leaves between two f32 operations go.
 * Every computation is visited, the fused ones too. Each simplification is reported:
 * "convert.12 converts convert.11 of convert.10 of divide.5: it reads divide.5 (f32) directly". */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

static bool is_float_convert(const IrInstr *x) {
  return x && x->op == IR_OP_CONVERT && x->noperands == 1 && x->operands[0] && ir_type_is_float(x->shape.type);
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  int done = 0;
  for (int c = 0; c < m->ncomps && !pass_interrupted(cx); c++) {
    IrComputation *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      IrInstr *i = comp->instrs[k];
      IrInstr *input = i;
      int chain = 0;
      while (is_float_convert(input) && chain < 64) {
        input = input->operands[0];
        chain++;
      }
      if (chain < 2) continue;
      char detail[400];
      IrInstr *repl = input;
      if (input->shape.type != i->shape.type) {
        repl = ir_instr_new_before(comp, i, IR_OP_CONVERT, &i->shape, &input, 1, "convert");
        if (!repl) return fx_error_set(cx->err, NULL, 0, 0, "simplify-fp-conversions: out of memory");
        k++;
        snprintf(detail, sizeof detail, "%s ends %d conversions of %s (%s): one conversion, %s", i->name, chain,
                 input->name, ir_type_name(input->shape.type), repl->name);
      } else {
        snprintf(detail, sizeof detail, "%s ends %d conversions of %s and has its type (%s): it is %s", i->name, chain,
                 input->name, ir_type_name(input->shape.type), input->name);
      }
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = i->name,
                        .result = repl->name, .accepted = true};
      pass_metric(&d, "conversions", chain);
      pass_emit(cx->sink, &d, "%s", detail);
      int n0 = comp->ninstrs;
      simp_replace(i, repl);
      k -= n0 - comp->ninstrs;
      if (k < -1) k = -1;
      done++;
    }
  }
  *changed = done > 0;
  return true;
}

const Pass pass_simplify_fp_conversions = {
    "simplify-fp-conversions",
    "a chain of floating-point conversions becomes one conversion or none (f32 -> bf16 -> f32 is the f32 value)",
    run};
