#!/bin/bash
# gpu_bundle.sh — run the GPU checks on a machine that has an NVIDIA GPU and the CUDA toolkit but
# not fxplain's build dependencies (no Readline, Graphviz or protobuf-c headers, no compiler setup):
# build here, carry the binaries with the shared libraries they need, run scripts/gpu_check.sh there.
#
#   bash scripts/gpu_bundle.sh make BUNDLE.tar.xz [BUILD]
#       packs BUILD's (default build) fxplain, gpu_run, runtime_diff, bench_cartpole_gpu and their
#       CTest files, with every shared library they load that is neither the C library nor CUDA's
#       (the GPU machine's own driver, NVRTC, cuBLAS and cuDNN are used there)
#   bash scripts/gpu_bundle.sh run BUNDLE.tar.xz [OUTDIR]
#       (on the GPU machine, from a checkout of the same commit) unpacks into build/, points the
#       loader at the carried libraries and at the machine's CUDA libraries, and runs
#       scripts/gpu_check.sh build OUTDIR (GPU_CHECK_SECONDS bounds it, as there)
set -u
mode=${1:-}
bundle=${2:-}
if [ -z "$mode" ] || [ -z "$bundle" ]; then
  sed -n '2,14p' "$0"
  exit 2
fi
case $mode in
make)
  B=${3:-build}
  tmp=$(mktemp -d)
  mkdir -p "$tmp/tests" "$tmp/bench" "$tmp/devlibs"
  for f in fxplain CTestTestfile.cmake tests/gpu_run tests/runtime_diff tests/CTestTestfile.cmake \
    bench/bench_cartpole_gpu bench/CTestTestfile.cmake; do
    [ -e "$B/$f" ] || { echo "gpu_bundle: $B/$f is missing (build first: cmake --build $B)"; exit 1; }
    cp "$B/$f" "$tmp/$f"
  done
  for e in fxplain tests/gpu_run tests/runtime_diff bench/bench_cartpole_gpu; do ldd "$B/$e"; done |
    awk '/=>/ {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+|libnvrtc|libcuda|libcublas|libcudnn)[.-]' |
    while read -r l; do cp -L "$l" "$tmp/devlibs/"; done
  tar -C "$tmp" -cJf "$bundle" . && rm -rf "$tmp"
  echo "gpu_bundle: $bundle ($(du -h "$bundle" | cut -f1)); on the GPU machine: bash scripts/gpu_bundle.sh run $bundle"
  ;;
run)
  out=${3:-gpu-check}
  mkdir -p build && tar -xJf "$bundle" -C build || exit 1
  # ctest's files name the directory the build was made in; make it this checkout
  src=$(sed -n 's/^# Source directory: //p' build/CTestTestfile.cmake)
  if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
  fi
  dirs=""
  for n in libnvrtc.so.13 libnvrtc.so.12 libcublas.so.13 libcublas.so.12 libcublasLt.so.13 libcublasLt.so.12 \
    libcudnn.so.9 libcurand.so.10; do
    d=$(find /usr/local/cuda/ /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu -maxdepth 5 -name "$n" 2>/dev/null | head -1)
    [ -n "$d" ] && dirs="$dirs:$(dirname "$d")"
  done
  # (the driver's libcuda.so.1 is left to the system loader: a toolkit's stub or compat copy would
  # shadow it and cuInit would fail with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
  export LD_LIBRARY_PATH="$PWD/build/devlibs$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  missing=$(ldd build/fxplain | grep "not found")
  [ -n "$missing" ] && echo "gpu_bundle: libraries not found: $missing"
  bash scripts/gpu_check.sh build "$out"
  ;;
*)
  sed -n '2,14p' "$0"
  exit 2
  ;;
esac
