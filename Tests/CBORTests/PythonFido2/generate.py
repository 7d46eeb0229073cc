#!/usr/bin/env python3
"""Writes canonical-maps.json: random CBOR maps with keys of mixed major types and sizes,
encoded by python-fido2's `fido2.cbor.encode` (an independent CTAP2 canonical encoder).

Run with the project's venv: .venv/bin/python3 Tests/CBORTests/PythonFido2/generate.py
The seed is fixed, so the output is reproducible.
"""
import json
import os
import random

from fido2 import cbor

rng = random.Random(8949)


def integer():
    edge = [0, 1, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1]
    n = rng.choice(edge) if rng.random() < 0.5 else rng.randrange(0, 2**rng.choice([5, 8, 16, 32, 64]))
    return -1 - n if rng.random() < 0.5 else n


def text():
    alphabet = "abcxyzAZ09 -é水𐅑"
    return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, 5, 23, 24, 30])))


def blob():
    return bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 2, 5, 23, 24, 30])))


def key():
    return rng.choice([integer, integer, text, blob])()


def value(depth):
    choices = [integer, text, blob, lambda: rng.random() < 0.5]
    if depth < 3:
        choices += [lambda: [value(depth + 1) for _ in range(rng.randrange(4))], lambda: mapping(depth + 1)]
    return rng.choice(choices)()


def mapping(depth):
    out = {}
    for _ in range(rng.randrange(1, 9)):
        out[key()] = value(depth)
    return out


vectors = [cbor.encode(mapping(0)).hex() for _ in range(300)]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "canonical-maps.json")
with open(path, "w") as f:
    json.dump({"generator": "fido2.cbor.encode (python-fido2 2.2.1), seed 8949", "hex": vectors}, f, indent=0)
    f.write("\n")
