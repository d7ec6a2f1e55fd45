#!/usr/bin/env bash
# aarch64: cross-compiles the library and the numerics, quant, kernels, calib and checkpoint
# test suites with Debian's toolchain (cmake/aarch64-linux-gnu.cmake; GoogleTest built for the
# target from Debian's sources) and runs them under qemu-aarch64 on the NEON path, without the
# longest tests (below). The 2^32-input tests run every 257th block of 2^20 inputs there
# (FP8Q_EXHAUSTIVE_STRIDE; docs/performance.md, "aarch64"). Needs what scripts/setup.sh installs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FP8Q_AARCH64_BUILD_DIR:-$root/build-aarch64}"
source "$root/scripts/ccache.sh"
toolchain="$root/cmake/aarch64-linux-gnu.cmake"
jobs="$(nproc)"

# Header-only host packages (xsimd, nlohmann-json) seen through a directory of their own: the
# host's /usr/include must not reach the cross compiler (its C library headers are x86's).
stage="$build/host-headers"
mkdir -p "$stage/include" "$stage/cmake"
ln -sfn /usr/include/xsimd "$stage/include/xsimd"
ln -sfn /usr/include/nlohmann "$stage/include/nlohmann"
for pkg in xsimd:xsimd:8.1.0 nlohmann_json:nlohmann_json::nlohmann_json:3.11.2; do
  IFS=: read -r name _ <<<"$pkg"
  target="${pkg#*:}"; target="${target%:*}"; version="${pkg##*:}"
  mkdir -p "$stage/cmake/$name"
  cat >"$stage/cmake/$name/${name}Config.cmake" <<CFG
if(NOT TARGET $target)
  add_library($target INTERFACE IMPORTED)
  set_target_properties($target PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$stage/include")
endif()
CFG
  cat >"$stage/cmake/$name/${name}ConfigVersion.cmake" <<CFG
set(PACKAGE_VERSION $version)
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
CFG
done

if [ ! -f "$build/googletest/.installed" ]; then
  cmake -S /usr/src/googletest -B "$build/googletest/build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$build/googletest" >/dev/null
  cmake --build "$build/googletest/build" --parallel "$jobs" --target install >/dev/null
  touch "$build/googletest/.installed"
fi

cmake -S "$root" -B "$build/fp8q" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$build/googletest;$stage/cmake" -DFP8Q_BUILD_BENCH=OFF -DFP8Q_BUILD_TOOLS=OFF >/dev/null
suites=(fp8q_numerics_tests fp8q_numerics_exhaustive fp8q_quant_tests fp8q_accumulation_tests fp8q_kernels_tests
        fp8q_kernels_models_tests fp8q_kernels_accumulator_tests fp8q_trainium_tests fp8q_calib_tests
        fp8q_checkpoint_internal_tests)
cmake --build "$build/fp8q" --parallel "$jobs" --target "${suites[@]}"

emulator=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
# Under emulation (about 20x slower) the suites run without their longest tests: those taking 2 s
# or more natively, below. The per-ISA suites' generic instances are left out too (the generic
# path is the scalar reference itself; the x86 run covers them), and the x86 ones skip anyway.
slow=(
  'Calibrate.PerChannelEqualsEachChannelAlone'
  'EveryIsa/BlockScaledOnIsa.EveryElementUsesItsBlocksScale/*'
  'EveryIsa/BlockScaledOnIsa.LargeMxOutputsEqualThePerBlockReference/*'
  'EveryIsa/BlockScaledOnIsa.MxBf16EveryPatternUnderEveryScale/*'
  'EveryIsa/BlockScaledOnIsa.MxBf16NormalFormBoundaryEveryProbe/*'
  'EveryIsa/BulkOnIsa.AllBf16InputsEqualScalar/*'
  'EveryIsa/BulkOnIsa.AllBf16InputsWithPowerOfTwoScalesEqualScalar/*'
  'EveryIsa/BulkOnIsa.AllFp16InputsEqualScalar/*'
  'EveryIsa/BulkOnIsa.Fp32StructuredAndRandomEqualsScalar/*'
  'EveryIsa/BulkOnIsa.LargeBf16OutputsEqualScalar/*'
  'EveryIsa/CastTransposeOnIsa.BandChunkAndAlignmentEdges/*'
  'EveryIsa/CastTransposeOnIsa.EqualsConvertTransposeAndAmax/*'
  'EveryIsa/CastTransposeOnIsa.LargeOutputsStreamed/*'
  'Formats/FitHopper.FindsHoppersModelAndOnlyItsEquivalents/*'
  'GemmAccumulatorFast.ExactBlock'
  'GemmAccumulatorFast.Fused'
  'GemmAccumulatorFast.SequentialAndSystolic'
  'GemmAccumulatorTrainium.PsumStartsAtC'
  'GemmBf16Pairs.Avx2KernelEqualsReference'
  'GemmBf16Pairs.EmulatedKernelEqualsReference'
  'GemmFast.EqualsReferenceAcrossShapesScalingsAndThreads'
  'GemmFastModels.ExactBlockCancellationAndTinyTails'
  'GemmFastModels.ExactBlockWithMxScales'
  'GemmFastModels.ExactBlockWithPlainAndBlockScaling'
  'GemmFastModels.FusedModels'
  'GemmFastModels.Trainium3MxOneByThirtyTwo'
  'Models/FitRecovers.TheGeneratingModel/*'
  'SafetensorsValidationEdges.HeaderAtTheLimitIsParsed'
  'Targets/MseVsBruteForce.WithinOnePercentOfTheBestAndBeatsMaxWhenClippingHelps/*'
  'TrainiumGemm.NcMatmulEqualsSystolicReference'
  'TrainiumGemm.NcMatmulMx1x32EqualsTrainium3Model'
  'TrainiumGemm.NcMatmulMxWithoutMxScales'
  'TrainiumGemm.NcMatmulMxWrapxEqualsTrainium3Model'
  'TrainiumGemm.Trainium2MxThroughBf16'
  'WholeViews.Avx2AndEveryThreadCountGiveTheGenericBits'
)
filter="-*/generic:*/avx2:*/avx512$(printf ':%s' "${slow[@]}")"
failed=0
run() {  # run SUITE [ENV...]: one suite under the emulator, its summary line kept
  local suite="$1"; shift
  local exe; exe="$(find "$build/fp8q/tests" -name "$suite" -type f -perm -u+x | head -1)"
  local start=$SECONDS
  if env "$@" "${emulator[@]}" "$exe" --gtest_brief=1 --gtest_filter="$filter" >"$build/$suite.log" 2>&1; then
    echo "aarch64: $suite: $(grep -E '^\[  PASSED  \]' "$build/$suite.log" | head -1) in $((SECONDS - start)) s"
  else
    echo "aarch64: $suite FAILED (log: $build/$suite.log)"; tail -30 "$build/$suite.log"; failed=1
  fi
}
for suite in "${suites[@]}"; do
  if [ "$suite" = fp8q_numerics_exhaustive ]; then
    run "$suite" FP8Q_EXHAUSTIVE_STRIDE=257
  else
    run "$suite"
  fi
done
exit $failed
