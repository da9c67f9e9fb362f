/* synthetic.c — the synthetic module the pipeline and snapshot-memory benches run: elementwise
 * chains, broadcasts, reductions, duplicates, dead code, tuples taken apart, in blocks of about 16
 * instructions over a few parameters, grown to a target instruction count. */
#include <stdlib.h>

#include "synthetic.h"

static IrInstr *add_param(IrComputation *c, const IrShape *s, int n, const char *name) {
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, s, NULL, 0, name);
  p->param_number = n;
  IrInstr **grown = arena_alloc(&c->module->arena, sizeof(IrInstr *) * (size_t)(n + 1));
  for (int k = 0; k < c->nparams; k++) grown[k] = c->params[k];
  grown[n] = p;
  c->params = grown;
  c->nparams = n + 1;
  return p;
}

IrModule *bench_synthetic_module(int target) {
  IrModule *m = ir_module_new("synthetic");
  IrComputation *addc = ir_computation_new(m, "add_f32");
  IrShape sc = ir_shape_scalar(IR_F32);
  IrInstr *aa = add_param(addc, &sc, 0, "lhs");
  IrInstr *ab = add_param(addc, &sc, 1, "rhs");
  ir_set_root(addc, ir_instr_new(addc, IR_OP_ADD, &sc, (IrInstr *[]){aa, ab}, 2, "sum"));
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  int64_t d2[2] = {256, 1024}, d1[1] = {256};
  IrShape mat = ir_shape_array(&m->arena, IR_F32, 2, d2), vec = ir_shape_array(&m->arena, IR_F32, 1, d1);
  IrInstr *x = add_param(c, &mat, 0, "x"), *y = add_param(c, &mat, 1, "y"), *v = add_param(c, &vec, 2, "v");
  IrInstr *zero = ir_constant_scalar(c, IR_F32, 0, "zero");
  IrInstr *cur = x;
  IrInstr **outs = NULL;
  int nouts = 0, cap = 0;
  while (ir_module_instr_count(m) < target - 2) {
    IrInstr *bv = ir_instr_new(c, IR_OP_BROADCAST, &mat, &v, 1, "broadcast");
    ir_attr_set_text(bv, "dimensions", "{0}");
    IrInstr *a1 = ir_instr_new(c, IR_OP_ADD, &mat, (IrInstr *[]){cur, y}, 2, "add");
    IrInstr *a2 = ir_instr_new(c, IR_OP_ADD, &mat, (IrInstr *[]){y, cur}, 2, "add"); /* cse: same as a1 */
    IrInstr *mu = ir_instr_new(c, IR_OP_MULTIPLY, &mat, (IrInstr *[]){a1, bv}, 2, "multiply");
    IrInstr *ex = ir_instr_new(c, IR_OP_EXP, &mat, &mu, 1, "exponential");
    IrInstr *tn = ir_instr_new(c, IR_OP_TANH, &mat, &a2, 1, "tanh");
    ir_instr_new(c, IR_OP_NEGATE, &mat, &ex, 1, "negate"); /* dead */
    IrShape el[2] = {mat, mat};
    IrShape ts = {.type = IR_TUPLE, .ntuple = 2, .tuple = el};
    IrInstr *t = ir_instr_new(c, IR_OP_TUPLE, &ts, (IrInstr *[]){ex, tn}, 2, "tuple");
    IrInstr *g0 = ir_instr_new(c, IR_OP_GET_TUPLE_ELEMENT, &mat, &t, 1, "get-tuple-element");
    ir_attr_set_text(g0, "index", "0");
    IrInstr *g1 = ir_instr_new(c, IR_OP_GET_TUPLE_ELEMENT, &mat, &t, 1, "get-tuple-element");
    ir_attr_set_text(g1, "index", "1");
    IrInstr *su = ir_instr_new(c, IR_OP_SUBTRACT, &mat, (IrInstr *[]){g0, g1}, 2, "subtract");
    IrInstr *red = ir_instr_new(c, IR_OP_REDUCE, &vec, (IrInstr *[]){su, zero}, 2, "reduce");
    ir_attr_set_text(red, "dimensions", "{1}");
    ir_attr_set_comp(red, "to_apply", addc);
    IrInstr *rb = ir_instr_new(c, IR_OP_BROADCAST, &mat, &red, 1, "broadcast");
    ir_attr_set_text(rb, "dimensions", "{0}");
    IrInstr *dv = ir_instr_new(c, IR_OP_DIVIDE, &mat, (IrInstr *[]){su, rb}, 2, "divide");
    IrInstr *mx = ir_instr_new(c, IR_OP_MAXIMUM, &mat, (IrInstr *[]){dv, x}, 2, "maximum");
    cur = mx;
    if (nouts == cap) {
      cap = cap ? cap * 2 : 64;
      outs = realloc(outs, sizeof *outs * (size_t)cap);
    }
    outs[nouts++] = red;
  }
  /* Every block's reduction is an output, so the blocks stay live. */
  IrShape *el = arena_alloc(&m->arena, sizeof(IrShape) * (size_t)(nouts + 1));
  for (int k = 0; k < nouts; k++) el[k] = vec;
  el[nouts] = mat;
  IrShape ts = {.type = IR_TUPLE, .ntuple = nouts + 1, .tuple = el};
  outs = realloc(outs, sizeof *outs * (size_t)(nouts + 1));
  outs[nouts] = cur;
  ir_set_root(c, ir_instr_new(c, IR_OP_TUPLE, &ts, outs, nouts + 1, "result"));
  free(outs);
  return m;
}
