"""Seeds of the `virtual-key` and `virtual-key-state` fuzz targets (imported by
scripts/fuzz-targets.py, which passes itself as `m` for its CBOR helpers and request builders).

- Real sessions: Fuzz/Sessions/*.json are the CTAP2 commands python-fido2's checks sent to a
  virtual key (scripts/python/record_ctap_session.py). What depends on the recorded key's ECDH
  or random IDs is turned into what the harness completes (FuzzHost in
  Sources/FuzzTargets/Targets/VirtualKeyTargets.swift): keyAgreement, pinUvAuthParam and
  saltAuth become empty byte strings, newPinEnc / pinHashEnc / saltEnc their plaintexts (the
  PIN, the salts), credential and template IDs empty ("the last one the key returned").
- The hand-written sequences of fuzz-targets.py behind each key choice (FC + flags).
- Real state files (Fuzz/Sessions/states) and variants with each field missing, damaged or
  added.
"""
import glob
import hashlib
import json
import os
import struct

SESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fuzz", "Sessions")
# Key choices of recorded sessions (FuzzKeyChoice flags): the preview ones ran on FIDO_2_1_PRE.
SESSION_FLAGS = {"ctap21-preview": 0x02, "bio-preview": 0x02}
# Commands whose pinUvAuthParam the harness fills: command byte -> pinUvAuthParam key.
AUTH_PARAM = {0x01: 8, 0x02: 6, 0x09: 5, 0x40: 5, 0x0A: 4, 0x41: 4, 0x0D: 4, 0x0C: 5}
WINDOW = 38  # commands per seed (the harness reads at most 40 records)


def prefixed(msgs):
    return b"".join(struct.pack(">H", len(x)) + x for x in msgs)


def choice(flags):
    return bytes([0xFC, flags])


def blank_ids(value, depth=0):
    """Credential descriptors' `id` made empty (the harness puts the last credential ID in)."""
    if depth > 4: return value
    if isinstance(value, dict):
        return {k: (b"" if k == "id" and isinstance(v, bytes) and "type" in value else blank_ids(v, depth + 1))
                for k, v in value.items()}
    if isinstance(value, list): return [blank_ids(v, depth + 1) for v in value]
    return value


def convert(m, request, plaintexts, pins):
    """A recorded request as the harness completes it, or None when it cannot be decoded."""
    code = request[0]
    if len(request) == 1: return request
    try:
        body, end = m.cbor_decode(request, 1)
    except Exception:
        return None
    if end != len(request) or not isinstance(body, dict): return None
    if code == 0x06:
        if 3 in body: body[3] = b""
        if isinstance(body.get(5), bytes):
            plain = bytes.fromhex(plaintexts.get(body[5].hex(), ""))
            body[5] = plain.rstrip(b"\x00")
            pins.add(body[5])
        if isinstance(body.get(6), bytes):
            digest = bytes.fromhex(plaintexts.get(body[6].hex(), ""))
            body[6] = next((p for p in pins if hashlib.sha256(p).digest()[:16] == digest), b"1234")
        if 4 in body: body[4] = b""
    elif code in AUTH_PARAM:
        if isinstance(body.get(AUTH_PARAM[code]), bytes): body[AUTH_PARAM[code]] = b""
        ext_key = {0x01: 6, 0x02: 4}.get(code)
        for name in ("hmac-secret", "hmac-secret-mc"):
            ext = body.get(ext_key, {}) if ext_key else {}
            if isinstance(ext, dict) and isinstance(ext.get(name), dict):
                inp = ext[name]
                if isinstance(inp.get(2), bytes):
                    inp[2] = bytes.fromhex(plaintexts.get(inp[2].hex(), inp[2].hex()))
                inp[3] = b""
        if code in (0x09, 0x40) and isinstance(body.get(3), dict) and isinstance(body[3].get(1), bytes):
            body[3][1] = b""
        body = blank_ids(body)
    try:
        return bytes([code]) + m.cbor(body)
    except Exception:
        return None


def session_seeds(m):
    for path in sorted(glob.glob(os.path.join(SESSIONS, "*.json"))):
        name = os.path.basename(path)[:-5]
        session = json.load(open(path))
        pins = {b"1234"}
        commands = [convert(m, bytes.fromhex(c["request"]), session["plaintexts"], pins) for c in session["commands"]]
        commands = [c for c in commands if c is not None]
        flags = SESSION_FLAGS.get(name, 0)
        head = [choice(flags)] if flags else []
        for start in range(0, len(commands), WINDOW):
            yield prefixed(head + commands[start:start + WINDOW])


def choice_seeds(m):
    """The hand-written sequences behind key choices: PIN, preview, enterprise attestation,
    small limits, built-in UV, the user declining / never touching / touching late, the
    wrong finger."""
    sequences = list(m.ctap21_requests()) + list(m.ctap_requests())
    def records(seed):
        out, i = [], 0
        while i + 2 <= len(seed):
            n = struct.unpack(">H", seed[i:i + 2])[0]
            out.append(seed[i + 2:i + 2 + n]); i += 2 + n
        return out
    for flags in (0x02, 0x03, 0x05, 0x04, 0x09, 0x08, 0x11, 0x10, 0x20, 0x40, 0x60, 0x81, 0x80, 0x13):
        for seed in sequences:
            rs = records(seed)
            if rs and rs[0] in (b"\xff", b"\xfe", b"\xfd"):
                if not flags & 1: continue
                rs = rs[1:] if rs[0] == b"\xfd" else rs
            yield prefixed([choice(flags)] + rs)
    # A blocked PIN: three wrong PINs per power-up, eight in all, then the right one.
    cp = lambda sub, extra: bytes([6]) + m.cbor({1: 2, 2: sub, 3: b"", **extra})
    wrong = [cp(5, {6: b"0000"})] * 3
    yield prefixed([choice(0x01)] + wrong + [b"\xfb"] + wrong + [b"\xfb"] + wrong[:2] + [cp(5, {6: b"1234"}), bytes([6]) + m.cbor({1: 2, 2: 1})])
    # Built-in UV tokens (clientPIN 6) with the right and the wrong finger.
    for flags in (0x11, 0x91, 0x01, 0x81):
        uv = bytes([6]) + m.cbor({1: 2, 2: 6, 3: b"", 9: 3, 10: "example.org"})
        yield prefixed([choice(flags), uv, bytes([6]) + m.cbor({1: 2, 2: 7}), uv, uv, uv, uv, uv])


# --- state files -------------------------------------------------------------------------


def raw_map(b):
    """The top-level CBOR map of b as [(key, encoded value)], keys decoded."""
    major, info = b[0] >> 5, b[0] & 31
    if major != 5: return None
    if info < 24: count, i = info, 1
    elif info == 24: count, i = b[1], 2
    else: return None
    return count, i


def state_items(m, data):
    head = raw_map(data)
    if head is None: return []
    count, i = head
    items = []
    for _ in range(count):
        k, i = m.cbor_decode(data, i)
        start = i
        _, i = m.cbor_decode(data, i)
        items.append((k, data[start:i]))
    return items


def encode_items(m, items):
    pairs = sorted(((m.cbor(k), v) for k, v in items), key=lambda kv: (len(kv[0]), kv[0]))
    return m.cbor_head(5, len(pairs)) + b"".join(k + v for k, v in pairs)


def state_seeds(m):
    states = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(SESSIONS, "states", "*.state")))]
    for data in states:
        yield data
        items = state_items(m, data)
        # Each field left out, and each replaced by a value of another type or size.
        for index in range(len(items)):
            yield encode_items(m, items[:index] + items[index + 1:])
            for bad in (m.cbor(b""), m.cbor("x"), m.cbor(-1), m.cbor(300), m.cbor(True), m.cbor([1]), m.cbor({})):
                yield encode_items(m, items[:index] + [(items[index][0], bad)] + items[index + 1:])
        plain = [(k, v) for k, v in items if k not in ("fingerprints", "largeBlobArray", "largeBlobKeys")]
        # Optional fields added, well formed and damaged.
        extra = {
            "fingerprints": [m.cbor([{"id": b"\x01\x02", "name": "thumb"}, {"id": b"\x03"}]), m.cbor([{"id": b""}]),
                             m.cbor([{"id": b"\x01", "name": 5}]), m.cbor([5]), m.cbor([{"id": b"\x01"}] * 101)],
            "largeBlobArray": [m.cbor(b"\x80" + hashlib.sha256(b"\x80").digest()[:16]), m.cbor(b"\x80")],
            "largeBlobKeys": [m.cbor({b"\x01" * 16: b"\x02" * 32}), m.cbor({b"\x01": b"\x02"}), m.cbor({"x": b"\x02" * 32})],
            "uvRetries": [m.cbor(3), m.cbor(26)], "forcePINChange": [m.cbor(True), m.cbor(1)],
            "pinLength": [m.cbor(4), m.cbor(64)], "minPINLength": [m.cbor(6), m.cbor(-1)],
            "minPINLengthRPIDs": [m.cbor(["example.org"]), m.cbor([1]), m.cbor(["a"] * 1025)],
            "alwaysUv": [m.cbor(True), m.cbor(0)], "epEnabled": [m.cbor(True), m.cbor("yes")],
            "pinHash": [m.cbor(b"\x01" * 16), m.cbor(b"\x01" * 15)], "pinRetries": [m.cbor(8), m.cbor(9)],
            "version": [m.cbor(2), m.cbor("1")], "magic": [m.cbor("another file")],
            "attestationKey": [m.cbor(b"\x00" * 32), m.cbor(b"\xff" * 32)], "epKey": [m.cbor(b"\xff" * 32)],
            "credentialCounters": [m.cbor({b"\x01": 5}), m.cbor({b"\x01": 1 << 33}), m.cbor({"x": 1})],
            "signatureCounter": [m.cbor(1 << 33)],
        }
        for name, values in extra.items():
            for value in values:
                yield encode_items(m, [(k, v) for k, v in plain if k != name] + [(name, value)])
        yield encode_items(m, [(k, v) for k, v in items if not k.startswith("ep")] + [("epKey", m.cbor(b"\x01" * 32))])
        # Stored credentials with each field damaged.
        creds = dict(items).get("credentials")
        if creds:
            for cred in credential_variants(m):
                yield encode_items(m, [(k, v) for k, v in items if k != "credentials"] + [("credentials", m.cbor_head(4, 1) + cred)])
    yield b""
    yield m.cbor({"magic": "securitykey virtual authenticator state"})
    yield m.cbor([1, 2])


def credential_variants(m):
    good = {"id": b"\x07" * 16, "rpId": "example.org", "userId": b"\x01", "alg": -7, "seed": b"\x09" * 32,
            "signatureCounter": 1, "sequence": 0, "rpName": "Example", "userName": "a", "userDisplayName": "A",
            "credProtect": 2, "credRandomWithUV": b"\x03" * 32, "credRandomWithoutUV": b"\x04" * 32, "credBlob": b"\x05"}
    yield m.cbor(good)
    bad = {"id": b"", "rpId": 5, "userId": "x", "alg": "ES256", "seed": b"\x09", "signatureCounter": 1 << 33,
           "sequence": -1, "rpName": 5, "userName": b"a", "userDisplayName": 1, "credProtect": 9,
           "credRandomWithUV": b"\x03", "credBlob": b"\x05" * 4097}
    for name, value in bad.items():
        yield m.cbor({**good, name: value})
        yield m.cbor({k: v for k, v in good.items() if k != name})
    yield m.cbor({**good, "alg": -8})
    yield m.cbor({**good, "alg": -999})
    yield m.cbor(5)


def seeds(m):
    for r in session_seeds(m): yield "virtual-key", r
    for r in choice_seeds(m): yield "virtual-key", r
    for r in state_seeds(m): yield "virtual-key-state", r
