/* cuda_report.c — a stage's kernels as CUDA, as plain records (see cuda_report.h): what
 * `kernels --source` and `kernels --resources` show. The unit comes from cuda_unit_build, each rng
 * kernel's own unit from cuRAND's source, the figures from ptxas through NVRTC. */
#include <stdio.h>
#include <string.h>

#include "cuda_backend.h"
#include "cuda_kernels.h"
#include "cuda_libs.h"
#include "cuda_nvrtc.h"
#include "cuda_report.h"

static const char *rng_source(const IrInstr *i) {
  const char *dist = ir_attr_text(i, "distribution");
  return cuda_rng_source(i->shape.type, dist ? dist : "rng_uniform");
}

/* Threads an rng kernel launches: each makes cuda_rng_per_thread values. */
static int64_t rng_threads(const IrInstr *i) {
  return (ir_shape_elements(&i->shape) + cuda_rng_per_thread(i->shape.type) - 1) / cuda_rng_per_thread(i->shape.type);
}

/* A record of kernel k (strings copied into the report's arena); NULL when out of memory. */
static KernelRecord *add_row(KernelReport *r, int cap, const CudaKernelInfo *k) {
  if (r->nrows >= cap) return NULL;
  KernelRecord *row = &r->rows[r->nrows++];
  char san[120];
  emit_sanitize(k->instr->name, san, sizeof san);
  row->kernel = k->instr->name;
  row->label = arena_strdup(&r->arena, san);
  row->runs_as = cuda_kernel_how_name(k->how);
  row->generated = k->how == CUDA_K_GENERATED;
  row->rng = k->how == CUDA_K_RNG;
  row->host = k->how == CUDA_K_HOST;
  row->why = arena_strdup(&r->arena, k->why);
  row->nparts = 1;
  bool copied = true;
  if (row->rng) {
    row->threads = rng_threads(k->instr);
    const char *src = rng_source(k->instr); /* a static buffer the next call overwrites: copied */
    copied = !src || (row->source = arena_strdup(&r->arena, src)) != NULL;
  }
  return row->label && row->why && copied ? row : NULL;
}

static bool begin(KernelReport *out, int stage, int cap, FxError *err) {
  memset(out, 0, sizeof *out);
  arena_init(&out->arena);
  out->stage = stage;
  out->rows = arena_alloc(&out->arena, (size_t)(cap + 1) * sizeof *out->rows);
  return out->rows || fx_error_set(err, NULL, 0, 0, "out of memory");
}

bool cuda_report_source(const IrModule *m, int stage, const char *only, KernelReport *out, FxError *err) {
  memset(out, 0, sizeof *out);
  CudaUnit u;
  if (!cuda_unit_build(&u, &m, 1, err)) return false;
  bool ok = begin(out, stage, u.n, err);
  out->nkernels = u.n;
  if (ok && !only) {
    out->unit = arena_strdup(&out->arena, u.source.s);
    for (int q = 0; ok && q < u.n; q++) ok = add_row(out, u.n, &u.k[q]) != NULL;
    if (!ok || !out->unit) ok = fx_error_set(err, NULL, 0, 0, "out of memory");
  } else if (ok) {
    /* One kernel: its part of the unit, from its "// kernel NAME" line to the next one. */
    const IrInstr *i = ir_module_find_instr(m, only);
    const CudaKernelInfo *k = i ? cuda_unit_find(&u, i) : NULL;
    KernelRecord *row = k ? add_row(out, u.n, k) : NULL;
    if (k && !row) ok = fx_error_set(err, NULL, 0, 0, "out of memory");
    if (row && row->generated) {
      const char *p = strstr(u.source.s, k->sym);
      while (p && p > u.source.s && strncmp(p, "// kernel ", 10) != 0) p--;
      const char *e = p ? strstr(p + 10, "// kernel ") : NULL;
      row->source = p ? arena_strndup(&out->arena, p, e ? (size_t)(e - p) : strlen(p)) : NULL;
      if (!p) row = NULL;
    }
    if (ok && !row) ok = fx_error_set(err, NULL, 0, 0, "'%s' is not a kernel of stage %d", only, stage);
  }
  cuda_unit_free(&u);
  if (!ok) kernel_report_free(out);
  return ok;
}

/* ptxas' figures for an rng instruction's cuRAND kernel (compiled alone, cached like the rest).
 * False without filling err when the instruction is not an rng kernel. */
static bool rng_resources(const IrInstr *i, const char *arch, CudaResources *r, FxError *err) {
  const char *src = rng_source(i);
  if (!src) return false;
  CudaCompileOptions opt = {.arch = arch};
  CudaCubin c;
  if (!cuda_nvrtc_compile(src, "rng.cu", "fx_rng", &opt, &c, err)) return false;
  *r = c.res;
  cuda_cubin_free(&c);
  return true;
}

/* The figures of one compiled kernel (part), its block and occupancy on d. */
static void fill(KernelRecord *row, const CudaResources *r, int64_t threads, const DeviceProfile *d) {
  CudaDeviceInfo di = {.warp_size = 32, .max_threads_per_block = d->max_threads_per_block, .regs_per_block = 65536};
  row->compiled = true;
  row->registers = r->registers;
  row->spill_stores = r->spill_stores;
  row->spill_loads = r->spill_loads;
  row->shared_bytes = r->shared_bytes;
  row->stack_bytes = r->stack_bytes;
  row->block = cuda_block_size(r->registers, &di, threads);
  row->occupancy_limit = "";
  row->occupancy = cuda_occupancy(r, row->block, d, &row->occupancy_limit);
}

bool cuda_report_resources(const IrModule *m, int stage, const DeviceProfile *d, KernelReport *out, FxError *err) {
  memset(out, 0, sizeof *out);
  if (!cuda_nvrtc_built_in())
    return fx_error_set(err, NULL, 0, 0, "kernel resources come from NVRTC, and this fxplain was built without the CUDA toolkit");
  CudaUnit u;
  if (!cuda_unit_build(&u, &m, 1, err)) return false;
  /* `set gpu_arch` wins; else the device profile's architecture (rtx2080ti: sm_75). */
  const char *arch = !cuda_nvrtc_arch_is_set() && d->arch[0] ? d->arch : cuda_nvrtc_default_arch();
  if (u.ngenerated > 0 && !cuda_unit_compile(&u, arch, NULL, err)) {
    cuda_unit_free(&u);
    return false;
  }
  int cap = 0;
  for (int q = 0; q < u.n; q++) cap += u.k[q].how == CUDA_K_GENERATED ? u.k[q].nparts : 1;
  bool ok = begin(out, stage, cap, err);
  out->nkernels = u.n;
  out->arch = arch;
  out->compiler = cuda_nvrtc_version();
  out->device = d->name;
  for (int q = 0; ok && q < u.n; q++) {
    const CudaKernelInfo *k = &u.k[q];
    CudaResources rr;
    if (k->how == CUDA_K_RNG && rng_resources(k->instr, arch, &rr, err)) {
      /* The cuRAND kernel, compiled on its own for the same architecture. */
      KernelRecord *row = add_row(out, cap, k);
      if (!row) break;
      row->symbol = "fx_rng";
      fill(row, &rr, rng_threads(k->instr), d);
      continue;
    }
    if (err->set) {
      ok = false;
      break;
    }
    if (k->how != CUDA_K_GENERATED) {
      if (!add_row(out, cap, k)) break;
      continue;
    }
    for (int p = 0; p < k->nparts; p++) {
      KernelRecord *row = add_row(out, cap, k);
      if (!row) break;
      row->part = p;
      row->nparts = k->nparts;
      row->symbol = arena_strdup(&out->arena, k->sym);
      fill(row, &k->res[p], k->count[p], d);
    }
  }
  if (ok && out->nrows < cap) ok = fx_error_set(err, NULL, 0, 0, "out of memory");
  cuda_unit_free(&u);
  if (!ok) kernel_report_free(out);
  return ok;
}
