#!/usr/bin/env bash
# aarch64: cross-compiles the library and the numerics, quant, kernels, calib and checkpoint
# test suites with Debian's toolchain (cmake/aarch64-linux-gnu.cmake; GoogleTest built for the
# target from Debian's sources) and runs them under qemu-aarch64, on the generic and the NEON
# path. The 2^32-input tests run every 257th block of 2^20 inputs there (FP8Q_EXHAUSTIVE_STRIDE;
# docs/performance.md, "aarch64"). Needs what scripts/setup.sh installs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FP8Q_AARCH64_BUILD_DIR:-$root/build-aarch64}"
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
"${emulator[@]}" /bin/true 2>/dev/null || true  # (qemu-user has no version banner worth printing)
failed=0
run() {  # run NAME SUITE [ENV...]: one suite under the emulator, its summary line kept
  local name="$1" suite="$2"; shift 2
  local exe; exe="$(find "$build/fp8q/tests" -name "$suite" -type f -perm -u+x | head -1)"
  local start=$SECONDS
  if env "$@" "${emulator[@]}" "$exe" --gtest_brief=1 >"$build/$name.log" 2>&1; then
    echo "aarch64: $name: $(grep -E '^\[  PASSED  \]' "$build/$name.log" | head -1) in $((SECONDS - start)) s"
  else
    echo "aarch64: $name FAILED (log: $build/$name.log)"; tail -30 "$build/$name.log"; failed=1
  fi
}
for suite in "${suites[@]}"; do
  if [ "$suite" = fp8q_numerics_exhaustive ]; then
    run "$suite" "$suite" FP8Q_EXHAUSTIVE_STRIDE=257
  else
    run "$suite" "$suite"
  fi
done
# The suites above run the best path (NEON); the generic path once more where paths differ.
run fp8q_numerics_tests.generic fp8q_numerics_tests FP8Q_ISA=generic
exit $failed
