#!/usr/bin/env bash
# The bundled example: quantize examples/activations.f32 per tensor into each FP8 format with
# a power-of-two scale (2^floor(log2(max / amax)): exact to undo), decode it back, and report
# the error. Usage: examples/quantize_activations.sh PATH/TO/fp8q
set -euo pipefail
fp8q="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
input="$here/activations.f32"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
n=$(( $(stat -c %s "$input") / 4 ))

"$fp8q" dump --format f32 --count "$n" "$input" > "$tmp/x.txt"
amax=$(awk '{a = $3 < 0 ? -$3 : $3; if (a > m) m = a} END {printf "%.9g", m}' "$tmp/x.txt")
echo "input: $input ($n fp32 values, amax $amax)"
echo
printf '%-8s %8s %12s %14s %12s %10s\n' format max scale "max |error|" "rel. error" "SQNR (dB)"
for fmt in e4m3fn e4m3 e5m2 e3m4 e2m1; do
  max=$("$fp8q" formats | awk -v f="$fmt" '$1 == f {print $7}')
  # largest power of two with amax * scale <= max
  scale=$(awk -v m="$max" -v a="$amax" 'BEGIN {s = 1; while (a * s * 2 <= m) s *= 2; while (a * s > m) s /= 2; printf "%.9g", s}')
  inverse=$(awk -v s="$scale" 'BEGIN {printf "%.9g", 1 / s}')
  "$fp8q" convert --from f32 --to "$fmt" --scale "$scale" "$input" "$tmp/q.$fmt"
  "$fp8q" convert --from "$fmt" --to f32 --scale "$inverse" "$tmp/q.$fmt" "$tmp/d.$fmt"
  "$fp8q" dump --format f32 --count "$n" "$tmp/d.$fmt" > "$tmp/d.$fmt.txt"
  paste "$tmp/x.txt" "$tmp/d.$fmt.txt" | awk -v f="$fmt" -v mx="$max" -v s="$scale" '
    { x = $3; y = $6; e = x - y; se += e * e; sx += x * x; ae = e < 0 ? -e : e; if (ae > me) me = ae }
    END { printf "%-8s %8g %12g %14.6g %12.3g %10.2f\n", f, mx, s, me, sqrt(se / sx), 10 * log(sx / se) / log(10) }'
done
echo
echo "first values, e4m3fn (code and dequantized value):"
"$fp8q" dump --format e4m3fn --count 8 "$tmp/q.e4m3fn" > "$tmp/q.txt"
"$fp8q" dump --format f32 --count 8 "$tmp/d.e4m3fn" > "$tmp/dq.txt"
paste "$tmp/x.txt" "$tmp/q.txt" "$tmp/dq.txt" | head -8 |
  awk '{printf "  x[%d] = %-14.8g -> 0x%s -> %.8g\n", $1, $3, substr($5, 3), $9}'
