# Sourced by setup.sh, python and the tests: where the project's Python environment lives.
# It is made once per content of python/requirements.txt and shared by every clone on the
# machine, so a fresh clone (CI) does not download torch again.
fp8q_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fp8q_requirements="$fp8q_root/python/requirements.txt"
fp8q_venv_base="${FP8Q_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fp8q}"
fp8q_venv="$fp8q_venv_base/venv-$(sha256sum "$fp8q_requirements" | cut -c1-16)"
fp8q_system_python="${FP8Q_SYSTEM_PYTHON:-/usr/bin/python3}"
# The oldest supported compressed-tensors, a package directory beside the environment.
fp8q_oldest_requirements="$fp8q_root/python/requirements-oldest.txt"
fp8q_oldest="$fp8q_venv-oldest-$(sha256sum "$fp8q_oldest_requirements" | cut -c1-16)"
