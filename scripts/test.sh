#!/usr/bin/env bash
# The whole test suite from nothing: installs what is missing, builds, runs every test
# (the exhaustive 2^32-input checks included, label `exhaustive`) with CTest, then fuzzes
# every parser of untrusted files for a short while (scripts/fuzz.sh, its own Clang build),
# runs the C++ suites under AddressSanitizer + UBSan and the multi-threaded ones under
# ThreadSanitizer (scripts/sanitize.sh, builds of their own), and last cross-compiles for
# aarch64 and runs the core suites under qemu (scripts/test-aarch64.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FP8Q_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
(cd "$build" && ctest --output-on-failure --parallel "$(nproc)" --timeout 1800)
"$root/scripts/fuzz.sh"
"$root/scripts/sanitize.sh" address
"$root/scripts/sanitize.sh" thread
"$root/scripts/test-aarch64.sh"
