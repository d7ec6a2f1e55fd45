#!/usr/bin/env bash
# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (GCC): configures
# build-asan/ (or $FP8Q_ASAN_BUILD_DIR) with -fsanitize=address,undefined, builds the test
# programs only (no benchmarks, no command-line tool), and runs CTest without the
# `exhaustive` and `fuzz` labels. Any sanitizer report fails the run
# (-fno-sanitize-recover=all; ASan aborts on its first error anyway).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FP8Q_ASAN_BUILD_DIR:-$root/build-asan}"
jobs="${FP8Q_JOBS:-$(nproc)}"
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE=/usr/bin/python3 \
  -DFP8Q_BUILD_BENCH=OFF -DFP8Q_BUILD_TOOLS=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" --parallel "$jobs"
cd "$build"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --output-on-failure --parallel "$jobs" --timeout 1800 -LE 'exhaustive|fuzz'
