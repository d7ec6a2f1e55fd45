# Sourced by the build scripts: every compiler call goes through ccache (scripts/setup.sh
# installs it), one cache per machine that every clone shares, keyed on paths relative to the
# clone, so a fresh clone (CI) compiles only what changed. CMake reads the launcher variables
# when it configures a build directory for the first time. FP8Q_CCACHE=0 turns it off.
fp8q_cache_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${FP8Q_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_DIR="${CCACHE_DIR:-${FP8Q_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fp8q}/ccache}"
  export CCACHE_BASEDIR="$fp8q_cache_root" CCACHE_NOHASHDIR=true CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-10G}"
fi
