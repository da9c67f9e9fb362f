/* rng_dump.c — writes the GPU backend's cuRAND rng kernels (cuda_rng_source) into a folder, one
 * file per element type and distribution, for tests/gpu/curand_match.sh: nvcc compiles those
 * exact texts for the host next to cuRAND's headers and checks them against the interpreter's
 * stream. Usage: rng_dump DIR. */
#include <stdio.h>

#include "../../runtime/cuda/cuda.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: rng_dump DIR\n");
    return 2;
  }
  struct {
    IrType t;
    const char *dist, *file;
  } k[] = {{IR_F32, "rng_uniform", "f32_uniform"}, {IR_F32, "rng_normal", "f32_normal"},
           {IR_F64, "rng_uniform", "f64_uniform"}, {IR_F64, "rng_normal", "f64_normal"},
           {IR_S32, "rng_uniform", "s32_uniform"}, {IR_U64, "rng_uniform", "u64_uniform"}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    const char *src = cuda_rng_source(k[i].t, k[i].dist);
    char path[4096];
    snprintf(path, sizeof path, "%s/rng_%s.cuh", argv[1], k[i].file);
    FILE *f = src ? fopen(path, "w") : NULL;
    if (!f || fputs(src, f) < 0 || fclose(f) != 0) {
      fprintf(stderr, "rng_dump: cannot write %s\n", path);
      return 1;
    }
  }
  return 0;
}
