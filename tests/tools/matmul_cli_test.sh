#!/usr/bin/env bash
# fp8q matmul: the verb's contract (docs/matmul.md). Inputs are built here with a
# stdlib-only Python script; their values are small integers times powers of two, so every
# accumulation model gives the exact product, which the script computes independently in
# Python integers / fractions and compares with OUT's `d` (bf16 output: that value rounded
# to nearest-even by the script). Then the error cases: exit 2, a message naming the tensor,
# and no output file. Usage: matmul_cli_test.sh PATH/TO/fp8q
set -uo pipefail
fp8q="$1"
py=/usr/bin/python3
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

cat > "$tmp/st.py" <<'PYEOF'
# Builds matmul inputs (safetensors, stdlib only) and checks outputs against exact products.
import json, random, struct, sys
from fractions import Fraction

# ---- element formats: value -> code, from a decoder written from the OCP / IEEE definitions
def decode(code, ebits, mbits, bias, top):  # top: 'ieee' (max exponent = Inf/NaN), 'fn' (S.1111.111 NaN), 'none'
    s = code >> (ebits + mbits) & 1
    e = code >> mbits & ((1 << ebits) - 1)
    m = code & ((1 << mbits) - 1)
    if top == 'ieee' and e == (1 << ebits) - 1: return None
    if top == 'fn' and e == (1 << ebits) - 1 and m == (1 << mbits) - 1: return None
    v = Fraction(m, 1 << mbits) * Fraction(2) ** (1 - bias) if e == 0 else (1 + Fraction(m, 1 << mbits)) * Fraction(2) ** (e - bias)
    return -v if s else v

FORMATS = {  # name: (exp bits, mantissa bits, bias, specials)
    'e5m2': (5, 2, 15, 'ieee'), 'e4m3fn': (4, 3, 7, 'fn'), 'e4m3': (4, 3, 7, 'ieee'), 'e2m1': (2, 1, 1, 'none')}

def encoder(name):
    eb, mb, bias, top = FORMATS[name]
    table = {}
    for c in range(1 << (1 + eb + mb)):
        v = decode(c, eb, mb, bias, top)
        if v is not None and v not in table: table[v] = c  # +0 (code 0) before -0
    return table

def pick(rng, name, lo, hi):  # a random representable integer in [lo, hi] (or half-integer for e2m1)
    table = encoder(name)
    vals = sorted(v for v in table if lo <= v <= hi and v.denominator <= (2 if name == 'e2m1' else 1))
    v = rng.choice(vals)
    return v, table[v]

# ---- safetensors
def write(path, tensors, meta=None):  # tensors: list of (name, dtype, shape, bytes)
    header, off, data = {}, 0, b''
    for name, dtype, shape, raw in tensors:
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [off, off + len(raw)]}
        off += len(raw); data += raw
    if meta: header['__metadata__'] = meta
    h = json.dumps(header).encode()
    h += b' ' * (-(8 + len(h)) % 8)
    with open(path, 'wb') as f: f.write(struct.pack('<Q', len(h)) + h + data)

def read(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return header, raw[8 + n:]

f32 = lambda vals: struct.pack('<%df' % len(vals), *[float(v) for v in vals])
u8 = lambda vals: bytes(vals)

def bf16_rne(x):  # fp32 value -> the bf16 value, nearest-even, as a Fraction
    b = struct.unpack('<I', struct.pack('<f', float(x)))[0]
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
    return Fraction(struct.unpack('<f', struct.pack('<I', b))[0])

# ---- cases: each writes IN and returns the exact D as a list of rows of Fractions
def case(kind, path, seed):
    rng = random.Random(seed)
    M, K, N = 3, 70, 5
    fa = fb = 'e5m2'
    if kind in ('mx_bt', 'e4m3fn_bt'): fa = fb = 'e4m3fn'
    if kind == 'u8_meta_block': fa, M, K, N = 'e4m3', 4, 200, 3
    if kind == 'e2m1_mx': fa = fb = 'e2m1'; K, N = 64, 6
    if kind.startswith('nvfp4'): fa = fb = 'e2m1'; K, N = 64, 6
    lim = 6 if fa == 'e2m1' else 8
    a = [[pick(rng, fa, -lim, lim) for _ in range(K)] for _ in range(M)]
    b = [[pick(rng, fb, -lim, lim) for _ in range(N)] for _ in range(K)]
    kg, kb = (K + 31) // 32, (K + 127) // 128
    p2 = lambda e: Fraction(2) ** e
    t, meta = [], {}
    ea = [[rng.randint(-2, 2) for _ in range(kg)] for _ in range(M)]
    eb = [[rng.randint(-2, 2) for _ in range(N)] for _ in range(kg)]
    sa = [p2(rng.randint(-3, 3)) for _ in range(M)]
    sb = [p2(rng.randint(-3, 3)) for _ in range(N)]
    blk_a = [[p2(rng.randint(-3, 3)) for _ in range(kb)] for _ in range(M)]
    blk_b = [p2(rng.randint(-3, 3)) for _ in range(kb)]  # N <= 128: one block column
    c = [[rng.randint(-50, 50) for _ in range(N)] for _ in range(M)]
    dt = {'e5m2': 'F8_E5M2', 'e4m3fn': 'F8_E4M3'}
    def codes(mat, name, fmt):
        if fmt == 'e2m1':  # two per byte along the last axis, element 2i in the low nibble
            flat = [[mat[i][j][1] | mat[i][j + 1][1] << 4 for j in range(0, len(mat[0]), 2)] for i in range(len(mat))]
            return (name, 'U8', [len(mat), len(mat[0]) // 2], u8(sum(flat, [])))
        return (name, dt.get(fmt, 'U8'), [len(mat), len(mat[0])], u8([x[1] for row in mat for x in row]))
    bt = [[b[k][n] for k in range(K)] for n in range(N)]
    # NVFP4: E4M3FN block scales per 16 along K (a: 1 x 16; bt: 1 x 16, or one 16 x 16 row of
    # blocks for N <= 16), tensor scales S_a = 4, S_b = 8 (alpha = 1/32, exact)
    e4 = encoder('e4m3fn')
    svals = [Fraction(x) for x in ('0.25', '0.5', '0.75', '1', '1.25', '1.5', '2', '3')]
    k16 = K // 16
    nsa = [[rng.choice(svals) for _ in range(k16)] for _ in range(M)]
    nsb = [[rng.choice(svals) for _ in range(k16)] for _ in range(N)]  # bt's [N, K/16]
    if kind == 'nvfp4_bt2d': nsb = [nsb[0]] * N
    D = [[Fraction(0)] * N for _ in range(M)]
    for m in range(M):
        for n in range(N):
            if kind == 'plain':  # a.scale_inv per tensor, b.scale_inv per column, c
                D[m][n] = sum(a[m][k][0] * b[k][n][0] for k in range(K)) * sa[0] * sb[n] + c[m][n]
            elif kind in ('mx_bt', 'e2m1_mx'):
                D[m][n] = sum(a[m][k][0] * p2(ea[m][k // 32]) * b[k][n][0] * p2(eb[k // 32][n]) for k in range(K))
            elif kind == 'e4m3fn_bt':  # bt with per-row scale_inv (= per column of B)
                D[m][n] = sum(a[m][k][0] * b[k][n][0] for k in range(K)) * sa[m] * sb[n]
            elif kind.startswith('nvfp4'):
                D[m][n] = sum(a[m][k][0] * nsa[m][k // 16] * b[k][n][0] * nsb[n][k // 16] for k in range(K)) / 32
            elif kind == 'u8_meta_block':
                D[m][n] = sum(sum(a[m][k][0] * b[k][n][0] for k in range(128 * j, min(K, 128 * j + 128))) * blk_a[m][j] * blk_b[j]
                              for j in range(kb))
    if kind == 'plain':
        t = [codes(a, 'a', fa), codes(b, 'b', fb), ('a.scale_inv', 'F32', [1], f32([sa[0]])),
             ('b.scale_inv', 'F32', [1, N], f32(sb)), ('c', 'F32', [M, N], f32(sum(c, [])))]
    elif kind == 'mx_bt':
        t = [codes(a, 'a', fa), codes(bt, 'bt', fb), ('a.scale', 'U8', [M, kg], u8([127 + e for row in ea for e in row])),
             ('bt.scale', 'U8', [N, kg], u8([127 + eb[j][n] for n in range(N) for j in range(kg)]))]
    elif kind == 'e2m1_mx':
        t = [codes(a, 'a', fa), codes(b, 'b', fb), ('a.scale', 'U8', [M, kg], u8([127 + e for row in ea for e in row])),
             ('b.scale', 'U8', [kg, N], u8([127 + e for row in eb for e in row]))]
        meta['fp8q.elem'] = 'e2m1'
    elif kind.startswith('nvfp4'):
        rows_b = nsb[:1] if kind == 'nvfp4_bt2d' else nsb
        t = [codes(a, 'a', fa), codes(bt, 'bt', fb),
             ('a.scale', 'F8_E4M3', [M, k16], u8([e4[x] for row in nsa for x in row])),
             ('a.global_scale', 'F32', [1], f32([4])),
             ('bt.scale', 'F8_E4M3', [len(rows_b), k16], u8([e4[x] for row in rows_b for x in row])),
             ('bt.global_scale', 'F32', [1], f32([8]))]
        meta['fp8q.elem'] = 'e2m1'
    elif kind == 'e4m3fn_bt':
        t = [codes(a, 'a', fa), codes(bt, 'bt', fb), ('a.scale_inv', 'F32', [M, 1], f32(sa[:M])),
             ('bt.scale_inv', 'F32', [N, 1], f32(sb))]
    elif kind == 'u8_meta_block':
        t = [codes(a, 'a', fa), codes(b, 'b', fb), ('a.scale_inv', 'F32', [M, kb], f32(sum(blk_a, []))),
             ('b.scale_inv', 'F32', [kb, 1], f32(blk_b))]
        meta['fp8q.elem.a'] = 'e4m3'
        meta['fp8q.elem'] = 'e3m4'  # the global key is for U8 tensors without their own key
    write(path, t, meta)
    return D

def check(out, expected, bf16):
    header, data = read(out)
    d = header['d']
    want = json.load(open(expected))
    M, N = len(want), len(want[0])
    assert d['shape'] == [M, N], d
    assert d['dtype'] == ('BF16' if bf16 else 'F32'), d
    b, e = d['data_offsets']
    if bf16:
        got = [Fraction(struct.unpack('<f', b'\0\0' + data[i:i + 2])[0]) for i in range(b, e, 2)]
    else:
        got = [Fraction(x) for x in struct.unpack('<%df' % (M * N), data[b:e])]
    for i, g in enumerate(got):
        w = Fraction(want[i // N][i % N])
        if bf16: w = bf16_rne(w)
        if g != w:
            print('d[%d, %d] = %s, expected %s' % (i // N, i % N, g, w)); sys.exit(1)

if sys.argv[1] == 'make':
    D = case(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    json.dump([[str(x) for x in row] for row in D], open(sys.argv[3] + '.json', 'w'))
elif sys.argv[1] == 'check':
    check(sys.argv[2], sys.argv[3], len(sys.argv) > 4)
elif sys.argv[1] == 'dhex':  # dhex OUT: d's bytes in hex, then its __metadata__ fp8q.c_role
    header, data = read(sys.argv[2])
    b, e = header['d']['data_offsets']
    print(data[b:e].hex(), header.get('__metadata__', {}).get('fp8q.c_role', '-'))
elif sys.argv[1] == 'raw':  # raw OUT NAME:DTYPE:SHAPE:HEXBYTES ... [meta=KEY=VALUE]
    t, meta = [], {}
    for spec in sys.argv[3:]:
        if spec.startswith('meta='):
            k, v = spec[5:].split('=', 1); meta[k] = v; continue
        name, dtype, shape, hexb = spec.split(':')
        t.append((name, dtype, [int(x) for x in shape.split('x')] if shape else [], bytes.fromhex(hexb)))
    write(sys.argv[2], t, meta)
PYEOF

mk() { "$py" "$tmp/st.py" make "$1" "$tmp/$2" "$3"; }
ok() {  # ok NAME IN PROFILE [extra args...]: run, then compare d with the exact product
  local name="$1" in="$2" profile="$3"
  shift 3
  check "$name" 0 '' -- "$fp8q" matmul "$tmp/$in" "$tmp/$in.out" --profile "$profile" "$@"
  local bf=""
  case " $* " in *" bf16 "*) bf=bf16 ;; esac
  expect "$name: d is the exact product" "$py" "$tmp/st.py" check "$tmp/$in.out" "$tmp/$in.json" $bf
  rm -f "$tmp/$in.out"
}

check "matmul --help" 0 '' -- "$fp8q" matmul --help
expect "matmul --help prints usage" grep -q "Usage" "$tmp/out"

# ---- exact results under every profile and model ----------------------------------------------
mk plain plain.st 1
for p in trn2 trn3 ocp hopper fp32; do
  ok "plain e5m2 on $p" plain.st "$p"
  ok "plain e5m2 on $p, bf16 out" plain.st "$p" --out-dtype bf16
done
for m in fp32_sequential exact_block:32 systolic:128 systolic:256 fused:32:13:rtz fused:32:13:rne:promote64 trainium3_mx:wrapx trainium3_mx:1x32; do
  ok "plain e5m2, model $m, 2 threads" plain.st fp32 --model "$m" --threads 2
done
mk mx_bt mx.st 2
for p in trn2 trn3 ocp fp32; do ok "MX e4m3fn with bt on $p" mx.st "$p"; done
ok "MX on trn3, 1x32" mx.st trn3 --model trainium3_mx:1x32
mk e2m1_mx e2m1.st 3
ok "MX e2m1 (packed, global fp8q.elem) on ocp" e2m1.st ocp
ok "MX e2m1 on trn3" e2m1.st trn3 --out-dtype bf16
mk nvfp4_bt nvfp4.st 6
ok "NVFP4 e2m1 (F8_E4M3 scales, global scales) on ocp" nvfp4.st ocp
ok "NVFP4 on fp32, bf16 out, 2 threads" nvfp4.st fp32 --out-dtype bf16 --threads 2
mk nvfp4_bt2d nvfp4_2d.st 7
ok "NVFP4 with 16x16 bt scales on ocp" nvfp4_2d.st ocp
mk e4m3fn_bt rowcol.st 4
ok "per-row a, per-row bt on hopper" rowcol.st hopper
mk u8_meta_block blk.st 5
ok "U8 e4m3 (fp8q.elem.a), 1x128 / 128x128 blocks on trn2" blk.st trn2

# ---- --c-role: c as an epilogue term or as the accumulator input -------------------------------------
raw() { "$py" "$tmp/st.py" raw "$tmp/$1" "${@:2}"; }
# a = [1.5, 0.75], b = [1, 1]^T (e4m3fn), c = 8192. Hopper's fused:32:13:rtz with c as the
# accumulator input aligns the products with 2^13 (quantum 1): 8192 + 1 + 0 = 8193 (0x46000400);
# as an epilogue term c is added to the rounded 2.25: 8194.25 (0x46000900).
raw crole.st a:F8_E4M3:1x2:3c34 b:F8_E4M3:2x1:3838 c:F32:1x1:00000046
crole() {  # crole NAME WANT_HEX WANT_META [args...]
  local name="$1" want="$2 $3"
  shift 3
  check "$name" 0 '' -- "$fp8q" matmul "$tmp/crole.st" "$tmp/crole.out" --profile hopper "$@"
  expect "$name: d = $want" test "$("$py" "$tmp/st.py" dhex "$tmp/crole.out")" = "$want"
  rm -f "$tmp/crole.out"
}
crole "c-role default is epilogue" 00090046 epilogue
crole "c-role epilogue" 00090046 epilogue --c-role epilogue
crole "c-role accumulator" 00040046 accumulator --c-role accumulator
crole "c-role accumulator, 3 threads" 00040046 accumulator --c-role accumulator --threads 3
crole "c-role accumulator, fp32_sequential" 00090046 accumulator --c-role accumulator --model fp32_sequential
check "matmul --help names --c-role" 0 '' -- "$fp8q" matmul --help
expect "matmul --help describes --c-role" grep -q -- "--c-role.*accumulator" "$tmp/out"

# ---- errors: exit 2, the tensor named, no output ----------------------------------------------------
bad() {  # bad NAME REGEX IN [args...]
  local name="$1" pattern="$2" in="$3"
  shift 3
  check "$name" 2 "$pattern" -- "$fp8q" matmul "$tmp/$in" "$tmp/bad.out" "$@"
  expect "$name: no output" test ! -e "$tmp/bad.out"
}
A23=a:F8_E5M2:2x3:3c3c3c3c3c3c  # 2 x 3 ones
raw nob.st $A23
bad "missing b" "no tensor 'b'" nob.st --profile fp32
raw kmis.st $A23 b:F8_E5M2:4x2:3c3c3c3c3c3c3c3c
bad "K mismatch" "tensor 'b' is 4 x 2 codes: its K \(4\) differs from a's K = 3" kmis.st --profile fp32
raw both.st $A23 b:F8_E5M2:3x1:3c3c3c bt:F8_E5M2:1x3:3c3c3c
bad "b and bt" "both 'b' and 'bt'" both.st --profile fp32
raw extra.st $A23 b:F8_E5M2:3x1:3c3c3c x:F32:1:0000803f
bad "unknown tensor" "tensor 'x' is not an operand" extra.st --profile fp32
raw mx.st2 $A23 b:F8_E5M2:3x1:3c3c3c a.scale:U8:2x1:7f7f
bad "MX on hopper" "hopper.*MX" mx.st2 --profile hopper
# the profile's and the GEMM's own checks name the file and which tensor b is
bad "profile errors name the file" "input '$tmp/mx.st2' \\(b is its b\\): profile hopper" mx.st2 --profile hopper
raw mxbt.st $A23 bt:F8_E5M2:1x3:3c3c3c a.scale:U8:2x1:7f7f
bad "and say when b is bt" "\\(b is its bt \\(transposed\\)\\)" mxbt.st --profile hopper
raw shape.st $A23 b:F8_E5M2:3x1:3c3c3c a.scale_inv:F32:2x2:0000803f0000803f0000803f0000803f
bad "bad scale_inv shape" "tensor 'a.scale_inv' has shape \[2, 2\]" shape.st --profile fp32
raw blk1.st $A23 b:F8_E5M2:3x1:3c3c3c a.scale_inv:F32:2x1:0000803f0000803f b.scale_inv:F32:1x1:0000803f
check "a [M,1] with b [1,1]: per row and per tensor" 0 '' -- "$fp8q" matmul "$tmp/blk1.st" "$tmp/blk1.out" --profile fp32
A2x200=a:F8_E5M2:2x200:$(printf '3c%.0s' $(seq 400))
raw blk2.st "$A2x200" b:F8_E5M2:200x1:$(printf '3c%.0s' $(seq 200)) a.scale_inv:F32:2x2:0000803f0000803f0000803f0000803f
bad "block scaling on a only" "a.scale_inv' has the block shape .* needs the other operand block-scaled" blk2.st --profile fp32
raw neg.st $A23 b:F8_E5M2:3x1:3c3c3c a.scale_inv:F32:1:000080bf
bad "negative scale_inv" "tensor 'a.scale_inv' \[0\] = -1.0+ is not a finite positive" neg.st --profile fp32
# b from quantize-tensors --scheme mx on a K x N tensor: blocks along N
raw mxn.st a:F8_E5M2:2x3:3c3c3c3c3c3c a.scale:U8:2x1:7f7f b:F8_E5M2:3x2:3c3c3c3c3c3c b.scale:U8:3x1:7f7f7f
bad "MX scales of b along N" "b.scale' has shape \[3, 1\]: MX blocks along N" mxn.st --profile ocp
raw u8.st a:U8:2x3:3c3c3c3c3c3c b:F8_E5M2:3x1:3c3c3c
bad "U8 codes without a format" "tensor 'a' has dtype U8: name its element format" u8.st --profile fp32
raw conflict.st $A23 b:F8_E5M2:3x1:3c3c3c meta=fp8q.elem.a=e4m3fn
bad "dtype against fp8q.elem.a" "tensor 'a' has dtype F8_E5M2 but __metadata__ 'fp8q.elem.a' says e4m3fn" conflict.st --profile fp32
raw mix.st a:F8_E4M3:2x3:383838383838 b:U8:3x1:383838 meta=fp8q.elem.b=e4m3
bad "trn3 never mixes e4m3fn and e4m3" "never mixes e4m3fn with e4m3" mix.st --profile trn3
raw fp6.st a:U8:2x3:404040404040 b:F8_E5M2:3x1:3c3c3c meta=fp8q.elem=e2m3
bad "fp6 code with high bits" "tensor 'a' \[0, 0\]: byte 64 is not a e2m3 code" fp6.st --profile fp32
# NVFP4: the global scale is required, finite and > 0; K a multiple of 16; trn3 has no NVFP4 matmul
NVA="a:U8:1x8:2222222222222222 a.scale:F8_E4M3:1x1:38 bt:U8:1x8:2222222222222222 bt.scale:F8_E4M3:1x1:38 meta=fp8q.elem=e2m1"
raw nvnog.st $NVA a.global_scale:F32:1:0000803f
bad "NVFP4 without its global scale" "tensor 'bt.global_scale' is missing" nvnog.st --profile ocp
raw nvzero.st $NVA a.global_scale:F32:1:0000803f bt.global_scale:F32:1:00000000
bad "NVFP4 global scale 0" "tensor 'bt.global_scale' \[0\] = 0.0+ is not a finite positive scale" nvzero.st --profile ocp
raw nvtrn3.st $NVA a.global_scale:F32:1:0000803f bt.global_scale:F32:1:0000803f
bad "NVFP4 on trn3" "profile trn3: NVFP4 operands .* has no NVFP4 matmul" nvtrn3.st --profile trn3
raw nvk.st a:U8:1x4:22222222 a.scale:F8_E4M3:1x1:38 a.global_scale:F32:1:0000803f bt:U8:1x4:22222222 \
  bt.scale:F8_E4M3:1x1:38 bt.global_scale:F32:1:0000803f meta=fp8q.elem=e2m1
bad "NVFP4 with K = 8" "K = 8 is not a multiple of 16" nvk.st --profile ocp
raw nvshape.st a:U8:1x8:2222222222222222 a.scale:F8_E4M3:1x2:3838 a.global_scale:F32:1:0000803f \
  bt:U8:1x8:2222222222222222 bt.scale:F8_E4M3:1x1:38 bt.global_scale:F32:1:0000803f meta=fp8q.elem=e2m1
bad "NVFP4 scales of the wrong shape" "tensor 'a.scale' has shape \[1, 2\]; NVFP4 scales of A are \[M, ceil\(K/16\)\] = \[1, 1\]" nvshape.st --profile ocp
raw ok.st $A23 b:F8_E5M2:3x1:3c3c3c
bad "unknown profile" "--profile: 'tpu'" ok.st --profile tpu
bad "unknown model" "--model: 'sequential'" ok.st --profile fp32 --model sequential
bad "bad model parameter" "--model: .*result_bits" ok.st --profile fp32 --model fused:32:40:rtz
bad "bad out dtype" "--out-dtype: 'f16'" ok.st --profile fp32 --out-dtype f16
bad "threads 0" "--threads" ok.st --profile fp32 --threads 0
bad "unknown c role" "--c-role: 'beta' is not one of epilogue accumulator" ok.st --profile fp32 --c-role beta
bad "accumulator role without c" "--c-role accumulator: input .* has no tensor 'c'" ok.st --profile fp32 --c-role accumulator
raw fn.st a:F8_E4M3:2x3:383838383838 b:F8_E4M3:3x1:383838
bad "format the profile lacks" "profile trn2: a is e4m3fn, not a matmul format of trn2" fn.st --profile trn2
cp "$tmp/ok.st" "$tmp/ok.copy"
check "output onto the input" 2 "is the input file" -- "$fp8q" matmul "$tmp/ok.st" "$tmp/ok.st" --profile fp32
expect "input untouched" cmp -s "$tmp/ok.st" "$tmp/ok.copy"
head -c 20 "$tmp/ok.st" > "$tmp/trunc.st"
bad "truncated input" "trunc.st" trunc.st --profile fp32
expect "no temporary file left" test -z "$(ls -A "$tmp" | grep -F .tmp.)"

echo "matmul CLI: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
