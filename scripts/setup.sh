#!/usr/bin/env bash
# Installs the Debian 12 packages fp8q needs to build, test and benchmark, and the project's
# Python environment (python/requirements.txt: torch and what the tests use). Idempotent:
# when everything is there it only asks dpkg and checks one file, and returns at once.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache           # toolchain; ccache: scripts/ccache.sh
  python3 python3-venv python3-dev       # tests/independent, examples/, the Python environment
  libgtest-dev                           # tests
  libxsimd-dev                           # the portable SIMD layer (numerics/src/isa/ops_xsimd.hpp)
  g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user googletest  # aarch64 (scripts/test-aarch64.sh)
  libbenchmark-dev                       # bench/ and `fp8q bench`
  libcli11-dev nlohmann-json3-dev        # the fp8q tool; nlohmann also parses safetensors headers
  libopenblas-dev                        # the sgemm/dgemm baselines of the GEMM benchmarks
  libeigen3-dev                          # the bundled example's forward pass (examples/digits)
  clang libclang-rt-14-dev               # libFuzzer (scripts/fuzz.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The Python environment, one per content of python/requirements.txt (scripts/venv.sh), made
# under a temporary name and renamed when complete, so an interrupted set-up leaves nothing
# half-made that a later run would take for finished. The first time this downloads about
# 3 GB (torch's Linux wheel is a CUDA build; it runs on a CPU) and takes 6 GB of disk.
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
if [ ! -f "$fp8q_venv/.complete" ]; then
  echo "setup: making the Python environment $fp8q_venv (first time: a ~3 GB download, about 4 minutes)" >&2
  mkdir -p "$fp8q_venv_base"
  staging="$(mktemp -d "$fp8q_venv.staging.XXXXXX")"
  trap 'rm -rf "$staging"' EXIT
  "$fp8q_system_python" -m venv "$staging"
  "$staging/bin/python" -m pip install --quiet --no-input -r "$fp8q_requirements" >&2
  touch "$staging/.complete"
  rm -rf "$fp8q_venv"
  mv "$staging" "$fp8q_venv"
  trap - EXIT
fi
if [ ! -f "$fp8q_oldest/.complete" ]; then
  staging="$(mktemp -d "$fp8q_oldest.staging.XXXXXX")"
  trap 'rm -rf "$staging"' EXIT
  "$fp8q_venv/bin/python" -m pip install --quiet --no-input --no-deps --require-hashes --target "$staging" \
    -r "$fp8q_oldest_requirements" >&2
  touch "$staging/.complete"
  rm -rf "$fp8q_oldest"
  mv "$staging" "$fp8q_oldest"
  trap - EXIT
fi
