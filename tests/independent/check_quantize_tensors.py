#!/usr/bin/python3
"""Independent cross-check of `fp8q quantize-tensors` and `fp8q dequantize-tensors`.

The contract of docs/tensors.md (schemes, scale grids, scale formulas of
docs/numerics.md section 5, MX scale rules, code layout, metadata, dequantization)
is re-implemented here from the written specification only, with the Python
standard library and exact integer arithmetic: every fp32(a * b) and fp32(a / b)
is computed exactly and rounded once to nearest-even fp32 (subnormals kept), never
through Python floats. The element conversions reuse check_convert.py (itself
written from docs/numerics.md section 2).

The checker writes safetensors files itself (random and adversarial tensors),
runs the tool for every scheme, element format, MX scale rule, application,
rounding mode and overflow policy, and compares every code, scale and metadata
entry bit for bit; then it dequantizes and compares again.

Usage: /usr/bin/python3 check_quantize_tensors.py --fp8q PATH [--seed S]
       /usr/bin/python3 check_quantize_tensors.py --self-test
"""

import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_convert as cc  # noqa: E402  (conversion rules, Philox, value tuples)

F32, BF16, F16 = cc.FORMATS['f32'], cc.FORMATS['bf16'], cc.FORMATS['f16']
FLT_MAX_BITS = 0x7F7FFFFF
F32_ONE = 0x3F800000

ELEMS = ['e4m3fn', 'e4m3', 'e5m2', 'e4m3fnuz', 'e5m2fnuz', 'e3m4', 'e2m3', 'e3m2', 'e2m1']
NANLESS = ('e2m3', 'e3m2', 'e2m1')
SCHEMES = ['tensor', 'row', 'col', 'block1x128', 'block128x128', 'block3x5', 'mx']
NVFP4 = ['nvfp4', 'nvfp4_16x16']  # e2m1 only
RULES = ['floor', 'ceil', 'even', 'rceil', 'trainium3']
MODES = ['rne', 'rtz', 'rup', 'rdn', 'rna', 'rto']
OVFS = ['saturate', 'inf-nan']
FLOAT_DTYPES = {'F32': F32, 'BF16': BF16, 'F16': F16}
DTYPE_SIZE = {'F64': 8, 'F32': 4, 'F16': 2, 'BF16': 2, 'I64': 8, 'I32': 4, 'I16': 2, 'I8': 1,
              'U64': 8, 'U32': 4, 'U16': 2, 'U8': 1, 'BOOL': 1, 'F8_E4M3': 1, 'F8_E5M2': 1}


class Mismatch(Exception):
    pass


# --------------------------------------------------------------------------
# Exact fp32 arithmetic on value tuples (see check_convert.py):
#   ('nan', s) | ('inf', s) | ('fin', s, M, E) meaning (-1)^s * M * 2^E
# --------------------------------------------------------------------------


def f32v(bits):
    return cc.decode(F32, bits)


def f32bits(v):
    """fp32 pattern of v, one nearest-even rounding, overflow to Inf, NaN canonical (sign kept)."""
    return cc.convert(v, F32, 'rne', 'inf-nan', None)


def is_zero(v):
    return v[0] == 'fin' and v[2] == 0


def pow2v(k):
    return ('fin', 0, 1, k)


def floor_log2(v):
    """floor(log2|v|) of a finite non-zero value: the exponent of its leading bit."""
    return v[2].bit_length() - 1 + v[3]


def ceil_log2(v):
    m = v[2]
    return floor_log2(v) + (0 if m & (m - 1) == 0 else 1)


def mul_f32(a, b):
    """fp32(a * b): exact product, one nearest-even rounding (docs/numerics.md section 2, rule 1)."""
    return f32v(f32bits(cc.scale_value(a, b)))


def div_f32(a, b):
    """fp32(a / b), b finite and non-zero: the quotient to at least 30 bits plus a sticky bit,
    which lies below every fp32 rounding position, then one nearest-even rounding."""
    assert b[0] == 'fin' and b[2] != 0
    if a[0] == 'nan':
        return ('nan', a[1])
    s = a[1] ^ b[1]
    if a[0] == 'inf':
        return ('inf', s)
    if a[2] == 0:
        return ('fin', s, 0, 0)
    ma, mb = a[2], b[2]
    k = max(0, mb.bit_length() - ma.bit_length() + 30)
    n, r = divmod(ma << k, mb)
    if r:
        n, k = 2 * n + 1, k + 1
    return f32v(f32bits(('fin', s, n, a[3] - b[3] - k)))


def frac(v):
    return Fraction(v[2]) * Fraction(2) ** v[3] * (-1 if v[1] else 1)


def fmt_max(T):
    m, e = T.mag_value(T.maxcode)
    return ('fin', 0, m, e)


# --------------------------------------------------------------------------
# Scales (docs/tensors.md "Per block", docs/numerics.md section 5)
# --------------------------------------------------------------------------


def amax_bits(x32s):
    """Largest |x| as an fp32 pattern: for non-negative patterns integer order is value order,
    and NaN patterns lie above Inf's, so the max is NaN if any element is NaN, else Inf if any."""
    m = 0
    for b in x32s:
        a = b & 0x7FFFFFFF
        if a > m:
            m = a
    return m


def special_or_zero(abits):
    return abits == 0 or abits >= 0x7F800000


def scale_multiply(abits, T, margin, pow2):
    """scale = fp32(max / amax); Inf -> FLT_MAX; / 2^margin; below 2^-127 -> 2^-127 (so that
    scale_inv stays finite); --pow2: 2^floor(log2). amax of 0, Inf or NaN gives 1 (read: the
    final scale is 1, margin and pow2 not applied)."""
    if special_or_zero(abits):
        return f32v(F32_ONE)
    s = div_f32(fmt_max(T), f32v(abits))
    if s[0] == 'inf':
        s = f32v(FLT_MAX_BITS)
    if margin:
        s = mul_f32(s, pow2v(-margin))
    if is_zero(s) or floor_log2(s) < -127:
        s = pow2v(-127)
    if pow2:
        s = pow2v(floor_log2(s))
    return s


def scale_inv_divide(abits, T, margin, pow2):
    """scale_inv = fp32(amax / max); * 2^margin (Inf -> FLT_MAX); --pow2: smallest 2^k >= it,
    k <= 127; 0 -> 2^-149. amax of 0, Inf or NaN gives 1 (read: final, like multiply)."""
    if special_or_zero(abits):
        return f32v(F32_ONE)
    si = div_f32(f32v(abits), fmt_max(T))
    if margin and not is_zero(si):
        si = mul_f32(si, pow2v(margin))
        if si[0] == 'inf':
            si = f32v(FLT_MAX_BITS)
    if pow2 and not is_zero(si):
        si = pow2v(min(ceil_log2(si), 127))
    if is_zero(si):
        si = pow2v(-149)
    return si


def mx_scale_code(abits, T, rule):
    """E8M0 code of an MX block (docs/numerics.md section 5, table of rules)."""
    if abits >= 0x7F800000:
        return 0xFF
    if abits == 0:
        return 0
    a = f32v(abits)
    emax = floor_log2(fmt_max(T))
    if rule == 'floor':
        e = floor_log2(a) - emax
    elif rule == 'ceil':
        e = ceil_log2(a) - emax
    elif rule == 'even':
        # add half an ulp of the element's m mantissa bits to the pattern, clear the mantissa;
        # the exponent field then holds floor(log2) of the rounded amax (field 0: below 2^-126,
        # clamped to -127 below; field 255 read as 2^128)
        p = (abits + (1 << (22 - T.M))) & 0x7F800000
        field = p >> 23
        e = -1000 if field == 0 else (field - 127) - emax
    elif rule == 'rceil':
        p = mul_f32(a, div_f32(f32v(F32_ONE), fmt_max(T)))
        e = -1000 if is_zero(p) else ceil_log2(p)
    elif rule == 'trainium3':
        e = floor_log2(a) - (emax - 1)
    else:
        raise ValueError(rule)
    return max(-127, min(127, e)) + 127


# --------------------------------------------------------------------------
# Codes
# --------------------------------------------------------------------------


def canonical_nan(T):
    return cc.convert(('nan', 0), T, 'rne', 'inf-nan', None)


def decode_code(T, c):
    """Exact value of a narrow code."""
    if T.kind == 'ieee':
        return cc.decode(T, c)
    nb = T.E + T.M
    s = (c >> nb) & 1
    mag = c & ((1 << nb) - 1)
    if T.kind == 'fn' and mag == (1 << nb) - 1:
        return ('nan', s)
    if T.kind == 'fnuz' and c == 0x80:
        return ('nan', 0)  # fnuz's NaN has no sign
    m, e = T.mag_value(mag)
    return ('fin', s, m, e)


def code_dtype(elem):
    return {'e4m3fn': 'F8_E4M3', 'e5m2': 'F8_E5M2'}.get(elem, 'U8')


def pack_codes(elem, codes):
    if elem == 'e2m1':
        return bytes(codes[i] | (codes[i + 1] << 4) for i in range(0, len(codes), 2))
    return bytes(codes)


# --------------------------------------------------------------------------
# Safetensors files, pure Python
# --------------------------------------------------------------------------


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, dtype, shape, raw bytes)."""
    header = {}
    if metadata is not None:
        header['__metadata__'] = metadata
    off = 0
    blobs = []
    for name, dt, shape, raw in tensors:
        assert len(raw) == numel(shape) * DTYPE_SIZE[dt], name
        header[name] = {'dtype': dt, 'shape': list(shape), 'data_offsets': [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    data = struct.pack('<Q', len(h)) + h + b''.join(blobs)
    with open(path, 'wb') as fh:
        fh.write(data)
    return data


def read_safetensors(path):
    """Returns ({name: (dtype, shape, bytes)}, metadata or {}); raises Mismatch when malformed."""
    with open(path, 'rb') as fh:
        data = fh.read()
    if len(data) < 8:
        raise Mismatch('%s: %d bytes, not a safetensors file' % (path, len(data)))
    n = struct.unpack('<Q', data[:8])[0]
    if 8 + n > len(data):
        raise Mismatch('%s: header length %d beyond the file' % (path, n))
    try:
        header = json.loads(data[8:8 + n].decode('utf-8'))
    except ValueError as e:
        raise Mismatch('%s: header is not JSON: %s' % (path, e))
    body = data[8 + n:]
    meta = header.pop('__metadata__', None) or {}
    out = {}
    for name, d in header.items():
        dt, shape, (b, e) = d['dtype'], d['shape'], d['data_offsets']
        if dt not in DTYPE_SIZE:
            raise Mismatch('%s: tensor %r has dtype %r' % (path, name, dt))
        if not (0 <= b <= e <= len(body)) or e - b != numel(shape) * DTYPE_SIZE[dt]:
            raise Mismatch('%s: tensor %r offsets [%d, %d] do not fit dtype %s shape %s (body %d bytes)'
                           % (path, name, b, e, dt, shape, len(body)))
        out[name] = (dt, list(shape), body[b:e])
    return out, meta


# --------------------------------------------------------------------------
# The independent quantizer and dequantizer
# --------------------------------------------------------------------------


class Opts:
    def __init__(self, scheme, elem='e4m3fn', rule='floor', apply='multiply', pow2=False, margin=0,
                 mode='rne', seed=0, ovf='saturate', threads=1, explicit=True):
        self.scheme, self.elem, self.rule, self.apply = scheme, elem, rule, apply
        self.pow2, self.margin, self.mode, self.seed, self.ovf, self.threads = pow2, margin, mode, seed, ovf, threads
        self.explicit = explicit  # False: options at their documented default are left out

    def argv(self):
        def opt(flag, value, default):
            return [flag, value] if self.explicit or value != default else []
        a = ['--scheme', self.scheme] + opt('--elem', self.elem, 'e4m3fn')
        if self.scheme == 'mx':
            a += opt('--scale-rule', self.rule, 'floor')
        elif self.scheme in NVFP4:
            pass
        else:
            a += opt('--apply', self.apply, 'multiply')
            if self.pow2:
                a.append('--pow2')
            if self.margin:
                a += ['--margin', str(self.margin)]
        a += opt('--round', self.mode, 'rne') + opt('--overflow', self.ovf, 'saturate')
        if self.mode == 'sr':
            a += ['--seed', str(self.seed)]
        if self.threads != 1:
            a += ['--threads', str(self.threads)]
        return a

    def __str__(self):
        return ' '.join(self.argv())


def view_2d(shape):
    if not shape:
        return 1, 1
    return numel(shape[:-1]), shape[-1]


def block_of(scheme):
    """(grid function, block-index function) for the non-MX schemes."""
    if scheme == 'tensor':
        return (lambda R, C: [1]), (lambda r, c, R, C, gC: 0)
    # an empty tensor has an empty grid: the extent 1 of row / col becomes 0 when the other
    # dimension of the 2-D view is 0 (row of [R, 0]: [R, 0]; col of [0, C]: [0, C])
    if scheme == 'row':
        return (lambda R, C: [R, min(C, 1)]), (lambda r, c, R, C, gC: r)
    if scheme == 'col':
        return (lambda R, C: [min(R, 1), C]), (lambda r, c, R, C, gC: c)
    assert scheme.startswith('block')
    br, bc = (int(t) for t in scheme[5:].split('x'))
    return ((lambda R, C: [-(-R // br), -(-C // bc)]),
            (lambda r, c, R, C, gC: (r // br) * gC + c // bc))


class Expected:
    def __init__(self):
        self.tensors = {}   # name -> (dtype, shape, bytes)
        self.meta = {}
        self.detail = {}    # name -> (x32, block of each element, scales, codes, shape, dtype)
        self.error = None   # (tensor name, flat index) when the tool must refuse


def nvfp4_global_scale(abits):
    """S = fp32(2688 / amax); FLT_MAX when infinite (amax 0 included), 1 when 0 (amax Inf)."""
    if abits >= 0x7F800000:
        return f32v(F32_ONE)
    if abits == 0:
        return f32v(FLT_MAX_BITS)
    s = div_f32(f32v(0x45280000), f32v(abits))  # 2688
    return f32v(FLT_MAX_BITS) if s[0] == 'inf' else s


def nvfp4_block(abits, s):
    """(e4m3fn scale code, decode fp32(code / S), encode) of a block (docs/numerics.md section 5, "NVFP4"):
    the encode inverts Transformer Engine's decode fp32(code * fp32(1 / S))."""
    E4 = cc.FORMATS['e4m3fn']
    one = f32v(F32_ONE)
    d = mul_f32(f32v(abits), mul_f32(s, div_f32(one, f32v(0x40C00000))))  # amax * fp32(S * fp32(1 / 6))
    if d[0] == 'inf':
        d = f32v(FLT_MAX_BITS)
    code = cc.convert(d, E4, 'rne', 'saturate', None)
    te = mul_f32(decode_code(E4, code), div_f32(one, s))
    dec = div_f32(decode_code(E4, code), s)
    if is_zero(te):
        return code, dec, f32v(FLT_MAX_BITS)
    enc = div_f32(one, te)
    return code, dec, f32v(FLT_MAX_BITS) if enc[0] == 'inf' else enc


def quantize_nvfp4(name, shape, x32, o):
    T = cc.FORMATS['e2m1']
    R, C = view_2d(shape)
    br, bc = (16, 16) if o.scheme == 'nvfp4_16x16' else (1, 16)
    gshape = [-(-R // br), -(-C // bc)]
    am = [0] * numel(gshape)
    blk = [0] * len(x32)
    for i, b in enumerate(x32):
        if (b & 0x7FFFFFFF) > 0x7F800000:
            return ('nan', i)  # e2m1 has no NaN
        r, c = divmod(i, C)
        blk[i] = (r // br) * gshape[1] + c // bc
        am[blk[i]] = max(am[blk[i]], b & 0x7FFFFFFF)
    s = nvfp4_global_scale(max(am, default=0))
    blocks = [nvfp4_block(a, s) for a in am]
    codes = []
    for i, b in enumerate(x32):
        rf = (lambda i=i: cc.sr_word(i, o.seed)) if o.mode == 'sr' else None
        codes.append(cc.convert(cc.scale_value(f32v(b), blocks[blk[i]][2]), T, o.mode, o.ovf, rf))
    tensors = [(name + '.scale', 'F8_E4M3', gshape, bytes(b[0] for b in blocks)),
               (name + '.global_scale', 'F32', [1], struct.pack('<I', f32bits(s)))]
    return codes, tensors, blk, [b[1] for b in blocks]


def quantize_tensor(name, dt, shape, x32, o):
    """The reference quantization of one tensor (x32: its elements as fp32 patterns).
    Returns (codes, scale tensors [(name, dtype, shape, bytes)], block index of each element,
    scale entries: the multiplier that dequantizes the block, or MX's E8M0 code), or
    ('nan', flat index) when a NaN meets a format without NaN (non-MX)."""
    if o.scheme in NVFP4:
        return quantize_nvfp4(name, shape, x32, o)
    T = cc.FORMATS[o.elem]
    R, C = view_2d(shape)
    n = len(x32)
    mode, ovf, seed = o.mode, o.ovf, o.seed
    codes = [0] * n
    blk = [0] * n
    if o.scheme == 'mx':
        nb = -(-C // 32)
        sshape = list(shape[:-1]) + [nb] if shape else [1]
        scodes = []
        for r in range(R):
            for j in range(nb):
                lo, hi = r * C + j * 32, r * C + min(C, (j + 1) * 32)
                sc = mx_scale_code(amax_bits(x32[lo:hi]), T, o.rule)
                bi = len(scodes)
                scodes.append(sc)
                if sc == 0xFF:
                    nan = canonical_nan(T) if T.has_nan else 0
                    for i in range(lo, hi):
                        codes[i], blk[i] = nan, bi
                    continue
                for i in range(lo, hi):
                    # the exact x * 2^-e (x finite here: a NaN or Inf makes the block NaN),
                    # rounded once, by the call's mode, to the element format
                    x = f32v(x32[i])
                    v = ('fin', x[1], x[2], x[3] + 127 - sc)
                    rf = (lambda i=i: cc.sr_word(i, seed)) if mode == 'sr' else None
                    codes[i] = cc.convert(v, T, mode, ovf, rf)
                    blk[i] = bi
        return codes, [(name + '.scale', 'U8', sshape, bytes(scodes))], blk, scodes
    gridf, bidx = block_of(o.scheme)
    gshape = gridf(R, C)
    gC = gshape[-1]
    ng = numel(gshape)
    # amax per block
    am = [0] * ng
    for r in range(R):
        for c in range(C):
            i = r * C + c
            b = bidx(r, c, R, C, gC)
            blk[i] = b
            a = x32[i] & 0x7FFFFFFF
            if a > am[b]:
                am[b] = a
    if not T.has_nan:
        for i, b in enumerate(x32):
            if (b & 0x7FFFFFFF) > 0x7F800000:
                return ('nan', i)
    sinv = []
    ops = []
    for b in range(ng):
        if o.apply == 'multiply':
            s = scale_multiply(am[b], T, o.margin, o.pow2)
            ops.append(s)
            sinv.append(f32bits(div_f32(f32v(F32_ONE), s)))
        else:
            si = scale_inv_divide(am[b], T, o.margin, o.pow2)
            ops.append(si)
            sinv.append(f32bits(si))
    for i in range(n):
        xv = f32v(x32[i])
        if o.apply == 'multiply':
            v = cc.scale_value(xv, ops[blk[i]])
        else:
            v = div_f32(xv, ops[blk[i]])
        rf = (lambda i=i: cc.sr_word(i, seed)) if mode == 'sr' else None
        codes[i] = cc.convert(v, T, mode, ovf, rf)
    raw = struct.pack('<%dI' % len(sinv), *sinv)
    return codes, [(name + '.scale_inv', 'F32', gshape, raw)], blk, sinv


def widen(dt, raw):
    """fp32 patterns of a float tensor's elements (exact)."""
    if dt == 'F32':
        return list(struct.unpack('<%dI' % (len(raw) // 4), raw))
    h = struct.unpack('<%dH' % (len(raw) // 2), raw)
    if dt == 'BF16':
        return [b << 16 for b in h]
    return [f32bits(cc.decode(F16, b)) for b in h]


def quantize_expected(inputs, meta, o):
    ex = Expected()
    ex.meta = dict(meta or {})
    ex.meta.update({'fp8q.scheme': o.scheme, 'fp8q.elem': o.elem, 'fp8q.round': o.mode,
                    'fp8q.overflow': o.ovf})
    if o.scheme == 'mx':
        ex.meta['fp8q.scale_rule'] = o.rule
    elif o.scheme not in NVFP4:
        ex.meta['fp8q.apply'] = o.apply
    for name, dt, shape, raw in inputs:
        if dt not in FLOAT_DTYPES:
            ex.tensors[name] = (dt, list(shape), raw)
            continue
        if o.elem == 'e2m1' and (not shape or shape[-1] % 2):
            ex.error = (name, None)
            return ex
        x32 = widen(dt, raw)
        res = quantize_tensor(name, dt, shape, x32, o)
        if res[0] == 'nan':
            ex.error = (name, res[1])
            return ex
        codes, stensors, blk, scales = res
        cshape = list(shape)
        if o.elem == 'e2m1':
            cshape[-1] //= 2
        ex.tensors[name] = (code_dtype(o.elem), cshape, pack_codes(o.elem, codes))
        for sname, sdt, sshape, sraw in stensors:
            if sname in ex.tensors or sname in [t[0] for t in inputs]:
                ex.error = (sname, 'collision')
                return ex
            ex.tensors[sname] = (sdt, sshape, sraw)
        ex.meta['fp8q.dtype.' + name] = dt
        ex.detail[name] = (x32, blk, scales, codes, shape, dt)
    return ex


def dequantize_expected(ex, o, dtype):
    """Expected output of dequantize-tensors on the (expected) quantized file."""
    T = cc.FORMATS[o.elem]
    out = Expected()
    out.meta = {k: v for k, v in ex.meta.items() if not k.startswith('fp8q.')}
    scale_names = set()
    for name, (x32, blk, scales, codes, shape, odt) in ex.detail.items():
        scale_names.add(name + ('.scale' if o.scheme == 'mx' or o.scheme in NVFP4 else '.scale_inv'))
        scale_names.add(name + '.global_scale')
        tdt = odt if dtype in (None, 'orig') else dtype.upper()
        vals = []
        for i, q in enumerate(codes):
            if o.scheme == 'mx':
                sc = scales[blk[i]]
                if sc == 0xFF:
                    xb = f32bits(('nan', 0))
                else:
                    xb = f32bits(cc.scale_value(decode_code(T, q), pow2v(sc - 127)))
            elif o.scheme in NVFP4:
                xb = f32bits(cc.scale_value(decode_code(T, q), scales[blk[i]]))
            else:
                xb = f32bits(cc.scale_value(decode_code(T, q), f32v(scales[blk[i]])))
            vals.append(xb)
        if tdt == 'F32':
            raw = struct.pack('<%dI' % len(vals), *vals)
        else:
            W = FLOAT_DTYPES[tdt]
            raw = struct.pack('<%dH' % len(vals), *[cc.convert(f32v(b), W, 'rne', 'inf-nan', None) for b in vals])
        out.tensors[name] = (tdt, list(shape), raw)
    for name, t in ex.tensors.items():
        if name not in ex.detail and name not in scale_names:
            out.tensors[name] = t
    return out


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------


def first_diff(expected, got, label, detail=None, o=None, dequant=False):
    """Description of the first difference, or None."""
    et, gt = expected.tensors, got[0]
    if set(et) != set(gt):
        return '%s: tensors differ: missing %s, unexpected %s' % (
            label, sorted(set(et) - set(gt)), sorted(set(gt) - set(et)))
    for name in sorted(et):
        edt, esh, eraw = et[name]
        gdt, gsh, graw = gt[name]
        if edt != gdt or list(esh) != list(gsh):
            return '%s: tensor %r: expected dtype %s shape %s, got dtype %s shape %s' % (
                label, name, edt, esh, gdt, gsh)
        if eraw != graw:
            w = DTYPE_SIZE[edt]
            fmtc = {1: 'B', 2: 'H', 4: 'I', 8: 'Q'}[w]
            n = len(eraw) // w
            ev = struct.unpack('<%d%s' % (n, fmtc), eraw)
            gv = struct.unpack('<%d%s' % (n, fmtc), graw)
            k = next(i for i in range(n) if ev[i] != gv[i])
            nbad = sum(1 for i in range(n) if ev[i] != gv[i])
            msg = '%s: tensor %r (%s %s) element %d: expected 0x%0*x, got 0x%0*x (%d of %d elements differ)' % (
                label, name, edt, esh, k, 2 * w, ev[k], 2 * w, gv[k], nbad, n)
            if detail is not None and name in detail:
                x32, blk, scales, codes, shape, odt = detail[name]
                idx = [2 * k, 2 * k + 1] if (o.elem == 'e2m1' and not dequant) else [k]
                for i in idx:
                    if i < len(x32):
                        b = blk[i]
                        scale = f32bits(scales[b]) if o.scheme in NVFP4 else scales[b]
                        msg += '\n    element %d: input fp32 0x%08x, code 0x%02x, block %d, its %s 0x%0*x' % (
                            i, x32[i], codes[i], b, 'E8M0 code' if o.scheme == 'mx' else 'decode scale',
                            2 if o.scheme == 'mx' else 8, scale)
                        sname = name + ('.scale' if o.scheme == 'mx' or o.scheme in NVFP4 else '.scale_inv')
                        if not dequant and sname in gt:
                            graw_s = gt[sname][2]
                            w_s = 1 if o.scheme == 'mx' or o.scheme in NVFP4 else 4
                            if (b + 1) * w_s <= len(graw_s):
                                gs = int.from_bytes(graw_s[b * w_s:(b + 1) * w_s], 'little')
                                msg += ' (the tool wrote 0x%0*x)' % (2 * w_s, gs)
            return msg
    if expected.meta != got[1]:
        em, gm = expected.meta, got[1]
        diffs = ['%r: expected %r, got %r' % (k, em.get(k), gm.get(k))
                 for k in sorted(set(em) | set(gm)) if em.get(k) != gm.get(k)]
        return '%s: __metadata__ differs: %s' % (label, '; '.join(diffs[:6]))
    return None


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------


def fbits(x):
    """fp32 pattern of a Python float (test data generation only; the value is what it is)."""
    return struct.unpack('<I', struct.pack('<f', x))[0]


def narrow_from_f32(dt, b):
    """Input pattern of dtype dt nearest (even) to the fp32 pattern b."""
    if dt == 'F32':
        return b
    return cc.convert(f32v(b), FLOAT_DTYPES[dt], 'rne', 'inf-nan', None)


def raw_of(dt, pats):
    return struct.pack('<%d%s' % (len(pats), 'I' if dt == 'F32' else 'H'), *pats)


NAN32 = [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFC12345]
NAN16 = {'BF16': [0x7FC0, 0xFFC0, 0x7F81], 'F16': [0x7E00, 0xFE00, 0x7C01]}
INF = {'F32': (0x7F800000, 0xFF800000), 'BF16': (0x7F80, 0xFF80), 'F16': (0x7C00, 0xFC00)}


def gen_tensor(rng, kind, dt, shape, nan):
    """Patterns of dtype dt. kind selects the adversarial content."""
    R, C = view_2d(shape)
    n = numel(shape)
    out = []

    def g(scale):
        return narrow_from_f32(dt, fbits(rng.gauss(0.0, 1.0) * scale))

    if kind == 'random':  # rows of very different magnitudes, some exact zeros and -0
        for r in range(R):
            k = rng.randint(-30, 30) if dt != 'F16' else rng.randint(-12, 10)
            for c in range(C):
                u = rng.random()
                if u < 0.02:
                    out.append(0)
                elif u < 0.04:
                    out.append(narrow_from_f32(dt, 0x80000000))
                else:
                    out.append(g(2.0 ** k))
    elif kind == 'below':  # block amax 255.99998 (the fp32 below 256), positive or negative
        top = narrow_from_f32(dt, 0x437FFFFF) if dt == 'F32' else narrow_from_f32(dt, fbits(255.0))
        for r in range(R):
            row = [narrow_from_f32(dt, fbits(rng.uniform(-255.0, 255.0))) for _ in range(C)]
            for j in range(0, C, 32):
                p = j + rng.randrange(min(32, C - j))
                row[p] = top | (F32.signbit if dt == 'F32' else 0x8000) * (r & 1)
            out += row
    elif kind == 'pw2':  # exact powers of two, block max exactly 256
        for r in range(R):
            row = [narrow_from_f32(dt, fbits(rng.choice((1, -1)) * 2.0 ** rng.randint(-20, 7))) for _ in range(C)]
            for j in range(0, C, 32):
                row[j + rng.randrange(min(32, C - j))] = narrow_from_f32(dt, fbits(256.0 * (-1) ** r))
            out += row
    elif kind == 'tiny':  # fp32 subnormals only: subnormal amax in every block
        for _ in range(n):
            b = rng.choice((1, 2, 3, rng.randrange(1, 1 << 23), 0x7FFFFF, rng.randrange(1, 1 << 12)))
            out.append(b | rng.choice((0, F32.signbit)))
    elif kind == 'zeros':
        for _ in range(n):
            out.append(narrow_from_f32(dt, rng.choice((0, 0x80000000))))
    elif kind == 'mixed':  # zero rows, zero 32-blocks, tiny elements beside a large block max
        for r in range(R):
            row = []
            for c in range(C):
                if r % 3 == 0 or (r % 3 == 1 and c < 32):
                    row.append(narrow_from_f32(dt, rng.choice((0, 0x80000000))))
                else:
                    row.append(g(2.0 ** rng.randint(-8, 8)))
            if r % 3 == 2:
                top, tiny = {'F32': (20, [0x00000001, 0x80000003, fbits(2.0 ** -130), fbits(-3 * 2.0 ** -140)]),
                             'BF16': (20, [fbits(2.0 ** -133), fbits(-2.0 ** -130), fbits(2.0 ** -126),
                                           fbits(-3 * 2.0 ** -132)]),
                             'F16': (15, [fbits(2.0 ** -24), fbits(-3 * 2.0 ** -24), fbits(2.0 ** -20),
                                          fbits(-2.0 ** -14)])}[dt]
                row[0] = narrow_from_f32(dt, fbits(2.0 ** top))
                for t in range(4):
                    row[1 + t] = narrow_from_f32(dt, tiny[t])
            if r % 3 == 1 and C > 40:
                row[40] = narrow_from_f32(dt, 0x00400000)  # a subnormal block max in the 2nd block
                for c in range(41, min(C, 64)):
                    row[c] = narrow_from_f32(dt, rng.randrange(0, 0x400000) | rng.choice((0, 0x80000000)))
            out += row
    elif kind == 'huge':  # near FLT_MAX (or the dtype's max) beside ordinary values
        big = {'F32': [0x7F7FFFFF, 0x7F7FFFFE, 0x7F000000, fbits(3.0e38), 0x7E800001],
               'BF16': [0x7F7F, 0x7F7E, 0x7F00], 'F16': [0x7BFF, 0x7BFE, 0x7800]}[dt]
        sb = 0x80000000 if dt == 'F32' else 0x8000
        for r in range(R):
            row = [g(2.0 ** rng.randint(-5, 5)) for _ in range(C)]
            for j in range(0, C, 32):
                row[j + rng.randrange(min(32, C - j))] = rng.choice(big) | rng.choice((0, sb))
            if r == 0:
                row[-1] = big[0]
            out += row
    elif kind == 'special':  # NaN (signs, payloads) and +/-Inf inside some blocks
        nans = NAN32 if dt == 'F32' else NAN16[dt]
        inf, ninf = INF[dt]
        for r in range(R):
            row = [g(2.0 ** rng.randint(-3, 3)) for _ in range(C)]
            if r % 5 == 1:
                row[min(5, C - 1)] = rng.choice(nans) if nan else inf
            elif r % 5 == 2:
                row[min(40, C - 1)] = inf
            elif r % 5 == 3:
                row[C - 1] = ninf
                row[0] = rng.choice(nans) if nan else ninf
            elif r % 5 == 4:
                row[min(33, C - 1)] = rng.choice(nans) if nan else row[min(33, C - 1)]
            out += row
    else:
        raise ValueError(kind)
    assert len(out) == n
    return out


# name, dtype, shape, even-last-dim shape (None: left out of the e2m1 files), kind
TENSORS = [
    ('scalar', 'F32', [], None, 'random'),
    ('scalar_bf', 'BF16', [], None, 'huge'),
    ('vec', 'F32', [300], [300], 'random'),
    ('negz', 'F32', [1], [2], 'zeros'),
    ('cube', 'F32', [3, 5, 70], [3, 5, 70], 'random'),
    ('odd1', 'F32', [1, 33], [1, 34], 'random'),
    ('col1', 'BF16', [129, 1], [129, 2], 'random'),
    ('h', 'F16', [37, 45], [37, 46], 'random'),
    ('bf', 'BF16', [20, 97], [20, 98], 'random'),
    ('pw2', 'F32', [4, 64], [4, 64], 'pw2'),
    ('below', 'F32', [4, 70], [4, 70], 'below'),
    ('below_bf', 'BF16', [2, 40], [2, 40], 'below'),
    ('tiny', 'F32', [3, 40], [3, 40], 'tiny'),
    ('zeros', 'F32', [2, 50], [2, 50], 'zeros'),
    ('mixed', 'F32', [6, 64], [6, 64], 'mixed'),
    ('mixed_h', 'F16', [3, 45], [3, 46], 'mixed'),
    ('huge', 'F32', [3, 40], [3, 40], 'huge'),
    ('huge_bf', 'BF16', [2, 40], [2, 40], 'huge'),
    ('huge_h', 'F16', [2, 40], [2, 40], 'huge'),
    ('special', 'F32', [5, 70], [5, 70], 'special'),
    ('special_bf', 'BF16', [4, 40], [4, 40], 'special'),
    ('special_h', 'F16', [5, 37], [5, 38], 'special'),
    ('empty_r', 'F32', [0, 7], [0, 8], 'random'),
    ('empty_c', 'BF16', [5, 0], [5, 0], 'random'),
    ('empty_3d', 'F16', [2, 0, 3], [2, 0, 4], 'random'),
    ('empty_1d', 'F32', [0], [0], 'random'),
]


def other_tensors(rng):
    ids = [rng.randrange(-2 ** 31, 2 ** 31) for _ in range(15)]
    dbl = [struct.unpack('<Q', struct.pack('<d', x))[0] for x in (1.0 / 3.0, -1e300, float('nan'))]
    return [('ids', 'I32', [3, 5], struct.pack('<15i', *ids)),
            ('dbl', 'F64', [3], struct.pack('<3Q', *dbl)),
            ('bytes', 'U8', [7], bytes(rng.randrange(256) for _ in range(7)))]


def make_file(rng, even, nan):
    out = []
    for name, dt, shape, eshape, kind in TENSORS:
        if even:
            if eshape is None:
                continue
            shape = eshape
        pats = gen_tensor(random.Random('%s/%s/%s' % (rng.random(), name, even)), kind, dt, shape, nan)
        out.append((name, dt, shape, raw_of(dt, pats)))
    return out + other_tensors(rng)


def make_big(rng, even):
    C = 258 if even else 257
    return [('big', 'F32', [130, C], raw_of('F32', gen_tensor(rng, 'random', 'F32', [130, C], False))),
            ('big_bf', 'BF16', [129, 34], raw_of('BF16', gen_tensor(rng, 'random', 'BF16', [129, 34], False)))]


# --------------------------------------------------------------------------
# Running the tool
# --------------------------------------------------------------------------


def run_tool(fp8q, args, timeout=120):
    deadline = time.time() + 120
    while True:
        if os.path.exists(fp8q):
            try:
                return subprocess.run([fp8q] + args, capture_output=True, timeout=timeout)
            except OSError:  # text file busy while it is being rebuilt
                pass
        if time.time() > deadline:
            raise RuntimeError('fp8q not runnable at %s' % fp8q)
        time.sleep(1.0)


class Checker:
    def __init__(self, fp8q, tmp, max_report):
        self.fp8q, self.tmp, self.max_report = fp8q, tmp, max_report
        self.cases = 0
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)
        if len(self.failures) <= self.max_report:
            print('MISMATCH ' + msg)
            sys.stdout.flush()

    def out_path(self, tag):
        p = os.path.join(self.tmp, tag + '.safetensors')
        if os.path.exists(p):
            os.remove(p)
        return p

    def quant_case(self, fname, inputs, meta, o, dq_dtype):
        """One quantize run and one dequantize run, each compared with the reference."""
        self.cases += 1
        label = 'quantize-tensors %s %s' % (os.path.basename(fname), o)
        ex = quantize_expected(inputs, meta, o)
        outp = self.out_path('q')
        r = run_tool(self.fp8q, ['quantize-tensors', fname, outp] + o.argv())
        if ex.error is not None:
            return self.expect_refusal(label, r, outp, ex.error)
        if r.returncode != 0:
            return self.fail('%s: exit %d: %s' % (label, r.returncode, r.stderr.decode(errors='replace').strip()[:300]))
        try:
            got = read_safetensors(outp)
        except Mismatch as e:
            return self.fail('%s: %s' % (label, e))
        d = first_diff(ex, got, label, ex.detail, o)
        if d:
            return self.fail(d)
        # dequantize the tool's (now verified) file
        self.cases += 1
        dq = dequantize_expected(ex, o, dq_dtype)
        outd = self.out_path('d')
        args = ['dequantize-tensors', outp, outd] + (['--dtype', dq_dtype] if dq_dtype else [])
        label = 'dequantize-tensors%s after %s' % ((' --dtype ' + dq_dtype) if dq_dtype else '', label)
        r = run_tool(self.fp8q, args)
        if r.returncode != 0:
            return self.fail('%s: exit %d: %s' % (label, r.returncode, r.stderr.decode(errors='replace').strip()[:300]))
        try:
            got = read_safetensors(outd)
        except Mismatch as e:
            return self.fail('%s: %s' % (label, e))
        d = first_diff(dq, got, label, ex.detail, o, dequant=True)
        if d:
            return self.fail(d)

    def expect_refusal(self, label, r, outp, err):
        err_text = r.stderr.decode(errors='replace')
        problems = []
        if r.returncode != 2:
            problems.append('exit %d (want 2)' % r.returncode)
        if not err_text.strip():
            problems.append('nothing on stderr')
        if os.path.exists(outp):
            problems.append('OUT was left behind')
        name, idx = err
        if name not in err_text:
            problems.append('the message does not name tensor %r' % name)
        if isinstance(idx, int) and str(idx) not in err_text:
            problems.append('the message does not give index %d' % idx)
        if problems:
            self.fail('%s: should be refused (%s %s): %s; stderr: %s' % (
                label, name, idx, ', '.join(problems), err_text.strip()[:300]))

    def error_case(self, label, args, outp, need_in_msg=None):
        self.cases += 1
        if os.path.exists(outp):
            os.remove(outp)
        r = run_tool(self.fp8q, args)
        err_text = r.stderr.decode(errors='replace')
        problems = []
        if r.returncode != 2:
            problems.append('exit %d (want 2)' % r.returncode)
        if not err_text.strip():
            problems.append('nothing on stderr')
        if os.path.exists(outp):
            problems.append('OUT was left behind')
        if need_in_msg and need_in_msg not in err_text:
            problems.append('the message does not mention %r' % need_in_msg)
        if problems:
            self.fail('error case "%s": %s; stderr: %s' % (label, ', '.join(problems), err_text.strip()[:300]))

    def same_file_case(self, label, fname, argv_a, argv_b):
        self.cases += 1
        pa, pb = self.out_path('sa'), self.out_path('sb')
        ra = run_tool(self.fp8q, ['quantize-tensors', fname, pa] + argv_a)
        rb = run_tool(self.fp8q, ['quantize-tensors', fname, pb] + argv_b)
        if ra.returncode or rb.returncode:
            return self.fail('%s: exit %d / %d: %s' % (label, ra.returncode, rb.returncode,
                                                       (ra.stderr + rb.stderr).decode(errors='replace')[:300]))
        with open(pa, 'rb') as fa, open(pb, 'rb') as fb:
            a, b = fa.read(), fb.read()
        if a != b:
            k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            self.fail('%s: files differ (sizes %d, %d; first byte %d)' % (label, len(a), len(b), k))


# --------------------------------------------------------------------------
# The cases
# --------------------------------------------------------------------------


def build_runs():
    """(file key, Opts, dequantize dtype) in a fixed order. File keys: 'nan' (NaN and Inf),
    'fin' (Inf, no NaN), 'even_nan' / 'even_fin' (even last dimensions, for e2m1), 'big', 'big_even'."""
    runs = []
    dq = [None, 'f32', 'bf16', 'f16', 'orig']
    k = [0]

    def add(o, big=False):
        T = cc.FORMATS[o.elem]
        nan_ok = T.has_nan or o.scheme == 'mx'
        if big:
            key = 'big_even' if o.elem == 'e2m1' else 'big'
        else:
            key = ('even_' if o.elem == 'e2m1' else '') + ('nan' if nan_ok else 'fin')
        runs.append((key, o, dq[k[0] % len(dq)]))
        k[0] += 1

    non_mx = [s for s in SCHEMES if s != 'mx']
    # every scheme and element format, defaults (multiply / floor, rne, saturate)
    for i, s in enumerate(SCHEMES):
        for j, e in enumerate(ELEMS):
            add(Opts(s, e, threads=1 + (i + j) % 2, explicit=(i + j) % 3 != 0))
    # divide, every non-MX scheme and element format
    for i, s in enumerate(non_mx):
        for e in ELEMS:
            add(Opts(s, e, apply='divide'))
    # every MX scale rule and element format
    for rule in RULES[1:]:
        for e in ELEMS:
            add(Opts('mx', e, rule=rule))
    # every rounding mode and overflow policy for every element format; scheme, application
    # and rule rotate
    i = 0
    for e in ELEMS:
        for m in MODES:
            for ovf in OVFS:
                variant = (i + i // 12) % 3  # shifts by one per element format: every mode meets mx
                s = 'mx' if variant == 2 else non_mx[(i // 3) % 6]
                add(Opts(s, e, rule=RULES[i % 5], apply=('multiply', 'divide')[variant % 2], mode=m, ovf=ovf,
                         threads=2 if i % 4 == 0 else 1))
                i += 1
    # --pow2 and --margin
    i = 0
    for apply in ('multiply', 'divide'):
        for pow2 in (False, True):
            for margin in (0, 1, 3, 8):
                if not pow2 and margin == 0:
                    continue
                for e in dict.fromkeys((ELEMS[i % 9], ('e2m1', 'e2m3', 'e5m2', 'e4m3')[i % 4])):
                    add(Opts(non_mx[i % 6], e, apply=apply, pow2=pow2, margin=margin,
                             mode=('rne', 'rup', 'rtz', 'rna')[i % 4], ovf=OVFS[i % 2]))
                i += 1
    # the large tensors (partial 128x128 blocks in both directions), a few configurations each
    for i, s in enumerate(SCHEMES):
        add(Opts(s, ('e4m3fn', 'e5m2', 'e4m3', 'e2m1')[i % 4], rule=RULES[i % 5], threads=2), big=True)
        add(Opts(s, ('e2m1', 'e3m4', 'e4m3fnuz', 'e2m3')[i % 4], rule=RULES[(i + 2) % 5], apply='divide',
                 mode=MODES[i % 6], ovf=OVFS[i % 2], pow2=(i % 3 == 0)), big=True)
    # NVFP4: both block shapes, every rounding mode, both overflow policies, on every file
    for i, s in enumerate(NVFP4 * 4):
        add(Opts(s, 'e2m1', mode=MODES[i % 6], ovf=OVFS[i // 2 % 2], threads=1 + i % 2), big=i >= 6)
    add(Opts('nvfp4', 'e2m1', mode='sr', seed=5))
    add(Opts('nvfp4_16x16', 'e2m1', mode='sr', seed=0x0123456789ABCDEF, threads=2), big=True)
    # stochastic rounding, bit for bit (counter = flat index, key = seed)
    for i, (s, e) in enumerate((('block1x128', 'e4m3fn'), ('mx', 'e2m1'), ('row', 'e5m2'), ('mx', 'e4m3'),
                                ('block3x5', 'e3m2'), ('tensor', 'e4m3fnuz'))):
        add(Opts(s, e, mode='sr', seed=(0, 7, 0x0123456789ABCDEF)[i % 3], apply=('multiply', 'divide')[i % 2],
                 rule=RULES[i % 5], ovf=OVFS[i % 2], threads=1 + i % 2))
    return runs


def error_cases(ck, files):
    tmp = ck.tmp
    outp = os.path.join(tmp, 'err_out.safetensors')
    fname = files['nan'][0]
    ck.error_case('missing input', ['quantize-tensors', os.path.join(tmp, 'no_such.safetensors'), outp,
                                    '--scheme', 'tensor'], outp)
    junk = os.path.join(tmp, 'junk.safetensors')
    with open(junk, 'wb') as fh:
        fh.write(b'this is not a safetensors file\n')
    ck.error_case('text input', ['quantize-tensors', junk, outp, '--scheme', 'row'], outp)
    bad_len = os.path.join(tmp, 'badlen.safetensors')
    with open(bad_len, 'wb') as fh:
        fh.write(struct.pack('<Q', 1 << 40) + b'{}      ')
    ck.error_case('header length beyond the file', ['quantize-tensors', bad_len, outp, '--scheme', 'row'], outp)
    bad_off = os.path.join(tmp, 'badoff.safetensors')
    h = json.dumps({'w': {'dtype': 'F32', 'shape': [4], 'data_offsets': [0, 16]}}).encode()
    h += b' ' * (-len(h) % 8)
    with open(bad_off, 'wb') as fh:
        fh.write(struct.pack('<Q', len(h)) + h + b'\0' * 8)
    ck.error_case('data offsets beyond the file', ['quantize-tensors', bad_off, outp, '--scheme', 'row'], outp)
    for bad in ('rows', 'block', 'block0x4', 'block3x', 'blockAxB', 'mx32'):
        ck.error_case('--scheme %s' % bad, ['quantize-tensors', fname, outp, '--scheme', bad], outp)
    ck.error_case('--elem e8m0', ['quantize-tensors', fname, outp, '--scheme', 'row', '--elem', 'e8m0'], outp)
    ck.error_case('--elem bogus', ['quantize-tensors', fname, outp, '--scheme', 'row', '--elem', 'fp8'], outp)
    ck.error_case('--round bogus', ['quantize-tensors', fname, outp, '--scheme', 'row', '--round', 'up'], outp)
    ck.error_case('dequantize missing input', ['dequantize-tensors', os.path.join(tmp, 'no_such.safetensors'), outp],
                  outp)
    ck.error_case('dequantize text input', ['dequantize-tensors', junk, outp], outp)
    # e2m1 needs an even last dimension: odd and 0-D tensors are refused, naming the tensor
    for shape in ([3, 5], []):
        p = os.path.join(tmp, 'odd.safetensors')
        write_safetensors(p, [('w_odd', 'F32', shape, raw_of('F32', [F32_ONE] * numel(shape)))], None)
        ck.error_case('e2m1 with shape %s' % shape, ['quantize-tensors', p, outp, '--scheme', 'tensor', '--elem',
                                                     'e2m1'], outp, need_in_msg='w_odd')
    # a tensor named like another tensor's scale
    p = os.path.join(tmp, 'collide.safetensors')
    write_safetensors(p, [('w', 'F32', [2, 2], raw_of('F32', [F32_ONE] * 4)),
                          ('w.scale_inv', 'I32', [1], b'\0\0\0\0')], None)
    ck.error_case('name collision w / w.scale_inv', ['quantize-tensors', p, outp, '--scheme', 'tensor'], outp,
                  need_in_msg='w.scale_inv')
    p2 = os.path.join(tmp, 'collide_mx.safetensors')
    write_safetensors(p2, [('w.scale', 'F32', [2, 2], raw_of('F32', [F32_ONE] * 4)),
                           ('w', 'BF16', [2, 2], raw_of('BF16', [0x3F80] * 4))], None)
    ck.error_case('name collision w / w.scale (mx)', ['quantize-tensors', p2, outp, '--scheme', 'mx'], outp,
                  need_in_msg='w.scale')
    # NaN into a format without NaN (non-MX schemes) is refused, naming the tensor and the index
    rng = random.Random(5)
    for elem in NANLESS:
        for scheme, dt, shape, idx in (('tensor', 'F32', [4, 6], 13), ('block3x5', 'BF16', [7, 10], 61),
                                       ('row', 'F16', [2, 4], 5)):
            pats = [narrow_from_f32(dt, fbits(rng.uniform(-3, 3))) for _ in range(numel(shape))]
            pats[idx] = NAN32[1] if dt == 'F32' else NAN16[dt][0]
            p = os.path.join(tmp, 'nan1.safetensors')
            write_safetensors(p, [('ok', 'F32', [2], raw_of('F32', [F32_ONE, F32_ONE])),
                                  ('has_nan', dt, shape, raw_of(dt, pats))], {'k': 'v'})
            ck.cases += 1
            if os.path.exists(outp):
                os.remove(outp)
            r = run_tool(ck.fp8q, ['quantize-tensors', p, outp, '--scheme', scheme, '--elem', elem])
            ck.expect_refusal('quantize-tensors (NaN into %s) --scheme %s' % (elem, scheme), r, outp,
                              ('has_nan', idx))
    # the inputs are never modified
    for key, (fname, data) in files.items():
        with open(fname, 'rb') as fh:
            if fh.read() != data:
                ck.fail('input %s was modified' % fname)


def determinism_cases(ck, files):
    f = files['nan'][0]
    fe = files['even_nan'][0]
    for fname, s, e in ((f, 'block1x128', 'e4m3fn'), (fe, 'mx', 'e2m1'), (f, 'row', 'e5m2')):
        base = ['--scheme', s, '--elem', e, '--round', 'sr']
        ck.same_file_case('sr, same seed twice (%s %s)' % (s, e), fname, base + ['--seed', '42'],
                          base + ['--seed', '42'])
        ck.same_file_case('sr, --threads 1 vs 2 (%s %s)' % (s, e), fname, base + ['--seed', '9', '--threads', '1'],
                          base + ['--seed', '9', '--threads', '2'])
    ck.same_file_case('rne, --threads 1 vs 2 (block3x5)', files['big'][0],
                      ['--scheme', 'block3x5', '--threads', '1'], ['--scheme', 'block3x5', '--threads', '2'])


# --------------------------------------------------------------------------
# Self-test of the reference functions (hand-worked examples from the docs)
# --------------------------------------------------------------------------


def slow_f32(q):
    """fp32 pattern of a Fraction, nearest-even, by bracketing (for the self-test)."""
    s = 1 if q < 0 else 0
    q = abs(q)
    c = cc.encode_rtz_mag(F32, q)
    lo = F32.frac_value(c)
    hi = Fraction(2) ** 128 if c == F32.maxcode else F32.frac_value(c + 1)
    if q - lo > hi - q or (q - lo == hi - q and c & 1):
        c += 1
    return (s << 31) | c


def self_test():
    def check(what, got, want):
        if got != want:
            raise AssertionError('self-test: %s: got %r, want %r' % (what, got, want))

    e4m3fn, e4m3, e5m2 = cc.FORMATS['e4m3fn'], cc.FORMATS['e4m3'], cc.FORMATS['e5m2']
    one = f32v(F32_ONE)
    # exact division against a Fraction bracketing, and against correctly rounded double arithmetic
    # (innocuous for fp32 operands: 53 >= 2 * 24 + 2)
    rng = random.Random(3)
    for _ in range(20000):
        a = rng.choice((rng.randrange(1 << 32), fbits(rng.uniform(-1e3, 1e3)), rng.randrange(1 << 23)))
        b = rng.choice((rng.randrange(1, 0x7F800000), fbits(rng.uniform(0.001, 1e3)), rng.randrange(1, 1 << 23)))
        av, bv = f32v(a), f32v(b)
        if av[0] != 'fin':
            continue
        got = f32bits(div_f32(av, bv))
        check('div %08x / %08x' % (a, b), got, slow_f32(frac(av) / frac(bv)))
        got = f32bits(mul_f32(av, bv))
        check('mul %08x * %08x' % (a, b), got, slow_f32(frac(av) * frac(bv)))
        qd = struct.unpack('<f', struct.pack('<I', a))[0] / struct.unpack('<f', struct.pack('<I', b))[0]
        if abs(qd) < 3.0e38:
            check('div vs double %08x / %08x' % (a, b), f32bits(div_f32(av, bv)), fbits(qd))
    # docs/numerics.md section 2 examples through the conversion used here
    check('448*1.0625 e4m3fn saturate', cc.convert(mul_f32(f32v(fbits(448.0)), f32v(fbits(1.0625))), e4m3fn,
                                                    'rne', 'saturate', None), 0x7E)
    check('448*1.0625 e4m3fn inf-nan', cc.convert(mul_f32(f32v(fbits(448.0)), f32v(fbits(1.0625))), e4m3fn,
                                                   'rne', 'inf-nan', None), 0x7F)
    check('100 scale 3', cc.convert(mul_f32(f32v(fbits(100.0)), f32v(fbits(3.0))), e4m3fn, 'rne', 'saturate',
                                    None), 0x79)
    # scale from amax (numerics.md section 5 table)
    check('amax 1 e4m3fn', f32bits(scale_multiply(F32_ONE, e4m3fn, 0, False)), fbits(448.0))
    check('amax 1 e4m3', f32bits(scale_multiply(F32_ONE, e4m3, 0, False)), fbits(240.0))
    check('amax 2 margin 2', f32bits(scale_multiply(fbits(2.0), e4m3fn, 2, False)), fbits(56.0))
    check('amax 3e38 margin 31: 2^-127', f32bits(scale_multiply(fbits(3e38), e4m3fn, 31, False)), 0x00400000)
    check('amax 2^100 margin 35: 1.75 * 2^-127 kept', f32bits(scale_multiply(fbits(2.0 ** 100), e4m3fn, 35, False)),
          0x00700000)
    check('amax 2 pow2', f32bits(scale_multiply(fbits(2.0), e4m3fn, 0, True)), fbits(128.0))
    check('amax 2^-140', f32bits(scale_multiply(fbits(2.0 ** -140), e4m3fn, 0, False)), FLT_MAX_BITS)
    check('amax 0', f32bits(scale_multiply(0, e4m3fn, 3, True)), F32_ONE)
    check('amax NaN', f32bits(scale_multiply(0x7FC00000, e4m3fn, 0, False)), F32_ONE)
    check('amax 3 (448/3 rounded)', f32bits(scale_multiply(fbits(3.0), e4m3fn, 0, False)), fbits(448.0 / 3.0))
    check('scale_inv 1/120', f32bits(div_f32(one, scale_multiply(fbits(2.0), e4m3, 0, False))), fbits(1.0 / 120.0))
    # current scaling example: x = {1, -2} as a Trainium2 weight: scale 120, -2 -> -240 (0xF7)
    o = Opts('tensor', 'e4m3')
    codes, sc, _, sinv = quantize_tensor('w', 'F32', [2], [F32_ONE, fbits(-2.0)], o)
    check('current scaling codes', codes, [cc.convert(f32v(fbits(120.0)), e4m3, 'rne', 'saturate', None), 0xF7])
    check('current scaling scale_inv', sinv, [fbits(1.0 / 120.0)])
    # divide
    check('divide amax 448', f32bits(scale_inv_divide(fbits(448.0), e4m3fn, 0, False)), F32_ONE)
    check('divide amax 2^-149 e5m2 -> 2^-149', f32bits(scale_inv_divide(1, e5m2, 0, False)), 1)
    check('divide amax 300 pow2', f32bits(scale_inv_divide(fbits(300.0), e4m3fn, 0, True)), F32_ONE)
    check('divide amax 1 pow2 e4m3fn', f32bits(scale_inv_divide(F32_ONE, e4m3fn, 0, True)), fbits(2.0 ** -8))
    check('divide FLT_MAX e2m1 margin 3', f32bits(scale_inv_divide(FLT_MAX_BITS, cc.FORMATS['e2m1'], 3, False)),
          FLT_MAX_BITS)
    check('divide FLT_MAX e2m1 pow2', f32bits(scale_inv_divide(FLT_MAX_BITS, cc.FORMATS['e2m1'], 0, True)),
          fbits(2.0 ** 126))
    check('divide FLT_MAX e2m1 margin 3 pow2 (2^127 at most)',
          f32bits(scale_inv_divide(FLT_MAX_BITS, cc.FORMATS['e2m1'], 3, True)), fbits(2.0 ** 127))
    check('divide 3 / 448', f32bits(scale_inv_divide(fbits(3.0), e4m3fn, 1, False)), fbits(3.0 / 448.0 * 2))
    # MX rules on amax 255.99998 (numerics.md section 5 worked example), e4m3fn
    a = 0x437FFFFF
    for rule, code in (('floor', 126), ('ceil', 127), ('even', 127), ('rceil', 127), ('trainium3', 127)):
        check('mx %s 255.99998' % rule, mx_scale_code(a, e4m3fn, rule), code)
    o = Opts('mx', 'e4m3fn')
    codes, _, _, sc = quantize_tensor('w', 'F32', [2], [a, fbits(1.0)], o)
    check('mx floor element 255.99998 -> 511.99997 saturates', (sc, codes), ([126], [0x7E, 0x40]))
    o = Opts('mx', 'e4m3fn', rule='ceil')
    codes, _, _, sc = quantize_tensor('w', 'F32', [2], [a, fbits(1.0)], o)
    check('mx ceil element 255.99998 -> 256', (sc, codes), ([127], [0x78, 0x38]))
    check('mx zeros', mx_scale_code(0, e4m3fn, 'floor'), 0)
    check('mx Inf', mx_scale_code(0x7F800000, e4m3fn, 'even'), 0xFF)
    check('mx subnormal', [mx_scale_code(1, e4m3fn, r) for r in RULES], [0] * 5)
    check('mx FLT_MAX floor e2m1', mx_scale_code(FLT_MAX_BITS, cc.FORMATS['e2m1'], 'floor'), 127 + 125)
    check('mx FLT_MAX even e4m3fn', mx_scale_code(FLT_MAX_BITS, e4m3fn, 'even'), 127 + 120)
    check('mx 6 e2m1 floor', mx_scale_code(fbits(6.0), cc.FORMATS['e2m1'], 'floor'), 127)
    check('mx 6 e2m1 rceil', mx_scale_code(fbits(6.0), cc.FORMATS['e2m1'], 'rceil'), 127)
    check('mx 6.5 e2m1 rceil', mx_scale_code(fbits(6.5), cc.FORMATS['e2m1'], 'rceil'), 128)
    check('mx 7 e2m1 even (7 -> 8)', mx_scale_code(fbits(7.0), cc.FORMATS['e2m1'], 'even'), 128)
    check('mx 5.9 e2m1 even', mx_scale_code(fbits(5.9), cc.FORMATS['e2m1'], 'even'), 127)
    check('mx 0.75 trainium3 e4m3fn', mx_scale_code(fbits(0.75), e4m3fn, 'trainium3'), 127 - 1 - 7)
    # tiny elements beside a large block max: the exact x * 2^-e (2^-161 and 2^-142, far below
    # fp32's range) is rounded once, so rup gives the smallest subnormal, rne 0, rdn -0 -> +0
    o = Opts('mx', 'e4m3fn', mode='rup')
    codes, _, _, sc = quantize_tensor('w', 'F32', [3], [fbits(2.0 ** 20), 1, fbits(2.0 ** -130)], o)
    check('mx tiny elements rup', (sc, codes), ([127 + 12], [0x78, 0x01, 0x01]))
    o = Opts('mx', 'e4m3fn', mode='rne')
    codes, _, _, sc = quantize_tensor('w', 'F32', [3], [fbits(2.0 ** 20), 1, fbits(2.0 ** -130)], o)
    check('mx tiny elements rne', (sc, codes), ([127 + 12], [0x78, 0x00, 0x00]))
    o = Opts('mx', 'e4m3fn', mode='rdn')
    codes, _, _, sc = quantize_tensor('w', 'F32', [3], [fbits(2.0 ** 20), 0x80000001, fbits(-(2.0 ** -130))], o)
    check('mx tiny negative elements rdn', (sc, codes), ([127 + 12], [0x78, 0x81, 0x81]))
    # codes and packing
    check('e2m1 packing', pack_codes('e2m1', [0x1, 0xF, 0x6, 0x0]), bytes([0xF1, 0x06]))
    check('decode fnuz NaN', decode_code(cc.FORMATS['e4m3fnuz'], 0x80), ('nan', 0))
    check('decode e4m3fn -448', frac(decode_code(e4m3fn, 0xFE)), Fraction(-448))
    check('decode e2m3 7.5', frac(decode_code(cc.FORMATS['e2m3'], 0x1F)), Fraction(15, 2))
    check('decode e3m2 -28', frac(decode_code(cc.FORMATS['e3m2'], 0x3F)), Fraction(-28))
    check('decode e4m3 Inf', decode_code(e4m3, 0x78), ('inf', 0))
    # grids
    g, b = block_of('block3x5')
    check('block3x5 grid of 130x257', g(130, 257), [44, 52])
    check('block3x5 index', b(4, 11, 130, 257, 52), 1 * 52 + 2)
    # safetensors round trip
    with tempfile.TemporaryDirectory(prefix='fp8q_qt_self_') as tmp:
        p = os.path.join(tmp, 't.safetensors')
        t = [('a', 'F32', [2, 0], b''), ('b', 'BF16', [], b'\x80\x3f'), ('c', 'I32', [1], b'\1\2\3\4')]
        write_safetensors(p, t, {'x': 'y'})
        got, meta = read_safetensors(p)
        check('safetensors round trip', (got, meta), ({n: (d, s, r) for n, d, s, r in t}, {'x': 'y'}))
    print('self-test passed')


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--fp8q')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--self-test', action='store_true', help='check the reference functions only')
    ap.add_argument('--max-report', type=int, default=20)
    args = ap.parse_args()
    t0 = time.time()
    self_test()
    if args.self_test:
        return 0
    if not args.fp8q:
        ap.error('--fp8q PATH is required (or --self-test)')
    rng = random.Random(args.seed)
    meta = {'format': 'pt', 'note': 'kept as is'}
    with tempfile.TemporaryDirectory(prefix='fp8q_qt_') as tmp:
        ck = Checker(os.path.abspath(args.fp8q), tmp, args.max_report)
        contents = {'nan': make_file(rng, False, True), 'fin': make_file(rng, False, False),
                    'even_nan': make_file(rng, True, True), 'even_fin': make_file(rng, True, False),
                    'big': make_big(rng, False), 'big_even': make_big(rng, True)}
        files = {}
        for key, tensors in contents.items():
            p = os.path.join(tmp, 'in_%s.safetensors' % key)
            files[key] = (p, write_safetensors(p, tensors, meta))
        runs = build_runs()
        for n, (key, o, dq) in enumerate(runs):
            ck.quant_case(files[key][0], contents[key], meta, o, dq)
            if n % 40 == 39:
                print('%d of %d runs, %d failing, %.0fs' % (n + 1, len(runs), len(ck.failures), time.time() - t0))
                sys.stdout.flush()
        determinism_cases(ck, files)
        error_cases(ck, files)
    dt = time.time() - t0
    if ck.failures:
        print('%d cases, %d failed (%.0fs); first mismatch:\n%s' % (ck.cases, len(ck.failures), dt, ck.failures[0]))
        return 1
    print('%d cases, all bit-exact (%.0fs)' % (ck.cases, dt))
    return 0


if __name__ == '__main__':
    sys.exit(main())
