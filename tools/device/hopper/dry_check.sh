#!/usr/bin/env bash
# The prepared Hopper check without a GPU (docs/validation.md, section 6, "On a device: the
# prepared Hopper check"): compiles mma_fp8.cu for sm_90a and sm_89 and wgmma_fp8.cu for sm_90a
# with warnings as errors, runs wgmma's layout probe on the host (the probe's own arithmetic), then
# runs run.sh end to end with DRY=1 (mma_fp8 / wgmma_fp8 --dry compute D on the host as fp32_sequential, no
# _scaled_mm), and asserts that fp8q fit finds fp32_sequential, with C as the accumulator input
# where the set has C, for every D: the vectors -> raw -> mma_fp8 -> safetensors -> fit plumbing
# (tensor names, layouts, B's transpose, C) is right. Run from the repo root: about 1 to 2 minutes;
# FP8Q names the fp8q binary (default build/fp8q). CTest runs it as tools.hopper_dry_check.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TMP=$(mktemp -d /tmp/fp8q-hopper-dry.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "dry_check: FAILED: $*" >&2; exit 1; }

for arch in sm_90a sm_89; do
  nvcc -arch=$arch -O2 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -o "$TMP/mma_fp8_$arch" "$HERE/mma_fp8.cu"
  echo "dry_check: nvcc -arch=$arch: compiled, no warnings"
done
nvcc -arch=sm_90a -O2 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -o "$TMP/wgmma_fp8" "$HERE/wgmma_fp8.cu"
echo "dry_check: nvcc -arch=sm_90a wgmma_fp8.cu: compiled, no warnings"
"$TMP/wgmma_fp8" --probe --dry || fail "the wgmma probe's host arithmetic"
if "$TMP/wgmma_fp8" --probe "$TMP" 2>"$TMP/err"; then fail "wgmma_fp8 --probe took a DIR"; fi
echo "dry_check: wgmma_fp8 --probe with a DIR: $(cat "$TMP/err")"

# Error paths of mma_fp8: K not a multiple of 32, --mode single with K != 32, a missing file.
bad() {  # bad K: a 16 x 8 problem of that K, all +0 codes
  mkdir -p "$TMP/bad"
  printf 'm 16\nn 8\nk %s\nformat_a e4m3fn\nformat_b e4m3fn\nc 0\n' "$1" >"$TMP/bad/meta.txt"
  head -c $((16 * $1)) /dev/zero >"$TMP/bad/a.bin"; head -c $(($1 * 8)) /dev/zero >"$TMP/bad/b.bin"
}
bad 48
if "$TMP/mma_fp8_sm_90a" "$TMP/bad" --dry 2>"$TMP/err"; then fail "mma_fp8 took K = 48"; fi
echo "dry_check: mma_fp8 refuses K = 48: $(cat "$TMP/err")"
if "$TMP/wgmma_fp8" "$TMP/bad" --dry 2>"$TMP/err"; then fail "wgmma_fp8 took K = 48"; fi
echo "dry_check: wgmma_fp8 refuses K = 48: $(cat "$TMP/err")"
bad 64
if "$TMP/mma_fp8_sm_90a" "$TMP/bad" --dry --mode single 2>"$TMP/err"; then fail "mma_fp8 --mode single took K = 64"; fi
echo "dry_check: mma_fp8 --mode single refuses K = 64: $(cat "$TMP/err")"
rm "$TMP/bad/b.bin"
if "$TMP/mma_fp8_sm_90a" "$TMP/bad" --dry 2>"$TMP/err"; then fail "mma_fp8 ran without b.bin"; fi
echo "dry_check: mma_fp8 without b.bin: $(cat "$TMP/err")"
if "$TMP/wgmma_fp8" "$TMP/bad" --dry 2>"$TMP/err"; then fail "wgmma_fp8 ran without b.bin"; fi
echo "dry_check: wgmma_fp8 without b.bin: $(cat "$TMP/err")"

# The whole script, DRY.
DRY=1 WORK="$TMP/work" OUT="$TMP/out" bash "$HERE/run.sh" all >"$TMP/run.log" 2>&1 || { cat "$TMP/run.log"; fail "run.sh"; }
cat "$TMP/run.log"
for f in summary.txt fit-reports.txt log.txt hopper-check.tar.gz; do [ -s "$TMP/out/$f" ] || fail "no $f in OUT"; done
tar -tzf "$TMP/out/hopper-check.tar.gz" | grep -q 'work/d/e4m3-k256-c-mma.safetensors' || fail "tarball lacks the D files"
mma_lines=$(grep -Ec ' (mma|wgmma) ' "$TMP/out/summary.txt")
[ "$mma_lines" = 20 ] || fail "$mma_lines mma and wgmma results in summary.txt, expected 20"
while read -r line; do
  # fp32_sequential must be in the consistent list as itself, not only as "(C as epilogue)"
  echo "$line" | grep -Eq 'consistent: (.*, )?fp32_sequential(,|;)' || fail "fit did not find fp32_sequential: $line"
done < <(grep -E ' (mma|wgmma) ' "$TMP/out/summary.txt")
echo "dry_check: fit finds fp32_sequential for all $mma_lines --dry D files (C as accumulator where there is C)"

# prepare-carry: the libraries build/fp8q needs, copied, and fp8q runs with them alone added.
CARRY="$TMP/carry" OUT="$TMP/out-carry" bash "$HERE/run.sh" prepare-carry >/dev/null
LD_LIBRARY_PATH="$TMP/carry" "${FP8Q:-build/fp8q}" --version >/dev/null || fail "fp8q with the carried libraries"
echo "dry_check: prepare-carry: $(find "$TMP/carry" -type f -printf "%f ")($(du -sh "$TMP/carry" | cut -f1))"
echo "dry_check: OK"
