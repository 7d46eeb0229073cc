#!/usr/bin/env python3
"""The fuzz targets' table (parser files, seeds) for scripts/fuzz.sh and scripts/fuzz-coverage.sh.

    scripts/fuzz-targets.py table          # name<TAB>parser files, one target a line
    scripts/fuzz-targets.py seeds DIR      # writes DIR/<target>/<sha1> seed files

Seeds are extracted at fuzz time from ../shared/vectors (or Tests/Vectors), including
third-party/ and mds3/, plus a few requests built here from the CTAP 2.1 command layouts.
The target code lives in Sources/FuzzTargets; a new target adds a line to TARGETS.
"""
import base64, glob, hashlib, json, os, struct, sys

# name: the parser files whose line coverage `make fuzz-coverage` reports.
TARGETS = {
    "cbor": ["Sources/CBOR/CBORDecoder.swift"],
    "ctaphid-host": ["Sources/CTAPHID/CTAPHIDMessageAssembler.swift", "Sources/CTAPHID/CTAPHIDPacket.swift",
                     "Sources/CTAPHID/CTAPHIDInitResponse.swift", "Sources/CTAPHID/HIDReportDescriptor.swift"],
    "ctaphid-device": ["Sources/CTAPHID/CTAPHIDDeviceState.swift"],
    "iso7816": ["Sources/ISO7816/CommandAPDU.swift", "Sources/ISO7816/ResponseAPDU.swift",
                "Sources/ISO7816/ResponseAssembler.swift"],
    "getinfo": ["Sources/CTAP2/GetInfo/AuthenticatorInfo.swift"],
    "authenticator-data": ["Sources/CTAP2/AuthenticatorData.swift"],
    "cose-key": ["Sources/CTAP2/COSEKey.swift"],
    "ctap2-responses": ["Sources/CTAP2/MakeCredential/MakeCredentialResponse+CBOR.swift",
                        "Sources/CTAP2/GetAssertion/GetAssertionResponse+CBOR.swift",
                        "Sources/CTAP2/ClientPIN/ClientPINResponse.swift",
                        "Sources/CTAP2/CredentialManagement/CredentialManagementResponse.swift"],
    "attestation-object": ["Sources/CTAP2/AttestationObject.swift", "Sources/WebAuthnVerification/AttestationStatement.swift",
                           "Sources/WebAuthnVerification/Formats/TPMAttestation.swift",
                           "Sources/WebAuthnVerification/Formats/AndroidKeyAttestation.swift",
                           "Sources/WebAuthnVerification/Formats/AppleAttestation.swift"],
    "tpm": ["Sources/WebAuthnVerification/Formats/TPMStructures.swift"],
    "android-key": ["Sources/WebAuthnVerification/Formats/AndroidKeyDescription.swift"],
    "safetynet": ["Sources/WebAuthnVerification/Formats/AndroidSafetyNetAttestation.swift"],
    "client-data": ["Sources/WebAuthnVerification/ClientData.swift"],
    "mds-blob": ["Sources/WebAuthnVerification/MDS/MetadataBLOB.swift"],
    "mds-payload": ["Sources/WebAuthnVerification/MDS/MetadataBLOBPayload.swift"],
    "crl": ["Sources/WebAuthnVerification/MDS/CertificateRevocationList.swift"],
    "trust-anchors": ["Sources/WebAuthnVerification/Trust/AttestationTrustAnchors.swift"],
    "virtual-key": ["Sources/VirtualAuthenticator/VirtualKey.swift", "Sources/VirtualAuthenticator/CTAPParameters.swift"],
    "virtual-key-u2f": ["Sources/VirtualAuthenticator/VirtualKey+U2F.swift"],
}

# Vector kinds that seed each target directly.
KINDS = {
    "cbor": {"cbor", "cbor-vector", "ctap2-response-cbor", "attestationObject", "cose-key", "attStmt-cbor",
             "ctap-request", "ctap-response"},
    "ctaphid-host": {"ctaphid-frames", "transport-framing", "hid-report-descriptor"},
    "iso7816": {"iso7816-rapdu", "iso7816-capdu", "transport-framing", "u2f-register-response",
                "u2f-authenticate-response"},
    "getinfo": {"ctap2-response-cbor", "ctap-response"},
    "authenticator-data": {"authenticatorData"},
    "cose-key": {"cose-key"},
    "ctap2-responses": {"ctap2-response-cbor", "ctap-response"},
    "tpm": {"tpm-structure"},
    "client-data": {"clientDataJSON"},
    "trust-anchors": {"x509-der"},
    "virtual-key-u2f": {"iso7816-capdu"},
}


def cbor_head(major, n):
    if n < 24: return bytes([major << 5 | n])
    for info, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if n < 1 << (8 * struct.calcsize(fmt)): return bytes([major << 5 | info]) + struct.pack(fmt, n)


def cbor(v):
    """A canonical CTAP2 encoder for the few shapes the seed requests need."""
    if isinstance(v, bool): return b"\xf5" if v else b"\xf4"
    if isinstance(v, int): return cbor_head(0, v) if v >= 0 else cbor_head(1, -1 - v)
    if isinstance(v, bytes): return cbor_head(2, len(v)) + v
    if isinstance(v, str): return cbor_head(3, len(v.encode())) + v.encode()
    if isinstance(v, list): return cbor_head(4, len(v)) + b"".join(cbor(x) for x in v)
    items = sorted((cbor(k), cbor(x)) for k, x in v.items())
    items.sort(key=lambda kv: (len(kv[0]), kv[0]))
    return cbor_head(5, len(items)) + b"".join(k + x for k, x in items)


def cbor_decode(b, i=0):
    """Definite-length CBOR, enough to pull fields out of attestation objects."""
    major, info = b[i] >> 5, b[i] & 31
    i += 1
    if info < 24: n = info
    else:
        size = {24: 1, 25: 2, 26: 4, 27: 8}[info]
        n = int.from_bytes(b[i:i + size], "big"); i += size
    if major == 0: return n, i
    if major == 1: return -1 - n, i
    if major in (2, 3):
        s = b[i:i + n]
        return (s if major == 2 else s.decode()), i + n
    if major == 4:
        out = []
        for _ in range(n):
            x, i = cbor_decode(b, i); out.append(x)
        return out, i
    if major == 5:
        out = {}
        for _ in range(n):
            k, i = cbor_decode(b, i); x, i = cbor_decode(b, i); out[k if not isinstance(k, (bytes, list, dict)) else repr(k)] = x
        return out, i
    if major == 7: return {20: False, 21: True, 22: None}.get(info), i
    x, i = cbor_decode(b, i)  # tag
    return x, i


def der(tag, body): 
    n = len(body)
    head = bytes([n]) if n < 128 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag]) + head + body


def android_key_descriptions():
    """KeyDescription (Android keystore attestation schema) with the fields WebAuthn §8.4 checks."""
    def integer(v): return der(0x02, v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big"))
    def enum(v): return der(0x0A, bytes([v]))
    def explicit(tag, inner): return der(0xBF, b"") [:0] + bytes([0xBF]) + bytes([tag]) + der(0x30, inner)[1:] if False else \
        (bytes([0xBF, tag]) if tag > 30 else bytes([0xA0 | tag])) + der(0x04, inner)[1:]
    def authlist(purpose=True, allapps=False, origin=True):
        body = b""
        if purpose: body += (bytes([0xA1]) + der(0x31, integer(2))[0:0] + der(0x31, integer(2))[1:]) if False else bytes([0xA1]) + der(0x31, integer(2))[1:]
        if allapps: body += bytes([0xBF, 0x84, 0x58]) + der(0x05, b"")[1:]
        if origin: body += bytes([0xBF, 0x85, 0x3E]) + der(0x02, b"\x00")[1:]
        return der(0x30, body)
    for tee, sw in ((authlist(), der(0x30, b"")), (der(0x30, b""), authlist(origin=False)), (authlist(allapps=True), authlist())):
        yield der(0x30, integer(3) + enum(1) + integer(4) + enum(1) + der(0x04, b"\x11" * 32) + der(0x04, b"") + sw + tee)


def ctap_requests():
    """CTAP 2.1 commands (§6) a host sends: getInfo, makeCredential, getAssertion, clientPIN, ..."""
    rp = {"id": "example.org", "name": "Example"}
    user = {"id": b"\x01" * 16, "name": "alice", "displayName": "Alice"}
    params = [{"alg": -7, "type": "public-key"}, {"alg": -8, "type": "public-key"}]
    make = bytes([1]) + cbor({1: b"\x22" * 32, 2: rp, 3: user, 4: params, 7: {"rk": True}})
    make_ext = bytes([1]) + cbor({1: b"\x22" * 32, 2: rp, 3: user, 4: params,
                                  6: {"credProtect": 2, "hmac-secret": True, "credBlob": b"\x01"}})
    get = bytes([2]) + cbor({1: "example.org", 2: b"\x33" * 32, 5: {"up": True}})
    get_allow = bytes([2]) + cbor({1: "example.org", 2: b"\x33" * 32, 3: [{"id": b"\x44" * 64, "type": "public-key"}]})
    singles = [bytes([4]), make, make_ext, get, get_allow, bytes([8]), bytes([7]), bytes([0x0B]),
               bytes([6]) + cbor({1: 2, 2: 1}), bytes([6]) + cbor({1: 2, 2: 2}), bytes([6]) + cbor({1: 1, 2: 1}),
               bytes([0x0A]) + cbor({1: 1}), bytes([0x41]) + cbor({1: 2}), bytes([0x0D]) + cbor({1: 1}),
               bytes([0x0D]) + cbor({1: 3, 2: {1: 6}}), bytes([0x0C]) + cbor({1: 32, 3: 0})]
    prefixed = lambda msgs: b"".join(struct.pack(">H", len(m)) + m for m in msgs)
    yield from (prefixed([m]) for m in singles)
    yield prefixed([make, get, bytes([8])])
    yield prefixed([make, make_ext, get_allow, bytes([0x0A]) + cbor({1: 2})])


def u2f_requests():
    prefixed = lambda msgs: b"".join(struct.pack(">H", len(m)) + m for m in msgs)
    version = bytes([0, 3, 0, 0])
    register = bytes([0, 1, 3, 0, 64]) + b"\x55" * 64
    register_ext = bytes([0, 1, 3, 0, 0, 0, 64]) + b"\x55" * 64 + b"\x01\x00"
    auth = bytes([0, 2, 7, 0, 65 + 64]) + b"\x66" * 64 + bytes([64]) + b"\x77" * 64
    yield from (prefixed([m]) for m in (version, register, register_ext, auth))
    yield prefixed([register, auth])


def vector_files(root):
    for name in ("rfc8949-cbor.json", "python-fido2-vectors.json", "webauthn-spec.json"):
        yield os.path.join(root, name)
    yield from sorted(glob.glob(os.path.join(root, "third-party", "*.json")))


def seeds(root):
    """(target, bytes) pairs."""
    entries = []
    for path in vector_files(root):
        if os.path.exists(path):
            entries += [e for e in json.load(open(path)) if e.get("hex")]
    client_data = {e["id"].rsplit("/", 1)[0]: bytes.fromhex(e["hex"]) for e in entries if e["kind"] == "clientDataJSON"}
    for e in entries:
        data = bytes.fromhex(e["hex"])
        kind = "cbor" if e["kind"].startswith("cbor-vector") else e["kind"]
        for target, kinds in KINDS.items():
            if kind in kinds: yield target, data
        if kind in ("ctap2-response-cbor", "ctap-response") and data[:1] == b"\x00":
            for target in ("getinfo", "ctap2-responses"): yield target, data[1:]
        if kind == "ctaphid-frames":
            yield "ctaphid-device", b"".join(b"\x00" + data[i:i + 64] for i in range(0, len(data), 64))
        if kind == "attestationObject":
            group = e["id"].rsplit("/", 1)[0]
            hashes = [hashlib.sha256(c).digest() for g, c in client_data.items() if g.startswith(group.rsplit("/", 1)[0])]
            for h in hashes[:4] or [b"\x00" * 32]: yield "attestation-object", h + data
            try:
                obj, _ = cbor_decode(data)
                stmt, auth = obj.get("attStmt", {}), obj.get("authData")
                if auth: yield "authenticator-data", auth
                for field in ("certInfo", "pubArea"):
                    if field in stmt: yield "tpm", stmt[field]
                if "response" in stmt: yield "safetynet", stmt["response"]
                for cert in stmt.get("x5c", []): yield "trust-anchors", cert
            except Exception:
                pass
    for d in android_key_descriptions(): yield "android-key", d
    for r in ctap_requests(): yield "virtual-key", r
    for r in u2f_requests(): yield "virtual-key-u2f", r
    mds = os.path.join(root, "mds3")
    for path in sorted(glob.glob(os.path.join(mds, "**", "*"), recursive=True)):
        if not os.path.isfile(path) or os.path.getsize(path) > 4 << 20: continue
        data = open(path, "rb").read()
        if path.endswith(".jwt"):
            yield "mds-blob", data.strip()
            parts = data.strip().split(b".")
            if len(parts) == 3:
                yield "mds-payload", base64.urlsafe_b64decode(parts[1] + b"=" * (-len(parts[1]) % 4))
        elif path.endswith(".json") and "verification" not in path:
            yield "mds-payload", data
        elif ".crl" in path:
            yield "crl", base64.b64decode(data) if path.endswith(".b64") else data
        elif path.endswith((".pem", ".der")):
            yield "trust-anchors", data


def main():
    if sys.argv[1:2] == ["table"]:
        for name, files in TARGETS.items(): print(name + "\t" + " ".join(files))
        return
    if sys.argv[1:2] != ["seeds"] or len(sys.argv) != 3: sys.exit(__doc__)
    out = sys.argv[2]
    root = "../shared/vectors" if os.path.isdir("../shared/vectors") else "Tests/Vectors"
    for name in TARGETS: os.makedirs(os.path.join(out, name), exist_ok=True)
    count = 0
    for target, data in seeds(root):
        with open(os.path.join(out, target, hashlib.sha1(data).hexdigest()), "wb") as f: f.write(data)
        count += 1
    print(f"fuzz: {count} seeds from {root}")


main()
