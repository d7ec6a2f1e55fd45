#!/usr/bin/python3
"""Independent cross-check of `fp8q convert`.

The conversion rules are re-implemented here from the written specification
only (standard library, exact integer / Fraction arithmetic); the tool is run on
generated inputs and every output code is compared bit for bit.

Usage: /usr/bin/python3 check_convert.py --fp8q PATH [--per-case N] [--seed S]
"""

import argparse
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from bisect import bisect_right
from fractions import Fraction

MASK32 = 0xFFFFFFFF
OVF = -1  # sentinel: rounded magnitude is "beyond" (overflow)

# --------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------


class Fmt:
    """kind: ieee | fn | fnuz | finite | e8m0"""

    def __init__(self, name, kind, E, M, bias, size):
        self.name, self.kind, self.E, self.M, self.bias, self.size = name, kind, E, M, bias, size
        self.emin = 1 - bias
        top = (1 << E) - 1
        mm = (1 << M) - 1
        if kind == 'e8m0':
            self.maxcode = 254
            self.signbit = 0
        else:
            self.signbit = 1 << (E + M)
            if kind == 'ieee':
                self.maxcode = ((top - 1) << M) | mm
            elif kind == 'fn':
                self.maxcode = (top << M) | (mm - 1)
            else:  # fnuz, finite
                self.maxcode = (top << M) | mm
        self.infcode = (top << M) if kind == 'ieee' else None
        self.qnan = (self.infcode | (1 << (M - 1))) if kind == 'ieee' else None
        self.has_nan = kind in ('ieee', 'fn', 'fnuz', 'e8m0')
        self.narrow = size == 1

    def mag_value(self, n):
        """Dyadic (mantissa, exponent) of positive magnitude code n (n may be maxcode+1 = 'beyond')."""
        if self.kind == 'e8m0':
            return (1, n - 127)
        M = self.M
        if n < (1 << M):
            return (n, 1 - self.bias - M)
        b = n >> M
        f = n & ((1 << M) - 1)
        return ((1 << M) | f, b - self.bias - M)

    def frac_value(self, n):
        m, e = self.mag_value(n)
        return Fraction(m) * Fraction(2) ** e

    def infnan(self, s):
        """Code for overflow / Inf under inf-nan."""
        if self.kind == 'ieee':
            return (s * self.signbit) | self.infcode
        if self.kind == 'fn':
            return (s * self.signbit) | 0x7F
        if self.kind == 'fnuz':
            return 0x80
        if self.kind == 'e8m0':
            return 0xFF
        raise AssertionError('finite formats have no Inf/NaN')


FORMATS = {f.name: f for f in [
    Fmt('f64', 'ieee', 11, 52, 1023, 8),
    Fmt('f32', 'ieee', 8, 23, 127, 4),
    Fmt('bf16', 'ieee', 8, 7, 127, 2),
    Fmt('f16', 'ieee', 5, 10, 15, 2),
    Fmt('e4m3', 'ieee', 4, 3, 7, 1),
    Fmt('e5m2', 'ieee', 5, 2, 15, 1),
    Fmt('e3m4', 'ieee', 3, 4, 3, 1),
    Fmt('e4m3fn', 'fn', 4, 3, 7, 1),
    Fmt('e4m3fnuz', 'fnuz', 4, 3, 8, 1),
    Fmt('e5m2fnuz', 'fnuz', 5, 2, 16, 1),
    Fmt('e2m3', 'finite', 2, 3, 1, 1),
    Fmt('e3m2', 'finite', 3, 2, 3, 1),
    Fmt('e2m1', 'finite', 2, 1, 1, 1),
    Fmt('e8m0', 'e8m0', 8, 0, 127, 1),
]}
NARROW = ['e4m3fn', 'e4m3', 'e5m2', 'e4m3fnuz', 'e5m2fnuz', 'e3m4', 'e8m0', 'e2m3', 'e3m2', 'e2m1']
F32 = FORMATS['f32']
MODES = ['rne', 'rna', 'rtz', 'rup', 'rdn', 'rto', 'sr']

# --------------------------------------------------------------------------
# Philox4x32-10
# --------------------------------------------------------------------------


def philox4x32_10(c, k):
    c0, c1, c2, c3 = c
    k0, k1 = k
    for rnd in range(10):
        if rnd:
            k0 = (k0 + 0x9E3779B9) & MASK32
            k1 = (k1 + 0xBB67AE85) & MASK32
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32)
    return c0, c1, c2, c3


def sr_word(n, seed):
    n &= (1 << 64) - 1
    return philox4x32_10((n & MASK32, n >> 32, 0, 0), (seed & MASK32, (seed >> 32) & MASK32))[0]


# --------------------------------------------------------------------------
# Values: ('nan', s) | ('inf', s) | ('fin', s, M, E) meaning (-1)^s * M * 2^E (M == 0: zero)
# --------------------------------------------------------------------------


def decode(fmt, bits):
    E, M = fmt.E, fmt.M
    if fmt.kind == 'e8m0':
        return ('nan', 0) if bits == 0xFF else ('fin', 0, 1, bits - 127)
    s = (bits >> (E + M)) & 1
    ef = (bits >> M) & ((1 << E) - 1)
    f = bits & ((1 << M) - 1)
    if fmt.kind == 'fn' and bits & ~fmt.signbit == fmt.maxcode + 1:
        return ('nan', s)
    if fmt.kind == 'fnuz' and bits == fmt.signbit:
        return ('nan', 0)
    if fmt.kind == 'ieee' and ef == (1 << E) - 1:
        return ('nan', s) if f else ('inf', s)
    if ef == 0:
        return ('fin', s, f, 1 - fmt.bias - M)
    return ('fin', s, (1 << M) | f, ef - fmt.bias - M)


def round_mag(T, Mx, Ex, neg, mode, rfun):
    """Fast path. Magnitude Mx*2^Ex > 0. Returns the magnitude code, or OVF."""
    bl = Mx.bit_length()
    e = bl - 1 + Ex
    if T.kind == 'e8m0':
        if e < -127:
            return 0
        if e >= 128:  # |x| >= beyond = 2^128
            return T.maxcode if mode in ('rtz', 'rto', 'rdn') else OVF
        c = e + 127
        sh = bl - 1
        rem = Mx - (1 << sh)
        if rem == 0:
            return c
        half = 1 << (sh - 1)
        if mode in ('rne', 'rna'):
            up = rem >= half  # ties up
        elif mode == 'rup':
            up = True
        elif mode == 'sr':
            f = (rem >> (sh - 32)) if sh >= 32 else (rem << (32 - sh))
            up = f + rfun() >= (1 << 32)
        else:  # rtz rdn rto
            up = False
        c += up
        return OVF if c > T.maxcode else c
    if e < T.emin:
        e = T.emin
    qe = e - T.M
    sh = qe - Ex
    if sh <= 0:
        units, rem = Mx << (-sh), 0
    else:
        units, rem = Mx >> sh, Mx & ((1 << sh) - 1)
    n = ((e + T.bias - 1) << T.M) + units
    if n > T.maxcode:  # |x| >= beyond
        if mode in ('rtz', 'rto'):
            return T.maxcode
        if mode == 'rup':
            return T.maxcode if neg else OVF
        if mode == 'rdn':
            return OVF if neg else T.maxcode
        return OVF
    if rem == 0:
        return n
    half = 1 << (sh - 1)
    if mode == 'rne':
        up = rem > half or (rem == half and (n & 1) == 1)
    elif mode == 'rna':
        up = rem >= half
    elif mode == 'rtz':
        up = False
    elif mode == 'rup':
        up = not neg
    elif mode == 'rdn':
        up = neg
    elif mode == 'rto':
        up = (n & 1) == 0
    elif mode == 'sr':
        f = (rem >> (sh - 32)) if sh >= 32 else (rem << (32 - sh))
        up = f + rfun() >= (1 << 32)
    else:
        raise ValueError(mode)
    n += up
    return OVF if n > T.maxcode else n


_GRID = {}


def round_mag_slow(T, q, neg, mode, rfun):
    """Literal reading of rule 5 using the enumerated grid and Fractions (narrow targets only)."""
    if T.name not in _GRID:
        _GRID[T.name] = [T.frac_value(n) for n in range(T.maxcode + 2)]
    g = _GRID[T.name]
    beyond = g[-1]
    if T.kind == 'e8m0' and q < g[0]:
        return 0
    if q >= beyond:
        i = T.maxcode
        a, b = g[i], beyond
        region = True
    else:
        i = bisect_right(g, q) - 1
        a, b = g[i], g[i + 1]
        region = False
    fr = (q - a) / (b - a)
    exact = (q == a)
    last_a, last_b = i & 1, (i + 1) & 1
    if mode == 'rne':
        if fr > Fraction(1, 2):
            up = True
        elif fr < Fraction(1, 2):
            up = False
        else:
            up = True if T.kind == 'e8m0' else (last_a == 1)
    elif mode == 'rna':
        up = fr >= Fraction(1, 2)
    elif mode == 'rtz':
        up = False
    elif mode == 'rup':
        up = (not neg) and not exact
    elif mode == 'rdn':
        up = neg and not exact
    elif mode == 'rto':
        up = False if (exact or T.kind == 'e8m0') else (last_b == 1)
    elif mode == 'sr':
        f = (fr * (1 << 32)).__floor__()
        up = f + rfun() >= (1 << 32)
    if region and mode in ('rne', 'rna', 'sr'):
        up = True
    if up:
        return OVF if i + 1 > T.maxcode else i + 1
    return i


def overflow_code(T, s, mode, ovf):
    if ovf == 'saturate' or T.kind == 'finite':
        return (s * T.signbit) | T.maxcode
    if mode in ('rne', 'rna', 'sr'):
        return T.infnan(s)
    if mode in ('rtz', 'rto'):
        return (s * T.signbit) | T.maxcode
    if mode == 'rup':
        return T.infnan(s) if s == 0 else (s * T.signbit) | T.maxcode
    if mode == 'rdn':
        return T.infnan(s) if s == 1 else (s * T.signbit) | T.maxcode
    raise ValueError(mode)


def widening(S, T):
    """Whether T holds every value of S (zero signs, Inf and NaN included): then a conversion
    S -> T is exact under both overflow policies (the spec's "widening conversions")."""
    def minexp(F):  # exponent of the smallest quantum (e8m0: its smallest value 2^-127)
        return -127 if F.kind == 'e8m0' else 1 - F.bias - F.M
    signed = lambda F: F.kind != 'e8m0'
    neg_zero = lambda F: F.kind not in ('e8m0', 'fnuz')
    return ((signed(T) or not signed(S)) and (neg_zero(T) or not neg_zero(S))
            and (T.kind == 'ieee' or S.kind != 'ieee') and (T.has_nan or not S.has_nan)
            and (T.kind != 'e8m0' or S.kind == 'e8m0')  # e8m0 has no zero
            and T.M >= S.M and minexp(T) <= minexp(S) and T.frac_value(T.maxcode) >= S.frac_value(S.maxcode))


def convert(v, T, mode, ovf, rfun, slow=False, src=None):
    """v's code in T; src: the format v is a value of (fp32 when scaled), for the widening rule."""
    kind, s = v[0], v[1]
    if kind == 'nan':
        if T.kind == 'ieee':
            return (s * T.signbit) | T.qnan
        if T.kind == 'fn':
            return (s * T.signbit) | 0x7F
        if T.kind in ('fnuz', 'e8m0'):
            return T.infnan(s)
        return s * T.signbit  # finite formats with --nan zero
    if T.kind == 'e8m0':
        if s == 1 or (kind == 'fin' and v[2] == 0):
            return 0x00 if ovf == 'saturate' else 0xFF
    if kind == 'inf':
        if src is not None and widening(src, T):
            return T.infnan(s)
        if ovf == 'saturate' or T.kind == 'finite':
            return (s * T.signbit) | T.maxcode
        return T.infnan(s)
    Mx, Ex = v[2], v[3]
    if Mx == 0:
        return 0 if T.kind == 'fnuz' else s * T.signbit
    if slow:
        n = round_mag_slow(T, Fraction(Mx) * Fraction(2) ** Ex, s == 1, mode, rfun)
    else:
        n = round_mag(T, Mx, Ex, s == 1, mode, rfun)
    if n == OVF:
        return overflow_code(T, s, mode, ovf)
    if n == 0 and T.kind == 'fnuz':
        return 0
    return (s * T.signbit) | n


def scale_value(v, sv):
    """fp32(x * S) per rule 1. v, sv are value tuples."""
    if v[0] == 'nan':
        return ('nan', v[1])
    if sv[0] == 'nan':
        return ('nan', sv[1])
    s = v[1] ^ sv[1]
    xzero = v[0] == 'fin' and v[2] == 0
    szero = sv[0] == 'fin' and sv[2] == 0
    if (v[0] == 'inf' and szero) or (sv[0] == 'inf' and xzero):
        return ('nan', 1)
    if v[0] == 'inf' or sv[0] == 'inf':
        return ('inf', s)
    if xzero or szero:
        return ('fin', s, 0, 0)
    code = convert(('fin', s, v[2] * sv[2], v[3] + sv[3]), F32, 'rne', 'inf-nan', None)
    return decode(F32, code)


def float_to_value(x):
    if x != x:
        return ('nan', 1 if struct.pack('<d', x)[7] & 0x80 else 0)
    s = 1 if (x < 0 or (x == 0 and struct.pack('<d', x)[7] & 0x80)) else 0
    if x in (float('inf'), float('-inf')):
        return ('inf', s)
    p, q = abs(x).as_integer_ratio()
    return ('fin', s, p, -(q.bit_length() - 1))


def encode_rtz_mag(fmt, q):
    """Magnitude code of Fraction q >= 0 in IEEE format fmt, rounded toward zero, clamped to max."""
    if q <= 0:
        return 0
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, fmt.emin)
    units = (q / Fraction(2) ** (e - fmt.M)).__floor__()
    return min(((e + fmt.bias - 1) << fmt.M) + units, fmt.maxcode)


# --------------------------------------------------------------------------
# Input generation
# --------------------------------------------------------------------------


def target_points(T, rng):
    """Fractions of interest on the target's grid: grid points, midpoints, around beyond."""
    pts = []
    if T.narrow:
        ns = list(range(T.maxcode + 1))
    else:  # wide target: sample
        M = T.M
        ns = {0, 1, 2, 3, (1 << M) - 2, (1 << M) - 1, 1 << M, (1 << M) + 1,
              T.maxcode - 2, T.maxcode - 1, T.maxcode}
        for _ in range(150):
            ns.add(rng.randrange(T.maxcode + 1))
        ns = sorted(ns)
    for n in ns:
        a = T.frac_value(n)
        b = T.frac_value(n + 1)
        pts.append(a)
        pts.append((a + b) / 2)
    beyond = T.frac_value(T.maxcode + 1)
    mx = T.frac_value(T.maxcode)
    pts += [beyond, beyond * Fraction(3, 2), beyond * 2, beyond * 1024, (mx + beyond) / 2]
    if T.kind == 'e8m0':
        for k in (128, 129, 130, 140, 149, 150):
            pts.append(Fraction(1, 2 ** k))
        pts.append(Fraction(3, 2 ** 129))
    return pts


def gen_inputs(src, T, scale_val, n_random, rng):
    """List of source bit patterns."""
    sb = src.signbit
    M = src.M
    out = []
    mags = [0, 1, 2, (1 << M) - 1, 1 << M, (1 << M) + 1, src.maxcode, src.maxcode - 1]
    one = encode_rtz_mag(src, Fraction(1))
    mags.append(one)
    for m in mags:
        out += [m, m | sb]
    inf = src.infcode
    out += [inf, inf | sb]
    # NaNs: quiet canonical, quiet+payload, signalling payloads, all-ones, both signs
    for pay in (1 << (M - 1), (1 << (M - 1)) | 1, (1 << (M - 1)) | 0x15, 1, 2, (1 << M) - 1,
                rng.randrange(1, 1 << M)):
        out += [inf | pay, inf | pay | sb]
    # subnormals of the source
    for _ in range(6):
        out.append(rng.randrange(1, 1 << M) | rng.choice((0, sb)))
    # fp32 subnormals (as values) when source is not f32
    if src.name in ('f64',):
        for _ in range(6):
            v = decode(F32, rng.randrange(1, 1 << 23))
            q = Fraction(v[2]) * Fraction(2) ** v[3]
            m = encode_rtz_mag(src, q)
            out += [m, m | sb]
    # huge values
    for q in (Fraction(2) ** 100, Fraction(10) ** 38, Fraction(2) ** 127 * 3 // 2, Fraction(2) ** 20,
              Fraction(2) ** 200, Fraction(2) ** 1000):
        m = encode_rtz_mag(src, q)
        out += [m, m | sb]
    # structured points around the target grid
    S = None
    if scale_val is None:
        S = Fraction(1)
    elif scale_val[0] == 'fin' and scale_val[2] != 0:
        S = Fraction(scale_val[2]) * Fraction(2) ** scale_val[3]
    if S is not None:
        seen = set()
        for p in target_points(T, rng):
            q = p / abs(S)
            c = encode_rtz_mag(src, q)
            ks = [c - 1, c, c + 1]
            if src.name == 'f64':
                # fp32 neighbours of the point, expressed as f64
                c32 = encode_rtz_mag(F32, q)
                for k in (c32 - 1, c32, c32 + 1):
                    if 0 <= k <= F32.maxcode:
                        v = decode(F32, k)
                        ks.append(encode_rtz_mag(src, Fraction(v[2]) * Fraction(2) ** v[3]))
            for k in ks:
                if 0 <= k <= src.maxcode and k not in seen:
                    seen.add(k)
                    out += [k, k | sb]
    # random bit patterns
    nb = n_random // 2
    top = 1 << (src.size * 8)
    for _ in range(nb):
        out.append(rng.randrange(top))
    # random normal-distributed values spanning the target's range
    if T.kind == 'e8m0':
        lo, hi = -133, 131
    else:
        lo = T.emin - T.M - 3
        hi = (T.maxcode >> T.M) - T.bias + 3
    lo, hi = max(lo, -1060), min(hi, 1020)
    sdiv = 1.0
    if S is not None and scale_val is not None:
        sdiv = float(S)
    for _ in range(n_random - nb):
        x = rng.gauss(0.0, 1.0) * 2.0 ** rng.randint(lo, hi) / sdiv
        v = float_to_value(x)
        if src.name == 'f64':
            out.append(struct.unpack('<Q', struct.pack('<d', x))[0])
        elif v[0] == 'fin':
            out.append(convert(v, src, 'rne', 'inf-nan', None))
    rng.shuffle(out)
    return out


def pack(fmt, codes):
    c = {1: 'B', 2: 'H', 4: 'I', 8: 'Q'}[fmt.size]
    return struct.pack('<%d%s' % (len(codes), c), *codes)


def unpack(fmt, data):
    c = {1: 'B', 2: 'H', 4: 'I', 8: 'Q'}[fmt.size]
    n = len(data) // fmt.size
    return list(struct.unpack('<%d%s' % (n, c), data[:n * fmt.size]))


# --------------------------------------------------------------------------
# Running the tool
# --------------------------------------------------------------------------


def run_tool(fp8q, args, timeout=60):
    deadline = time.time() + 120
    while True:
        if os.path.exists(fp8q):
            try:
                return subprocess.run([fp8q] + args, capture_output=True, timeout=timeout)
            except OSError:  # e.g. text file busy while it is being rebuilt
                pass
        if time.time() > deadline:
            raise RuntimeError('fp8q not runnable at %s' % fp8q)
        time.sleep(1.0)


def self_test(rng, n=6000):
    assert philox4x32_10((0, 0, 0, 0), (0, 0)) == (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8), \
        'Philox known answer failed'
    # fast bit-arithmetic path vs literal Fraction/grid path
    bad = 0
    for _ in range(n):
        T = FORMATS[rng.choice(NARROW)]
        mode = rng.choice(MODES)
        ovf = rng.choice(('saturate', 'inf-nan'))
        v = decode(F32, rng.randrange(1 << 32))
        if v[0] != 'fin':
            continue
        r = rng.randrange(1 << 32)
        a = convert(v, T, mode, ovf, lambda: r)
        b = convert(v, T, mode, ovf, lambda: r, slow=True)
        if a != b:
            bad += 1
            if bad < 5:
                print('SELF-TEST mismatch', T.name, mode, ovf, v, hex(a), hex(b))
    assert bad == 0, 'self-test failed'


def build_cases():
    cases = []  # (src, tgt, mode, ovf, scale_str or None, seed, offset, threads[, 'all'])
    # exhaustive: every 16-bit pattern of bf16 / f16 into every narrow target
    for src in ('bf16', 'f16'):
        for tgt in NARROW:
            cases.append((src, tgt, 'rne', 'inf-nan', None, 0, 0, 2, 'all'))
            cases.append((src, tgt, 'sr', 'saturate', None, 3, 17, 1, 'all'))
    SR = [(0, 0), (0x0123456789ABCDEF, (1 << 32) - 7)]
    modeset = [(m, 0, 0) for m in MODES if m != 'sr'] + [('sr',) + x for x in SR]
    for src in ('f32', 'bf16', 'f16'):
        for tgt in NARROW:
            for mode, seed, off in modeset:
                for ovf in ('saturate', 'inf-nan'):
                    cases.append((src, tgt, mode, ovf, None, seed, off, 1))
    # scaled: f32 source, every narrow target, every mode, both policies
    scales = ['3.5', '9.5367431640625e-07', '1000000015047466219876688855040', '-0.75', '0', '-inf']
    i = 0
    for tgt in NARROW:
        for sc in scales:
            for mode, seed, off in modeset:
                # alternate overflow policy, except keep both for the interesting scales
                ovfs = ('saturate', 'inf-nan') if sc in ('1000000015047466219876688855040', '-0.75') \
                    else (('saturate', 'inf-nan')[i % 2],)
                i += 1
                for ovf in ovfs:
                    cases.append(('f32', tgt, mode, ovf, sc, seed, off, 1))
    # scaled bf16/f16 sources (subset)
    for src in ('bf16', 'f16'):
        for tgt in NARROW:
            for sc in ('3.5', '-0.75', '9.5367431640625e-07'):
                for mode, ovf in (('rne', 'inf-nan'), ('sr', 'saturate'), ('rup', 'inf-nan')):
                    cases.append((src, tgt, mode, ovf, sc, 42, 1000, 1))
    # NaN scales: every product is NaN (x's sign if x is NaN, else the scale's sign)
    for sc in ('nan', '-nan'):
        for tgt in ('e4m3', 'e4m3fn', 'e5m2fnuz', 'e2m1', 'e8m0'):
            cases.append(('f32', tgt, 'rne', 'inf-nan', sc, 0, 0, 1))
        for mode in ('rna', 'rtz', 'rup', 'rdn', 'rto', 'sr'):
            cases.append(('f32', 'e4m3', mode, 'saturate', sc, 1, 2, 1))
        for src in ('bf16', 'f16', 'f64'):
            cases.append((src, 'e4m3fn', 'rne', 'inf-nan', sc, 0, 0, 1))
            cases.append((src, 'e4m3fn', 'sr', 'saturate', sc, 1, 2, 1))
    # f64 sources (exact value, not rounded to fp32) and one scale
    for tgt in NARROW:
        for mode, seed, off in (('rne', 0, 0), ('rtz', 0, 0), ('rna', 0, 0), ('rto', 0, 0), ('sr', 7, 3)):
            for ovf in ('saturate', 'inf-nan'):
                cases.append(('f64', tgt, mode, ovf, None, seed, off, 1))
        cases.append(('f64', tgt, 'rne', 'inf-nan', '3.5', 0, 0, 1))
        cases.append(('f64', tgt, 'rup', 'saturate', '-0.75', 0, 0, 1))
    # wide targets
    for src, tgt in (('f32', 'bf16'), ('f32', 'f16'), ('f64', 'f32'), ('f64', 'f16'), ('bf16', 'f16'),
                     ('f16', 'bf16'), ('f64', 'bf16')):
        for mode in MODES:
            for ovf in ('saturate', 'inf-nan'):
                cases.append((src, tgt, mode, ovf, None, 5, 11, 1))
        cases.append((src, tgt, 'rne', 'inf-nan', '3.5', 0, 0, 1))
    for src, tgt in (('f32', 'f64'), ('f16', 'f32'), ('f32', 'f32'), ('bf16', 'f32')):
        cases.append((src, tgt, 'rne', 'inf-nan', None, 0, 0, 1))
        cases.append((src, tgt, 'rtz', 'saturate', None, 0, 0, 1))
        cases.append((src, tgt, 'rne', 'saturate', '-0.75', 0, 0, 1))
    # decoding: every code of every narrow format into the wide formats (and e2m1 / e2m3 into
    # e4m3fn, also widening), every mode, both policies; scaled, the source is fp32
    SRW = [m for m in MODES if m != 'sr'] + ['sr']
    for src in NARROW:
        for tgt in ('f32', 'f64', 'bf16', 'f16'):
            for mode in SRW:
                for ovf in ('saturate', 'inf-nan'):
                    cases.append((src, tgt, mode, ovf, None, 9, 4, 1, 'all'))
            for sc in ('3.5', '1000000015047466219876688855040'):
                cases.append((src, tgt, 'rne', 'saturate', sc, 0, 0, 1, 'all'))
    for src in ('e2m1', 'e2m3', 'e5m2'):
        for ovf in ('saturate', 'inf-nan'):
            cases.append((src, 'e4m3fn', 'rtz', ovf, None, 0, 0, 1, 'all'))
    # threads must not change results (sr uses the global element index)
    for tgt in ('e4m3fn', 'e2m1', 'e8m0'):
        cases.append(('f32', tgt, 'sr', 'inf-nan', None, 99, 123456789012, 3))
        cases.append(('f32', tgt, 'rne', 'saturate', '3.5', 0, 0, 4))
    return cases


def scale_to_value(sc):
    if sc is None:
        return None
    if sc in ('inf', '-inf', 'nan', '-nan'):
        s = 1 if sc.startswith('-') else 0
        return ('inf', s) if 'inf' in sc else ('nan', s)
    q = Fraction(sc)
    s = 1 if q < 0 else 0
    q = abs(q)
    if q == 0:
        return ('fin', s, 0, 0)
    d = q.denominator
    assert d & (d - 1) == 0, 'scale must be dyadic (exactly representable)'
    v = ('fin', s, q.numerator, -(d.bit_length() - 1))
    # must be an fp32 value so that the string means the same however it is parsed
    assert convert(v, F32, 'rne', 'inf-nan', None) == convert(v, F32, 'rtz', 'inf-nan', None), sc
    return v


def error_case(fp8q, tmp):
    inp = os.path.join(tmp, 'err_in.bin')
    outp = os.path.join(tmp, 'err_out.bin')
    with open(inp, 'wb') as fh:
        fh.write(struct.pack('<3I', 0x3F800000, 0x7FC00001, 0x40000000))
    if os.path.exists(outp):
        os.remove(outp)
    r = run_tool(fp8q, ['convert', '--from', 'f32', '--to', 'e2m1', inp, outp])
    ok = r.returncode == 2 and not os.path.exists(outp)
    print('f32 -> e2m1 nan=error (NaN input): exit=%d (want 2) out_exists=%s (want False) %s'
          % (r.returncode, os.path.exists(outp), 'PASS' if ok else 'FAIL'))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--fp8q', required=True)
    ap.add_argument('--per-case', type=int, default=3000, help='random inputs per case (structured ones come on top)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--max-report', type=int, default=5)
    args = ap.parse_args()
    t0 = time.time()
    fp8q = os.path.abspath(args.fp8q)
    self_test(random.Random(args.seed))

    cases = build_cases()
    # group cases by input list (src, tgt, scale) so inputs are generated once
    groups = {}
    for c in cases:
        groups.setdefault((c[0], c[1], c[4], c[8] if len(c) > 8 else ''), []).append(c)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix='fp8q_check_') as tmp:
        if error_case(fp8q, tmp):
            passed += 1
        else:
            failed += 1
        gi = 0
        for (srcn, tgtn, sc, allbits), gcases in groups.items():
            gi += 1
            src, T = FORMATS[srcn], FORMATS[tgtn]
            sv = scale_to_value(sc)
            rng = random.Random('%d/%s/%s/%s' % (args.seed, srcn, tgtn, sc))
            n_rand = args.per_case if srcn != 'f64' or sc is None else args.per_case // 2
            if allbits:
                inputs = list(range(1 << (8 * src.size if not src.narrow else
                                          src.E + src.M + (0 if src.kind == 'e8m0' else 1))))
            else:
                inputs = gen_inputs(src, T, sv, n_rand, rng)
            vals = [decode(src, b) for b in inputs]
            if sv is not None:
                vals = [scale_value(v, sv) for v in vals]
            inp = os.path.join(tmp, 'in.bin')
            with open(inp, 'wb') as fh:
                fh.write(pack(src, inputs))
            for c in gcases:
                mode, ovf, seed, off, threads = c[2], c[3], c[5], c[6], c[7]
                outp = os.path.join(tmp, 'out.bin')
                if os.path.exists(outp):
                    os.remove(outp)
                cmd = ['convert', '--from', srcn, '--to', tgtn, '--round', mode, '--overflow', ovf]
                if T.kind == 'finite':
                    cmd += ['--nan', 'zero']
                if mode == 'sr':
                    cmd += ['--seed', str(seed), '--offset', str(off)]
                if sc is not None:
                    cmd += ['--scale', sc]
                if threads != 1:
                    cmd += ['--threads', str(threads)]
                cmd += [inp, outp]
                r = run_tool(fp8q, cmd)
                label = '%s -> %s%s round=%s%s overflow=%s scale=%s%s count=%d' % (
                    srcn, tgtn, ' (all codes)' if allbits else '', mode, (' seed=%d offset=%d' % (seed, off)) if mode == 'sr' else '', ovf,
                    sc if sc is not None else '-', (' threads=%d' % threads) if threads != 1 else '', len(inputs))
                if r.returncode != 0 or not os.path.exists(outp):
                    print('%s mismatches=ALL FAIL (exit %d: %s)' % (label, r.returncode,
                                                                   r.stderr.decode(errors='replace').strip()[:200]))
                    failed += 1
                    continue
                with open(outp, 'rb') as fh:
                    data = fh.read()
                got = unpack(T, data)
                bad = []
                if len(data) != len(inputs) * T.size:
                    bad.append((-1, 0, 'size %d' % len(data), 'size %d' % (len(inputs) * T.size)))
                for i, v in enumerate(vals):
                    if mode == 'sr':
                        n = off + i
                        rf = (lambda n=n: sr_word(n, seed))
                    else:
                        rf = None
                    exp = convert(v, T, mode, ovf, rf, src=F32 if sv is not None else src)
                    g = got[i] if i < len(got) else None
                    if g != exp:
                        bad.append((i, inputs[i], exp, g))
                status = 'PASS' if not bad else 'FAIL'
                print('%s mismatches=%d %s' % (label, len(bad), status))
                w = src.size * 2
                tw = T.size * 2
                for (i, b, e, g) in bad[:args.max_report]:
                    if i < 0:
                        print('    output %s, expected %s' % (e, g))
                    else:
                        print('    [%d] in=0x%0*x expected=0x%0*x got=%s' % (
                            i, w, b, tw, e, ('0x%0*x' % (tw, g)) if g is not None else 'missing'))
                if bad:
                    failed += 1
                else:
                    passed += 1
                sys.stdout.flush()
    print('runtime %.1fs' % (time.time() - t0))
    print('%d passed, %d failed' % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
