/* test_softmax_rewriter.c — XLA's SoftmaxRewriterTriton as fxplain runs it (softmax-rewriter-triton,
 * priority pipeline): which normalization diamonds become one Triton fusion, and why the others do
 * not. The cases are the shapes XLA's own log gave (jaxlib 0.10.2, deviceless h100,
 * TF_CPP_VMODULE=softmax_rewriter_triton=2): the layer norm of the corpus (two diamonds, both
 * fused: XLA's pre-fusion module holds triton_softmax.2 and .3), and Gemma 4's RMS norm over a
 * flattened head ("Cannot tile the diamond pattern": the root reads the reduction back through a
 * bitcast that joins two dimensions). */
#include <string.h>

#include "../check.h"
#include "../../compiler/plan/plan.h"
#include "../../compiler/fusion/fusion.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"

static const char *LAYER_NORM =
    "HloModule ln\n"
    "add_f32 {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n"
    "}\n"
    "ENTRY main {\n"
    "  x = bf16[1,4096,768]{2,1,0} parameter(0)\n"
    "  xf = f32[1,4096,768]{2,1,0} convert(x)\n"
    "  zero = f32[] constant(0)\n"
    "  sum = f32[1,4096]{1,0} reduce(xf, zero), dimensions={2}, to_apply=add_f32\n"
    "  n = f32[] constant(0.00130208337)\n"
    "  nb = f32[1,4096]{1,0} broadcast(n), dimensions={}\n"
    "  mean = f32[1,4096]{1,0} multiply(sum, nb)\n"
    "  meanb = bf16[1,4096]{1,0} convert(mean)\n"
    "  mb = bf16[1,4096,768]{2,1,0} broadcast(meanb), dimensions={0,1}\n"
    "  ROOT centered = bf16[1,4096,768]{2,1,0} subtract(x, mb)\n"
    "}\n";

static const char *FLAT_RMS =
    "HloModule rms\n"
    "add_f32 {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n"
    "}\n"
    "ENTRY main {\n"
    "  v = bf16[4096]{0} parameter(0)\n"
    "  c = f32[4096]{0} convert(v)\n"
    "  sq = f32[4096]{0} multiply(c, c)\n"
    "  rows = f32[8,512]{1,0} bitcast(sq)\n"
    "  zero = f32[] constant(0)\n"
    "  r = f32[8]{0} reduce(rows, zero), dimensions={1}, to_apply=add_f32\n"
    "  b = f32[1,1,8,512]{3,2,1,0} broadcast(r), dimensions={2}\n"
    "  flat = f32[4096]{0} bitcast(b)\n"
    "  ROOT m = f32[4096]{0} multiply(c, flat)\n"
    "}\n";

typedef struct {
  int accepted, rejected;
  char reason[64];
} Seen;

static void emit(void *ctx, const PassDecision *d) {
  Seen *s = ctx;
  if (d->accepted) s->accepted++;
  else {
    s->rejected++;
    snprintf(s->reason, sizeof s->reason, "%s", d->reason ? d->reason : "");
  }
}

static int triton_fusions(const IrModule *m) {
  int n = 0;
  for (int k = 0; k < m->entry->ninstrs; k++) n += fusion_is_generic_triton(m->entry->instrs[k]);
  return n;
}

/* Runs the pass on text for device `dev`; the module after it (or NULL) and what it decided. */
static IrModule *rewrite(const char *text, const char *dev, Seen *seen) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "<test>", &err);
  CHECK(m != NULL);
  if (!m) return NULL;
  memset(seen, 0, sizeof *seen);
  DecisionSink sink = {emit, seen};
  PassSettings ps;
  pass_settings_default(&ps);
  PassContext cx = {.sink = &sink, .device = device_lookup(dev), .settings = &ps, .err = &err,
                    .pass = "softmax-rewriter-triton"};
  IrModule *out = NULL;
  bool changed = false;
  CHECK(pass_run_stage(pass_lookup("softmax-rewriter-triton"), m, &cx, &out, &changed));
  CHECK(changed == (out != NULL));
  if (out) {
    ir_module_free(m);
    return out;
  }
  return m;
}

TEST(layer_norm_diamond_becomes_one_triton_fusion) {
  Seen s;
  IrModule *m = rewrite(LAYER_NORM, "h100", &s);
  if (!m) return;
  CHECK(s.accepted == 1 && s.rejected == 0);
  CHECK(triton_fusions(m) == 1);
  const IrInstr *root = m->entry->root;
  CHECK(fusion_is_generic_triton(root));
  CHECK(strncmp(root->name, "triton_softmax", 14) == 0);
  /* the producer is the fusion's one operand: the whole diamond is inside */
  CHECK(root->noperands == 1 && strcmp(root->operands[0]->name, "x") == 0);
  ir_module_free(m);
}

TEST(only_from_ampere_on) {
  Seen s;
  IrModule *m = rewrite(LAYER_NORM, "rtx2080ti", &s);
  if (!m) return;
  CHECK(s.accepted == 0 && s.rejected == 0);
  CHECK(triton_fusions(m) == 0);
  ir_module_free(m);
}

TEST(diamond_read_through_a_joining_bitcast_cannot_be_tiled) {
  Seen s;
  IrModule *m = rewrite(FLAT_RMS, "h100", &s);
  if (!m) return;
  CHECK(s.accepted == 0 && s.rejected == 1);
  CHECK_STR(s.reason, "not_fusible");
  CHECK(triton_fusions(m) == 0);
  ir_module_free(m);
}

int main(void) {
  RUN(layer_norm_diamond_becomes_one_triton_fusion);
  RUN(only_from_ampere_on);
  RUN(diamond_read_through_a_joining_bitcast_cannot_be_tiled);
  return check_summary();
}
