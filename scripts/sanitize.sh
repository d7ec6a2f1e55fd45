#!/usr/bin/env bash
# The C++ test suites under GCC's sanitizers; any report fails the run.
#
#   scripts/sanitize.sh [address]   AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/):
#                                   every module's tests but the longest sweeps, the 2^32-input
#                                   suite on a stride
#   scripts/sanitize.sh thread      ThreadSanitizer (build-tsan/): the tests of every multi-threaded
#                                   path, at 1, 2, 3 and 8 threads (tests/thread_counts.hpp)
#
# Run by scripts/test.sh (so by CI). FP8Q_SANITIZE_TESTS replaces the list of test programs
# (CTest executables, each optionally `program:gtest-filter`), FP8Q_SANITIZE_BUILD_DIR the build
# directory; the subsets and their cost are in docs/performance.md, "Sanitizers and the CI budget".
set -euo pipefail

main() {
  local root mode jobs build flags default_tests tests cflags
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  mode="${1:-address}"
  jobs="${FP8Q_JOBS:-$(nproc)}"
  # source ccache.sh: compile through the machine's shared cache
  source "$root/scripts/ccache.sh"
  case "$mode" in
    address)
      build="${FP8Q_SANITIZE_BUILD_DIR:-$root/build-asan}"
      flags="-fsanitize=address,undefined -fno-sanitize-recover=all"
      # the every-bf16 / every-fp16 / 2^24-input sweeps run natively in CTest; here they would
      # take most of the run, and the paths they cover run on the other cases' inputs too
      local sweeps="-*AllBf16InputsEqualScalar*:*AllFp16InputsEqualScalar*:*Fp32StructuredAndRandomEqualsScalar*"
      sweeps+=":*EveryPatternUnderEveryScale*:*EveryProbe*:*WithPowerOfTwoScales*:NarrowLanes16.Every*:*EveryDiscardedHalf*:*EveryDiscardedPattern*"
      default_tests="fp8q_numerics_tests:$sweeps fp8q_numerics_exhaustive fp8q_quant_tests fp8q_calib_tests \
fp8q_accumulation_tests fp8q_kernels_tests fp8q_kernels_models_tests fp8q_kernels_accumulator_tests \
fp8q_kernels_bf16_tests fp8q_kernels_lanes16_tests fp8q_trainium_tests fp8q_fit_tests:-Published/FitPublished.* fp8q_checkpoint_tests \
fp8q_checkpoint_mutation_tests fp8q_checkpoint_mma_text_tests fp8q_checkpoint_pipeline_tests \
fp8q_checkpoint_index_mutation_tests fp8q_checkpoint_internal_tests fp8q_testing_tests"
      export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
      export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
      export FP8Q_EXHAUSTIVE_STRIDE="${FP8Q_EXHAUSTIVE_STRIDE:-1021}"  # every 1021st block of 2^20 inputs
      ;;
    thread)
      build="${FP8Q_SANITIZE_BUILD_DIR:-$root/build-tsan}"
      flags="-fsanitize=thread"
      # the GEMM models share one threaded driver (kernels/src/fast_gemm.cpp): two of them here
      default_tests="fp8q_numerics_tests:*ThreadCount*:*NanError* \
fp8q_quant_tests:*ThreadCount*:CurrentScaling.*:BlockScaling.*:MxScaling.* fp8q_calib_tests:*ThreadCount*:Calibrate.* \
fp8q_kernels_tests:GemmFast.* fp8q_kernels_models_tests:*Trainium3Mx*:*FusedModels* fp8q_trainium_tests:TrainiumGemm.NcMatmulEqualsSystolicReference:TrainiumGemm.NcMatmulMx1x32EqualsTrainium3Model \
fp8q_checkpoint_pipeline_tests:HostileOptions.* fp8q_checkpoint_internal_tests:JobInFlight.*:WriteJob.*:Scan.*"
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4"
      ;;
    *) echo "sanitize: unknown mode '$mode' (address or thread)" >&2; return 2 ;;
  esac
  tests="${FP8Q_SANITIZE_TESTS:-$default_tests}"
  cflags="$flags -fno-omit-frame-pointer -g -O1"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE=/usr/bin/python3 \
    -DFP8Q_BUILD_BENCH=OFF -DFP8Q_BUILD_TOOLS=OFF -DCMAKE_CXX_FLAGS="$cflags" -DCMAKE_C_FLAGS="$cflags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" >/dev/null
  local programs=() t
  for t in $tests; do programs+=("${t%%:*}"); done
  cmake --build "$build" --parallel "$jobs" --target "${programs[@]}"
  # the programs run $jobs at a time (each is mostly one thread); the first failure is reported
  local running=0 failed=0
  for t in $tests; do
    if ((running >= jobs)); then
      wait -n || failed=1
      running=$((running - 1))
    fi
    run_one "$build" "$mode" "$t" &
    running=$((running + 1))
  done
  while ((running > 0)); do
    wait -n || failed=1
    running=$((running - 1))
  done
  return "$failed"
}

# One test program (`program` or `program:gtest-filter`), its output in $build/<program>.log.
run_one() {
  local build="$1" mode="$2" t="$3" program filter exe start
  program="${t%%:*}"
  filter="*"
  [ "$program" = "$t" ] || filter="${t#*:}"
  exe="$(find "$build/tests" -type f -name "$program" -perm -u+x | head -n 1)"
  [ -n "$exe" ] || { echo "sanitize: $program was not built" >&2; return 1; }
  start=$SECONDS
  if ! (cd "$(dirname "$exe")" && "$exe" --gtest_brief=1 --gtest_filter="$filter") >"$build/$program.log" 2>&1; then
    tail -n 60 "$build/$program.log" >&2
    echo "sanitize ($mode): $program failed; the whole output is in $build/$program.log" >&2
    return 1
  fi
  echo "sanitize ($mode): $program passed in $((SECONDS - start)) s" >&2
}

# in a function, so that the whole script is read before it runs (an edit meanwhile is harmless)
main "$@"
