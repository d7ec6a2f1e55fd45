#!/usr/bin/python3
"""Checks fp8q-eval-digits (examples/digits) and, once it exists, `fp8q quantize` on the
bundled digits model. Python standard library only (no numpy, no scikit-learn).

  check_digits.py eval --eval PATH
      1. The original BF16 model: the number of correct predictions on the committed test
         split is exactly what examples/digits/train.py recorded (data/expected.json).
      2. Hand-made checkpoints written here from each layout's public definition (hf-fp8,
         ct-fp8 tensor/channel/block, ct-mxfp8, trn2, trn3-mx unpacked / packed wrapX /
         packed 1x32): fp8q-eval-digits --dump-weights must give, bit for bit, the weights this
         script decodes itself (code value * scale rounded once to fp32), and the accuracy
         must reach the floor below.
      3. Every finite code of e4m3fn and of Trainium2's e4m3, and E8M0 scales from 2^-127 up,
         decoded bit for bit (a checkpoint whose fc1 weight cycles through them).
      4. Bad checkpoints exit 2 with a message that names the tensor or field.

  check_digits.py quantize --eval PATH --fp8q PATH
      `fp8q quantize examples/digits/model OUT --layout L` for every layout and strategy
      (the packed FP4 layouts ct-mxfp4 and ct-nvfp4, and trn3-mx's MXFP4, included):
      all three linear layers quantized, biases copied bit for bit, the weights
      fp8q-eval-digits reads equal to this script's own decoding of the files, and the
      accuracy at or above the floor. Exits 77 (CTest: skipped) with a message when
      `fp8q quantize --help` fails (the verb is not built yet).

Accuracy floor: every quantized layout must classify at least FLOOR_CORRECT of the 360 held-out
images correctly (97.2%; the BF16 original gets 355, 98.6%).
"""

import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
EXAMPLE = os.path.join(ROOT, 'examples', 'digits')
MODEL = os.path.join(EXAMPLE, 'model')
TEST = os.path.join(EXAMPLE, 'data', 'test.safetensors')
EXPECTED = os.path.join(EXAMPLE, 'data', 'expected.json')
MODULES = ['mlp.fc1', 'mlp.fc2', 'mlp.fc3']
FLOOR_CORRECT = 350
SKIP = 77


class Failure(Exception):
    pass


# ---- safetensors -------------------------------------------------------------------------------
DTYPE_SIZE = {'F32': 4, 'BF16': 2, 'F16': 2, 'F8_E4M3': 1, 'U8': 1, 'I64': 8, 'F8_E8M0': 1}


def read_safetensors(path):
    """{name: (dtype, shape, bytes)} and the metadata."""
    with open(path, 'rb') as f:
        data = f.read()
    n = struct.unpack('<Q', data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop('__metadata__', {})
    base = 8 + n
    return {k: (v['dtype'], v['shape'], data[base + v['data_offsets'][0]:base + v['data_offsets'][1]])
            for k, v in header.items()}, meta


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, shape, bytes)} (written in sorted order)."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        assert len(raw) == DTYPE_SIZE[dtype] * math.prod(shape), name
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header).encode()
    text += b' ' * (-(8 + len(text)) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + b''.join(blobs))


def write_model(directory, tensors, quantization_config):
    os.makedirs(directory)
    with open(os.path.join(MODEL, 'config.json')) as f:
        config = json.load(f)
    config['quantization_config'] = quantization_config
    with open(os.path.join(directory, 'config.json'), 'w') as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(directory, 'model.safetensors'), tensors)


# ---- numbers -----------------------------------------------------------------------------------
def f32(x):
    """x (a Python float) rounded to the nearest fp32 (even on ties), subnormals kept."""
    return struct.unpack('<f', struct.pack('<f', x))[0]


def f32_bits(x):
    return struct.unpack('<I', struct.pack('<f', x))[0]


def bf16_values(raw):
    return [struct.unpack('<f', struct.pack('<I', h << 16))[0] for (h,) in struct.iter_unpack('<H', raw)]


def bf16_round_up(x):
    """The smallest bf16 >= x (x > 0, finite)."""
    bits = f32_bits(f32(x))
    if f32(struct.unpack('<f', struct.pack('<I', bits))[0]) < x:
        bits += 1
    hi = bits >> 16
    if bits & 0xFFFF:
        hi += 1
    return hi


def e2m1_value(code):
    """FP4 e2m1: s.ee.m, bias 1, no Inf or NaN, max 6."""
    e, m = (code >> 1) & 3, code & 1
    v = m * 0.5 if e == 0 else (2 + m) * 2.0 ** (e - 2)
    return -v if code & 8 else v


def e4m3_value(code, ieee):
    """OCP e4m3fn (ieee False) or Trainium2's IEEE-style e4m3 (ieee True): s.eeee.mmm, bias 7."""
    s, e, m = code >> 7, (code >> 3) & 15, code & 7
    if e == 15 and (ieee or m == 7):
        return math.nan if (m or not ieee) else (-math.inf if s else math.inf)
    v = m * 2.0 ** -9 if e == 0 else (8 + m) * 2.0 ** (e - 10)
    return -v if s else v


TABLES = {ieee: [e4m3_value(c, ieee) for c in range(256)] for ieee in (False, True)}
POSITIVE = {ieee: sorted((v, c) for c, v in enumerate(TABLES[ieee][:128]) if math.isfinite(v)) for ieee in (False, True)}


def encode(x, ieee):
    """Nearest finite code of |x| (ties to the even code), saturating; sign from x."""
    grid = POSITIVE[ieee]
    a = abs(x)
    best = grid[-1]
    for v, c in grid:
        if v >= a:
            below = grid[grid.index((v, c)) - 1] if c else (v, c)
            if a - below[0] < v - a or (a - below[0] == v - a and below[1] % 2 == 0):
                best = below
            else:
                best = (v, c)
            break
    return best[1] | (0x80 if x < 0 and best[1] else 0)


def floor_log2(a):
    return math.frexp(a)[1] - 1


# ---- the model ---------------------------------------------------------------------------------
def original():
    tensors, _ = read_safetensors(os.path.join(MODEL, 'model.safetensors'))
    return tensors


def weight_matrix(tensors, module):
    dtype, shape, raw = tensors[module + '.weight']
    assert dtype == 'BF16'
    vals = bf16_values(raw)
    return shape[0], shape[1], [vals[i * shape[1]:(i + 1) * shape[1]] for i in range(shape[0])]


# ---- hand-made layouts (each a dequantized [out][in] list beside the tensors) -----------------
def grid_quantize(rows, br, bc, fmax, ieee, scale_of):
    """Per block of br x bc: s = scale_of(amax / fmax); q = encode(x / s). Returns codes,
    the scale per block (as stored values) and the dequantized matrix."""
    out, inp = len(rows), len(rows[0])
    gr, gc = -(-out // br), -(-inp // bc)
    scales = [[1.0] * gc for _ in range(gr)]
    for a in range(gr):
        for b in range(gc):
            amax = max(abs(rows[i][j]) for i in range(a * br, min(out, (a + 1) * br))
                       for j in range(b * bc, min(inp, (b + 1) * bc)))
            scales[a][b] = scale_of(amax / fmax) if amax else 1.0
    codes = bytearray()
    deq = []
    for i in range(out):
        row = []
        for j in range(inp):
            s = scales[i // br][j // bc]
            c = encode(rows[i][j] / s, ieee)
            codes.append(c)
            row.append(f32(TABLES[ieee][c] * s))
        deq.append(row)
    return bytes(codes), scales, deq


def make_grid_layout(kind, strategy, ieee=False):
    tensors = original()
    out_t, deq_all = {}, {}
    for m in MODULES:
        out, inp, rows = weight_matrix(tensors, m)
        br, bc = {'tensor': (out, inp), 'channel': (1, inp), 'block': (128, 128)}[strategy]
        fmax = 240.0 if ieee else 448.0
        if kind == 'ct':  # scale in the original dtype (BF16), rounded up
            bits = {}

            def scale_of(x, bits=bits):
                h = bf16_round_up(x)
                v = bf16_values(struct.pack('<H', h))[0]
                bits[v] = h
                return v
            codes, scales, deq = grid_quantize(rows, br, bc, fmax, ieee, scale_of)
            raw = b''.join(struct.pack('<H', bits.get(v, 0x3F80)) for r in scales for v in r)
            sdtype, sname = 'BF16', 'weight_scale'
        else:
            codes, scales, deq = grid_quantize(rows, br, bc, fmax, ieee, f32)
            raw = b''.join(struct.pack('<f', v) for r in scales for v in r)
            sdtype, sname = 'F32', 'weight_scale_inv' if kind == 'hf' else 'weight_scale'
        sshape = {'tensor': [1], 'channel': [out, 1], 'block': [-(-out // 128), -(-inp // 128)]}[strategy]
        out_t[m + '.weight'] = ('F8_E4M3', [out, inp], codes)
        out_t[m + '.' + sname] = (sdtype, sshape, raw)
        out_t[m + '.bias'] = tensors[m + '.bias']
        deq_all[m] = deq
    return out_t, deq_all


def mx_quantize(rows, group_of, ngroups, emax_shift):
    """E8M0 per group: e = floor(log2(amax)) - emax_shift; q = encode(x * 2^-e)."""
    out, inp = len(rows), len(rows[0])
    scales, codes, deq = [], bytearray(), []
    for i in range(out):
        amax = [0.0] * ngroups
        for j in range(inp):
            amax[group_of(j)] = max(amax[group_of(j)], abs(rows[i][j]))
        e = [max(-127, min(127, floor_log2(a) - emax_shift)) if a else -127 for a in amax]
        scales.append([x + 127 for x in e])
        row = []
        for j in range(inp):
            k = e[group_of(j)]
            c = encode(math.ldexp(rows[i][j], -k), False)
            codes.append(c)
            row.append(f32(math.ldexp(TABLES[False][c], k)))
        deq.append(row)
    return codes, scales, deq


def trn3_slot(layout, k):
    t, r = divmod(k, 512)
    return (t, r % 128, r // 128) if layout == 'wrapX' else (t, r // 4, r % 4)


def make_mx_layout(pack=None):
    tensors = original()
    out_t, deq_all = {}, {}
    for m in MODULES:
        out, inp, rows = weight_matrix(tensors, m)
        if pack is None:
            codes, scales, deq = mx_quantize(rows, lambda j: j // 32, -(-inp // 32), 8)
            out_t[m + '.weight'] = ('F8_E4M3', [out, inp], bytes(codes))
            out_t[m + '.weight_scale'] = ('U8', [out, -(-inp // 32)], bytes(v for r in scales for v in r))
        else:
            # Trainium3: group 16t + p/8 of (t, p, c); rule trainium3 (block max in [128, 256)).
            def group(j):
                t, p, _ = trn3_slot(pack, j)
                return 16 * t + p // 8
            T = -(-inp // 512)
            codes, scales, deq = mx_quantize(rows, group, 16 * T, 7)
            img, simg = bytearray(128 * T * out * 4), bytearray(128 * T * out)
            used = set()
            for n in range(out):
                for k in range(inp):
                    t, p, c = trn3_slot(pack, k)
                    img[((p * T + t) * out + n) * 4 + c] = codes[n * inp + k]
                    g = p // 8
                    part = (g // 4) * 32 + g % 4
                    simg[(part * T + t) * out + n] = scales[n][16 * t + g]
                    used.add((part, t))
            # Unused scale bytes: fill with garbage the reader must ignore.
            for part in range(128):
                for t in range(T):
                    if (part, t) not in used:
                        for n in range(out):
                            simg[(part * T + t) * out + n] = 0xFF
            out_t[m + '.weight'] = ('F8_E4M3', [128, T, out, 4], bytes(img))
            out_t[m + '.weight_scale'] = ('U8', [128, T, out], bytes(simg))
        out_t[m + '.bias'] = tensors[m + '.bias']
        deq_all[m] = deq
    return out_t, deq_all


def quantization_config(name, strategy=None, pack=None):
    if name == 'hf-fp8':
        return {'quant_method': 'fp8', 'fmt': 'e4m3', 'activation_scheme': 'dynamic', 'weight_block_size': [128, 128]}
    if name in ('ct-fp8', 'ct-mxfp8'):
        mx = name == 'ct-mxfp8'
        weights = {'num_bits': 8, 'type': 'float', 'symmetric': True, 'group_size': 32 if mx else None,
                   'strategy': 'group' if mx else strategy, 'dynamic': False,
                   'block_structure': [128, 128] if strategy == 'block' else None}
        fmt = 'mxfp8-quantized' if mx else 'float-quantized'
        return {'quant_method': 'compressed-tensors', 'format': fmt, 'quantization_status': 'compressed',
                'config_groups': {'group_0': {'targets': ['Linear'], 'weights': weights, 'format': fmt}},
                'ignore': []}
    if name == 'trn2':
        c = {'quant_method': 'fp8q', 'layout': 'trn2', 'fmt': 'e4m3', 'fp8_max': 240, 'weight_strategy': strategy}
        if strategy == 'block':
            c['weight_block_size'] = [128, 128]
        return c
    return {'quant_method': 'fp8q', 'layout': 'trn3-mx', 'fmt': 'e4m3fn', 'scale_fmt': 'e8m0', 'group_size': 32,
            'scale_rule': 'trainium3', 'packing': pack or 'none'}


# ---- running the evaluator ---------------------------------------------------------------------
def run_eval(evaluator, model_dir, tmp, extra=()):
    dump = os.path.join(tmp, 'dump.safetensors')
    if os.path.exists(dump):
        os.remove(dump)
    p = subprocess.run([evaluator, model_dir, TEST, '--json', '--dump-weights', dump, *extra],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure(f'{model_dir}: fp8q-eval-digits exited {p.returncode}: {p.stderr.strip()}')
    return json.loads(p.stdout), read_safetensors(dump)[0]


def compare_weights(label, dump, deq_all):
    for m, deq in deq_all.items():
        dtype, shape, raw = dump[m + '.weight']
        got = [b for (b,) in struct.iter_unpack('<I', raw)]
        want = [f32_bits(v) for row in deq for v in row]
        if dtype != 'F32' or shape != [len(deq), len(deq[0])]:
            raise Failure(f'{label}: {m}.weight dumped as {dtype} {shape}')
        bad = [i for i in range(len(want)) if got[i] != want[i]]
        if bad:
            i = bad[0]
            raise Failure(f'{label}: {m}.weight[{i // shape[1]}][{i % shape[1]}]: evaluator 0x{got[i]:08x}, '
                          f'expected 0x{want[i]:08x} ({len(bad)} of {len(want)} differ)')


def expect_error(evaluator, model_dir, needle, label):
    p = subprocess.run([evaluator, model_dir, TEST], capture_output=True, text=True)
    if p.returncode != 2 or needle not in p.stderr:
        raise Failure(f'{label}: expected exit 2 naming "{needle}", got {p.returncode}: {p.stderr.strip()}')
    print(f'  refused as expected: {label}: {p.stderr.strip()}')


def check_eval(evaluator):
    with open(EXPECTED) as f:
        expected = json.load(f)
    tmp = tempfile.mkdtemp(prefix='digits_eval.')
    try:
        # 1. the original
        res, dump = run_eval(evaluator, MODEL, tmp)
        if res['correct'] != expected['correct'] or res['samples'] != expected['samples']:
            raise Failure(f'original: {res["correct"]}/{res["samples"]} correct, train.py recorded '
                          f'{expected["correct"]}/{expected["samples"]}')
        compare_weights('original', dump, {m: weight_matrix(original(), m)[2] for m in MODULES})
        print(f'original: {res["correct"]}/{res["samples"]} correct, as train.py recorded')
        res, _ = run_eval(evaluator, MODEL, tmp, ['--reference', MODEL])
        if res['agree_with_reference'] != res['samples'] or res['max_abs_logit_difference'] != 0:
            raise Failure(f'original against itself: {res["agree_with_reference"]} agree, '
                          f'max logit difference {res["max_abs_logit_difference"]}')

        # 2. hand-made layouts
        cases = [('hf-fp8', None, None, lambda: make_grid_layout('hf', 'block'))]
        for s in ('tensor', 'channel', 'block'):
            cases.append(('ct-fp8', s, None, lambda s=s: make_grid_layout('ct', s)))
        cases.append(('ct-mxfp8', None, None, make_mx_layout))
        for s in ('tensor', 'channel', 'block'):
            cases.append(('trn2', s, None, lambda s=s: make_grid_layout('trn2', s, ieee=True)))
        for pack in (None, 'wrapX', '1x32'):
            cases.append(('trn3-mx', None, pack, lambda pack=pack: make_mx_layout(pack)))
        for name, strategy, pack, make in cases:
            label = name + (f' --strategy {strategy}' if strategy else '') + (f' packed {pack}' if pack else '')
            tensors, deq = make()
            d = os.path.join(tmp, label.replace(' ', '_'))
            write_model(d, tensors, quantization_config(name, strategy, pack))
            res, dump = run_eval(evaluator, d, tmp)
            if res['layout'] != name:
                raise Failure(f'{label}: read as layout {res["layout"]}')
            compare_weights(label, dump, deq)
            if res['correct'] < FLOOR_CORRECT:
                raise Failure(f'{label}: {res["correct"]}/{res["samples"]} correct, below the floor {FLOOR_CORRECT}')
            print(f'hand-made {label}: weights decoded bit for bit, {res["correct"]}/{res["samples"]} correct')

        # Static activation scales (ct-fp8 with input_scale): from the calibration samples,
        # amax / 448 in BF16 rounded up, the accuracy stays above the floor; a scale of 2^20
        # flushes every input of fc1 to zero, so the path is live if the accuracy collapses.
        calib, _ = read_safetensors(os.path.join(EXAMPLE, 'data', 'calib.safetensors'))
        for label, scale_of in (('calibrated', lambda m: bf16_round_up(
                max(abs(v) for (v,) in struct.iter_unpack('<f', calib[m + '.input'][2])) / 448)),
                                ('2^20 on fc1', lambda m: 0x4980 if m == 'mlp.fc1' else 0x3F80)):
            tensors, deq = make_grid_layout('ct', 'tensor')
            for m in MODULES:
                tensors[m + '.input_scale'] = ('BF16', [1], struct.pack('<H', scale_of(m)))
            d = os.path.join(tmp, 'input_scale_' + label.replace(' ', '_').replace('^', ''))
            write_model(d, tensors, quantization_config('ct-fp8', 'tensor'))
            res, dump = run_eval(evaluator, d, tmp, ['--reference', MODEL])
            compare_weights('input scale ' + label, dump, deq)
            if label != 'calibrated' and res['agree_with_reference'] > 60:
                raise Failure(f'input scale {label}: {res["agree_with_reference"]} predictions agree with the original')
            if any(layer['input_scale'] is None for layer in res['layers']):
                raise Failure(f'input scale {label}: a layer ignored its input_scale: {res["layers"]}')
            if label == 'calibrated' and res['correct'] < FLOOR_CORRECT:
                raise Failure(f'input scale {label}: {res["correct"]} correct, below the floor {FLOOR_CORRECT}')
            if label != 'calibrated' and res['correct'] > 60:
                raise Failure(f'input scale {label}: {res["correct"]} correct: the scale was not applied')
            print(f'hand-made ct-fp8 with static input scales ({label}): {res["correct"]}/{res["samples"]} correct')

        # 3. every finite code and a wide range of scales in fc1
        for name, ieee in (('ct-fp8', False), ('trn2', True)):
            tensors, deq = make_grid_layout('ct' if name == 'ct-fp8' else 'trn2', 'tensor', ieee)
            finite = [c for c in range(256) if math.isfinite(TABLES[ieee][c])]
            out, inp = 128, 64
            codes = bytes(finite[i % len(finite)] for i in range(out * inp))
            sdtype, _, sraw = tensors['mlp.fc1.weight_scale']
            s = bf16_values(sraw)[0] if sdtype == 'BF16' else struct.unpack('<f', sraw)[0]
            tensors['mlp.fc1.weight'] = ('F8_E4M3', [out, inp], codes)
            deq['mlp.fc1'] = [[f32(TABLES[ieee][codes[i * inp + j]] * s) for j in range(inp)] for i in range(out)]
            d = os.path.join(tmp, 'all_codes_' + name)
            write_model(d, tensors, quantization_config(name, 'tensor'))
            compare_weights('all codes ' + name, run_eval(evaluator, d, tmp)[1], deq)
            print(f'all {len(finite)} finite codes of {"e4m3 (IEEE)" if ieee else "e4m3fn"}: decoded bit for bit')
        tensors, deq = make_mx_layout()
        codes = bytes(c for c in range(256) if math.isfinite(TABLES[False][c])) * 33
        codes = codes[:128 * 64]
        scales = bytes((i * 7) % 150 for i in range(128 * 2))  # 2^-127 .. 2^22
        tensors['mlp.fc1.weight'] = ('F8_E4M3', [128, 64], codes)
        tensors['mlp.fc1.weight_scale'] = ('U8', [128, 2], scales)
        deq['mlp.fc1'] = [[f32(math.ldexp(TABLES[False][codes[i * 64 + j]], scales[i * 2 + j // 32] - 127))
                           for j in range(64)] for i in range(128)]
        d = os.path.join(tmp, 'all_codes_mx')
        write_model(d, tensors, quantization_config('ct-mxfp8'))
        compare_weights('all codes ct-mxfp8', run_eval(evaluator, d, tmp)[1], deq)
        print('E8M0 scales 2^-127 .. 2^22 with every finite e4m3fn code: decoded bit for bit')

        # 4. bad checkpoints
        def bad(label, change, needle, config=None, make=lambda: make_grid_layout('hf', 'block')):
            t, _ = make()
            change(t)
            d = os.path.join(tmp, 'bad_' + label.replace(' ', '_'))
            write_model(d, t, config or quantization_config('hf-fp8'))
            expect_error(evaluator, d, needle, label)
        bad('scale of the wrong shape', lambda t: t.__setitem__('mlp.fc2.weight_scale_inv', ('F32', [2], b'\0' * 8)),
            'mlp.fc2.weight_scale_inv')
        bad('missing scale', lambda t: t.pop('mlp.fc3.weight_scale_inv'), 'mlp.fc3.weight_scale_inv')
        bad('NaN code', lambda t: t.__setitem__('mlp.fc1.weight', ('F8_E4M3', [128, 64], b'\x7f' * 8192)),
            'mlp.fc1.weight')
        bad('weight of the wrong shape', lambda t: t.__setitem__('mlp.fc1.weight', ('F8_E4M3', [64, 128], b'\0' * 8192)),
            'mlp.fc1.weight')
        bad('unknown quant_method', lambda t: None, 'quant_method', {'quant_method': 'int4'})
        trn2_block = lambda: make_grid_layout('trn2', 'block', ieee=True)  # noqa: E731
        bad('trn2 block scales without a block size', lambda t: None, 'mlp.fc1.weight_scale',
            quantization_config('trn2', 'channel'), trn2_block)
        # 0x78 is +Inf in Trainium2's e4m3 (256 in e4m3fn): decoding it as e4m3fn would pass.
        bad('trn2 Inf code', lambda t: t.__setitem__('mlp.fc2.weight', ('F8_E4M3', [64, 128], b'\x78' * 8192)),
            'mlp.fc2.weight', quantization_config('trn2', 'block'), trn2_block)
        bad('packed trn3-mx image of the wrong size',
            lambda t: t.__setitem__('mlp.fc3.weight_scale', ('U8', [128, 1, 9], b'\0' * 1152)),
            'mlp.fc3.weight_scale', quantization_config('trn3-mx', pack='wrapX'), lambda: make_mx_layout('wrapX'))
        bad('unpacked trn3-mx weight where config.json says packed', lambda t: None, 'mlp.fc1.weight',
            quantization_config('trn3-mx', pack='1x32'), make_mx_layout)
        bad('E8M0 NaN scale', lambda t: t.__setitem__('mlp.fc2.weight_scale', ('U8', [64, 4], b'\xff' * 256)),
            'mlp.fc2.weight', quantization_config('ct-mxfp8'), make_mx_layout)
    finally:
        shutil.rmtree(tmp)


# ---- fp8q quantize ------------------------------------------------------------------------------
def dequantize_files(model_dir):
    """This script's own reading of a quantized model directory (the public definitions)."""
    with open(os.path.join(model_dir, 'config.json')) as f:
        qc = json.load(f).get('quantization_config', {})
    tensors = {}
    index = os.path.join(model_dir, 'model.safetensors.index.json')
    files = sorted(set(json.load(open(index))['weight_map'].values())) if os.path.exists(index) else ['model.safetensors']
    for name in files:
        tensors.update(read_safetensors(os.path.join(model_dir, name))[0])
    ieee = qc.get('layout') == 'trn2'
    pack = qc.get('packing') if qc.get('packing') not in (None, 'none') else None
    block = qc.get('weight_block_size')
    for g in qc.get('config_groups', {}).values():
        block = block or g.get('weights', {}).get('block_structure')
    deq_all = {}
    for m in MODULES:
        out, inp = {'mlp.fc1': (128, 64), 'mlp.fc2': (64, 128), 'mlp.fc3': (10, 64)}[m]
        if m + '.weight_packed' in tensors:  # ct-mxfp4 / ct-nvfp4: e2m1 two a byte, the even element low
            _, _, q = tensors[m + '.weight_packed']
            sd, _, sraw = tensors[m + '.weight_scale']
            codes = [(q[i // 2] >> (4 * (i % 2))) & 0xF for i in range(out * inp)]
            if sd == 'F8_E4M3':  # NVFP4: fp32(s / S) per 16 (one division: double then fp32 is exact rounding)
                g = struct.unpack('<f', tensors[m + '.weight_global_scale'][2])[0]
                scale = [f32(TABLES[False][c] / g) for c in sraw]
                group = 16
            else:  # MXFP4: E8M0 per 32
                scale = [math.ldexp(1.0, c - 127) for c in sraw]
                group = 32
            deq_all[m] = [[f32(e2m1_value(codes[i * inp + j]) * scale[i * (inp // group) + j // group])
                           for j in range(inp)] for i in range(out)]
            if tensors[m + '.bias'] != original()[m + '.bias']:
                raise Failure(f'{model_dir}: {m}.bias is not the original bit for bit')
            continue
        qd, qs, q = tensors[m + '.weight']
        if qc.get('layout') == 'trn3-mx' and qc.get('fmt') == 'e2m1':  # MXFP4: code i is nibble i % 2 of byte i / 2
            _, _, sraw = tensors[m + '.weight_scale']
            T = -(-inp // 512)

            def code_and_scale(n, k):
                if pack:
                    t, p, c = trn3_slot(pack, k)
                    g = p // 8
                    i, si = ((p * T + t) * out + n) * 4 + c, (((g // 4) * 32 + g % 4) * T + t) * out + n
                else:
                    i, si = n * inp + k, n * (-(-inp // 32)) + k // 32
                return (q[i // 2] >> (4 * (i % 2))) & 0xF, sraw[si]
            deq_all[m] = [[f32(math.ldexp(e2m1_value(code_and_scale(i, j)[0]), code_and_scale(i, j)[1] - 127))
                           for j in range(inp)] for i in range(out)]
            if tensors[m + '.bias'] != original()[m + '.bias']:
                raise Failure(f'{model_dir}: {m}.bias is not the original bit for bit')
            continue
        if qd != 'F8_E4M3':
            # a 128x128 block layout keeps, unchanged, a weight whose dimensions are not both
            # multiples of 128: every weight of this model
            if block is None or (out % 128 == 0 and inp % 128 == 0) or tensors[m + '.weight'] != original()[m + '.weight']:
                raise Failure(f'{model_dir}: {m}.weight is {qd}, not quantized')
            v = bf16_values(q)
            deq_all[m] = [[v[i * inp + j] for j in range(inp)] for i in range(out)]
            if tensors[m + '.bias'] != original()[m + '.bias']:
                raise Failure(f'{model_dir}: {m}.bias is not the original bit for bit')
            continue
        sname = m + ('.weight_scale_inv' if m + '.weight_scale_inv' in tensors else '.weight_scale')
        sd, ss, sraw = tensors[sname]
        if sd in ('U8', 'F8_E8M0'):
            if pack:
                T = -(-inp // 512)

                def at(n, k):
                    t, p, c = trn3_slot(pack, k)
                    g = p // 8
                    part = (g // 4) * 32 + g % 4
                    return q[((p * T + t) * out + n) * 4 + c], sraw[(part * T + t) * out + n]
            else:
                def at(n, k):
                    return q[n * inp + k], sraw[n * (-(-inp // 32)) + k // 32]
            deq = [[f32(math.ldexp(TABLES[False][at(i, j)[0]], at(i, j)[1] - 127)) for j in range(inp)]
                   for i in range(out)]
        else:
            sv = bf16_values(sraw) if sd == 'BF16' else [v for (v,) in struct.iter_unpack('<f', sraw)]
            if ss in ([1], []):
                br, bc = out, inp
            elif ss == [out, 1]:
                br, bc = 1, inp
            else:
                br, bc = block
            gc = -(-inp // bc)
            deq = [[f32(TABLES[ieee][q[i * inp + j]] * sv[(i // br) * gc + j // bc]) for j in range(inp)]
                   for i in range(out)]
        deq_all[m] = deq
        if tensors[m + '.bias'] != original()[m + '.bias']:
            raise Failure(f'{model_dir}: {m}.bias is not the original bit for bit')
    return deq_all


def check_quantize(evaluator, fp8q):
    p = subprocess.run([fp8q, 'quantize', '--help'], capture_output=True, text=True)
    if p.returncode != 0:
        print(f'SKIP: `{fp8q} quantize --help` exited {p.returncode} ({(p.stderr or p.stdout).strip()[:200]}); '
              'the quantized layouts are checked once the verb exists')
        return SKIP
    runs = [['--layout', 'hf-fp8']]
    runs += [['--layout', 'ct-fp8', '--strategy', s] for s in ('tensor', 'channel', 'block')]
    runs += [['--layout', 'ct-mxfp8']]
    runs += [['--layout', layout] for layout in ('ct-mxfp4', 'ct-nvfp4') if layout in p.stdout]
    runs += [['--layout', 'trn2', '--strategy', s] for s in ('tensor', 'channel', 'block')]
    runs += [['--layout', 'trn3-mx']]
    if '--pack' in p.stdout:
        runs += [['--layout', 'trn3-mx', '--pack', k] for k in ('wrapX', '1x32')]
    if '--elem' in p.stdout:  # Trainium3's MXFP4
        runs += [['--layout', 'trn3-mx', '--elem', 'e2m1']]
        runs += [['--layout', 'trn3-mx', '--elem', 'e2m1', '--pack', k] for k in ('wrapX', '1x32')]
    if '--calib-data' in p.stdout:
        runs += [['--layout', 'ct-fp8', '--granularity', 'tensor', '--calib-data',
                  os.path.join(EXAMPLE, 'data', 'calib.safetensors')]]
    tmp = tempfile.mkdtemp(prefix='digits_quantize.')
    try:
        for args in runs:
            label = ' '.join(a if not a.startswith('/') else os.path.relpath(a, ROOT) for a in args)
            out = os.path.join(tmp, 'out%d' % runs.index(args))
            q = subprocess.run([fp8q, 'quantize', MODEL, out, *args], capture_output=True, text=True)
            if q.returncode != 0:
                raise Failure(f'fp8q quantize {label}: exit {q.returncode}: {q.stderr.strip()}')
            res, dump = run_eval(evaluator, out, tmp)
            if res['layout'] != args[1]:
                raise Failure(f'{label}: read as layout {res["layout"]}')
            compare_weights(label, dump, dequantize_files(out))
            if '--calib-data' in args and any(layer['input_scale'] is None for layer in res['layers']):
                raise Failure(f'{label}: no input_scale read for some layer: {res["layers"]}')
            if res['correct'] < FLOOR_CORRECT:
                raise Failure(f'{label}: {res["correct"]}/{res["samples"]} correct, below the floor {FLOOR_CORRECT}')
            print(f'fp8q quantize {label}: {res["correct"]}/{res["samples"]} correct '
                  f'({100 * res["accuracy"]:.2f}%), weights read as this script reads them')
    finally:
        shutil.rmtree(tmp)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('mode', choices=['eval', 'quantize'])
    ap.add_argument('--eval', required=True, help='path to fp8q-eval-digits')
    ap.add_argument('--fp8q', help='path to fp8q (mode quantize)')
    args = ap.parse_args()
    try:
        if args.mode == 'eval':
            check_eval(args.eval)
            return 0
        return check_quantize(args.eval, args.fp8q)
    except Failure as e:
        print(f'FAIL: {e}')
        return 1


if __name__ == '__main__':
    sys.exit(main())
