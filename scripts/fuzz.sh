#!/usr/bin/env bash
# A short libFuzzer run of every parser of untrusted input (tests/fuzz/: the safetensors header,
# the model index, the tensor-core measurement text, the histogram state the torch operators read), instrumented with ASan and UBSan: configures build-fuzz/ (or
# $FP8Q_FUZZ_BUILD_DIR) with Clang and FP8Q_FUZZ=ON, builds only the fuzz targets and runs
# the CTest label `fuzz` (20 seconds per target from the seed corpora; a crash fails it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FP8Q_FUZZ_BUILD_DIR:-$root/build-fuzz}"
source "$root/scripts/ccache.sh"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPython3_EXECUTABLE=/usr/bin/python3 -DFP8Q_FUZZ=ON -DFP8Q_BUILD_BENCH=OFF -DFP8Q_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" --parallel "${FP8Q_JOBS:-$(nproc)}" --target fp8q_safetensors_fuzz fp8q_index_fuzz fp8q_mma_text_fuzz fp8q_histogram_state_fuzz
cd "$build"
ctest --output-on-failure -L fuzz
