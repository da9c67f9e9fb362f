/* nvrtc_kernels.c — every kernel of every corpus module compiles with NVRTC, and ptxas' figures
 * are reported (ctest label "nvrtc": needs the CUDA toolkit, not a GPU).
 *
 * Each module given (HLO files, .fx teaching scripts, or every .hlo/.fx in a folder) goes through the classic pipeline; the
 * kernels of its first and last stages are generated as CUDA C (one unit per stage) and compiled
 * for each architecture asked for. Prints one line per module and architecture: kernels
 * generated / on libraries / on the host, the most registers any kernel needs, spilled bytes.
 * rng kernels (cuRAND's device API, compiled on their own) are compiled for every architecture too.
 * A kernel that fails to compile fails the test.
 *
 * Usage: nvrtc_kernels [--arch sm_XX]... [--max-instrs N] PATH...   (PATH: a .hlo file or a folder;
 * a missing one fails the run). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../compiler/fx/fx.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../repl/repl.h"
#include "../../runtime/cuda/cuda.h"
#include "script_load.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static void no_emit(void *ctx, const PassDecision *d) { (void)ctx, (void)d; }

static int failures, modules_done;

static bool compile_stage(const char *name, const char *stage, const IrModule *m, const char *const *archs,
                          int narchs) {
  CudaUnit u;
  FxError err;
  fx_error_clear(&err);
  const IrModule *mods[1] = {m};
  if (!cuda_unit_build(&u, mods, 1, &err)) {
    fprintf(stderr, "FAIL %s (%s): %s\n", name, stage, err.msg);
    failures++;
    return false;
  }
  int gen = 0, lib = 0, host = 0;
  for (int q = 0; q < u.n; q++) {
    if (u.k[q].how == CUDA_K_GENERATED) gen++;
    else if (u.k[q].how == CUDA_K_HOST) host++;
    else lib++;
  }
  bool ok = true;
  for (int a = 0; a < narchs; a++) {
    clock_t t0 = clock();
    fx_error_clear(&err);
    if (u.ngenerated > 0 && !cuda_unit_compile(&u, archs[a], NULL, &err)) {
      fprintf(stderr, "FAIL %s (%s, %s): %s\n", name, stage, archs[a], err.msg);
      failures++;
      ok = false;
      continue;
    }
    int worst_regs = 0, spill = 0, spilling = 0, missing = 0;
    for (int q = 0; q < u.n; q++) {
      if (u.k[q].how != CUDA_K_GENERATED) continue;
      for (int p = 0; p < u.k[q].nparts; p++) missing += !u.k[q].res[p].found;
      int r, s;
      cuda_kernel_worst(&u.k[q], &r, &s);
      if (r > worst_regs) worst_regs = r;
      spill += s;
      spilling += s > 0;
    }
    /* rng kernels: cuRAND's device API, compiled on their own (the cache keeps one per kind). */
    for (int q = 0; q < u.n; q++) {
      if (u.k[q].how != CUDA_K_RNG) continue;
      const char *dist = ir_attr_text(u.k[q].instr, "distribution");
      const char *src = cuda_rng_source(u.k[q].instr->shape.type, dist ? dist : "rng_uniform");
      CudaCompileOptions opt = {.arch = archs[a]};
      CudaCubin c;
      fx_error_clear(&err);
      if (!src || !cuda_nvrtc_compile(src, "rng.cu", "fx_rng", &opt, &c, &err)) {
        fprintf(stderr, "FAIL %s (%s, %s): rng kernel %s: %s\n", name, stage, archs[a], u.k[q].instr->name,
                src ? err.msg : "no source");
        failures++;
        ok = false;
        continue;
      }
      missing += !c.res.found;
      if (c.res.registers > worst_regs) worst_regs = c.res.registers;
      cuda_cubin_free(&c);
    }
    if (missing) {
      fprintf(stderr, "FAIL %s (%s, %s): ptxas reported nothing for %d kernel parts\n", name, stage, archs[a], missing);
      failures++;
      ok = false;
    }
    printf("%-44s %-6s %s  %4d generated (%d distinct), %3d library, %3d host; max %3d registers, %d spilling (%d B)  "
           "[%.1f s]\n",
           name, stage, archs[a], gen, u.ngenerated, lib, host, worst_regs, spilling, spill,
           (double)(clock() - t0) / CLOCKS_PER_SEC);
  }
  cuda_unit_free(&u);
  return ok;
}

static void one_module(const char *path, const char *const *archs, int narchs, int max_instrs) {
  FxError err;
  fx_error_clear(&err);
  bool skipped = false;
  IrModule *m = load_any(path, 0, &skipped, &err);
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (!m && skipped) {
    printf("%-44s (shell commands only: the scripts it loads are compiled on their own)\n", name);
    return;
  }
  if (!m) {
    fx_error_print(stderr, &err);
    fprintf(stderr, "FAIL %s: does not load\n", name);
    failures++;
    return;
  }
  if (max_instrs > 0 && ir_module_instr_count(m) > max_instrs) {
    printf("%-44s (%d instructions: in the slow run)\n", name, ir_module_instr_count(m));
    ir_module_free(m);
    return;
  }
  compile_stage(name, "input", m, archs, narchs);
  const Pipeline *pl = pipeline_lookup("classic");
  PassSettings st;
  pass_settings_default(&st);
  DecisionSink sink = {no_emit, NULL};
  for (int p = 0; pl && p < pl->npasses; p++) {
    PassContext cx = {&sink, device_default(), &st, p + 1, NULL, &err, NULL, false};
    IrModule *out = NULL;
    bool changed = false;
    if (!pass_run_stage(pl->passes[p], m, &cx, &out, &changed)) {
      fprintf(stderr, "%s: ", name);
      fx_error_print(stderr, &err);
      failures++;
      break;
    }
    if (out) {
      ir_module_free(m);
      m = out;
    }
  }
  compile_stage(name, "fused", m, archs, narchs);
  ir_module_free(m);
  modules_done++;
}

int main(int argc, char **argv) {
  if (!cuda_nvrtc_built_in()) {
    printf("SKIPPED: built without the CUDA toolkit (no NVRTC)\n");
    return 77;
  }
  const char *archs[8];
  int narchs = 0, max_instrs = 0, npaths = 0, missing = 0;
  const char *paths[64];
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--arch") == 0 && a + 1 < argc && narchs < 8) archs[narchs++] = argv[++a];
    else if (strcmp(argv[a], "--max-instrs") == 0 && a + 1 < argc) max_instrs = atoi(argv[++a]);
    else if (npaths < 64) paths[npaths++] = argv[a];
  }
  if (!narchs) archs[narchs++] = "sm_75";
  for (int p = 0; p < npaths; p++) {
    DIR *d = opendir(paths[p]);
    if (!d) {
      FILE *f = fopen(paths[p], "r");
      if (!f) {
        printf("no such file or folder: %s\n", paths[p]);
        missing++;
        continue;
      }
      fclose(f);
      one_module(paths[p], archs, narchs, max_instrs);
      continue;
    }
    char *names[512];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512) {
      size_t l = strlen(e->d_name);
      if ((l > 4 && strcmp(e->d_name + l - 4, ".hlo") == 0) || (l > 3 && strcmp(e->d_name + l - 3, ".fx") == 0))
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int k = 0; k < n; k++) {
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", paths[p], names[k]);
      one_module(path, archs, narchs, max_instrs);
      free(names[k]);
    }
  }
  printf("%d modules, %d failures, %d missing\n", modules_done, failures, missing);
  return failures || missing ? 1 : 0;
}
