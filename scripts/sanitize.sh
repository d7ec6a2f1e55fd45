#!/usr/bin/env bash
# Unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (GCC): configures build-asan/
# (or $FP8Q_ASAN_BUILD_DIR) with -fsanitize=address,undefined, builds the test programs named
# in $FP8Q_ASAN_TESTS (default: every parser and every module test but the exhaustive ones),
# and runs each. Any sanitizer report fails the run (-fno-sanitize-recover=all; ASan aborts on
# its first error anyway). It runs apart from scripts/test.sh (CI), which it would not fit; set
# FP8Q_ASAN_TESTS to run a part, e.g. the parsers and the quant tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FP8Q_ASAN_BUILD_DIR:-$root/build-asan}"
jobs="${FP8Q_JOBS:-$(nproc)}"
tests="${FP8Q_ASAN_TESTS:-fp8q_checkpoint_tests fp8q_checkpoint_mutation_tests fp8q_checkpoint_pipeline_tests \
fp8q_checkpoint_index_mutation_tests fp8q_quant_tests fp8q_numerics_tests fp8q_calib_tests fp8q_accumulation_tests \
fp8q_kernels_tests fp8q_trainium_tests}"
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE=/usr/bin/python3 \
  -DFP8Q_BUILD_BENCH=OFF -DFP8Q_BUILD_TOOLS=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" --parallel "$jobs" --target $tests
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for t in $tests; do
  exe="$(find "$build/tests" -type f -name "$t" -perm -u+x | head -n 1)"
  [ -n "$exe" ] || { echo "sanitize: $t was not built" >&2; exit 1; }
  echo "sanitize: $t" >&2
  (cd "$(dirname "$exe")" && "$exe" --gtest_brief=1)
done
