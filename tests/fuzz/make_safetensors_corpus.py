#!/usr/bin/env python3
"""Writes the seed corpus of the safetensors fuzz target (tests/fuzz/corpus/safetensors/).

Every seed is a valid file, built here by hand from the format's definition (8-byte
little-endian header length, JSON header, data section) with the standard library only, so
that both the fuzzer and the mutation test start from files that parse. Run from anywhere:
    /usr/bin/python3 tests/fuzz/make_safetensors_corpus.py
"""
import json
import pathlib
import struct

OUT = pathlib.Path(__file__).resolve().parent / "corpus" / "safetensors"
WIDTH = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
         "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}


def build(tensors, metadata=None, pad=True, json_kwargs=None, header_text=None):
    """tensors: list of (name, dtype, shape) laid out in this order from offset 0."""
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = WIDTH[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = header_text if header_text is not None else json.dumps(header, **(json_kwargs or {}))
    raw = text.encode("utf-8")
    if pad:
        raw += b" " * ((8 - (8 + len(raw)) % 8) % 8)
    data = bytes((i * 37 + 11) % 256 for i in range(offset))
    return struct.pack("<Q", len(raw)) + raw + data


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    compact = {"separators": (",", ":")}
    seeds = {
        "empty_header": build([], pad=True, json_kwargs=compact),
        "one_f32_metadata": build([("w", "F32", [2, 2])], metadata={"format": "pt"}, json_kwargs=compact),
        "every_dtype": build([(f"t_{d.lower()}", d, [3]) for d in WIDTH], json_kwargs=compact),
        "scalar_and_empty": build([("scalar", "F64", []), ("empty", "BF16", [0, 4]), ("v", "U8", [5])],
                                  json_kwargs=compact),
        # The layout Python's safetensors writes: compact JSON, metadata first, no padding here.
        "python_style_unpadded": build([("model.layers.0.weight", "BF16", [4, 2]),
                                        ("model.layers.0.weight_scale_inv", "F32", [1])],
                                       metadata={"format": "pt", "quant_method": "fp8"}, pad=False,
                                       json_kwargs=compact),
        "pretty_unicode_names": build([("caf\u00e9", "F16", [2]), ("line\nbreak", "I8", [1, 3]),
                                       ("\u00e9\u4e2d\U0001F600", "F8_E4M3", [2, 2])],
                                      metadata={"k\u00e9y": "v\u00e4lue"},
                                      json_kwargs={"indent": 1, "ensure_ascii": True}),
        "many_empty": build([("a", "U8", [0]), ("b", "F32", [1]), ("c", "I64", [2, 0]), ("d", "U16", [1]),
                             ("e", "U64", [0])], json_kwargs=compact),
    }
    for name, blob in seeds.items():
        (OUT / name).write_bytes(blob)
        print(f"{name}: {len(blob)} bytes")


if __name__ == "__main__":
    main()
