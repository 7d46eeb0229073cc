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


def refusal_seeds(m):
    """Requests each handler refuses, one per seed, on the keys that reach the check."""
    cdh, rp, user = b"\x22" * 32, {"id": "example.org", "name": "Example"}, {"id": b"\x01" * 16, "name": "a"}
    params = [{"alg": -7, "type": "public-key"}]
    mc = lambda **kw: bytes([1]) + m.cbor({**{1: cdh, 2: rp, 3: user, 4: params}, **{int(k[1:]): v for k, v in kw.items()}})
    ga = lambda **kw: bytes([2]) + m.cbor({**{1: "example.org", 2: cdh}, **{int(k[1:]): v for k, v in kw.items()}})
    desc = lambda i: {"id": i, "type": "public-key"}
    singles = [
        bytes([1]), bytes([1, 0x80]), bytes([1, 0xa1, 0x01, 0x18, 0x05]), bytes([1]) + m.cbor([1]),
        mc(k1=b"\x22" * 31), mc(k2={"name": "x"}), mc(k3={"name": "x"}), mc(k3={"id": b"\x01" * 65}),
        mc(k7={"up": False}), mc(k7={"uv": True}), mc(k7={"up": 1}), mc(k4=[5]), mc(k4=[{"alg": -999, "type": "public-key"}]),
        mc(k4=[{"alg": -7, "type": "other"}, {"alg": -8, "type": "public-key"}]), mc(k4=[{"alg": -35, "type": "public-key"}]),
        mc(k5=[desc(b"\x01" * 16)] * 9), mc(k5=[5]), mc(k5=[{"id": b"\x01"}]), mc(k5=[desc(b"\x01" * 65)]),
        mc(k10=1), mc(k10=2), mc(k10=3), mc(k6=5), mc(k6={"credProtect": 7}), mc(k8=b"\x01" * 16),
        mc(k8=b"\x01" * 16, k9=9), mc(k8=b""), ga(k2=b"\x22"), ga(k5={"rk": True}), ga(k5={"uv": True}),
        ga(k3=[desc(b"\x01" * 16)] * 9), ga(k3=[desc(b"")]), ga(k4=5), ga(k6=b"\x01" * 16, k7=2), ga(k6=b""),
        bytes([8]), bytes([0x0A]) + m.cbor({2: {}}), bytes([0x0A]) + m.cbor({1: 300, 3: 2, 4: b"\x00" * 32}),
        bytes([0x0A]) + m.cbor({1: 2}), bytes([0x0A]) + m.cbor({1: 4, 4: b"\x00" * 32}), bytes([0x0A]) + m.cbor({1: 99, 4: b""}),
        bytes([0x0D]) + m.cbor({2: {}}), bytes([0x0D]) + m.cbor({1: 300}), bytes([0x0D]) + m.cbor({1: 2, 4: b"\x00" * 16}),
        bytes([0x0D]) + m.cbor({1: 9}), bytes([0x0D]) + m.cbor({1: 3, 2: {2: [1]}}), bytes([0x0D]) + m.cbor({1: 3, 2: {3: 1}}),
        bytes([0x0D]) + m.cbor({1: 3, 2: {1: 2}}), bytes([0x0D]) + m.cbor({1: 3, 2: {1: 64}}), bytes([0x0D]) + m.cbor({1: 3, 2: {3: True}}),
        bytes([0x0D]) + m.cbor({1: 3, 2: {2: ["a"] * 9}}), bytes([0x0D]) + m.cbor({1: 1}),
        bytes([6]) + m.cbor({2: 1}), bytes([6]) + m.cbor({1: 2, 2: 99}), bytes([6]) + m.cbor({1: 2, 2: 2}),
        bytes([6]) + m.cbor({1: 2, 2: 5, 3: b"", 6: b"1234", 9: 1}), bytes([6]) + m.cbor({1: 2, 2: 3}),
        bytes([6]) + m.cbor({1: 2, 2: 6, 3: b"", 9: 3}), bytes([6]) + m.cbor({1: 2, 2: 9, 3: b"", 6: b"1234", 9: 0xff}),
        bytes([6]) + m.cbor({1: 2, 2: 4, 3: b"", 5: b"1234", 6: b"1234", 4: b"\x00" * 32}),
        bytes([0x0C]) + m.cbor({1: 2000, 3: 0}), bytes([0x0C]) + m.cbor({1: 1, 3: 5000}), bytes([0x0C]) + m.cbor({2: b"\x00" * 1100, 3: 0, 4: 1100}),
        bytes([0x0C]) + m.cbor({2: b"\x00", 3: 0}), bytes([0x0C]) + m.cbor({2: b"\x00", 3: 0, 4: 5000}), bytes([0x0C]) + m.cbor({2: b"\x00", 3: 0, 4: 5}),
        bytes([0x0C]) + m.cbor({2: b"\x00", 3: 1, 4: 20}), bytes([0x0C]) + m.cbor({2: b"\x00", 3: 7}),
        bytes([0x0C]) + m.cbor({2: b"\x00" * 17, 3: 0, 4: 17, 5: b"\x00" * 16}), bytes([0x0C]) + m.cbor({2: b"\x00" * 17, 3: 0, 4: 17}),
        bytes([0x0C]) + m.cbor({2: b"\x00" * 17, 3: 0, 4: 17, 5: b"", 6: 2}), bytes([0x0C]) + m.cbor({1: 1}),
        bytes([9]) + m.cbor({1: 2, 2: 7}), bytes([9]) + m.cbor({1: 1, 2: 1, 5: b"\x00" * 16}), bytes([9]) + m.cbor({1: 1, 2: 99, 4: 2, 5: b""}),
        bytes([0x42]), bytes([0x0B]), bytes([7]), b"", bytes([6]) + m.cbor({1: 2, 2: 5, 6: b"1234"}),
        mc(k6={"hmac-secret-mc": 5}), ga(k4={"hmac-secret": 5}), mc(k6={"credBlob": b"\x01" * 33}), mc(k3={"id": b"\x01", "name": "n" * 1100}),
    ]
    # Refusals leave the key as it was, so up to 30 share an input.
    for flags in (0x00, 0x01, 0x08, 0x10, 0x11, 0x02, 0x03, 0x04, 0x05):
        for start in range(0, len(singles), 30):
            yield prefixed([choice(flags)] + ([b"\xff"] if flags & 1 else []) + singles[start:start + 30])
    # Large-blob write sequences: continuing with the wrong offset, past the length, a bad hash.
    arr = m.cbor([]) + hashlib.sha256(m.cbor([])).digest()[:16]
    lb = lambda data, off, length=None: bytes([0x0C]) + m.cbor({2: data, 3: off, **({4: length} if length is not None else {})})
    yield prefixed([lb(arr[:5], 0, len(arr)), lb(arr[5:], 3), lb(arr[5:] + b"\x00" * 5, 5), lb(b"\x00" * 17, 0, 17)])
    yield prefixed([choice(0x08)] + [mc(k7={"rk": True}, k3={"id": bytes([i]), "name": "a"}) for i in range(4)])
    # Discoverable credentials of several RPs and users, then enumeration and getNextAssertion.
    creds = [mc(k7={"rk": True}, k2={"id": r, "name": r}, k3={"id": bytes([i]) * 8, "name": "u%d" % i, "displayName": "U"})
             for i, r in enumerate(["example.org", "example.org", "example.com", "example.net"])]
    cm = lambda sub, p=None: bytes([0x0A]) + m.cbor({1: sub, **({2: p} if p else {}), 3: 2, 4: b""})
    h = hashlib.sha256(b"example.org").digest()
    authed = [mc(k7={"rk": True}, k2={"id": r, "name": r}, k3={"id": bytes([i]) * 8, "name": "u%d" % i, "displayName": "U"}, k8=b"", k9=2)
              for i, r in enumerate(["example.org", "example.org", "example.com", "example.net"])]
    for flags in (0x01, 0x11, 0x03):
        tail = [b"\xfe", cm(1), cm(2), cm(3), cm(3), cm(3), cm(4, {1: h}), cm(5), cm(5), cm(4, {1: b"\x00" * 32}),
                cm(7, {2: desc(b""), 3: {"id": b"\x09", "name": "x"}}), cm(7, {2: desc(b"")}), cm(7, {2: desc(b""), 3: {"name": "x"}}),
                cm(6, {2: desc(b"\x01" * 16)}), cm(6, {2: {"type": "public-key"}}), cm(6, {2: desc(b"")}), cm(6, {2: desc(b"")})]
        yield prefixed([choice(flags), b"\xff"] + authed[:2] + [b"\xffexample.com", authed[2], b"\xffexample.net", authed[3]] + tail)
        yield prefixed([choice(flags), b"\xff"] + authed[:2] + [ga(k6=b"", k7=2), bytes([8]), bytes([8]), bytes([8]), bytes([8]),
                                                         b"\xffexample.com", cm(4, {1: h}), cm(2), cm(1)])
    for flags in (0x00, 0x10, 0x08):
        yield prefixed([choice(flags)] + creds + [ga(), bytes([8]), bytes([8]), ga(k5={"up": False}), bytes([8])])


def deep_seeds(m):
    """Sequences that reach past several steps: full fingerprint enrollments, alwaysUv with
    built-in UV, user names returned under UV, a forced PIN change, UV blocked, excluded
    credentials, hmac-secret with damaged inputs, cancelled requests."""
    cdh, rp = b"\x22" * 32, {"id": "example.org", "name": "Example"}
    params = [{"alg": -7, "type": "public-key"}]
    desc = lambda i: {"id": i, "type": "public-key"}
    def mc(i=1, **kw):
        return bytes([1]) + m.cbor({**{1: cdh, 2: rp, 3: {"id": bytes([i]) * 8, "name": "u%d" % i, "displayName": "U%d" % i}, 4: params},
                                    **{int(k[1:]): v for k, v in kw.items()}})
    ga = lambda **kw: bytes([2]) + m.cbor({**{1: "example.org", 2: cdh}, **{int(k[1:]): v for k, v in kw.items()}})
    bio = lambda sub, p=None: bytes([9]) + m.cbor({1: 1, 2: sub, **({3: p} if p else {}), 4: 2, 5: b""})
    cp = lambda sub, extra: bytes([6]) + m.cbor({1: 2, 2: sub, **extra})
    # Five enrollments (room for five), a sixth refused, enumerate, rename, remove.
    enroll = [bio(1)] + [bio(2, {1: b""})] * 6
    yield prefixed([choice(0x01), b"\xfe", bio(2, {1: b""}), bio(2, {}), bio(3)] + enroll + [bio(4), bio(5, {1: b"", 2: "n" * 40}),
                   bio(5, {1: b"", 2: "thumb"}), bio(4), bio(6, {}), bio(6, {1: b""}), bio(6, {1: b""}), bio(4)])
    yield prefixed([choice(0x01), b"\xfe"] + [bio(1), bio(2, {1: b""}), bio(2, {1: b""}), bio(2, {1: b""})] * 6 + [bio(4)])
    # Five fingers fill the sensor (the script's bad samples first), a sixth is refused; a
    # capture with no enrollment in progress.
    full = [bio(1)] + [bio(2, {1: b""})] * 6 + ([bio(1)] + [bio(2, {1: b""})] * 3) * 4
    yield prefixed([choice(0x01), b"\xfe", bio(2, {1: b"\x01"})] + full + [bio(1), bio(4)])
    # A token bound to example.org deleting a credential of example.com.
    yield prefixed([choice(0x01), b"\xffexample.com", bytes([1]) + m.cbor({1: cdh, 2: {"id": "example.com"}, 3: {"id": b"\x05"}, 4: params, 7: {"rk": True}, 8: b"", 9: 2}),
                    b"\xff", bytes([0x0A]) + m.cbor({1: 6, 2: {2: desc(b"")}, 3: 2, 4: b""})])
    # A largeBlobs fragment over maxFragmentLength (maxMsgSize 1200 - 64).
    yield prefixed([bytes([0x0C]) + m.cbor({2: b"\x00" * 1140, 3: 0, 4: 1140})])
    # Built-in UV (0x10): a UV token with acfg, alwaysUv on, credentials with UV, assertions.
    uvtoken = lambda perms, rp_id=None: cp(6, {3: b"", 9: perms, **({10: rp_id} if rp_id else {})})
    yield prefixed([choice(0x10), uvtoken(0x20), bytes([0x0D]) + m.cbor({1: 2, 3: 2, 4: b""}),
                    mc(1, k7={"rk": True, "uv": True}), mc(2, k7={"rk": True, "uv": True}), ga(), ga(k5={"uv": True}),
                    bytes([8]), ga(k3=[desc(b"")]), mc(3, k5=[desc(b"")]), mc(3, k5=[desc(b"")], k7={"uv": True})])
    yield prefixed([choice(0x10), mc(1, k7={"rk": True, "uv": True}), mc(2, k7={"rk": True, "uv": True}),
                    ga(k5={"uv": True}), bytes([8]), ga(k5={"uv": True}), bytes([8]), bytes([8])])
    yield prefixed([choice(0x90)] + [uvtoken(3, "example.org")] * 10)
    yield prefixed([choice(0x91)] + [uvtoken(3, "example.org")] * 10 + [cp(5, {3: b"", 6: b"1234"}), uvtoken(3, "example.org")])
    # A forced PIN change (0x11): the same PIN refused, another accepted, then a token.
    yield prefixed([choice(0x11), cp(9, {3: b"", 6: b"1234", 9: 3}), cp(4, {3: b"", 4: b"", 5: b"1234", 6: b"1234"}),
                    cp(4, {3: b"", 4: b"", 5: b"56789", 6: b"1234"}), cp(9, {3: b"", 6: b"56789", 9: 3}), cp(5, {3: b"", 6: b"56789"})])
    # Excluded credentials, credProtect 3 hidden without UV.
    for flags in (0x00, 0x20, 0x60):
        yield prefixed([choice(flags), mc(1, k6={"credProtect": 3}, k7={"rk": True}), mc(2, k5=[desc(b"")]),
                        mc(3, k6={"credProtect": 1}), mc(4, k5=[desc(b"")]), ga(), ga(k3=[desc(b"")])])
    # hmac-secret: a key agreement not on the curve, salts of a wrong length, an empty saltAuth.
    bad_key = {1: 2, 3: -25, -1: 1, -2: b"\x01" * 32, -3: b"\x02" * 32}
    for flags in (0x00, 0x04):
        yield prefixed([choice(flags), mc(1, k6={"hmac-secret": True}, k7={"rk": True}),
                        ga(k4={"hmac-secret": {1: bad_key, 2: b"\x03" * 32, 3: b"\x04" * 32, 4: 2}}),
                        ga(k4={"hmac-secret": {1: bad_key, 2: b"\x03" * 48, 3: b""}}),
                        ga(k4={"hmac-secret": {1: bad_key, 2: b"\x03" * 16, 3: b""}}),
                        ga(k4={"hmac-secret": {1: bad_key, 2: b"\x03" * 96, 3: b""}}),
                        ga(k4={"hmac-secret": {1: bad_key, 2: b"\x03" * 64, 3: b""}}),
                        mc(2, k6={"hmac-secret": True, "hmac-secret-mc": {1: bad_key, 2: b"\x03" * 48, 3: b""}})])
    # Cancelled requests: makeCredential, getAssertion, reset, selection, a finger that does not come.
    for flags in (0x00, 0x80):
        yield prefixed([choice(flags), b"\xf9" + mc(1), b"\xfa" + mc(1), b"\xfa" + bytes([0x0B]), b"\xf9" + bytes([0x0B]),
                        mc(1, k7={"rk": True}), b"\xfa" + ga(), b"\xfa" + bytes([7])])
    yield prefixed([choice(0x81), b"\xfe", bio(1), b"\xf9" + bio(2, {1: b""}), b"\xfa" + bio(2, {1: b""}), bio(2, {1: b""}),
                    b"\xf9" + bio(2, {1: b""})])


def seeds(m):
    for r in deep_seeds(m): yield "virtual-key", r
    for r in refusal_seeds(m): yield "virtual-key", r
    for r in session_seeds(m): yield "virtual-key", r
    for r in choice_seeds(m): yield "virtual-key", r
    for r in state_seeds(m): yield "virtual-key-state", r
