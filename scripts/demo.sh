#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds, and quantizes the
# example activations (examples/activations.f32) to e4m3fn with a per-tensor scale, then
# decodes them back and shows input, code and dequantized value side by side.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FP8Q_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" >/dev/null
exec "$root/examples/quantize_activations.sh" "$build/fp8q"
