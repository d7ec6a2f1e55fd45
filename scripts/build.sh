#!/usr/bin/env bash
# Configures and builds fp8q (Release, Ninja) into build/ (or $FP8Q_BUILD_DIR), the torch
# operators included, against the LibTorch of the project's Python environment (scripts/setup.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FP8Q_BUILD_DIR:-$root/build}"
source "$root/scripts/venv.sh"
source "$root/scripts/ccache.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=/usr/bin/python3 \
  -DFP8Q_BUILD_TORCH=ON -DFP8Q_PYTHON="$fp8q_venv/bin/python" >/dev/null
cmake --build "$build" --parallel "$(nproc)"
