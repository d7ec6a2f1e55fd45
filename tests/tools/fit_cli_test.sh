#!/usr/bin/env bash
# fp8q vectors and fp8q fit: the verbs' contract (docs/validation.md). Round trips
# (vectors under a model -> fit finds it; vectors' inputs -> fp8q matmul as the emulated
# device -> fit on its d), the H100 text vectors, exit codes (0 consistent, 1 none, 2 bad
# input) and error messages naming the file, tensor or option, with no output left behind.
# Usage: fit_cli_test.sh PATH/TO/fp8q PATH/TO/hopper-fp8-mma
set -uo pipefail
fp8q="$1"
data="$2"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
has() { grep -Eq -- "$2" "$tmp/$1"; }

# ---- vectors: deterministic, and the expected d under a model
check "vectors under hopper" 0 '' -- "$fp8q" vectors "$tmp/h.st" --profile hopper --cases 16 --k 64 --seed 5
expect "summary line" has out "h.st: 16 x 16 dot products of K = 64, e4m3fn x e4m3fn; d under fused:32:13:rtz"
check "same seed again" 0 '' -- "$fp8q" vectors "$tmp/h2.st" --profile hopper --cases 16 --k 64 --seed 5
expect "same seed, same bytes" cmp -s "$tmp/h.st" "$tmp/h2.st"
check "another seed" 0 '' -- "$fp8q" vectors "$tmp/h3.st" --profile hopper --cases 16 --k 64 --seed 6
expect "another seed, other bytes" bash -c "! cmp -s '$tmp/h.st' '$tmp/h3.st'"

# ---- npz: the same arrays, read back with the standard library (zipfile, the .npy 1.0 header)
check "vectors with npz" 0 '' -- "$fp8q" vectors "$tmp/n.st" --profile hopper --with-c --format-b e2m1 --cases 4 --k 8 --npz "$tmp/n.npz"
cat > "$tmp/npz.py" <<'PYEOF'
import ast, json, struct, sys, zipfile
st, npz = sys.argv[1], sys.argv[2]
raw = open(st, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
z = zipfile.ZipFile(npz)
assert z.testzip() is None, 'CRC'
arrays = {}
for name in z.namelist():
    b = z.read(name)
    assert b[:8] == b'\x93NUMPY\x01\x00', name
    hl = struct.unpack('<H', b[8:10])[0]
    assert (10 + hl) % 64 == 0, name
    h = ast.literal_eval(b[10:10 + hl].decode())
    arrays[name[:-4]] = (h['descr'], h['shape'], b[10 + hl:])
assert sorted(arrays) == ['a', 'a_codes', 'b', 'b_codes', 'c', 'd'], sorted(arrays)
assert arrays['a'][1] == (4, 8) and arrays['b'][1] == (8, 4) and arrays['d'][1] == (4, 4)
for t in ('c', 'd'):
    b, e = header[t]['data_offsets']
    assert arrays[t][2] == data[b:e], t
assert arrays['a_codes'][2] == data[slice(*header['a']['data_offsets'])]  # e4m3fn: one code a byte
codes = arrays['b_codes'][2]
b, e = header['b']['data_offsets']
packed = bytes(codes[2 * i] | codes[2 * i + 1] << 4 for i in range(len(codes) // 2))
assert packed == data[b:e], 'e2m1 codes'
print('npz ok')
PYEOF
check "npz matches the safetensors" 0 '' -- /usr/bin/python3 "$tmp/npz.py" "$tmp/n.st" "$tmp/n.npz"

# ---- fit recovers the generator
check "fit hopper vectors" 0 '' -- "$fp8q" fit "$tmp/h.st"
expect "hopper consistent first" bash -c "grep -A1 '^consistent with every sample' '$tmp/out' | grep -qx '  fused:32:13:rtz'"
check "vectors general fused with C" 0 '' -- "$fp8q" vectors "$tmp/g.st" --model fused:16:align26:result23:rne:group2 \
  --with-c --c-role epilogue --format-a e5m2 --format-b e4m3fn --cases 12 --k 128 --seed 2
check "fit general fused with C" 0 '' -- "$fp8q" fit "$tmp/g.st"
expect "finds the generator and its C role" has out "^  fused:16:align26:result23:rne:group2 \\(C as epilogue\\)$"
expect "reports nearest misses" has out "^nearest inconsistent"
expect "misses with a counterexample" has out "measured 0x[0-9a-f]{8} .*, model gives 0x[0-9a-f]{8}"

# ---- the emulated device: vectors' inputs through fp8q matmul, d read from its output
check "vectors inputs only" 0 '' -- "$fp8q" vectors "$tmp/in.st" --with-c --cases 12 --k 256 --seed 9
expect "inputs only summary" has out "inputs only \\(no d\\)"
check "matmul as the device" 0 '' -- "$fp8q" matmul "$tmp/in.st" "$tmp/dev.st" --profile fp32 --model systolic:128 --c-role accumulator \
  --threads 2
check "fit the device output" 0 '' -- "$fp8q" fit "$tmp/in.st" --d "$tmp/dev.st"
expect "systolic:128 found" has out "^  systolic:128$"
check "fit inputs without d" 2 "in.st: no tensor 'd'" -- "$fp8q" fit "$tmp/in.st"

# ---- the H100 text vectors (the first 300 lines: fast)
for f in a b d; do head -n 300 "$data/${f}_H100_E4M3.txt" > "$tmp/${f}.txt"; done
check "fit H100 text" 0 '' -- "$fp8q" fit --text "$tmp/a.txt" "$tmp/b.txt" "$tmp/d.txt" --format e4m3fn --tries 50
expect "H100: hopper first" bash -c "grep -A1 '^consistent with every sample' '$tmp/out' | grep -qx '  fused:32:13:rtz'"
expect "H100: says what cannot be separated" has out "the samples cannot separate them"
expect "H100: a separating input of larger K" has out "fused:64:13:rtz: K = (64|128|256), seed [0-9]+"

# ---- the text format with a C file and mixed formats: vectors' diagonal written as text
check "vectors for text with C" 0 '' -- "$fp8q" vectors "$tmp/t.st" --model fused:16:align26:result23:rne:group2 \
  --with-c --c-role epilogue --format-a e5m2 --format-b e4m3fn --cases 48 --k 64 --seed 4 --npz "$tmp/t.npz"
cat > "$tmp/to_text.py" <<'PYEOF'
import ast, struct, sys, zipfile
z, out = zipfile.ZipFile(sys.argv[1]), sys.argv[2]
def array(name):
    b = z.read(name + '.npy')
    hl = struct.unpack('<H', b[8:10])[0]
    h = ast.literal_eval(b[10:10 + hl].decode())
    assert h['descr'] == '<f4' and not h['fortran_order'], name
    rows, cols = h['shape']
    words = struct.unpack('<%dI' % (rows * cols), b[10 + hl:])
    return [words[r * cols:(r + 1) * cols] for r in range(rows)]
a, b, c, d = array('a'), array('b'), array('c'), array('d')
n = len(a)
with open(out + '/ta.txt', 'w') as f:
    f.writelines(' '.join('%08x' % w for w in a[i]) + '\n' for i in range(n))
with open(out + '/tb.txt', 'w') as f:
    f.writelines(' '.join('%08x' % b[k][i] for k in range(len(b))) + '\n' for i in range(n))
for name, m in (('tc', c), ('td', d)):
    with open(out + '/' + name + '.txt', 'w') as f:
        f.writelines('{:032b}\n'.format(m[i][i]) for i in range(n))
PYEOF
check "diagonal as text" 0 '' -- /usr/bin/python3 "$tmp/to_text.py" "$tmp/t.npz" "$tmp"
check "fit text with C" 0 '' -- "$fp8q" fit --text "$tmp/ta.txt" "$tmp/tb.txt" "$tmp/td.txt" --c "$tmp/tc.txt" \
  --format e5m2,e4m3fn --tries 20
expect "text with C: the formats and C" has out "^samples: 48 dot products of K = 64, e5m2 x e4m3fn, with C"
expect "text with C: the generator and its role" has out "^  fused:16:align26:result23:rne:group2 \\(C as epilogue\\)$"
check "the same without C misses" 1 '' -- "$fp8q" fit --text "$tmp/ta.txt" "$tmp/tb.txt" "$tmp/td.txt" --format e5m2,e4m3fn \
  --tries 20
check "one format for both refused" 2 "tb.txt: line 1, value [0-9]+: .* is not a value of e5m2" -- \
  "$fp8q" fit --text "$tmp/ta.txt" "$tmp/tb.txt" "$tmp/td.txt" --c "$tmp/tc.txt" --format e5m2
head -n 47 "$tmp/tc.txt" > "$tmp/tc_short.txt"
check "C lines counted" 2 "tc_short.txt: 47 lines, .*ta.txt has 48" -- \
  "$fp8q" fit --text "$tmp/ta.txt" "$tmp/tb.txt" "$tmp/td.txt" --c "$tmp/tc_short.txt" --format e5m2,e4m3fn
check "bad second format" 2 "--format: 'f32' is not an operand format \\(e4m3fn .* f16 bf16\\)" -- \
  "$fp8q" fit --text "$tmp/ta.txt" "$tmp/tb.txt" "$tmp/td.txt" --format e5m2,f32
check "--c without --text" 2 "--c is for --text" -- "$fp8q" fit "$tmp/h.st" --c "$tmp/tc.txt"

# ---- the samples form: independent dot products, a [S, K], b [S, K], c [S], d [S]
check "vectors --samples" 0 '' -- "$fp8q" vectors "$tmp/s.st" --samples --model fused:16:align26:result23:rne:group2 \
  --with-c --c-role epilogue --format-a e5m2 --cases 96 --k 64 --seed 3 --npz "$tmp/s.npz"
expect "samples summary" has out "s.st: 96 independent dot products of K = 64, e5m2 x e4m3fn, with C \\(epilogue\\)"
check "inspect the samples form" 0 '' -- "$fp8q" inspect "$tmp/s.st"
expect "samples metadata" has out "metadata fp8q.layout = samples"
expect "samples shapes" bash -c "grep -Eq '^b +F8_E4M3 +\\[96, 64\\]' '$tmp/out' && grep -Eq '^c +F32 +\\[96\\]' '$tmp/out' && grep -Eq '^d +F32 +\\[96\\]' '$tmp/out'"
check "fit the samples form" 0 '' -- "$fp8q" fit "$tmp/s.st" --tries 10
expect "samples: the generator and its role" has out "^  fused:16:align26:result23:rne:group2 \\(C as epilogue\\)$"
expect "samples: counted as samples" has out "^samples: 96 dot products of K = 64, e5m2 x e4m3fn, with C"
cat > "$tmp/bad_samples.py" <<'PYEOF'
import json, struct, sys
def write(path, tensors, meta):
    header, data = {'__metadata__': meta}, b''
    for name, shape, *dtype in tensors:
        n = 1
        for d in shape: n *= d
        u8 = dtype == ['U8']
        header[name] = {'dtype': 'U8' if u8 else 'F32', 'shape': shape, 'data_offsets': [len(data), len(data) + (1 if u8 else 4) * n]}
        data += bytes(n) if u8 else struct.pack('<%df' % n, *([1.0] * n))
    h = json.dumps(header).encode()
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + data)
meta = {'fp8q.elem.a': 'e4m3fn', 'fp8q.elem.b': 'e4m3fn', 'fp8q.layout': 'samples'}
out = sys.argv[1]
write(out + '/rows.st', [('a', [3, 8]), ('b', [2, 8]), ('d', [3])], meta)
write(out + '/dshape.st', [('a', [3, 8]), ('b', [3, 8]), ('d', [3, 3])], meta)
write(out + '/layout.st', [('a', [3, 8]), ('b', [3, 8]), ('d', [3])], {**meta, 'fp8q.layout': 'diagonal'})
write(out + '/f16u8.st', [('a', [3, 8], 'U8'), ('b', [3, 8]), ('d', [3])], {**meta, 'fp8q.elem.a': 'f16', 'fp8q.elem.b': 'f16'})
PYEOF
check "write bad samples files" 0 '' -- /usr/bin/python3 "$tmp/bad_samples.py" "$tmp"
check "samples: b rows differ" 2 "rows.st: tensor 'b' has 2 rows, but a has 3 \\(one a sample\\)" -- "$fp8q" fit "$tmp/rows.st"
check "samples: d of the grid's shape" 2 "dshape.st: tensor 'd' has shape \\[3, 3\\], expected \\[3\\]" -- "$fp8q" fit "$tmp/dshape.st"
check "unknown layout" 2 "layout.st: __metadata__ 'fp8q.layout' = 'diagonal' is not a layout" -- "$fp8q" fit "$tmp/layout.st"
check "f16 codes stored as U8 refused" 2 "tensor 'a' has dtype U8 but __metadata__ 'fp8q.elem.a' says f16" -- \
  "$fp8q" fit "$tmp/f16u8.st"

# ---- --json: what a CI job asserts on, with the same exit codes
check "fit --json" 0 '' -- "$fp8q" fit "$tmp/h.st" --json --tries 20
cat > "$tmp/json_check.py" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
want = sys.argv[2]
assert r['samples'] == int(sys.argv[3]) and r['format_a'] == 'e4m3fn' and r['candidates'] > 100, r
models = [c['model'] for c in r['consistent']]
if want == 'none':
    assert models == [] and r['nearest'], r
    m = r['nearest'][0]
    assert m['misses'] >= 1 and m['first_miss']['measured'].startswith('0x') and m['first_miss']['row'] == m['first_miss']['sample']
else:
    assert models[0] == want and r['consistent'][0]['c_role'] == 'accumulator', models
    assert all(s['against'] in r['consistent'][1:] for s in r['separations'])
    assert all(('k' in s) == s['separated'] for s in r['separations'])
print('json ok')
PYEOF
cp "$tmp/out" "$tmp/fit.json"
check "json names the model" 0 '' -- /usr/bin/python3 "$tmp/json_check.py" "$tmp/fit.json" fused:32:13:rtz 256

# ---- exit 1: no model of the grid fits (one d flipped to a value no model gives)
sed '1s/.*/01000010110010000000000000000001/' "$tmp/d.txt" > "$tmp/d_bad.txt"
check "no consistent model" 1 '' -- "$fp8q" fit --text "$tmp/a.txt" "$tmp/b.txt" "$tmp/d_bad.txt" --format e4m3fn --nearest 2
expect "says none" has out "^consistent with every sample: 0$"
expect "nearest with counts" has out "misses [0-9]+ of 300; first: sample 0 \\(row 0 of A, column 0 of B\\)"
check "no consistent model, as JSON" 1 '' -- "$fp8q" fit --text "$tmp/a.txt" "$tmp/b.txt" "$tmp/d_bad.txt" \
  --format e4m3fn --nearest 2 --json
cp "$tmp/out" "$tmp/none.json"
check "json says none" 0 '' -- /usr/bin/python3 "$tmp/json_check.py" "$tmp/none.json" none 300

# ---- bad input: exit 2, the file / line / tensor / option named, nothing written
printf '3f800000 zz\n' > "$tmp/bad_a.txt"
check "bad hex names file and line" 2 "bad_a.txt: line 1: value 2 'zz' is not an fp32 bit pattern" -- \
  "$fp8q" fit --text "$tmp/bad_a.txt" "$tmp/b.txt" "$tmp/d.txt" --format e4m3fn
head -n 1 "$tmp/a.txt" | sed 's/^[0-9a-f]*/3f810000/' > "$tmp/off_a.txt"
head -n 1 "$tmp/b.txt" > "$tmp/one_b.txt"; head -n 1 "$tmp/d.txt" > "$tmp/one_d.txt"
check "value not in the format" 2 "off_a.txt: line 1, value 1: .* is not a value of e4m3fn" -- \
  "$fp8q" fit --text "$tmp/off_a.txt" "$tmp/one_b.txt" "$tmp/one_d.txt" --format e4m3fn
check "lines differ" 2 "one_b.txt: 1 lines, .*a.txt has 300" -- "$fp8q" fit --text "$tmp/a.txt" "$tmp/one_b.txt" "$tmp/d.txt" --format e4m3fn
check "text without format" 2 "--text: name the operands' format" -- "$fp8q" fit --text "$tmp/a.txt" "$tmp/b.txt" "$tmp/d.txt"
check "missing text file" 2 "nope.txt" -- "$fp8q" fit --text "$tmp/nope.txt" "$tmp/b.txt" "$tmp/d.txt" --format e4m3fn
check "no input" 2 "give IN.safetensors" -- "$fp8q" fit
check "d of the wrong shape" 0 '' -- "$fp8q" vectors "$tmp/small.st" --profile ocp --cases 3 --k 8
check "fit with d from another shape" 2 "small.st: tensor 'd' has shape \\[3, 3\\], expected \\[12, 12\\]" -- \
  "$fp8q" fit "$tmp/in.st" --d "$tmp/small.st"
check "unknown model" 2 "--model: 'fused:32' is not a model" -- "$fp8q" vectors "$tmp/x.st" --model fused:32
check "model out of range names the field" 2 "--model: .*align_bits" -- "$fp8q" vectors "$tmp/x.st" --model fused:32:align70:result13:rtz
check "profile and model" 2 "--profile and --model: give one" -- "$fp8q" vectors "$tmp/x.st" --profile ocp --model fp32_sequential
check "not an operand format" 2 "--format: 'e8m0' is not an operand format" -- "$fp8q" vectors "$tmp/x.st" --format e8m0

# ---- FP16 / BF16 operands: Hopper's published BF16 model recovered from its vectors (BF16 dtype)
check "bf16 vectors" 0 '' -- "$fp8q" vectors "$tmp/bf.st" --format bf16 --model fused:16:align25:result23:rtz \
  --cases 16 --k 32 --with-c
check "fit bf16" 0 '' -- "$fp8q" fit "$tmp/bf.st" --tries 20
expect "bf16: the formats" has out "^samples: 256 dot products of K = 32, bf16 x bf16, with C"
expect "bf16: the published model named" bash -c "grep -A1 -x '  fused:16:align25:result23:rtz' '$tmp/out' | grep -qx '      the published model of H100, H200; B200, RTX PRO 6000'"
check "fit bf16 json" 0 '' -- "$fp8q" fit "$tmp/bf.st" --tries 0 --json
expect "json: published_for" has out '"published_for": \[$'
check "cases 0" 2 "cases must be at least 1" -- "$fp8q" vectors "$tmp/x.st" --cases 0
check "trainium3_mx refused" 2 "trainium3_mx needs MX scales" -- "$fp8q" vectors "$tmp/x.st" --model trainium3_mx:wrapx
expect "nothing written for the failures" test ! -e "$tmp/x.st"
expect "no temporary file left" test -z "$(ls -A "$tmp" | grep -F .tmp.)"

echo "fit/vectors CLI: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
