/* cuda_kernels.c — CUDA translation units of a stage's kernels; see cuda_kernels.h.
 *
 * The shared emitter (emit.c) writes each kernel's body once; here it is wrapped as a
 * __global__ function with a grid-stride loop, named by the hash of its text (so identical
 * kernels of different stages share code and cache entries), and gathered into one unit that
 * NVRTC compiles in one go. ptxas' -v log then gives each kernel's registers, spills, shared
 * memory and stack. */
#include "cuda_kernels.h"

#include <stdio.h>
#include <string.h>

#include "../../compiler/fusion/fusion.h"
#include "cuda_libs.h"
#include "../runtime.h"

const char *cuda_kernel_how_name(CudaKernelHow h) {
  switch (h) {
  case CUDA_K_GENERATED: return "generated";
  case CUDA_K_CUBLAS: return "cuBLAS";
  case CUDA_K_CUDNN: return "cuDNN";
  case CUDA_K_RNG: return "rng";
  case CUDA_K_HOST: return "host";
  }
  return "?";
}

bool cuda_emit_wrapper(EmitBuf *b, const EmitKernel *k, int part, FxError *err) {
  if (part < 0 || part >= k->nparts) return fx_error_set(err, NULL, 0, 0, "no part %d", part);
  const EmitPart *p = &k->parts[part];
  emit_printf(b, "extern \"C\" __global__ void %s_p%d(", k->name, part);
  for (int j = 0; j < k->ninputs; j++) {
    const char *t = emit_storage_type(k->in_types[j]);
    emit_printf(b, "%sconst %s *__restrict__ in%d", j ? ", " : "", t, j);
  }
  for (int q = 0; q < p->noutputs; q++) {
    int o = p->outputs[q];
    emit_printf(b, "%s%s *__restrict__ out%d", k->ninputs || q ? ", " : "", emit_storage_type(k->out_types[o]), o);
  }
  emit_printf(b, ", long long n) {\n");
  emit_printf(b, "  for (long long fx_l = blockIdx.x * (long long)blockDim.x + threadIdx.x; fx_l < n;\n"
                 "       fx_l += (long long)gridDim.x * blockDim.x) {\n");
  /* Row-major: the last dimension varies fastest, so neighbouring threads touch neighbouring
   * elements (coalesced). */
  if (p->rank > 0) {
    emit_printf(b, "    long long fx_r = fx_l;\n");
    for (int d = p->rank - 1; d >= 1; d--)
      emit_printf(b, "    const int64_t i%d = fx_r %% %lldll; fx_r /= %lldll;\n", d, (long long)p->dims[d],
                  (long long)p->dims[d]);
    emit_printf(b, "    const int64_t i0 = fx_r;\n");
  }
  emit_printf(b, "    {\n");
  if (!emit_body(b, k, part, EMIT_TARGET_CUDA, 6, err)) return false;
  emit_printf(b, "    }\n  }\n}\n\n");
  return !b->oom;
}

/* ---------- units ---------- */

static uint64_t fnv(const char *s, size_t n, uint64_t h) { return cuda_hash(h, s, n); }

static CudaKernelInfo *add_kernel(CudaUnit *u, const IrInstr *i, FxError *err) {
  if (u->n == u->cap) {
    int nc = u->cap ? u->cap * 2 : 32;
    CudaKernelInfo *nk = fx_realloc(u->k, sizeof *nk * (size_t)nc);
    if (!nk) {
      fx_error_set(err, NULL, 0, 0, "out of memory");
      return NULL;
    }
    u->k = nk;
    u->cap = nc;
  }
  CudaKernelInfo *k = &u->k[u->n++];
  memset(k, 0, sizeof *k);
  k->instr = i;
  return k;
}

const CudaKernelInfo *cuda_unit_find(const CudaUnit *u, const IrInstr *i) {
  for (int q = 0; q < u->n; q++)
    if (u->k[q].instr == i) return &u->k[q];
  return NULL;
}

/* Generates one kernel into kb (under the placeholder name "fxK"). */
static bool generate(EmitKernel *ek, const IrInstr *i, EmitBuf *kb, FxError *why) {
  if (!emit_kernel_init(ek, i, why)) return false;
  snprintf(ek->name, sizeof ek->name, "fxK");
  kb->len = 0;
  if (kb->s) kb->s[0] = 0;
  bool ok = emit_globals(kb, ek, EMIT_TARGET_CUDA, why);
  for (int p = 0; ok && p < ek->nparts; p++) ok = cuda_emit_wrapper(kb, ek, p, why);
  if (ok && kb->oom) ok = fx_error_set(why, NULL, 0, 0, "out of memory generating %s", i->name);
  return ok;
}

/* Appends kb to the unit with the placeholder replaced by sym. */
static void paste(EmitBuf *unit, const EmitBuf *kb, const char *sym, const char *instr_name) {
  char san[120];
  emit_sanitize(instr_name, san, sizeof san);
  emit_printf(unit, "// kernel %s\n", san);
  const char *p = kb->s;
  for (const char *f; (f = strstr(p, "fxK")) != NULL; p = f + 3) emit_printf(unit, "%.*s%s", (int)(f - p), p, sym);
  emit_printf(unit, "%s", p);
}

static bool rng_ok(const IrInstr *i) {
  const char *d = ir_attr_text(i, "distribution");
  return i->noperands == 2 && cuda_rng_source(i->shape.type, d ? d : "rng_uniform") != NULL;
}

bool cuda_unit_build(CudaUnit *u, const IrModule *const *mods, int nmods, FxError *err) {
  memset(u, 0, sizeof *u);
  emit_buf_init(&u->source);
  emit_prelude(&u->source, EMIT_TARGET_CUDA);
  EmitKernel *ek = fx_malloc(sizeof *ek);
  if (!ek) return fx_error_set(err, NULL, 0, 0, "out of memory");
  EmitBuf kb;
  emit_buf_init(&kb);
  uint64_t *seen = NULL;
  int nseen = 0, capseen = 0;
  bool ok = true;
  for (int m = 0; ok && m < nmods; m++) {
    if (!mods[m] || !mods[m]->entry) continue;
    const IrComputation *comps[256];
    int nc = 0;
    nc = rt_host_computations(mods[m]->entry, comps, 256);
    for (int c = 0; ok && c < nc; c++)
      for (int q = 0; ok && q < comps[c]->ninstrs; q++) {
        const IrInstr *i = comps[c]->instrs[q];
        if (rt_instr_is_free(i) || cuda_unit_find(u, i)) continue;
        CudaKernelInfo *k = add_kernel(u, i, err);
        if (!k) {
          ok = false;
          break;
        }
        FxError why;
        fx_error_clear(&why);
        CudaGemm g;
        CudaConv cv;
        if (i->op == IR_OP_DOT && cuda_gemm_from_instr(i, &g, &why)) {
          k->how = CUDA_K_CUBLAS;
          continue;
        }
        if (i->op == IR_OP_CONVOLUTION && cuda_conv_from_instr(i, &cv, &why)) {
          k->how = CUDA_K_CUDNN;
          continue;
        }
        if (i->op == IR_OP_RNG && rng_ok(i)) {
          char no[160];
          if (cuda_nvrtc_has_curand(no, sizeof no)) {
            k->how = CUDA_K_RNG;
          } else { /* the host's implementation draws the same stream */
            k->how = CUDA_K_HOST;
            snprintf(k->why, sizeof k->why, "%s: rng runs on the host's implementation of cuRAND's stream: %s",
                     i->name, no);
          }
          continue;
        }
        fx_error_clear(&why);
        if (!generate(ek, i, &kb, &why)) {
          k->how = CUDA_K_HOST;
          snprintf(k->why, sizeof k->why, "%.199s", why.msg);
          continue;
        }
        uint64_t h = fnv(kb.s, kb.len, CUDA_HASH_INIT);
        k->how = CUDA_K_GENERATED;
        snprintf(k->sym, sizeof k->sym, "fx_%016llx", (unsigned long long)h);
        k->nparts = ek->nparts;
        k->ninputs = ek->ninputs;
        k->noutputs = ek->noutputs;
        for (int p = 0; p < ek->nparts; p++) {
          k->count[p] = ek->parts[p].count;
          k->part_noutputs[p] = ek->parts[p].noutputs;
          memcpy(k->part_outputs[p], ek->parts[p].outputs, sizeof(int) * (size_t)ek->parts[p].noutputs);
        }
        bool dup = false;
        for (int s = 0; s < nseen; s++) dup = dup || seen[s] == h;
        if (dup) continue;
        if (nseen == capseen) {
          int ncap = capseen ? capseen * 2 : 64;
          uint64_t *ns = fx_realloc(seen, sizeof *ns * (size_t)ncap);
          if (!ns) {
            ok = fx_error_set(err, NULL, 0, 0, "out of memory");
            break;
          }
          seen = ns;
          capseen = ncap;
        }
        seen[nseen++] = h;
        paste(&u->source, &kb, k->sym, i->name);
        u->ngenerated++;
      }
  }
  if (ok && u->source.oom) ok = fx_error_set(err, NULL, 0, 0, "out of memory generating CUDA kernels");
  emit_buf_free(&kb);
  fx_free(seen);
  fx_free(ek);
  if (!ok) cuda_unit_free(u);
  return ok;
}

bool cuda_unit_compile(CudaUnit *u, const char *arch, CudaCubin *out, FxError *err) {
  CudaCubin c;
  CudaCompileOptions opt = {.arch = arch};
  if (!cuda_nvrtc_compile(u->source.s, "stage.cu", NULL, &opt, &c, err)) return false;
  for (int q = 0; q < u->n; q++) {
    CudaKernelInfo *k = &u->k[q];
    if (k->how != CUDA_K_GENERATED) continue;
    for (int p = 0; p < k->nparts; p++) {
      char name[48];
      snprintf(name, sizeof name, "%s_p%d", k->sym, p);
      cuda_ptxas_parse(c.log, name, &k->res[p]);
    }
  }
  if (out) *out = c;
  else cuda_cubin_free(&c);
  return true;
}

void cuda_unit_free(CudaUnit *u) {
  fx_free(u->k);
  emit_buf_free(&u->source);
  memset(u, 0, sizeof *u);
}

void cuda_kernel_worst(const CudaKernelInfo *k, int *registers, int *spill_bytes) {
  *registers = *spill_bytes = 0;
  for (int p = 0; p < k->nparts; p++) {
    if (k->res[p].registers > *registers) *registers = k->res[p].registers;
    int s = k->res[p].spill_stores > k->res[p].spill_loads ? k->res[p].spill_stores : k->res[p].spill_loads;
    if (s > *spill_bytes) *spill_bytes = s;
  }
}

/* ---------- the registers hook ---------- */

bool cuda_registers_hook(void *ctx, const IrComputation *fused_body, int *registers, int *spill_bytes) {
  const DeviceProfile *d = ctx;
  const IrInstr *f = fused_body ? fused_body->fusion_instr : NULL;
  if (!f) return false;
  EmitKernel *ek = fx_malloc(sizeof *ek);
  if (!ek) return false;
  EmitBuf src;
  emit_buf_init(&src);
  emit_prelude(&src, EMIT_TARGET_CUDA);
  EmitBuf kb;
  emit_buf_init(&kb);
  FxError why;
  fx_error_clear(&why);
  bool ok = generate(ek, f, &kb, &why);
  CudaKernelInfo k;
  memset(&k, 0, sizeof k);
  if (ok) {
    paste(&src, &kb, "fx_candidate", f->name);
    k.nparts = ek->nparts;
    CudaCompileOptions opt = {.arch = d && d->arch[0] ? d->arch : NULL};
    CudaCubin c;
    ok = !src.oom && cuda_nvrtc_compile(src.s, "candidate.cu", NULL, &opt, &c, &why);
    if (ok) {
      for (int p = 0; p < k.nparts; p++) {
        char name[48];
        snprintf(name, sizeof name, "fx_candidate_p%d", p);
        ok = ok && cuda_ptxas_parse(c.log, name, &k.res[p]);
      }
      cuda_cubin_free(&c);
    }
  }
  if (ok) cuda_kernel_worst(&k, registers, spill_bytes);
  emit_buf_free(&kb);
  emit_buf_free(&src);
  fx_free(ek);
  return ok;
}

void cuda_registers_install(bool on, const DeviceProfile *ctx) {
  if (on && cuda_nvrtc_built_in())
    fusion_set_register_hook(cuda_registers_hook, (void *)(uintptr_t)ctx);
  else
    fusion_set_register_hook(NULL, NULL);
}
