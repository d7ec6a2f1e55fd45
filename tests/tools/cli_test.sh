#!/usr/bin/env bash
# tools/fp8q: the command-line contract. Every verb has --help; bad input exits 2 with a
# message on stderr that names the problem; no partial output file is left; an input is
# never overwritten; stdin/stdout work. Usage: cli_test.sh PATH/TO/fp8q
set -uo pipefail
fp8q="$1"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

printf '\x00\x00\x80\x3f\x00\x00\xe8\x43\x00\x80\xe8\x43\x00\x00\xc0\x7f' > "$tmp/x.f32"  # 1, 464, 465, NaN

check help 0 '' -- "$fp8q" --help
for verb in formats convert dump bench quantize-tensors dequantize-tensors calibrate matmul quantize inspect verify; do
  check "$verb --help" 0 '' -- "$fp8q" "$verb" --help
  expect "$verb --help prints usage" grep -q "Usage" "$tmp/out"
done
check "formats" 0 '' -- "$fp8q" formats
expect "formats lists e4m3fn" grep -q '^e4m3fn ' "$tmp/out"
check "formats --json" 0 '' -- "$fp8q" formats --json
expect "formats --json has 14 formats" test "$(grep -c '"name"' "$tmp/out")" -eq 14

check "convert e4m3fn" 0 '' -- "$fp8q" convert --from f32 --to e4m3fn "$tmp/x.f32" "$tmp/x.e4"
expect "464 ties to 448, 465 saturates, NaN is 0x7F" test "$(od -An -tx1 "$tmp/x.e4" | tr -d ' ')" = "387e7e7f"
check "convert inf-nan" 0 '' -- "$fp8q" convert --from f32 --to e4m3fn --overflow inf-nan "$tmp/x.f32" "$tmp/y.e4"
expect "465 overflows to NaN" test "$(od -An -tx1 "$tmp/y.e4" | tr -d ' ')" = "387e7f7f"
check "stdin to stdout" 0 '' -- sh -c "cat '$tmp/x.f32' | '$fp8q' convert --from f32 --to e5m2 - - > '$tmp/z'"
expect "stdout bytes" test "$(od -An -tx1 "$tmp/z" | tr -d ' ')" = "3c5f5f7e"

head -c 7 "$tmp/x.f32" > "$tmp/t.f32"
check "truncated input" 2 'not a whole number of f32 elements' -- "$fp8q" convert --from f32 --to e5m2 "$tmp/t.f32" "$tmp/t.out"
expect "no output after an error" test ! -e "$tmp/t.out"
check "NaN into e2m1" 2 'element 3: NaN has no encoding in e2m1' -- "$fp8q" convert --from f32 --to e2m1 "$tmp/x.f32" "$tmp/n.out"
expect "no output after a NaN error" test ! -e "$tmp/n.out"
expect "no temporary file left" test -z "$(ls -A "$tmp" | grep fp8q-tmp)"
check "--nan zero" 0 '' -- "$fp8q" convert --from f32 --to e2m1 --nan zero "$tmp/x.f32" "$tmp/n.out"
check "unknown format" 2 "unknown format 'e9m9'" -- "$fp8q" convert --from e9m9 --to e5m2 "$tmp/x.f32" "$tmp/o"
check "unknown rounding" 2 "unknown rounding 'up'" -- "$fp8q" convert --from f32 --to e5m2 --round up "$tmp/x.f32" "$tmp/o"
check "bad scale" 2 "--scale: 'abc' is not a number" -- "$fp8q" convert --from f32 --to e5m2 --scale abc "$tmp/x.f32" "$tmp/o"
check "threads 0" 2 'threads' -- "$fp8q" convert --from f32 --to e5m2 --threads 0 "$tmp/x.f32" "$tmp/o"
check "missing input" 2 "cannot open input" -- "$fp8q" convert --from f32 --to e5m2 "$tmp/none" "$tmp/o"
check "missing option" 2 'from is required' -- "$fp8q" convert --to e5m2 "$tmp/x.f32" "$tmp/o"
cp "$tmp/x.f32" "$tmp/keep.f32"
check "output is the input" 2 'is the input file' -- "$fp8q" convert --from f32 --to f32 "$tmp/keep.f32" "$tmp/keep.f32"
expect "input untouched" cmp -s "$tmp/x.f32" "$tmp/keep.f32"
check "fp4 code out of range" 2 'element 0: byte 31 is not a e2m1 code' -- sh -c "printf '\\037' | '$fp8q' convert --from e2m1 --to f32 - -"
check "fp4 code out of range, stochastic path" 2 'element 0: byte 31 is not a e2m1 code' -- sh -c "printf '\\037' | '$fp8q' convert --from e2m1 --to f32 --round sr - -"
check "scale underflows to zero" 2 "underflows fp32 to zero" -- "$fp8q" convert --from f32 --to e5m2 --scale 1e-50 "$tmp/x.f32" "$tmp/o"
check "unknown FP8Q_ISA" 2 "FP8Q_ISA='sse9' is not one of" -- env FP8Q_ISA=sse9 "$fp8q" convert --from f32 --to e5m2 "$tmp/x.f32" "$tmp/o"
check "FP8Q_ISA=generic gives the same bytes" 0 '' -- env FP8Q_ISA=generic "$fp8q" convert --from f32 --to e4m3fn "$tmp/x.f32" "$tmp/g.e4"
expect "generic path bytes" cmp -s "$tmp/g.e4" "$tmp/x.e4"
# A symbolic link stays a link; a device is written in place, not replaced by a file.
ln -s "$tmp/linked.e4" "$tmp/link"
check "output through a symlink" 0 '' -- "$fp8q" convert --from f32 --to e4m3fn "$tmp/x.f32" "$tmp/link"
expect "the link is still a link" test -L "$tmp/link"
expect "its target got the bytes" cmp -s "$tmp/linked.e4" "$tmp/x.e4"
mkfifo "$tmp/fifo"
cat "$tmp/fifo" > "$tmp/from-fifo" &
check "output to a FIFO" 0 '' -- "$fp8q" convert --from f32 --to e4m3fn "$tmp/x.f32" "$tmp/fifo"
wait
expect "the FIFO is still a FIFO" test -p "$tmp/fifo"
expect "the reader got the bytes" cmp -s "$tmp/from-fifo" "$tmp/x.e4"
check "dump" 0 '' -- "$fp8q" dump --format e4m3fn "$tmp/x.e4"
expect "dump shows 448" grep -q '0x7E  448' "$tmp/out"
check "dump with a huge count" 0 '' -- "$fp8q" dump --format e4m3fn --first 1 --count 18446744073709551615 "$tmp/x.e4"
expect "dump prints elements 1..3" test "$(wc -l < "$tmp/out")" -eq 3
printf '\000' > "$tmp/e8m0-zero"
check "dump e8m0 code 0" 0 '' -- "$fp8q" dump --format e8m0 "$tmp/e8m0-zero"
expect "dump prints 2^-127 exactly" grep -q '0x00  5.8774717541114375398436826861112283890933277838604376075437585313920862972736358642578125e-39$' "$tmp/out"
check "bench no match" 2 'no benchmark case matches' -- "$fp8q" bench --filter '^nothing$'
check "bench bad regex" 2 'not a regular expression' -- "$fp8q" bench --filter '('
check "bench bad BLAS kernel" 2 'not an OpenBLAS core name' -- "$fp8q" bench --blas-kernel 'x;y'
check "bench unknown set" 2 "no set named 'nope' \\(one of: mxfp8\\)" -- "$fp8q" bench --set nope
check "bench set and filter" 2 'excludes' -- "$fp8q" bench --set mxfp8 --filter '^copy/'
# the mxfp8 set: every case of its table, each beside its baseline (one run, JSON)
check "bench --set mxfp8" 0 '' -- "$fp8q" bench --set mxfp8 --json --repetitions 1 --min-time 0.001
for c in convert/f32_to_e4m3fn/scaled_rne_sat convert/e4m3fn_to_f32 convert/bf16_to_e4m3fn/rne_sat \
         convert/f32_to_e5m2/sr_sat quant/mx_bf16_to_e4m3fn gemm/fp32_sequential/2048 gemm/systolic128/2048 \
         gemm/fused_hopper/2048 gemm/mxfp8_trainium3_1x32/1024 gemm/mxfp8_trainium3_wrapx/1024; do
  expect "bench --set mxfp8 runs $c with a ratio" /usr/bin/python3 -c '
import json, sys
cases = {c["case"]: c for c in json.load(open(sys.argv[1]))}
c = cases[sys.argv[2] + "/threads:1"]
assert c["baselines"] and all(b["ratio"] > 0 for b in c["baselines"]), c
assert c["cpu_family"] and (c["bound"] is None or (c["bound"]["ratio"] > 0 and c["bound"]["held_by"])), c' "$tmp/out" "$c"
done
# the bound a case is held against follows the kernels that run: with FP8Q_ISA=avx2 any x86-64
# CPU runs the FMA kernel, bound by sgemm's own rate (docs/performance.md, "Kernels per CPU")
if grep -q avx2 /proc/cpuinfo; then
  check "bench bounds under FP8Q_ISA=avx2" 0 '' -- env FP8Q_ISA=avx2 "$fp8q" bench --blas-kernel auto --json \
    --filter '^gemm/(openblas_sgemm|fp32_sequential)/512/threads:1$' --repetitions 1 --min-time 0.001
  expect "fp32_sequential is held against the FMA kernel's bound" /usr/bin/python3 -c '
import json, sys
c = {c["case"]: c for c in json.load(open(sys.argv[1]))}["gemm/fp32_sequential/512/threads:1"]
assert c["cpu_family"] == "x86-64 running the AVX2 kernels" and c["bound"]["ratio"] == 1.0 and "FMA kernel" in c["bound"]["held_by"], c' "$tmp/out"
fi
# --blas-kernel sets OPENBLAS_CORETYPE for the command alone: the report names the kernel that ran.
check "bench with a BLAS kernel" 0 '' -- "$fp8q" bench --filter '^gemm/openblas_sgemm/512/threads:1$' \
  --blas-kernel Haswell --repetitions 1 --min-time 0.01
expect "the report names the kernel" grep -q '^OpenBLAS kernel: Haswell (OPENBLAS_CORETYPE Haswell)$' "$tmp/out"

# calibrate: one line per tensor (or per row), JSON keyed by tensor name; errors exit 2.
# A safetensors file with one F32 tensor "act" [2, 3] = 1..6 and one I64 tensor (skipped).
/usr/bin/python3 - "$tmp/act.safetensors" <<'PY'
import json, struct, sys
data = struct.pack('<6f', 1, 2, 3, 4, 5, 6) + struct.pack('<q', 7)
hdr = json.dumps({"act": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                  "step": {"dtype": "I64", "shape": [], "data_offsets": [24, 32]}}).encode()
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(hdr)) + hdr + data)
PY
check "calibrate max" 0 '' -- "$fp8q" calibrate "$tmp/act.safetensors" --method max --format e4m3fn
expect "calibrate: amax 6, scale_inv fp32(1 / fp32(448 / 6))" grep -Eq '^act +6 +0.0133929' "$tmp/out"
check "calibrate per row, JSON" 0 '' -- "$fp8q" calibrate "$tmp/act.safetensors" --method percentile --percentile 100 --format e5m2 --granularity row --json
expect "calibrate JSON: row amaxes 3 and 6" grep -Eq '"amax": 3\.0' "$tmp/out"
check "calibrate bad method" 2 "--method: 'median' is not one of" -- "$fp8q" calibrate "$tmp/act.safetensors" --method median --format e4m3fn
check "calibrate missing file" 2 'no-such' -- "$fp8q" calibrate "$tmp/no-such.safetensors" --method max --format e4m3fn
check "calibrate not safetensors" 2 'x.f32' -- "$fp8q" calibrate "$tmp/x.f32" --method max --format e4m3fn

# quantize-tensors / dequantize-tensors write safetensors through a symbolic link (the link stays
# a link) and refuse a FIFO (renaming the finished file onto it would replace it).
check "quantize-tensors" 0 '' -- "$fp8q" quantize-tensors "$tmp/act.safetensors" "$tmp/q.safetensors" --granularity row
ln -s "$tmp/q-target.safetensors" "$tmp/q-link"
check "quantize-tensors through a symlink" 0 '' -- "$fp8q" quantize-tensors "$tmp/act.safetensors" "$tmp/q-link" --scheme row
expect "quantize-tensors: the link is still a link" test -L "$tmp/q-link"
expect "quantize-tensors: its target got the file" cmp -s "$tmp/q-target.safetensors" "$tmp/q.safetensors"
ln -s "$tmp/d-target.safetensors" "$tmp/d-link"
check "dequantize-tensors through a symlink" 0 '' -- "$fp8q" dequantize-tensors "$tmp/q.safetensors" "$tmp/d-link"
expect "dequantize-tensors: the link is still a link" test -L "$tmp/d-link"
expect "dequantize-tensors: its target got the file" test -s "$tmp/d-target.safetensors"
mkfifo "$tmp/q-fifo"
check "quantize-tensors to a FIFO" 2 'not a regular file' -- "$fp8q" quantize-tensors "$tmp/act.safetensors" "$tmp/q-fifo" --granularity row
expect "quantize-tensors: the FIFO is still a FIFO" test -p "$tmp/q-fifo"
check "dequantize-tensors to a FIFO" 2 'not a regular file' -- "$fp8q" dequantize-tensors "$tmp/q.safetensors" "$tmp/q-fifo"
expect "dequantize-tensors: the FIFO is still a FIFO" test -p "$tmp/q-fifo"
check "quantize-tensors onto its input" 2 'is the input file' -- "$fp8q" quantize-tensors "$tmp/act.safetensors" "$tmp/act.safetensors" --scheme row
ln -s "$tmp/q.safetensors" "$tmp/q-alias"
check "dequantize-tensors onto its input through a link" 2 'is the input file' -- "$fp8q" dequantize-tensors "$tmp/q.safetensors" "$tmp/q-alias"
expect "the input is unchanged" cmp -s "$tmp/q.safetensors" "$tmp/q-target.safetensors"
check "dequantize-tensors of a file fp8q did not write" 2 "has no 'fp8q.scheme'" -- "$fp8q" dequantize-tensors "$tmp/act.safetensors" "$tmp/d2.safetensors"
expect "nothing written" test ! -e "$tmp/d2.safetensors"

# '-' is a path only for convert and dump; the safetensors verbs refuse it (they wrote a file
# named "-", or read a stray one)
for args in "quantize-tensors $tmp/act.safetensors - --scheme row" "quantize-tensors - $tmp/o.safetensors --scheme row" \
            "dequantize-tensors $tmp/q.safetensors -" "calibrate - --method max --format e4m3fn"; do
  # shellcheck disable=SC2086
  check "'-' in: $args" 2 'standard input or output' -- "$fp8q" $args
done
expect "no file named -" test ! -e ./-
# unsigned options: a negative value is refused, not wrapped to 2^64 - 1
check "--seed -1" 2 'must not be negative' -- "$fp8q" convert --from f32 --to e4m3fn --round sr --seed -1 "$tmp/x.f32" "$tmp/o"
check "--first -1" 2 'must not be negative' -- "$fp8q" dump --format f32 --first -1 "$tmp/x.f32"
check "calibrate --margin 200" 2 'must be in \[-127, 127\], got 200' -- "$fp8q" calibrate "$tmp/act.safetensors" --method max --format e4m3fn --margin 200
# quantizing a quantized file again: its fp8q keys are replaced, not kept beside the new ones
check "quantize-tensors of its own output" 0 '' -- "$fp8q" quantize-tensors "$tmp/q.safetensors" "$tmp/qq.safetensors" --granularity tensor
check "dequantize-tensors of that" 0 '' -- "$fp8q" dequantize-tensors "$tmp/qq.safetensors" "$tmp/dd.safetensors"
# a tensor that is quantized data and another tensor's scale at once: refused, not dropped
/usr/bin/python3 - "$tmp/dup.safetensors" <<'PY'
import json, struct, sys
t = {"w": ("U8", [1, 32]), "w.scale": ("U8", [1, 1]), "w.scale.scale": ("U8", [1, 1])}
hdr, off, data = {}, 0, b""
for k, (dt, sh) in t.items():
    n = sh[0] * sh[1]; hdr[k] = {"dtype": dt, "shape": sh, "data_offsets": [off, off + n]}; off += n; data += bytes([0x7F if k != "w" else 1] * n)
hdr["__metadata__"] = {"fp8q.scheme": "mx", "fp8q.elem": "e2m3", "fp8q.scale_rule": "floor", "fp8q.dtype.w": "F32", "fp8q.dtype.w.scale": "F32"}
h = json.dumps(hdr).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
check "a tensor that is also a scale" 2 "tensor 'w.scale' is listed as quantized" -- "$fp8q" dequantize-tensors "$tmp/dup.safetensors" "$tmp/d3.safetensors"

report
