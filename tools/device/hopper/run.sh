#!/usr/bin/env bash
# The prepared Hopper check (docs/validation.md, section 6, "On a device: the prepared Hopper check").
#
#   bash tools/device/hopper/run.sh [all|vectors|device|fit|prepare-carry]     (from the repo root)
#
# all (default) = vectors, device, fit in one go, on a machine with an sm_89+ GPU, nvcc, python3
# with torch, and a working build/fp8q. The phases alone:
#   vectors        fp8q vectors -> $WORK/vectors/*.safetensors (+ raw copies)           ~2 s
#   device         nvcc mma_fp8.cu and wgmma_fp8.cu (~20 s); mma.sync on every vector set,
#                  on sm_90a wgmma's layout probe (exact results or the phase stops) and
#                  wgmma on every set, torch._scaled_mm on those it takes (~10 s, most of
#                  it torch's start)                                                ~40 s
#   fit            fp8q fit on every D (30 fits, 8 at a time; one takes 7 to 25 s alone,
#                  up to 60 s sharing 2 cores) and fp8q compare against fp8q's Hopper
#                  emulation                                                        ~2 to 3 min
#   prepare-carry  (on the build machine, before the device session) copies the shared
#                  libraries build/fp8q needs beyond libc/libstdc++ into build/device-carry,
#                  to take to the device machine along with build/fp8q
# Everything lands in $WORK (default build/hopper-check); at the end of each run $OUT
# (default ./device-out) gets summary.txt, fit-reports.txt, log.txt and hopper-check.tar.gz
# (all of $WORK): four files to copy back.
# DRY=1: mma_fp8 --dry (fp32_sequential on the host) instead of the GPU, and no _scaled_mm:
# the plumbing without a device (tools/device/hopper/dry_check.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PHASE=${1:-all}
OUT=${OUT:-./device-out}
WORK=${WORK:-build/hopper-check}
FP8Q=${FP8Q:-build/fp8q}
DRY=${DRY:-0}
JOBS=${JOBS:-8}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
WORK=$(cd "$WORK" && pwd)

# name  format_a  format_b  K  c (no: none; c: fp8q's random C, as accumulator input; neg0: C = -0)
VECTORS=(
  "e4m3-k32        e4m3fn e4m3fn 32  no"
  "e4m3-k32-c      e4m3fn e4m3fn 32  c"
  "e4m3-k32-cneg0  e4m3fn e4m3fn 32  neg0"
  "e4m3-k256       e4m3fn e4m3fn 256 no"
  "e4m3-k256-c     e4m3fn e4m3fn 256 c"
  "e5m2-k32        e5m2   e5m2   32  no"
  "e5m2-k32-c      e5m2   e5m2   32  c"
  "e5m2-k256-c     e5m2   e5m2   256 c"
  "e4m3xe5m2-k256  e4m3fn e5m2   256 no"
  "e5m2xe4m3-k256  e5m2   e4m3fn 256 no"
)
CASES=64   # M = N = 64: 4096 dot products a set
SEED=1

say() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { printf 'run.sh: FAILED: %s\n' "$*" >&2; exit 1; }

CARRY=${CARRY:-build/device-carry}
fp8q_ok() { "$FP8Q" --version >/dev/null 2>&1; }
need_fp8q() {
  if ! fp8q_ok && [ -d "$CARRY" ]; then
    local libs; libs=$(cd "$CARRY" && pwd)
    export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  fp8q_ok || { ldd "$FP8Q" 2>&1 | grep -i 'not found' >&2 || true
               die "$FP8Q does not run here (carry $FP8Q and $CARRY, made by run.sh prepare-carry)"; }
}

prepare_carry() {
  [ -x "$FP8Q" ] || die "$FP8Q is not built"
  mkdir -p "$CARRY"
  # Everything ldd resolves except the C and C++ runtimes every Linux image has.
  ldd "$FP8Q" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r name path; do
      case "$name" in libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*) continue ;; esac
      cp -L "$path" "$CARRY/$name"
    done
  du -sh "$CARRY" "$FP8Q"
  say "carry: [\"$FP8Q\", \"$CARRY\"]"
}

phase_vectors() {
  need_fp8q
  say "vectors: ${#VECTORS[@]} sets of $CASES x $CASES dot products ($FP8Q vectors)"
  mkdir -p "$WORK/vectors" "$WORK/raw"
  for v in "${VECTORS[@]}"; do
    read -r name fa fb k c <<<"$v"
    local f="$WORK/vectors/$name.safetensors"
    case "$c" in
      no)   "$FP8Q" vectors "$f" --format-a "$fa" --format-b "$fb" --k "$k" --cases $CASES --seed $SEED ;;
      c)    "$FP8Q" vectors "$f" --format-a "$fa" --format-b "$fb" --k "$k" --cases $CASES --seed $SEED --with-c ;;
      neg0) "$FP8Q" vectors "$WORK/vectors/$name.base.safetensors" --format-a "$fa" --format-b "$fb" --k "$k" \
                --cases $CASES --seed $SEED
            python3 "$HERE/st_raw.py" set-c "$WORK/vectors/$name.base.safetensors" "$f" -0.0
            rm "$WORK/vectors/$name.base.safetensors" ;;
      *)    die "vector set $name: c '$c'" ;;
    esac
    python3 "$HERE/st_raw.py" to-raw "$f" "$WORK/raw/$name"
  done
}

# The D files of the device phase: "vector-set kernel" pairs, kernel one of mma, mma-promote128,
# wgmma (sm_90a only), scaled_mm-accum, scaled_mm-fast.
runs() {
  for v in "${VECTORS[@]}"; do
    read -r name fa fb k c <<<"$v"
    echo "$name mma"
    echo "$name wgmma"
    case "$name" in e4m3-k256|e4m3-k256-c) echo "$name mma-promote128" ;; esac
    if [ "$c" = no ] && ! { [ "$fa" = e5m2 ] && [ "$fb" = e5m2 ]; }; then
      echo "$name scaled_mm-accum"; echo "$name scaled_mm-fast"
    fi
  done
}

phase_device() {
  [ -d "$WORK/raw" ] || die "no $WORK/raw: run the vectors phase first"
  mkdir -p "$WORK/d" "$WORK/bin"
  local arch=sm_90a
  if [ "$DRY" != 1 ]; then
    nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm --format=csv ||
      die "nvidia-smi sees no GPU (DRY=1 runs without one)"
    local cc; cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
    case "$cc" in 90) arch=sm_90a ;; 89) arch=sm_89 ;; *) arch=sm_$cc ;; esac
  fi
  say "device: nvcc -arch=$arch mma_fp8.cu ($(nvcc --version | grep -o 'release [0-9.]*'))"
  nvcc -arch="$arch" -O2 -o "$WORK/bin/mma_fp8" "$HERE/mma_fp8.cu"
  local dry_flag=(); [ "$DRY" = 1 ] && dry_flag=(--dry)
  local wgmma=0
  if [ "$arch" = sm_90a ]; then  # wgmma exists on Hopper only
    say "device: nvcc -arch=sm_90a wgmma_fp8.cu; its layout probe first"
    nvcc -arch=sm_90a -O2 -o "$WORK/bin/wgmma_fp8" "$HERE/wgmma_fp8.cu"
    "$WORK/bin/wgmma_fp8" --probe "${dry_flag[@]}" || die "wgmma layout probe: D is not exact (descriptor or fragment layout)"
    wgmma=1
  fi
  local sm_args=()
  while read -r name kernel; do
    local raw="$WORK/raw/$name" k; k=$(awk '$1 == "k" {print $2}' "$raw/meta.txt")
    local mode=chain; [ "$k" = 32 ] && mode=single
    case "$kernel" in
      mma)            "$WORK/bin/mma_fp8" "$raw" --mode $mode "${dry_flag[@]}" --out "$raw/d-mma.bin" ;;
      wgmma)          if [ "$wgmma" != 1 ]; then say "skip $name $kernel ($arch has no wgmma)"; continue; fi
                      "$WORK/bin/wgmma_fp8" "$raw" "${dry_flag[@]}" --out "$raw/d-wgmma.bin" ;;
      mma-promote128) if [ "$DRY" = 1 ]; then say "skip $name $kernel (DRY: the host loop has no promotion)"; continue; fi
                      "$WORK/bin/mma_fp8" "$raw" --mode chain --promote 128 --out "$raw/d-$kernel.bin" ;;
      scaled_mm-accum) sm_args+=("$WORK/vectors/$name.safetensors" "$WORK/d/$name-scaled_mm"); continue ;;
      scaled_mm-fast) continue ;;  # the same call writes both
    esac
    python3 "$HERE/st_raw.py" from-raw "$raw" "$raw/d-$kernel.bin" "$WORK/d/$name-$kernel.safetensors" \
      "fp8q.kernel=$kernel$([ "$DRY" = 1 ] && echo ' (dry: host fp32_sequential)')"
  done < <(runs)
  if [ "$DRY" = 1 ]; then
    say "skip torch._scaled_mm (DRY): ${#sm_args[@]} arguments would go to scaled_mm.py"
  else
    say "device: torch._scaled_mm on $(( ${#sm_args[@]} / 2 )) sets"
    python3 "$HERE/scaled_mm.py" "${sm_args[@]}"
  fi
}

# shellcheck disable=SC2317  # called through xargs
# fit (and compare against fp8q's Hopper emulation) of one D; status lines go to $WORK/fit/NAME.status.
fit_one() {
  local name=$1 kernel=$2 d="$WORK/d/$1-$2.safetensors" r="$WORK/fit/$1-$2"
  local start=$SECONDS st=0
  "$FP8Q" fit "$WORK/vectors/$name.safetensors" --d "$d" >"$r.txt" 2>&1 || st=$?
  [ "$st" -le 1 ] || { cat "$r.txt" >&2; die "fp8q fit $name $kernel: exit $st (bad input)"; }
  local cst=0
  "$FP8Q" compare "$d" "$WORK/emu/$name.safetensors" --tensor d >"$r.compare.txt" 2>&1 || cst=$?
  [ "$cst" -le 1 ] || { cat "$r.compare.txt" >&2; die "fp8q compare $name $kernel: exit $cst"; }
  local models; models=$(awk '/^consistent with every sample/ {on=1; next} on && /^  / {printf "%s%s", sep, substr($0, 3); sep=", "; next} {on=0}' "$r.txt")
  printf '%-16s %-16s fit exit %d (%2ds); consistent: %s; vs fp8q --profile hopper: %s\n' "$name" "$kernel" "$st" \
    $((SECONDS - start)) "${models:-none}" "$([ "$cst" = 0 ] && echo "bitwise equal" || echo "differs (see $name-$kernel.compare.txt)")" \
    >"$r.status"
}

phase_fit() {
  need_fp8q
  [ -d "$WORK/d" ] || die "no $WORK/d: run the device phase first"
  mkdir -p "$WORK/fit" "$WORK/emu"
  say "fit: fp8q's Hopper emulation of each set (fp8q matmul --profile hopper, C as the accumulator input)"
  for v in "${VECTORS[@]}"; do
    read -r name _ _ _ c <<<"$v"
    local role=(); [ "$c" != no ] && role=(--c-role accumulator)
    "$FP8Q" matmul "$WORK/vectors/$name.safetensors" "$WORK/emu/$name.safetensors" --profile hopper "${role[@]}"
  done
  local list; list=$(runs | while read -r name kernel; do
    if [ -f "$WORK/d/$name-$kernel.safetensors" ]; then echo "$name $kernel"; fi; done)
  [ -n "$list" ] || die "no D files in $WORK/d"
  say "fit: $(echo "$list" | wc -l) D files, $JOBS at a time"
  export -f fit_one die; export FP8Q WORK
  # shellcheck disable=SC2016  # $0 and $1 are the xargs arguments, expanded by the inner bash
  echo "$list" | xargs -P "$JOBS" -L 1 bash -c 'set -euo pipefail; fit_one "$0" "$1"'
  : >"$WORK/summary.txt"
  : >"$WORK/fit-reports.txt"
  while read -r name kernel; do
    local r="$WORK/fit/$name-$kernel"
    [ -f "$r.status" ] || die "fit $name $kernel left no status"
    cat "$r.status" >>"$WORK/summary.txt"
    { echo "=== $name $kernel: fp8q fit $WORK/vectors/$name.safetensors --d $WORK/d/$name-$kernel.safetensors"
      cat "$r.txt"; echo "--- fp8q compare against fp8q matmul --profile hopper (C as the accumulator input)"
      cat "$r.compare.txt"; echo; } >>"$WORK/fit-reports.txt"
  done <<<"$list"
  say "summary ($WORK/summary.txt):"
  cat "$WORK/summary.txt"
}

pack() {
  [ -d "$WORK" ] || return 0
  for f in summary.txt fit-reports.txt; do [ -f "$WORK/$f" ] && cp "$WORK/$f" "$OUT/$f"; done
  tar -czf "$OUT/hopper-check.tar.gz" --exclude=bin -C "$(dirname "$WORK")" "$(basename "$WORK")"
}

main() {
  say "phase $PHASE; WORK=$WORK OUT=$OUT DRY=$DRY"
  case "$PHASE" in
    prepare-carry) prepare_carry; return ;;
  esac
  trap 'pack || true' EXIT  # what a failed phase left comes back too
  case "$PHASE" in
    vectors) phase_vectors ;;
    device) phase_device ;;
    fit) phase_fit ;;
    all) phase_vectors; phase_device; phase_fit ;;
    *) die "phase '$PHASE': all vectors device fit prepare-carry" ;;
  esac
  pack && trap - EXIT
  say "done: $OUT/{summary.txt,fit-reports.txt,log.txt,hopper-check.tar.gz}"
}

main 2>&1 | tee "$OUT/log.txt"
exit "${PIPESTATUS[0]}"
