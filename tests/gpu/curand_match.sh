#!/bin/sh
# curand_match.sh — ctest nvrtc.curand_match: builds tests/gpu/curand_match.cu with nvcc for the
# host (cuRAND's device API compiled for the CPU) next to runtime/interp/rng_stream.c compiled by the
# project's C compiler, and runs it: cuRAND's Philox4_32_10 stream, its conversions and the GPU
# backend's generated rng kernels against the interpreter's stream, bit for bit. Needs the CUDA
# toolkit (nvcc), not a GPU; without nvcc it says so and exits 77 (skipped).
# Then the device side, statically: the PTX nvcc makes of each uniform and integer kernel holds no
# approximate instruction and no float operation without an explicit rounding mode (only integer
# operations and correctly rounded cvt.rn / fma.rn / sub.rn, which PTX never contracts and whose
# results the host computes exactly the same), so on a GPU those values must match
# the interpreter's bit for bit; the f32 normal kernel's sin.approx / cos.approx (cuRAND's
# __sincosf) are listed, the reason device normals differ in the last bits.
# Usage (from the repository root): curand_match.sh RNG_DUMP NVCC CC WORKDIR
set -e
dump=$1 nvcc=$2 cc=$3 work=$4
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "skipped: nvcc (the CUDA toolkit's compiler) was not found"
  exit 77
fi
mkdir -p "$work"
"$dump" "$work"
"$cc" -std=c11 -O2 -ffp-contract=off -c runtime/interp/rng_stream.c -o "$work/rng_stream.o"
"$nvcc" -O2 -Xcompiler -ffp-contract=off -I runtime -I "$work" -o "$work/curand_match" \
  tests/gpu/curand_match.cu "$work/rng_stream.o"
"$work/curand_match"
for k in f32_uniform f64_uniform s32_uniform u64_uniform f32_normal f64_normal; do
  printf '#include "rng_%s.cuh"\n' "$k" > "$work/ptx_$k.cu"
  "$nvcc" -ptx -arch=sm_80 -I "$work" -o "$work/$k.ptx" "$work/ptx_$k.cu"
  approx=$(grep -oE '[a-z0-9]+\.approx[a-z0-9.]*' "$work/$k.ptx" | sort | uniq -c | tr -s ' \n' ' ')
  float_ops=$(grep -oE '(cvt|fma|mul|add|sub|div|sqrt)\.r[nzmp]\.f(32|64)[a-z0-9.]*' "$work/$k.ptx" | sort | uniq -c | tr -s ' \n' ' ')
  case $k in
  *_uniform)
    unrounded=$(grep -oE '\b(add|sub|mul|fma|mad|div|sqrt|rcp)\.f(32|64)\b' "$work/$k.ptx" | sort | uniq -c | tr -s ' \n' ' ')
    if [ -n "$approx" ] || [ -n "$unrounded" ]; then
      echo "FAIL: the $k kernel's PTX has approximate or not explicitly rounded float operations:$approx$unrounded"
      exit 1
    fi
    echo "PTX of the $k kernel: no approximate instructions; float operations:${float_ops:- none}" ;;
  *)
    echo "PTX of the $k kernel: approximate instructions:${approx:- none}" ;;
  esac
done
