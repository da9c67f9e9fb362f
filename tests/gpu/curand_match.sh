#!/bin/sh
# curand_match.sh — ctest nvrtc.curand_match: builds tests/gpu/curand_match.cu with nvcc for the
# host (cuRAND's device API compiled for the CPU) next to runtime/rng_stream.c compiled by the
# project's C compiler, and runs it: cuRAND's Philox4_32_10 stream, its conversions and the GPU
# backend's generated rng kernels against the interpreter's stream, bit for bit. Needs the CUDA
# toolkit (nvcc), not a GPU; without nvcc it says so and exits 77 (skipped).
# Usage (from the repository root): curand_match.sh RNG_DUMP NVCC CC WORKDIR
set -e
dump=$1 nvcc=$2 cc=$3 work=$4
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "skipped: nvcc (the CUDA toolkit's compiler) was not found"
  exit 77
fi
mkdir -p "$work"
"$dump" "$work"
"$cc" -std=c11 -O2 -ffp-contract=off -c runtime/rng_stream.c -o "$work/rng_stream.o"
"$nvcc" -O2 -Xcompiler -ffp-contract=off -I runtime -I "$work" -o "$work/curand_match" \
  tests/gpu/curand_match.cu "$work/rng_stream.o"
"$work/curand_match"
