#!/usr/bin/env bash
# Installs what fxplain needs to build and test, from Debian's packages. Skips the install when
# everything is already there. libsleef-dev gives the generated CPU kernels vector math (sin, cos,
# exp at the widest SIMD); without it they call libm. protobuf-c reads XLA's proto dumps (*.hlo.pb: XLA's
# instruction ids). The CUDA toolkit is optional (found at
# /usr/local/cuda if present).
set -euo pipefail
pkgs=(build-essential cmake pkg-config libreadline-dev libgraphviz-dev graphviz libopenblas-dev clang
      libclang-rt-14-dev libsleef-dev libprotobuf-c-dev protobuf-c-compiler)
# Chromium runs the test of the HTML walkthrough (headless); FXPLAIN_WITH_CHROMIUM=0 leaves it out
# (the test then reports itself skipped).
if [ "${FXPLAIN_WITH_CHROMIUM:-1}" = 1 ] && ! command -v chromium >/dev/null 2>&1; then pkgs+=(chromium); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
