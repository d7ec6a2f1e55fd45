#!/usr/bin/python3
"""Writes examples/activations.f32: 4096 float32 values shaped like a transformer activation
(mostly N(0, 1), a few large outliers), fixed seed, so the demo is reproducible.
Usage: /usr/bin/python3 examples/make_activations.py [OUT]"""
import random
import struct
import sys

rng = random.Random(20261129)
values = []
for i in range(4096):
    x = rng.gauss(0.0, 1.0)
    if i % 512 == 7:  # outlier channels, as in real activations
        x *= 12.0
    values.append(x)
out = sys.argv[1] if len(sys.argv) > 1 else "examples/activations.f32"
with open(out, "wb") as f:
    f.write(struct.pack("<%df" % len(values), *values))
