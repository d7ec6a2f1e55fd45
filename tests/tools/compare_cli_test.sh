#!/usr/bin/env bash
# fp8q compare: the verb's contract (docs/validation.md). Pairs of safetensors files are built
# here with a stdlib-only Python script from explicit bit patterns: equal, one ULP apart, NaN
# payloads, signed zeros, every float dtype and an integer one; then the bad inputs (exit 2, a
# message naming the file or the tensor) and a dtype / shape mismatch (exit 1, named).
# Usage: compare_cli_test.sh PATH/TO/fp8q
set -uo pipefail
fp8q="$1"
py=/usr/bin/python3
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

cat > "$tmp/st.py" <<'PYEOF'
# st.py OUT NAME:DTYPE:SHAPE:HEXCODES ...  writes a safetensors file whose tensors hold those codes
import json, struct, sys
SIZE = {'F64': 8, 'F32': 4, 'F16': 2, 'BF16': 2, 'F8_E4M3': 1, 'F8_E5M2': 1, 'I32': 4, 'U8': 1}
header, data = {}, b''
for spec in sys.argv[2:]:
    name, dtype, shape, codes = spec.split(':')
    raw = b''.join(int(c, 16).to_bytes(SIZE[dtype], 'little') for c in codes.split(','))
    header[name] = {'dtype': dtype, 'shape': [int(d) for d in shape.split('x')] if shape else [],
                    'data_offsets': [len(data), len(data) + len(raw)]}
    data += raw
h = json.dumps(header).encode()
h += b' ' * (-(8 + len(h)) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + data)
PYEOF
st() { "$py" "$tmp/st.py" "$@"; }

# ---- equal, every dtype -------------------------------------------------------------------------
all=(d:F32:2x2:3F800000,40000000,80000000,7FC00000 h:F16:3:3C00,7C00,0001 b:BF16:2:3F80,FF80
     q:F8_E4M3:2x1x2:38,7E,80,7F e:F8_E5M2:2:3C,7E w:F64:1:3FF0000000000000 n:I32:2:0000002A,FFFFFFFF)
st "$tmp/a.st" "${all[@]}"
st "$tmp/b.st" "${all[@]}"
check "equal files" 0 '' -- "$fp8q" compare "$tmp/a.st" "$tmp/b.st"
expect "equal: every tensor reported" test "$(grep -c ': OK$' "$tmp/out")" -eq 7
expect "equal: summary" grep -q '^compare: 0 of 7 tensors differ bitwise$' "$tmp/out"
expect "equal: counts" grep -q '^d  F32 \[2, 2\]: 4 elements, 4 bit-equal, 0 differ, max 0 ULP: OK$' "$tmp/out"

# ---- one ULP ------------------------------------------------------------------------------------
st "$tmp/u1.st" d:F32:2x3:3F800000,40000000,40400001,3F800000,BF7FFFFF,0 q:F8_E4M3:2:7D,38
st "$tmp/u0.st" d:F32:2x3:3F800000,40000000,40400000,3F800000,BF800000,0 q:F8_E4M3:2:7E,38
check "1 ULP at --ulps 0" 1 '' -- "$fp8q" compare "$tmp/u1.st" "$tmp/u0.st"
expect "1 ULP: counts" grep -q '^d  F32 \[2, 3\]: 6 elements, 4 bit-equal, 2 differ, max 1 ULP: 2 beyond 0 ULP$' "$tmp/out"
expect "1 ULP: index, bits, values" grep -qF '  [0, 2]  actual 0x40400001 (3.0000002384185791)  expected 0x40400000 (3)  1 ULP' "$tmp/out"
expect "1 ULP: second element" grep -qF '  [1, 1]  actual 0xBF7FFFFF (-0.99999994039535522)  expected 0xBF800000 (-1)  1 ULP' "$tmp/out"
expect "1 ULP: fp8 codes" grep -qF '  [0]  actual 0x7D (416)  expected 0x7E (448)  1 ULP' "$tmp/out"
expect "1 ULP: summary" grep -q '^compare: 2 of 2 tensors differ bitwise$' "$tmp/out"
check "1 ULP at --ulps 1" 0 '' -- "$fp8q" compare "$tmp/u1.st" "$tmp/u0.st" --ulps 1
expect "1 ULP at --ulps 1: summary" grep -q '^compare: 0 of 2 tensors beyond 1 ULP$' "$tmp/out"
check "--worst 1 lists one element" 1 '' -- "$fp8q" compare "$tmp/u1.st" "$tmp/u0.st" --worst 1 --tensor d
expect "--worst 1: one line" test "$(grep -c '^  \[' "$tmp/out")" -eq 1
expect "--tensor d: only d" test "$(grep -c 'elements' "$tmp/out")" -eq 1

# ---- NaN payloads, signed zeros, NaN against a number --------------------------------------------
st "$tmp/n1.st" p:F32:3:7FC00001,FFC00000,7F800001 z:F32:2:80000000,0 x:BF16:1:7FC0
st "$tmp/n0.st" p:F32:3:7FC00000,7FC00000,7FC00000 z:F32:2:0,80000000 x:BF16:1:3F80
check "NaN payloads and signed zeros at --ulps 0" 1 '' -- "$fp8q" compare "$tmp/n1.st" "$tmp/n0.st" --tensor p --tensor z
expect "NaN payloads counted" grep -q '^p  F32 \[3\]: 3 elements, 0 bit-equal, 3 differ (3 NaN payloads differ), max 0 ULP: 3 beyond 0 ULP$' "$tmp/out"
expect "NaN payload named" grep -qF '  [0]  actual 0x7FC00001 (nan)  expected 0x7FC00000 (nan)  0 ULP (NaN payload differs)' "$tmp/out"
expect "signed zeros counted" grep -q '^z  F32 \[2\]: 2 elements, 0 bit-equal, 2 differ (2 signed zeros), max 0 ULP: 2 beyond 0 ULP$' "$tmp/out"
expect "signed zero named" grep -qF '  [0]  actual 0x80000000 (-0)  expected 0x00000000 (0)  0 ULP (signed zero)' "$tmp/out"
check "NaN payloads and signed zeros at --ulps 1" 0 '' -- "$fp8q" compare "$tmp/n1.st" "$tmp/n0.st" --tensor p --tensor z --ulps 1
check "NaN against a number at --ulps 1000" 1 '' -- "$fp8q" compare "$tmp/n1.st" "$tmp/n0.st" --tensor x --ulps 1000
expect "NaN against a number: inf" grep -qF 'max inf ULP' "$tmp/out"
expect "NaN against a number: named" grep -qF '  [0]  actual 0x7FC0 (nan)  expected 0x3F80 (1)  NaN against a number' "$tmp/out"

# ---- integers: bitwise at any tolerance -----------------------------------------------------------
st "$tmp/i1.st" n:I32:2:1,2
st "$tmp/i0.st" n:I32:2:1,3
check "integers at --ulps 9" 1 '' -- "$fp8q" compare "$tmp/i1.st" "$tmp/i0.st" --ulps 9
expect "integers: hex only" grep -qF '  [1]  actual 0x00000002  expected 0x00000003  integers differ' "$tmp/out"

# ---- JSON -----------------------------------------------------------------------------------------
check "--json" 1 '' -- "$fp8q" compare "$tmp/u1.st" "$tmp/u0.st" --json
expect "--json: counts and worst" "$py" -c '
import json, sys
j = json.load(open(sys.argv[1]))
d = j["tensors"][0]
assert not j["ok"] and d["name"] == "d" and d["differ"] == 2 and d["max_ulps"] == 1, j
assert d["worst"][0] == {"index": [0, 2], "actual": 0x40400001, "expected": 0x40400000, "ulps": 1, "what": "1 ULP"}, d
' "$tmp/out"

# ---- dtype and shape mismatches: reported, exit 1 -------------------------------------------------
st "$tmp/m1.st" d:F32:2:3F800000,0 s:F32:2x1:0,0
st "$tmp/m0.st" d:BF16:2:3F80,0 s:F32:1x2:0,0
check "dtype mismatch" 1 '' -- "$fp8q" compare "$tmp/m1.st" "$tmp/m0.st"
expect "dtype mismatch named" grep -qF 'd  F32 [2]: MISMATCH: dtype F32 against BF16' "$tmp/out"
expect "shape mismatch named" grep -qF 's  F32 [2, 1]: MISMATCH: shape [2, 1] against [1, 2]' "$tmp/out"

# ---- bad input: exit 2, named ------------------------------------------------------------------------
st "$tmp/extra.st" d:F32:2x3:3F800000,40000000,40400001,3F800000,BF7FFFFF,0 q:F8_E4M3:2:7D,38 r:U8:1:0
check "a tensor only the actual file has" 2 'u0.st: no tensor "r" \(.*extra.st has it\)' -- "$fp8q" compare "$tmp/extra.st" "$tmp/u0.st"
check "a tensor only the expected file has" 2 'u0.st: no tensor "r"' -- "$fp8q" compare "$tmp/u0.st" "$tmp/extra.st"
check "--tensor that neither has" 2 'no tensor "nope" \(in neither file\)' -- "$fp8q" compare "$tmp/u1.st" "$tmp/u0.st" --tensor nope
check "missing file" 2 'missing.st' -- "$fp8q" compare "$tmp/missing.st" "$tmp/u0.st"
printf 'not a safetensors file at all' > "$tmp/corrupt.st"
check "corrupt file" 2 'corrupt.st' -- "$fp8q" compare "$tmp/u0.st" "$tmp/corrupt.st"
head -c 60 "$tmp/u0.st" > "$tmp/short.st"
check "truncated file" 2 'short.st' -- "$fp8q" compare "$tmp/short.st" "$tmp/u0.st"
check "negative --ulps" 2 'must not be negative' -- "$fp8q" compare "$tmp/u1.st" "$tmp/u0.st" --ulps -1
check "one file only" 2 'EXPECTED' -- "$fp8q" compare "$tmp/u1.st"
check "compare --help" 0 '' -- "$fp8q" compare --help
expect "--help names --ulps" grep -q -- '--ulps' "$tmp/out"
report
