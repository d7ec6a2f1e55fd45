#!/usr/bin/env python3
"""Safetensors <-> the raw files of mma_fp8.cu, with the standard library alone.

  st_raw.py to-raw IN.safetensors DIR      # a, b (FP8 codes), optional c -> DIR/meta.txt, a.bin, b.bin, c.bin
  st_raw.py from-raw DIR D.bin OUT.safetensors [KEY=VALUE ...]  # D.bin (M x N fp32) -> OUT, tensor d [M, N] F32
  st_raw.py set-c IN.safetensors OUT.safetensors VALUE   # IN with c [M, N] F32 = VALUE everywhere (e.g. -0.0)

The layout is that of `fp8q vectors` (docs/validation.md, section 6, "The samples"): a [M, K] and
b [K, N] as F8_E4M3 / F8_E5M2 codes (or U8 codes with __metadata__ fp8q.elem.a / fp8q.elem.b),
c [M, N] F32. A safetensors file is an 8-byte little-endian header length, a JSON header
{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the data.
"""
import json
import os
import struct
import sys

# The element formats mma.sync takes, by safetensors dtype and by fp8q's format name.
DTYPE_FORMAT = {"F8_E4M3": "e4m3fn", "F8_E5M2": "e5m2"}
FORMATS = ("e4m3fn", "e5m2")


def read_safetensors(path):
    """Returns (tensors, metadata): tensors maps name -> (dtype, shape, bytes)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        sys.exit(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        sys.exit(f"{path}: header length {n} runs past the file ({len(raw)} bytes)")
    header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    data = raw[8 + n :]
    meta = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            sys.exit(f"{path}: tensor '{name}' data_offsets {begin}, {end} outside the {len(data)} data bytes")
        tensors[name] = (t["dtype"], list(t["shape"]), data[begin:end])
    return tensors, meta


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, dtype, shape, bytes); written in order, atomically."""
    header, offset = {}, 0
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the format recommends
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, _, _, blob in tensors:
            f.write(blob)
    os.replace(tmp, path)


def operand(path, tensors, meta, name, what):
    """(format, rows, cols, codes) of operand `name`: FP8 codes, one a byte."""
    if name not in tensors:
        sys.exit(f"{path}: no tensor '{name}' ({what})")
    dtype, shape, blob = tensors[name]
    named = meta.get("fp8q.elem." + name)
    if dtype in DTYPE_FORMAT:
        fmt = DTYPE_FORMAT[dtype]
        if named is not None and named != fmt:
            sys.exit(f"{path}: tensor '{name}' has dtype {dtype} but __metadata__ fp8q.elem.{name} says {named}")
    elif dtype == "U8" and named in FORMATS:
        fmt = named
    else:
        sys.exit(f"{path}: tensor '{name}' is {dtype} (fp8q.elem.{name} = {named}); "
                 "the FP8 mma takes e4m3fn or e5m2 codes (F8_E4M3, F8_E5M2, or U8 naming one)")
    if len(shape) != 2 or shape[0] * shape[1] != len(blob):
        sys.exit(f"{path}: tensor '{name}' has shape {shape} and {len(blob)} bytes; operands are 2-D, a code a byte")
    return fmt, shape[0], shape[1], blob


def load_inputs(path):
    """dict(m, n, k, format_a, format_b, a, b, c): a M x K codes, b K x N codes, c M x N fp32 bytes or None."""
    tensors, meta = read_safetensors(path)
    fa, m, k, a = operand(path, tensors, meta, "a", "the M x K operand A")
    fb, kb, n, b = operand(path, tensors, meta, "b", "the K x N operand B")
    if kb != k:
        sys.exit(f"{path}: b has {kb} rows but a has K = {k} columns")
    c = None
    if "c" in tensors:
        dtype, shape, c = tensors["c"]
        if dtype != "F32" or shape != [m, n]:
            sys.exit(f"{path}: tensor 'c' is {dtype} {shape}, expected F32 [{m}, {n}]")
    return {"m": m, "n": n, "k": k, "format_a": fa, "format_b": fb, "a": a, "b": b, "c": c, "meta": meta}


def to_raw(src, out_dir):
    x = load_inputs(src)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "meta.txt"), "w") as f:
        f.write(f"m {x['m']}\nn {x['n']}\nk {x['k']}\nformat_a {x['format_a']}\nformat_b {x['format_b']}\n"
                f"c {0 if x['c'] is None else 1}\n")
    for name in ("a", "b", "c"):
        if x[name] is not None:
            with open(os.path.join(out_dir, name + ".bin"), "wb") as f:
                f.write(x[name])
    print(f"{src} -> {out_dir}: {x['m']} x {x['n']} of K = {x['k']}, {x['format_a']} x {x['format_b']}"
          f"{', with c' if x['c'] is not None else ''}")


def read_meta(raw_dir):
    kv = {}
    with open(os.path.join(raw_dir, "meta.txt")) as f:
        for line in f:
            if line.strip():
                key, value = line.split()
                kv[key] = value
    return kv


def from_raw(raw_dir, d_path, out, extra_meta=None):
    kv = read_meta(raw_dir)
    m, n = int(kv["m"]), int(kv["n"])
    with open(d_path, "rb") as f:
        d = f.read()
    if len(d) != 4 * m * n:
        sys.exit(f"{d_path}: {len(d)} bytes, expected {m} x {n} fp32 = {4 * m * n}")
    meta = {"fp8q.generator": "tools/device/hopper"}
    meta.update(extra_meta or {})
    write_safetensors(out, [("d", "F32", [m, n], d)], meta)
    print(f"{d_path} -> {out}: d [{m}, {n}] F32")


def set_c(src, out, value):
    """A copy of src's a and b (and metadata) with c = value everywhere: a C = -0 measured as a C."""
    tensors, meta = read_safetensors(src)
    x = load_inputs(src)
    c = struct.pack("<f", float(value)) * (x["m"] * x["n"])
    keep = [(name, t[0], t[1], t[2]) for name, t in tensors.items() if name in ("a", "b")]
    write_safetensors(out, keep + [("c", "F32", [x["m"], x["n"]], c)], dict(meta, **{"fp8q.c": value}))
    print(f"{src} -> {out}: c = {value} everywhere")


def main(argv):
    if len(argv) == 3 and argv[0] == "to-raw":
        to_raw(argv[1], argv[2])
    elif len(argv) >= 4 and argv[0] == "from-raw":
        extra = dict(kv.split("=", 1) for kv in argv[4:])  # KEY=VALUE pairs into __metadata__
        from_raw(argv[1], argv[2], argv[3], extra)
    elif len(argv) == 4 and argv[0] == "set-c":
        set_c(argv[1], argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
