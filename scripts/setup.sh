#!/usr/bin/env bash
# Installs the Debian 12 packages fp8q needs to build, test and benchmark. Idempotent: when
# everything is installed it only asks dpkg and returns at once.
set -euo pipefail

packages=(
  cmake ninja-build g++                  # toolchain
  python3                                # tests/independent, examples/
  libgtest-dev                           # tests
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
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
