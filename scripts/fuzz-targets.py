#!/usr/bin/env python3
"""The fuzz targets' table (parser files, seeds) for scripts/fuzz.sh and scripts/fuzz-coverage.sh.

    scripts/fuzz-targets.py table          # name<TAB>parser files, one target a line
    scripts/fuzz-targets.py seeds DIR      # writes DIR/<target>/<sha1> seed files

Seeds are extracted at fuzz time from ../shared/vectors (or Tests/Vectors), including
third-party/ and mds3/, plus a few requests built here from the CTAP 2.1 command layouts.
The target code lives in Sources/FuzzTargets; a new target adds a line to TARGETS.
"""
import base64, glob, hashlib, json, os, struct, subprocess, sys

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
    # The command handlers a host reaches. State files are the virtual-key-state target's; the
    # controls (VirtualKey+Controls.swift) and the sensor's configuration (FingerprintSensor.swift)
    # read nothing from a host (Docs/Fuzzing.md).
    "virtual-key": ["Sources/VirtualAuthenticator/VirtualKey.swift", "Sources/VirtualAuthenticator/VirtualKey+CommandHandlers.swift",
                    "Sources/VirtualAuthenticator/CTAPParameters.swift",
                    "Sources/VirtualAuthenticator/Commands/MakeCredential/VirtualKey+MakeCredential.swift",
                    "Sources/VirtualAuthenticator/Commands/GetAssertion/VirtualKey+GetAssertion.swift",
                    "Sources/VirtualAuthenticator/Commands/ClientPIN/VirtualKey+ClientPIN.swift",
                    "Sources/VirtualAuthenticator/Commands/CredentialManagement/VirtualKey+CredentialManagement.swift",
                    "Sources/VirtualAuthenticator/Commands/Config/VirtualKey+AuthenticatorConfig.swift",
                    "Sources/VirtualAuthenticator/Commands/BioEnrollment/VirtualKey+BioEnrollment.swift",
                    "Sources/VirtualAuthenticator/Commands/LargeBlobs/VirtualKey+LargeBlobs.swift",
                    "Sources/VirtualAuthenticator/Commands/Extensions/VirtualKey+Extensions.swift",
                    "Sources/VirtualAuthenticator/Commands/GetInfo/VirtualKey+CTAP22.swift"],
    "virtual-key-u2f": ["Sources/VirtualAuthenticator/Commands/CTAP1/VirtualKey+U2F.swift"],
    "virtual-key-state": ["Sources/VirtualAuthenticator/State/VirtualKeyState.swift",
                          "Sources/VirtualAuthenticator/State/VirtualKeyState+Features.swift",
                          "Sources/VirtualAuthenticator/State/VirtualKey+StateFile.swift"],
    "bio-enrollment": ["Sources/CTAP2/BioEnrollment/BioEnrollmentResponse.swift"],
    "large-blob": ["Sources/CTAP2/LargeBlobs/LargeBlobArray.swift", "Sources/CTAP2/LargeBlobs/LargeBlobEntry.swift",
                   "Sources/CTAP2/LargeBlobs/RawDeflate.swift"],
    "u2f-responses": ["Sources/CTAP2/CTAP1/U2FRegistrationResponse.swift", "Sources/CTAP2/CTAP1/U2FResponse+WebAuthn.swift",
                      "Sources/CTAP2/CTAP1/U2FStatusWord.swift"],
    "extensions": ["Sources/CTAP2/Extensions/ExtensionOutputs.swift", "Sources/CTAP2/Extensions/HMACSecret.swift"],
    "webauthn-json": ["Sources/SecurityKeys/WebAuthnJSON/JSONNode.swift", "Sources/SecurityKeys/WebAuthnJSON/JSONMembers.swift",
                      "Sources/SecurityKeys/WebAuthnJSON/PublicKeyCredentialCreationOptionsJSON.swift",
                      "Sources/SecurityKeys/WebAuthnJSON/PublicKeyCredentialRequestOptionsJSON.swift",
                      "Sources/SecurityKeys/WebAuthnJSON/WebAuthnExtensionInputsJSON.swift"],
    "base64": ["Sources/_SecurityKeyInternals/Base64.swift"],
    "ctaphid-capture": ["Sources/CTAPHID/CTAPHIDCapture.swift"],
    "structure-decoder": ["Sources/SecurityKeys/StructureDecoding/StructureDecoder.swift",
                          "Sources/SecurityKeys/StructureDecoding/StructureDecoder+CTAPHID.swift",
                          "Sources/SecurityKeys/StructureDecoding/WebAuthnResponseDocument.swift"],
    "daemon-responses": ["Sources/SecurityKeyDaemonClient/SecurityKeyDaemonClient+Responses.swift"],
    "credential-json": ["Sources/SecurityKeys/WebAuthnJSON/PublicKeyCredentialJSON.swift"],
    # pam_securitykey.so's inputs: a user's ~/.config/Yubico/u2f_keys (the user writes it, root
    # reads it), an OpenSSH key file (sshformat) and the PAM line's arguments.
    "pam-authfile": ["Sources/PAMSecurityKey/AuthorizationFile.swift", "Sources/PAMSecurityKey/PAMCredential.swift"],
    "pam-sshkey": ["Sources/PAMSecurityKey/SSHKeyFile.swift"],
    "pam-options": ["Sources/PAMSecurityKey/PAMModuleOptions.swift"],
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
    "u2f-responses": {"u2f-register-response", "u2f-authenticate-response"},
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


def android_key_descriptions(challenge=b"\x11" * 32):
    """KeyDescription (Android keystore attestation schema) with the fields WebAuthn §8.4 checks."""
    def integer(v): return der(0x02, v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big"))
    def enum(v): return der(0x0A, bytes([v]))
    def explicit(tag, inner):
        """[tag] EXPLICIT: a constructed context-specific TLV around the inner TLV."""
        if tag < 31: return der(0xA0 | tag, inner)
        digits = []
        while True:
            digits.insert(0, tag & 0x7F); tag >>= 7
            if not tag: break
        head = bytes([0xBF]) + bytes(d | 0x80 for d in digits[:-1]) + bytes(digits[-1:])
        return head + der(0x00, inner)[1:]
    def authlist(purpose=True, allapps=False, origin=True, extra=b"", purposes=(2, 3), origin_value=0):
        body = b""
        if purpose: body += explicit(1, der(0x31, b"".join(integer(p) for p in purposes)))
        if allapps: body += explicit(600, der(0x05, b""))
        if origin: body += explicit(702, integer(origin_value))
        return der(0x30, body + extra)
    head = integer(3) + enum(1) + integer(4) + enum(1) + der(0x04, challenge) + der(0x04, b"")
    # Keys not generated in the keystore, or not for signing (after the checks above pass).
    for sw, tee in ((der(0x30, b""), authlist(origin_value=1)), (authlist(purposes=(3,)), der(0x30, b""))):
        yield der(0x30, head + sw + tee)
    for sw, tee in ((der(0x30, b""), authlist()), (authlist(origin=False), der(0x30, b"")),
                    (authlist(), authlist(allapps=True)), (authlist(extra=explicit(5, integer(1))), authlist()),
                    (der(0x30, explicit(1, integer(2))), authlist()), (der(0x30, bytes([0xA1, 0x00])), authlist()),
                    (der(0x31, b""), authlist()), (authlist(), der(0x30, explicit(702, der(0x04, b"")))) ):
        yield der(0x30, head + sw + tee)
    yield der(0x30, integer(3) + enum(1))
    yield der(0x30, integer(3) + enum(1) + integer(4) + enum(1) + der(0x02, b"\x01") + der(0x04, b"") + der(0x30, b"") + der(0x30, b""))
    yield der(0x31, b"")
    yield der(0x30, der(0x02, b"\x01" * 5) + head[3:] + der(0x30, b"") + der(0x30, b""))


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
    version_ext_le = bytes([0, 3, 0, 0, 0, 0, 0])  # case 2 extended: Le only
    yield from (prefixed([m]) for m in (version, register, register_ext, auth, version_ext_le))
    yield prefixed([register, auth])
    # Authenticate with the key handle the harness fills in (an empty one, short form).
    filled = lambda p1: bytes([0, 2, p1, 0, 65]) + b"\x66" * 32 + b"\x55" * 32 + b"\x00"
    yield prefixed([register, filled(3), filled(7), filled(8), filled(9), filled(3), bytes([0, 2, 3, 0, 65]) + b"\x66" * 32 + b"\x00" * 32 + b"\x00"])
    yield prefixed([register, register, filled(3), bytes([0x80, 3, 0, 0]), bytes([0, 0x40, 0, 0]), bytes([0, 1, 0, 0, 1, 0])])


def cbor_raw_map(b):
    """The top-level map of CBOR bytes as {key: encoded value bytes}."""
    major, info = b[0] >> 5, b[0] & 31
    if major != 5 or info >= 24: return {}
    i, out = 1, {}
    for _ in range(info):
        k, i = cbor_decode(b, i)
        start = i
        _, i = cbor_decode(b, i)
        out[k] = b[start:i]
    return out


def raw_map(items):
    """A canonical map of already-encoded values: {int key: encoded bytes}."""
    return cbor_head(5, len(items)) + b"".join(cbor(k) + v for k, v in sorted(items.items()))


def credential_key(auth):
    """The COSE key of authData with attested credential data, as encoded."""
    if len(auth) < 55 or not auth[32] & 0x40: return None
    n = int.from_bytes(auth[53:55], "big")
    start = 55 + n
    try:
        _, end = cbor_decode(auth, start)
    except Exception:
        return None
    return auth[start:end]


def cose_keys(keys):
    """Variants of real keys and keys built here that reach each branch of COSEKey.publicKey()."""
    yield from keys
    xy = bytes(range(1, 33))
    for crv, size in ((1, 32), (2, 48), (3, 66), (4, 32), (9, 32)):
        yield cbor({1: 2, 3: -7, -1: crv, -2: xy[:size] if size <= 32 else xy + xy[:size - 32], -3: xy})
    for crv in (6, 4, 7):
        yield cbor({1: 1, 3: -8, -1: crv, -2: xy})
    # The generators of P-384 and P-521 (SEC 2 §2.5.1, §2.6.1): points on their curves.
    p384 = bytes.fromhex("aa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7"
                         "3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5f")
    p521 = bytes.fromhex("00c6858e06b70404e9cd9e3ecb662395b4429c648139053fb521f828af606b4d3dbaa14b5e77efe75928fe1dc127a2ffa8de3348b3c1856a429bf97e7e31c2e5bd66"
                         "011839296a789a3bc0045c8a5fb42c7d1bd998f54449579b446817afbd17273e662c97ee72995ef42640c550b9013fad0761353c7086a272c24088be94769fd16650")
    yield cbor({1: 2, 3: -35, -1: 2, -2: p384[:48], -3: p384[48:]})
    yield cbor({1: 2, 3: -36, -1: 3, -2: p521[:66], -3: p521[66:]})
    yield cbor({1: 3, 3: -257, -1: b"\xc3" * 256, -2: b"\x01\x00\x01"})
    yield cbor({1: 3, 3: -257, -1: "n", -2: b"\x01\x00\x01"})
    yield cbor({1: 4, -1: b"\x00" * 32})
    yield cbor({1: 2, -1: 1, -2: xy})
    yield cbor({1: 2, -1: 1, -2: "x", -3: xy})
    yield cbor({1: 2, -2: xy, -3: xy})
    yield cbor({1: 1, -2: xy})
    yield cbor({1: 2, 3: "ES256", -1: 1})
    yield cbor({3: -7})
    yield cbor({1: -2})


def ctap2_responses(attestation_objects, auth_datas, keys):
    """Response bodies of makeCredential, getAssertion, clientPIN and credentialManagement."""
    key = keys[0] if keys else cbor({1: 2, 3: -25, -1: 1, -2: b"\x01" * 32, -3: b"\x02" * 32})
    for obj in attestation_objects[:12]:
        raw = cbor_raw_map(obj)
        if {"fmt", "authData", "attStmt"} <= set(raw):
            yield raw_map({1: raw["fmt"], 2: raw["authData"], 3: raw["attStmt"]})
            yield raw_map({1: raw["fmt"], 2: raw["authData"], 3: raw["attStmt"], 4: cbor(True), 5: cbor(b"\x0b" * 32),
                           6: cbor({"hmac-secret-mc": b"\x01" * 32})})
    cred = {"id": b"\x44" * 16, "type": "public-key"}
    user = {"id": b"\x01" * 16, "name": "alice", "displayName": "Alice"}
    for auth in auth_datas[:6]:
        yield raw_map({1: cbor(cred), 2: cbor(auth), 3: cbor(b"\x30\x06\x02\x01\x01\x02\x01\x01")})
        yield raw_map({1: cbor(cred), 2: cbor(auth), 3: cbor(b"\x30\x00"), 4: cbor(user), 5: cbor(2), 6: cbor(True),
                       7: cbor(b"\x0b" * 32), 8: cbor({"x": 1})})
    yield raw_map({1: key, 2: cbor(b"\x10" * 48), 3: cbor(8), 4: cbor(True), 5: cbor(3)})
    yield raw_map({1: key})
    yield cbor({2: b"\x10" * 32})
    yield cbor({3: 8, 4: False})
    yield cbor({5: 2})
    yield cbor({1: 3, 2: 22})
    yield cbor({3: {"id": "example.org", "name": "Example"}, 4: b"\x11" * 32, 5: 2})
    yield raw_map({6: cbor(user), 7: cbor(cred), 8: key, 9: cbor(3), 10: cbor(2), 11: cbor(b"\x0b" * 32), 12: cbor(True)})
    yield cbor({1: "none", 2: b"\x00" * 37, 3: {}})


def bio_responses():
    yield b""
    yield cbor({1: 1})
    yield cbor({1: 1, 2: 1, 3: 4, 8: 32})
    yield cbor({1: 1, 2: 2, 3: 300, 8: 32})
    yield cbor({4: b"\x01\x02", 5: 0, 6: 3})
    for status in list(range(0, 16)) + [0x20, 0xFF]:
        yield cbor({5: status, 6: 2})
    yield cbor({5: 0, 6: 256})
    yield cbor({4: b"", 5: 0, 6: 3})
    yield cbor({4: b"\x01" * 256})
    yield cbor({7: [{1: b"\x01\x02", 2: "thumb"}, {1: b"\x03"}]})
    yield cbor({7: []})
    yield cbor({7: [{2: "no id"}]})
    yield cbor({7: [5]})
    yield cbor({7: [{1: b"\x01", 2: "x" * 1100}]})
    yield cbor({7: [{1: b"\x01"}] * 257})
    yield cbor({1: "fingerprint"})
    yield cbor({7: {1: b"\x01"}})


def large_blob_seeds():
    import zlib
    def deflate(data):
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()
    def entry(data, size=None, stream=None):
        stream = deflate(data) if stream is None else stream
        return {1: stream + b"\x00" * 16, 2: b"\x4e" * 12, 3: len(data) if size is None else size}
    def serialized(array):
        body = cbor(array)
        return body + hashlib.sha256(body).digest()[:16]
    arrays = [
        [],
        [entry(b"hello large blob")],
        [entry(b"A" * 3000), {1: b"\x00" * 20, 2: b"\x01" * 12, 3: 4}, "not an entry", 7],
        [entry(b"x" * 100, size=50)],
        [entry(b"x" * 100, size=200)],
        [entry(b"", size=0)],
        [entry(b"\x00" * (1 << 20), size=64)],
        [entry(b"\x00" * (5 << 20))],
        [entry(b"abc", stream=b"\xff\xff\xff")],
        [entry(b"abc", stream=deflate(b"abc") + b"trailing")],
        [entry(b"abc", stream=deflate(b"abc")[:-2])],
        [{1: b"\x00" * 15, 2: b"\x01" * 12, 3: 1}, {1: b"\x00" * 16, 2: b"\x01" * 11, 3: 1}, {1: b"\x00" * 16, 2: b"\x01" * 12}],
    ]
    for array in arrays:
        yield serialized(array)
        yield cbor(array)
    yield bytes.fromhex("8076be8b528d0075f7aae98d6fa57a6d3c")
    yield b"\x80" + b"\x00" * 16
    yield b"\x80"
    yield serialized({1: 2})[:-1]
    yield cbor({1: serialized([entry(b"blob")])})
    yield cbor({1: "text"})


def u2f_response_seeds():
    for sw in (b"\x90\x00", b"\x69\x85", b"\x6a\x80", b"\x6d\x00", b"\x6e\x00", b"\x67\x00", b"\x6f\x00"):
        yield sw
        yield b"\x01\x00\x00\x00\x01\x30\x06\x02\x01\x01\x02\x01\x01" + sw
    cert = b"\x30\x81\x80" + b"\x00" * 128
    yield b"\x05\x04" + b"\x11" * 64 + b"\x04" + b"\x22" * 4 + cert + b"\x30\x02\x02\x00" + b"\x90\x00"
    yield b"\x05\x04" + b"\x11" * 64 + b"\x00"
    yield b"\x05\x03" + b"\x11" * 64 + b"\x01\x22"
    yield b"\x05\x04" + b"\x11" * 64 + b"\x01\x22" + b"\x30\x82\x00\x10" + b"\x00" * 16
    yield b"\x05\x04" + b"\x11" * 64 + b"\x01\x22" + b"\x30\x84\x00\x00\x00\x01\x00"
    yield b"\x05\x04" + b"\x11" * 64 + b"\x01\x22" + b"\x31\x00"
    yield b"\x05\x04" + b"\x11" * 64 + b"\x01\x22" + b"\x30\x83\x01\x00\x00" + b"\x00" * 10
    yield b"\x01\x00\x00\x00\x01\x30\x06\x02\x01\x01\x02\x01\x01\xff"


def extension_seeds():
    yield cbor({"credProtect": 2, "hmac-secret": True, "credBlob": True, "minPinLength": 6, "thirdPartyPayment": False})
    yield cbor({"hmac-secret": b"\x01" * 32, "credBlob": b"\x02" * 8, "hmac-secret-mc": b"\x03" * 48, "other": 1, 1: 2})
    for name in ("credProtect", "credBlob", "hmac-secret", "hmac-secret-mc", "minPinLength", "thirdPartyPayment"):
        yield cbor({name: "wrong"})
    yield cbor({"credProtect": 9})
    for n in (32, 48, 64, 80, 16):
        yield bytes(range(n))
    # The first two bytes give the salts' lengths (the second's top bit: a second salt).
    yield bytes([32, 0]) + bytes(range(32))
    yield bytes([32, 0x80 | 32]) + bytes(range(64))
    yield bytes([32, 0x80 | 16]) + bytes(range(64))


def hid_init(channel, command, payload, total=None):
    """A CTAPHID initialization report (64 bytes) of a message of `total` bytes."""
    total = len(payload) if total is None else total
    head = struct.pack(">IBH", channel, 0x80 | command, total) + payload[:57]
    return head + b"\x00" * (64 - len(head))


def hid_cont(channel, seq, payload):
    """A CTAPHID continuation report (64 bytes)."""
    head = struct.pack(">IB", channel, seq) + payload[:59]
    return head + b"\x00" * (64 - len(head))


def hid_message(channel, command, payload):
    """The reports of one CTAPHID message."""
    out = [hid_init(channel, command, payload)]
    rest, seq = payload[57:], 0
    while rest:
        out.append(hid_cont(channel, seq, rest)); rest, seq = rest[59:], seq + 1
    return out


def ctaphid_device_seeds():
    """Report sequences (one time byte, then a 64-byte report) for CTAPHIDDeviceState."""
    init, cont, message = hid_init, hid_cont, hid_message
    nonce = b"\x01\x02\x03\x04\x05\x06\x07\x08"
    B = 0xFFFFFFFF
    hello = [init(B, 0x06, nonce)]
    seqs = [
        hello + message(1, 0x01, bytes(range(100))),
        hello + message(1, 0x10, b"\x04") + message(1, 0x10, b"\x04"),
        hello + hello + message(1, 0x10, b"\x04") + message(2, 0x10, b"\x04"),
        hello + message(1, 0x03, b"\x00\x03\x00\x00\x00") + message(1, 0x08, b"") + message(1, 0x08, b"\x01"),
        hello + message(1, 0x04, b"\x05") + hello + message(2, 0x01, b"x") + message(1, 0x04, b"\x00"),
        hello + message(1, 0x04, b"\x0b") + message(1, 0x04, b""),
        hello + message(1, 0x11, b"") + message(1, 0x3F, b"") + message(7, 0x01, b"") + message(0, 0x01, b""),
        hello + [init(1, 0x01, b"x" * 57, total=200)] + [init(1, 0x01, b"")] + [cont(1, 5, b"")],
        hello + [init(1, 0x01, b"x" * 57, total=200)] + hello + [init(2, 0x01, b"")] + [init(1, 0x06, nonce)],
        hello + [init(1, 0x01, b"", total=8000)] + [init(B, 0x06, b"\x01")] + [init(9, 0x06, nonce)],
        hello + message(1, 0x10, b"\x04") + [init(1, 0x11, b"")] + [init(1, 0x06, nonce)],
        hello + [init(1, 0x01, b"x" * 57, total=100)] + [init(1, 0x11, b"")] + [cont(2, 0, b"")],
    ]
    for seq in seqs:
        yield b"".join(b"\x00" + r for r in seq)
    # INIT on a channel whose request is in process (a resync that aborts it).
    yield b"".join(b"\x00" + r for r in hello + message(1, 0x01, b"p") + message(1, 0x10, b"\x04") + [init(1, 0x06, nonce)])
    # The capability bits of the first byte: no wink, no CBOR (U2F only), NMSG (CTAP2 only).
    for flags in (0x80, 0x40, 0x20, 0xE0):
        steps = hello + message(1, 0x08, b"") + message(1, 0x10, b"\x04") + message(1, 0x03, b"\x00")
        yield b"".join(bytes([flags if i == 0 else 0]) + r for i, r in enumerate(steps))
    # The same with a message timeout between the two halves of a message.
    yield b"".join(b"\x00" + r for r in hello + [init(1, 0x01, b"x" * 57, total=100)]) + b"\xff" + cont(1, 0, b"y" * 43)


def trust_anchor_seeds(ders):
    def pem(kind, der):
        b = base64.b64encode(der)
        return b"-----BEGIN " + kind + b"-----\n" + b"\n".join(b[i:i + 64] for i in range(0, len(b), 64)) + b"\n-----END " + kind + b"-----\n"
    for der in ders[:4]:
        yield pem(b"CERTIFICATE", der)
    if len(ders) >= 2:
        yield pem(b"CERTIFICATE", ders[0]) + pem(b"PRIVATE KEY", b"\x30\x00") + pem(b"CERTIFICATE", ders[1])
    yield pem(b"PRIVATE KEY", b"\x30\x03\x02\x01\x00")
    yield pem(b"CERTIFICATE", b"\x30\x03\x02\x01\x00")
    yield b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n"
    yield b"\x30\x03\x02\x01\x00"


fuzz_pin = b"1234"  # the PIN of the fuzzed key's PIN flavour (FuzzKeyFlavour.pin)


def ctap21_requests():
    """Sequences for the CTAP 2.1 key: bio enrollment, largeBlobs, extensions, and (after the
    FF record) the commands the harness authenticates, with empty pinUvAuthParams, template IDs
    and credential IDs for it to fill in."""
    prefixed = lambda msgs: b"".join(struct.pack(">H", len(m)) + m for m in msgs)
    rp = {"id": "example.org", "name": "Example"}
    user = {"id": b"\x01" * 16, "name": "alice", "displayName": "Alice"}
    params = [{"alg": -7, "type": "public-key"}]
    cdh = b"\x22" * 32
    key_agreement = {1: 2, 3: -25, -1: 1, -2: b"\x01" * 32, -3: b"\x02" * 32}
    hmac_input = {1: key_agreement, 2: b"\x03" * 32, 3: b"\x04" * 16, 4: 2}
    exts = {"credProtect": 3, "hmac-secret": True, "credBlob": b"\x05" * 16, "largeBlobKey": True,
            "minPinLength": True, "hmac-secret-mc": hmac_input, "credProps": True}
    def make(extra=None, **kw):
        m = {1: cdh, 2: rp, 3: user, 4: params, 6: exts, 7: {"rk": True}}
        m.update(extra or {})
        return bytes([1]) + cbor(m)
    def get(extra=None):
        m = {1: "example.org", 2: cdh, 4: {"credBlob": True, "largeBlobKey": True, "hmac-secret": hmac_input}}
        m.update(extra or {})
        return bytes([2]) + cbor(m)
    array = cbor([]) + hashlib.sha256(cbor([])).digest()[:16]
    blob = cbor([{1: b"\x00" * 20, 2: b"\x01" * 12, 3: 4}])
    blob += hashlib.sha256(blob).digest()[:16]
    bio = lambda sub, p=None, auth=False: bytes([9]) + cbor({**{1: 1, 2: sub}, **({3: p} if p else {}), **({5: b"", 4: 2} if auth else {})})
    lb_get = bytes([0x0C]) + cbor({1: 64, 3: 0})
    lb_set = lambda data, auth=False, offset=0, length=None: bytes([0x0C]) + cbor(
        {**{2: data, 3: offset}, **({4: len(data) if length is None else length} if offset == 0 else {}), **({5: b"", 6: 2} if auth else {})})
    # Inputs the harness completes (empty saltAuth: saltEnc holds the plain salts).
    hmac_fill = {1: key_agreement, 2: b"\x07" * 32, 3: b""}
    hmac_fill2 = {1: key_agreement, 2: b"\x07" * 64, 3: b""}
    fill_exts = {"hmac-secret": True, "hmac-secret-mc": hmac_fill, "credProtect": 2}
    plain = [
        [make({6: fill_exts}), get({4: {"hmac-secret": hmac_fill}}), get({4: {"hmac-secret": hmac_fill2}, 5: {"up": False}})],
        [make({6: fill_exts, 7: {"rk": False}}), get({3: [{"id": b"", "type": "public-key"}], 4: {"hmac-secret": hmac_fill2}})],
        [bytes([9]) + cbor({6: True}), bio(7), bio(1), bio(3), bio(4)],
        [lb_get, lb_set(array), lb_get, lb_set(blob), lb_set(b"\x80", length=40), lb_set(b"\x00" * 20, offset=1),
         bytes([0x0C]) + cbor({1: 10, 2: b"x", 3: 0}), bytes([0x0C]) + cbor({3: 0})],
        [make(), get(), get({3: [{"id": b"", "type": "public-key"}]}), bytes([8])],
        [make({7: {"rk": False}}), get({3: [{"id": b"", "type": "public-key"}], 5: {"up": False}})],
        [make({6: {"credProtect": 1, "hmac-secret": False, "credBlob": b"\x05" * 64, "largeBlobKey": False}})],
        [make({6: {"credProtect": "x", "hmac-secret": 1, "credBlob": 5, "largeBlobKey": 1, "minPinLength": 1}})],
        [make({6: {"hmac-secret-mc": {1: key_agreement}}}), get({4: {"hmac-secret": {1: key_agreement, 2: b"\x03" * 64}}})],
    ]
    authed = [
        [make({8: b"", 9: 2}), get({6: b"", 7: 2}), get({3: [{"id": b"", "type": "public-key"}], 6: b"", 7: 2})],
        [bio(1, {3: 1000}, auth=True), bio(2, {1: b"", 3: 1000}, auth=True), bio(2, {1: b""}, auth=True),
         bio(2, {1: b""}, auth=True), bio(2, {1: b""}, auth=True), bio(4, auth=True),
         bio(5, {1: b"", 2: "left thumb"}, auth=True), bio(4, auth=True), bio(6, {1: b""}, auth=True), bio(4, auth=True)],
        [bio(1, auth=True), bio(3), bio(2, {1: b"\x09\x09"}, auth=True), bio(5, {1: b"\x09"}, auth=True),
         bio(6, {1: b"\x09"}, auth=True), bio(5, {2: "x"}, auth=True), bio(8, auth=True)],
        [lb_set(blob, auth=True), lb_get, lb_set(array[:10], auth=True, length=len(array)),
         lb_set(array[10:], auth=True, offset=10), lb_get],
        [make({8: b"", 9: 2}), b"\xfe", bytes([0x0A]) + cbor({1: 1, 3: 2, 4: b""}), bytes([0x0A]) + cbor({1: 2, 3: 2, 4: b""}),
         bytes([0x0A]) + cbor({1: 3}),
         bytes([0x0A]) + cbor({1: 4, 2: {1: hashlib.sha256(b"example.org").digest()}, 3: 2, 4: b""}),
         bytes([0x0A]) + cbor({1: 5}),
         bytes([0x0A]) + cbor({1: 7, 2: {2: {"id": b"", "type": "public-key"}, 3: {"id": b"\x01" * 16, "name": "bob"}}, 3: 2, 4: b""}),
         bytes([0x0A]) + cbor({1: 6, 2: {2: {"id": b"", "type": "public-key"}}, 3: 2, 4: b""})],
        [bytes([0x0D]) + cbor({1: 2, 3: 2, 4: b""}), bytes([0x0D]) + cbor({1: 3, 2: {1: 6, 2: ["example.org"], 3: True}, 3: 2, 4: b""}),
         bytes([0x0D]) + cbor({1: 1, 3: 2, 4: b""}), make({8: b"", 9: 2, 10: 2}), bytes([0x0D]) + cbor({1: 9, 3: 2, 4: b""})],
        [bytes([6]) + cbor({1: 2, 2: 1}), bytes([6]) + cbor({1: 2, 2: 7}), bytes([4])],
    ]
    # clientPIN with an empty keyAgreement: the harness agrees a secret, encrypts the plain
    # PINs given in newPinEnc / pinHashEnc and fills an empty pinUvAuthParam (setPIN, changePIN).
    def cp(sub, proto=2, new=None, current=None, param=None, **extra):
        m = {1: proto, 2: sub}
        if new is not None or current is not None or sub in (5, 6, 9): m[3] = b""
        if new is not None: m[5] = new
        if current is not None: m[6] = current
        if param is not None: m[4] = param
        m.update({ {"permissions": 9, "rp": 10}[k]: v for k, v in extra.items() })
        return bytes([6]) + cbor(m)
    for proto in (1, 2):
        plain.append([cp(3, proto, new=b"5678", param=b""), cp(1, proto), cp(3, proto, new=b"0000", param=b""),
                      cp(5, proto, current=b"5678"), cp(9, proto, current=b"5678", permissions=3, rp="example.org"),
                      cp(4, proto, new=b"123456", current=b"5678", param=b""), cp(5, proto, current=b"123456"),
                      cp(9, proto, current=b"123456", permissions=0x20), cp(9, proto, current=b"123456", permissions=0)])
        plain.append([cp(3, proto, new=b"12", param=b""), cp(3, proto, new=b"5" * 64, param=b""),
                      cp(3, proto, new=b"5678", param=b"\x00" * 16), cp(3, proto, new=b"5678"), cp(3, proto, new=b"\xff\xfe", param=b"")])
        pinned = [cp(5, proto, current=b"0000") for _ in range(3)] + [cp(1, proto), cp(5, proto, current=fuzz_pin)]
        yield prefixed([b"\xfd"] + pinned)
        yield prefixed([b"\xfd", cp(4, proto, new=b"87654321", current=fuzz_pin, param=b""), cp(5, proto, current=b"87654321"),
                        cp(4, proto, new=b"1", current=b"87654321", param=b""), cp(4, proto, new=b"99999", current=b"bad", param=b""),
                        cp(9, proto, current=b"87654321", permissions=1), cp(9, proto, current=b"87654321", permissions=2, rp="example.org"),
                        cp(6, proto, permissions=1, rp="example.org"), cp(7, proto)])
    for seq in plain:
        yield prefixed(seq)
    for seq in authed:
        yield prefixed([b"\xff"] + seq)
    # The unbound token (FE) for what needs no RP ID.
    for seq in authed[1:4] + authed[5:]:
        yield prefixed([b"\xfe"] + seq)


def mds_payload_seeds():
    """Payloads whose status reports name firmware versions, so every branch of the per-firmware
    history runs (certified, update available, a compromise fixed by a later update or not)."""
    def report(status, date, version=None):
        r = {"status": status, "effectiveDate": date}
        if version is not None: r["authenticatorVersion"] = version
        return r
    entries = [
        {"aaguid": "0132d110-bf4e-4208-a403-ab4f5f12efe5", "metadataStatement": {"description": "Key A", "aaguid": "0132d110-bf4e-4208-a403-ab4f5f12efe5", "authenticatorVersion": 5},
         "statusReports": [report("FIDO_CERTIFIED", "2020-01-01", 2), report("FIDO_CERTIFIED_L1", "2020-01-01", 2),
                           report("USER_VERIFICATION_BYPASS", "2021-01-01", 3), report("UPDATE_AVAILABLE", "2021-06-01", 4),
                           report("FIDO_CERTIFIED_L2", "2022-01-01", 5), report("REVOKED", "2023-01-01")],
         "timeOfLastStatusChange": "2023-01-01"},
        {"attestationCertificateKeyIdentifiers": ["923881fe2f214ee465484371aeb72e97f5a58e0a", "ABCDEF"],
         "statusReports": [report("ATTESTATION_KEY_COMPROMISE", "2019-05-05", 1), report("NOT_FIDO_CERTIFIED", "2019-01-01")]},
        {"aaguid": "00000000-0000-0000-0000-000000000000", "statusReports": [report("SELF_ASSERTION_SUBMITTED", "2018-01-01", 0)]},
        {"aaid": "FFFF#0001"},
    ]
    yield json.dumps({"legalHeader": "fuzz", "no": 7, "nextUpdate": "2030-01-01", "entries": entries}).encode()
    yield json.dumps({"no": 1, "nextUpdate": "2030-13-40", "entries": []}).encode()
    yield json.dumps({"no": 1, "nextUpdate": "not a date", "entries": [{"statusReports": [{"status": 5}]}]}).encode()


def client_data_seeds():
    base = {"type": "webauthn.get", "challenge": "KioqKioqKioqKioqKioqKg", "origin": "https://example.org"}
    for extra in ({}, {"crossOrigin": True}, {"crossOrigin": False, "topOrigin": "https://top.example"},
                  {"crossOrigin": True, "topOrigin": "https://evil.example"}, {"challenge": "wrong"}, {"origin": 5},
                  {"type": "webauthn.create"}):
        yield json.dumps({**base, **extra}).encode()
    yield b"\x22" * 32
    yield b"[1, 2]"


def mds_blob_seeds(blob):
    """Headers that each stop the JWS parser at another check, on a real BLOB's payload."""
    parts = blob.strip().split(b".")
    if len(parts) != 3: return
    b64 = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=")
    header = json.loads(base64.urlsafe_b64decode(parts[0] + b"=" * (-len(parts[0]) % 4)))
    x5c = header.get("x5c", [])
    for h in ({"alg": "RS256"}, {"alg": "RS256", "x5c": []}, {"alg": "RS256", "x5c": ["!!"]}, {"alg": "none", "x5c": x5c},
              {"alg": "ES256", "x5c": x5c}, {"alg": "PS256", "x5c": x5c}, {"x5c": x5c}, {"alg": "RS256", "x5c": x5c, "crit": ["b64"]}):
        yield b64(json.dumps(h).encode()) + b"." + parts[1] + b"." + parts[2]
    yield b64(b"[]") + b"." + parts[1] + b"." + parts[2]
    yield b"a.b"
    yield parts[0] + b"." + parts[1] + b".!!"


# python-fido2's Fido2Server writing the options a relying party sends, run by the interpreter that
# has python-fido2 (SECURITYKEY_PYTHON, .venv or this one); prints one JSON document a line.
FIDO2_SERVER = r"""
import json, sys
from fido2.server import Fido2Server
from fido2.webauthn import (AttestedCredentialData, PublicKeyCredentialRpEntity, PublicKeyCredentialUserEntity,
                            PublicKeyCredentialDescriptor, PublicKeyCredentialType)
ids = [bytes.fromhex(h) for h in json.loads(sys.argv[1])]
descriptors = [PublicKeyCredentialDescriptor(type=PublicKeyCredentialType.PUBLIC_KEY, id=i) for i in ids]
extensions = [None, {"credProps": True}, {"prf": {"eval": {"first": "AAAA", "second": "AQID"}}},
              {"credentialProtectionPolicy": "userVerificationRequired", "enforceCredentialProtectionPolicy": True,
               "credBlob": "AQIDBA", "minPinLength": True, "hmacCreateSecret": True, "largeBlob": {"support": "required"}},
              {"largeBlob": {"read": True}, "getCredBlob": True, "appid": "https://example.org/app-id.json"}]
for attestation in ("none", "direct", "indirect", "enterprise"):
    server = Fido2Server(PublicKeyCredentialRpEntity(id="example.org", name="Example"), attestation=attestation)
    for i, uv in enumerate(("discouraged", "preferred", "required")):
        for j, resident in enumerate(("discouraged", "preferred", "required")):
            user = PublicKeyCredentialUserEntity(id=bytes(range(1, 17 + i)), name="alice@example.org", display_name="Alice")
            options, _ = server.register_begin(user, descriptors[:i * 2], user_verification=uv,
                                               resident_key_requirement=resident, extensions=extensions[(i * 3 + j) % 5])
            print(json.dumps(dict(options)))
        options, _ = server.authenticate_begin(descriptors[:i * 2] or None, user_verification=uv,
                                               extensions=extensions[(i + 2) % 5])
        print(json.dumps(dict(options)))
"""


def webauthn_json_seeds(entries):
    """Options as relying parties send them: python-fido2's Fido2Server when it can be run, and
    WebAuthn L3 JSON written here around the vectors' challenges, credential IDs and user handles."""
    b64 = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=").decode()
    values = lambda kind: [bytes.fromhex(e["hex"]) for e in entries if e["kind"] == kind]
    ids = [i for i in dict.fromkeys(values("credentialId")) if 0 < len(i) < 1024][:8]
    users = [u for u in values("userHandle") if 0 < len(u) <= 64][:4] or [b"\x01" * 16]
    challenges = [c for c in values("challenge") if 0 < len(c) <= 1024][:6] or [b"\x2a" * 32]
    pythons = [os.environ.get("SECURITYKEY_PYTHON"), ".venv/bin/python3", sys.executable]
    for python in [p for p in pythons if p and os.path.exists(p)]:
        try:
            out = subprocess.run([python, "-c", FIDO2_SERVER, json.dumps([i.hex() for i in ids[:4]])],
                                 capture_output=True, timeout=60, check=True).stdout
        except (subprocess.SubprocessError, OSError):
            continue
        yield from (line for line in out.splitlines() if line.strip())
        break
    descriptor = lambda i, t=None: {"type": "public-key", "id": b64(i), **({"transports": t} if t else {})}
    for n, challenge in enumerate(challenges):
        user = users[n % len(users)]
        creation = {
            "rp": {"id": "example.org", "name": "Example"},
            "user": {"id": b64(user), "name": "mmiller", "displayName": "M. Miller"},
            "challenge": b64(challenge),
            "pubKeyCredParams": [{"type": "public-key", "alg": a} for a in (-7, -8, -257)][:n % 3 + 1],
            "timeout": [60000, 0, 4294967295][n % 3],
            "excludeCredentials": [descriptor(i, ["usb", "nfc"]) for i in ids[:n]],
            "authenticatorSelection": {"residentKey": ["required", "preferred", "discouraged"][n % 3],
                                       "requireResidentKey": n % 2 == 0, "userVerification": "required",
                                       "authenticatorAttachment": "cross-platform"},
            "attestation": ["none", "direct", "indirect", "enterprise"][n % 4],
            "hints": ["security-key"],
            "extensions": {"credProps": True, "prf": {"eval": {"first": b64(challenge)}}},
        }
        request = {
            "challenge": b64(challenge), "timeout": 120000, "rpId": "example.org",
            "allowCredentials": [descriptor(i) for i in ids[:n + 1]], "userVerification": "discouraged",
            "hints": ["security-key", "hybrid"],
            "extensions": {"prf": {"evalByCredential": {b64(i): {"first": b64(challenge)} for i in ids[:2]}},
                           "largeBlob": {"write": b64(challenge)}},
        }
        yield json.dumps(creation).encode()
        yield json.dumps({"publicKey": request}).encode()
    # Documents that each stop at another check: unknown types skipped, members of the wrong
    # type, escapes and surrogate pairs, numbers in every form, nesting, a platform attachment.
    yield b'{"rp":{},"user":{"id":"AQ","name":"a"},"challenge":"AQ","pubKeyCredParams":[{"type":"x","alg":-7}]}'
    yield b'{"rp":{"name":null},"user":{"id":"AQ","name":"\\u00e9\\ud83d\\ude00\\n\\/"},"challenge":"AQ==","timeout":1e3}'
    yield b'{"publicKey":{"challenge":"AQ","allowCredentials":[{"type":"public-key","id":"AQ","transports":[1]}]}}'
    yield b' [ -0.5e+10 , 0 , -1 , true , false , null , {} , [] , "" ] '
    yield b'{"rp":{"id":"example.org"},"user":{"id":"AQ","name":"a"},"challenge":"AQ","authenticatorSelection":{"authenticatorAttachment":"platform"}}'
    yield b'{"challenge":"AQ","extensions":{"largeBlob":{"read":true,"support":"required"},"appid":5}}'
    yield b'[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]'
    base = b'{"rp":{"id":"example.org"},"user":{"id":"AQ","name":"a"},"challenge":"AQ","extensions":'
    for ext in (b'{"credBlob":"AQID","credentialProtectionPolicy":"userVerificationOptional","enforceCredentialProtectionPolicy":false}',
                b'{"credentialProtectionPolicy":"never"}', b'{"largeBlob":{"support":"preferred"},"prf":{}}',
                b'{"largeBlob":{"read":true}}', b'{"largeBlob":{"support":"always"}}', b'{"prf":{"evalByCredential":{}}}',
                b'{"credBlob":""}', b'{"credProps":1}'):
        yield base + ext + b'}'
    request = b'{"challenge":"AQ","extensions":'
    for ext in (b'{"largeBlob":{"read":true,"write":"AQ"}}', b'{"prf":{"evalByCredential":{"!!":{"first":""}}}}',
                b'{"prf":{"eval":{"first":"AQ","second":"Ag"}},"getCredBlob":true}', b'{"largeBlob":{"support":"required"}}'):
        yield request + ext + b'}'
    for doc in (b'{"challenge":"AQ","timeout":-1}', b'{"challenge":"AQ","rpId":5}', b'{"challenge":"' + b"A" * 1500 + b'"}',
                b'{"challenge":"AQ","allowCredentials":{}}', b'{"challenge":"AQ","hints":[1]}', b'"\\udc00"',
                b'"\\ud800\\u0041"', b'{"challenge":"AQ","userVerification":"required"}'):
        yield doc


def attestation_variants(pairs):
    """Real attestation objects with their own clientDataHash (pairs of hash, object), up to two
    per format, each changed to stop the statement verifier at another check: another format's
    name, no attested credential, each statement field left out or of the wrong type, TPM
    structures with another magic, name algorithm, curve or attributes. For the formats the
    harness re-signs (AttestationResigning in the target), each edit bit of its rebuilt
    certificate, and (android-key) key descriptions stating the hash as their challenge."""
    by_format = {}
    for h, data in pairs:
        try:
            obj = cbor_decode(data)[0]
        except Exception:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("fmt"), str):
            by_format.setdefault(obj["fmt"], []).append((h, obj))
    for fmt, found in sorted(by_format.items()):
        for h, obj in found[:2]:
            stmt, auth = obj.get("attStmt"), obj.get("authData")
            if not isinstance(stmt, dict) or not isinstance(auth, bytes) or len(auth) < 37: continue
            yield h + cbor({"fmt": "none" if fmt != "none" else "packed", "attStmt": stmt, "authData": auth})
            yield h + cbor({"fmt": "unknown-format", "attStmt": stmt, "authData": auth})
            yield h + cbor({"fmt": fmt, "attStmt": stmt, "authData": auth[:32] + bytes([auth[32] & 0x3F]) + auth[33:37]})
            yield h[:31] + bytes([h[31] ^ 1]) + cbor(obj)
            for field in stmt:
                if not isinstance(field, str): continue
                yield h + cbor({"fmt": fmt, "attStmt": {k: v for k, v in stmt.items() if k != field}, "authData": auth})
                yield h + cbor({"fmt": fmt, "attStmt": {**stmt, field: True}, "authData": auth})
            changed = lambda **kw: h + cbor({"fmt": fmt, "attStmt": {**stmt, **kw}, "authData": auth})
            yield changed(ecdaaKeyId=b"\x01" * 32)
            for alg in (-65535, -35, -36, -258, -259, -999, -7, -8, -257):
                yield changed(alg=alg)
            if fmt == "tpm" and isinstance(stmt.get("pubArea"), bytes) and isinstance(stmt.get("certInfo"), bytes):
                pub, info = stmt["pubArea"], stmt["certInfo"]
                yield changed(ver="1.0")
                yield changed(certInfo=bytes([info[0] ^ 1]) + info[1:])
                for name_alg in (0x0004, 0x000C, 0x000D, 0x0099):
                    yield changed(pubArea=pub[:2] + struct.pack(">H", name_alg) + pub[4:])
                yield changed(pubArea=pub[:4] + bytes([pub[4] ^ 0x80]) + pub[5:])
                if pub[:2] == b"\x00\x23" and len(pub) > 20:
                    off = 10 + int.from_bytes(pub[8:10], "big") + 2
                    off += 2 if pub[off:off + 2] == b"\x00\x10" else 4
                    for curve in (0x0004, 0x0005, 0x0010):
                        yield changed(pubArea=pub[:off] + struct.pack(">H", curve) + pub[off + 2:])
            if "x5c" in stmt:
                for other in ("packed", "fido-u2f", "tpm", "android-key", "apple"):
                    if other != fmt: yield h + cbor({"fmt": other, "attStmt": stmt, "authData": auth})
            if fmt in ("packed", "fido-u2f", "tpm", "android-key", "apple") and "x5c" in stmt:
                for bit in range(14):
                    yield changed(**{"fuzz-edits": 1 << bit})
                yield changed(**{"fuzz-edits": 0})
            if fmt == "android-key":
                for description in android_key_descriptions(challenge=h):
                    yield changed(**{"fuzz-key-description": description})


def safetynet_variants(jws):
    """A real SafetyNet JWS with its header naming another algorithm, and with its signature
    changed (the payload, and so the nonce, kept); JWS that stop the parser at a check."""
    parts = jws.split(b".")
    if len(parts) != 3: return
    b64 = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=")
    try:
        header = json.loads(base64.urlsafe_b64decode(parts[0] + b"=" * (-len(parts[0]) % 4)))
        signature = base64.urlsafe_b64decode(parts[2] + b"=" * (-len(parts[2]) % 4))
    except ValueError:
        return
    for alg in ("RS256", "ES256", "PS256"):
        yield b64(json.dumps({**header, "alg": alg}).encode()) + b"." + parts[1] + b"." + parts[2]
    if signature:
        yield parts[0] + b"." + parts[1] + b"." + b64(bytes([signature[0] ^ 1]) + signature[1:])
    yield b64(json.dumps({"alg": header.get("alg", "RS256")}).encode()) + b"." + parts[1] + b"." + parts[2]
    yield b64(json.dumps({**header, "x5c": ["AAAA"]}).encode()) + b"." + parts[1] + b"." + parts[2]
    yield parts[0] + b"." + parts[1] + b"." + parts[2] + b"A" * (64 << 10)


def iso7816_seeds():
    """Response sequences (length-prefixed records) that run the assembler into its limits of
    32 rounds and 4096 bytes: endless 61xx, endless 6Cxx, 61xx with full data."""
    record = lambda r: struct.pack(">H", len(r)) + r
    yield b"".join(record(b"\x61\x00") for _ in range(33))
    yield b"".join(record(b"\x6c\x10") for _ in range(33))
    yield b"".join(record(b"\xaa" * 255 + b"\x61\x00") for _ in range(17))


def mds_issuers(mds):
    """The DER certificates of the MDS vectors' roots and CAs (CRL issuers among them)."""
    out = []
    for path in sorted(glob.glob(os.path.join(mds, "**", "*"), recursive=True)):
        if path.endswith(".der") and os.path.getsize(path) < 8192:
            out.append(open(path, "rb").read())
        elif path.endswith(".pem") and ".crl" not in path:
            text = open(path, "rb").read()
            for block in text.split(b"-----BEGIN CERTIFICATE-----")[1:]:
                body = block.split(b"-----END CERTIFICATE-----")[0]
                out.append(base64.b64decode(b"".join(body.split())))
    return list(dict.fromkeys(out))


def vector_files(root):
    for name in ("rfc8949-cbor.json", "python-fido2-vectors.json", "webauthn-spec.json"):
        yield os.path.join(root, name)
    yield from sorted(glob.glob(os.path.join(root, "third-party", "*.json")))


def seeds(root):
    """(target, bytes) pairs."""
    entries, attestation_pairs = [], []
    for path in vector_files(root):
        if os.path.exists(path):
            entries += [e for e in json.load(open(path)) if e.get("hex")]
    client_data = {e["id"].rsplit("/", 1)[0]: bytes.fromhex(e["hex"]) for e in entries if e["kind"] == "clientDataJSON"}
    # Every clientDataJSON of a test, the registration's (webauthn.create) first: a test can hold
    # an authentication's too, and the dict above keeps only the last one.
    created = lambda c: b'"webauthn.create"' not in c
    test_client_data = {}
    for e in entries:
        if e["kind"] == "clientDataJSON":
            test_client_data.setdefault(e["id"].rsplit("/", 1)[0], []).append(bytes.fromhex(e["hex"]))
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
            # The test's own client data first (its signature covers that hash), then its neighbours'.
            own = [hashlib.sha256(c).digest() for c in sorted(test_client_data.get(group, []), key=created)]
            hashes = own + [hashlib.sha256(c).digest() for g, c in client_data.items()
                            if g != group and g.startswith(group.rsplit("/", 1)[0])]
            for h in hashes[:4] or [b"\x00" * 32]: yield "attestation-object", h + data
            attestation_pairs.append((own[0] if own else b"\x00" * 32, data))
            try:
                obj, _ = cbor_decode(data)
                stmt, auth = obj.get("attStmt", {}), obj.get("authData")
                if auth: yield "authenticator-data", auth
                for field in ("certInfo", "pubArea"):
                    if field in stmt: yield "tpm", stmt[field]
                if "response" in stmt:
                    yield "safetynet", stmt["response"]
                    for h in hashes[:4]:
                        yield "safetynet", h + struct.pack(">H", len(auth)) + auth + stmt["response"]
                    for h in own[:1]:
                        for jws in safetynet_variants(stmt["response"]):
                            yield "safetynet", h + struct.pack(">H", len(auth)) + auth + jws
                for cert in stmt.get("x5c", []): yield "trust-anchors", cert
            except Exception:
                pass
    attestation_objects = [bytes.fromhex(e["hex"]) for e in entries if e["kind"] == "attestationObject"]
    auth_datas = [bytes.fromhex(e["hex"]) for e in entries if e["kind"] == "authenticatorData"]
    for obj in attestation_objects:
        try:
            auth = cbor_decode(obj)[0].get("authData")
            if auth: auth_datas.append(auth)
        except Exception:
            pass
    keys = [k for k in (credential_key(a) for a in auth_datas) if k]
    keys = list(dict.fromkeys(keys))
    for k in cose_keys(keys): yield "cose-key", k
    for r in pam_authfile_seeds(keys): yield "pam-authfile", r
    for r in pam_sshkey_seeds(keys): yield "pam-sshkey", r
    for r in pam_options_seeds(): yield "pam-options", r
    for r in ctap2_responses(attestation_objects, auth_datas, keys): yield "ctap2-responses", r
    for r in bio_responses(): yield "bio-enrollment", r
    for r in large_blob_seeds(): yield "large-blob", r
    for r in u2f_response_seeds(): yield "u2f-responses", r
    for e in entries:
        if e["kind"] in ("u2f-register-response", "u2f-authenticate-response", "ctap-response"):
            data = bytes.fromhex(e["hex"])
            yield "u2f-responses", data
            yield "u2f-responses", data + b"\x90\x00"
        if e["kind"] == "ctap-response": yield "extensions", bytes.fromhex(e["hex"])
    for r in extension_seeds(): yield "extensions", r
    for r in webauthn_json_seeds(entries): yield "webauthn-json", r
    for r in ctaphid_device_seeds(): yield "ctaphid-device", r
    for r in ctaphid_capture_seeds(): yield "ctaphid-capture", r
    for r in structure_decoder_seeds(entries): yield "structure-decoder", r
    for r in daemon_response_seeds(): yield "daemon-responses", r
    for r in credential_json_seeds(entries): yield "credential-json", r
    ders = [bytes.fromhex(e["hex"]) for e in entries if e["kind"] == "x509-der"]
    for r in trust_anchor_seeds(ders): yield "trust-anchors", r
    for r in mds_payload_seeds():
        yield "mds-payload", r
        # Payload JSON is signed by the mds-blob harness (Sources/FuzzTargets/Targets/MetadataBLOBSigning.swift).
        yield "mds-blob", r
    yield "mds-blob", json.dumps({"no": 3, "entries": []}).encode()
    for info in ({1: ["FIDO_2_0"], 3: b"\x00" * 15}, {1: ["FIDO_2_1"], 3: b"\x00" * 16, 0x13: {"FIDO": "one"}},
                 {1: ["FIDO_2_1"], 3: b"\x00" * 16, 0x13: {"FIDO": 1, "FIPS-CMVP-2": 2}, 4: {"rk": True, "uv": False}}):
        yield "getinfo", cbor(info)
    # A CTAPHID message followed by a short last report (continuation, then initialization).
    ping = struct.pack(">IBH", 7, 0x81, 100) + b"\x01" * 57
    yield "ctaphid-host", ping + b"\x00\x00\x00"
    yield "ctaphid-host", ping + struct.pack(">IB", 7, 0)[:5]
    yield "ctaphid-host", struct.pack(">IBH", 7, 0x81, 1) + b"\x01" * 57 + b"\x00\x00\x00\x07\x81\x00"
    for r in client_data_seeds(): yield "client-data", r
    # RFC 4648 §10's vectors in both alphabets, padded and not, and a few texts no encoder writes.
    for plain in (b"", b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar", bytes(range(256))):
        for text in (base64.b64encode(plain), base64.urlsafe_b64encode(plain)):
            yield "base64", text
            yield "base64", text.rstrip(b"=")
    for text in (b"Zh", b"Zm9=", b"Zg=", b"Zg===", b"Zm9v\n", b"-_8", b"+/8="): yield "base64", text
    for r in iso7816_seeds(): yield "iso7816", r
    yield "attestation-object", b"\x00" * 32 + cbor({"fmt": "none", "authData": b"\x00" * 37})
    for r in attestation_variants(attestation_pairs): yield "attestation-object", r
    for d in android_key_descriptions(): yield "android-key", d
    for r in ctap_requests(): yield "virtual-key", r
    for r in ctap21_requests(): yield "virtual-key", r
    for r in u2f_requests(): yield "virtual-key-u2f", r
    # Recorded python-fido2 sessions, key choices and state files (scripts/fuzz_virtual_key_seeds.py).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fuzz_virtual_key_seeds
    yield from fuzz_virtual_key_seeds.seeds(sys.modules[__name__])
    # The same behind a first record choosing the user's answer or the key (never touched,
    # touched after 1 ms, alwaysUv on).
    for choice in (b"\xf0", b"\xf1", b"\xf2"):
        for r in u2f_requests(): yield "virtual-key-u2f", struct.pack(">H", 1) + choice + r
    mds = os.path.join(root, "mds3")
    for path in sorted(glob.glob(os.path.join(mds, "**", "*"), recursive=True)):
        if not os.path.isfile(path) or os.path.getsize(path) > 4 << 20: continue
        data = open(path, "rb").read()
        if path.endswith(".jwt"):
            yield "mds-blob", data.strip()
            for b in mds_blob_seeds(data): yield "mds-blob", b
            parts = data.strip().split(b".")
            if len(parts) == 3:
                yield "mds-payload", base64.urlsafe_b64decode(parts[1] + b"=" * (-len(parts[1]) % 4))
        elif path.endswith(".json") and "verification" not in path:
            yield "mds-payload", data
        elif ".crl" in path:
            crl = base64.b64decode(data) if path.endswith(".b64") else data
            yield "crl", crl
            # With each issuer the MDS vectors hold, so the signature check runs on real lists.
            for issuer in mds_issuers(mds):
                yield "crl", struct.pack(">H", len(issuer)) + issuer + crl
        elif path.endswith((".pem", ".der")):
            yield "trust-anchors", data


def ctaphid_capture_seeds():
    """Captures of 64-byte reports (usbmon or UDP recordings): both directions of INIT, CBOR
    (getInfo, makeCredential, getAssertion, an error status), KEEPALIVE, ERROR, CANCEL, vendor
    commands, interleaved channels and broken sequences."""
    init, cont, message = hid_init, hid_cont, hid_message
    B, nonce = 0xFFFFFFFF, bytes(range(1, 9))
    hello = message(B, 0x06, nonce) + message(B, 0x06, nonce + b"\x00\x00\x00\x07\x02\x05\x04\x03\x0d")
    info = cbor({1: ["FIDO_2_0", "FIDO_2_1"], 2: ["hmac-secret"], 3: b"\x11" * 16, 4: {"rk": True, "clientPIN": False}})
    make = bytes([1]) + cbor({1: b"\x22" * 32, 2: {"id": "example.org"}, 3: {"id": b"\x01"}, 4: [{"alg": -7, "type": "public-key"}]})
    auth = b"\x33" * 32 + b"\x05" + b"\x00\x00\x00\x01"
    made = b"\x00" + cbor({1: "none", 2: auth, 3: {}})
    got = b"\x00" + cbor({2: auth, 3: b"\x30" * 70})
    yield b"".join(hello + message(7, 0x10, b"\x04") + message(7, 0x3B, b"\x01") + message(7, 0x10, b"\x00" + info))
    yield b"".join(hello + message(7, 0x10, make) + message(7, 0x3B, b"\x02") + message(7, 0x10, made))
    yield b"".join(hello + message(7, 0x10, b"\x02" + cbor({1: "example.org", 2: b"\x44" * 32}))
                   + message(7, 0x10, got) + message(7, 0x10, b"\x08") + message(7, 0x10, got))
    yield b"".join(hello + message(7, 0x10, b"\x06" + cbor({1: 2, 2: 1})) + message(7, 0x10, b"\x31"))
    yield b"".join(hello + message(7, 0x10, b"\x04") + message(7, 0x10, b"\x00\xff\xfe"))
    yield b"".join(hello + message(7, 0x01, bytes(range(200))) + message(7, 0x01, bytes(range(200))))
    yield b"".join(hello + message(7, 0x11, b"") + message(7, 0x3F, b"\x0b") + message(7, 0x3B, b"\x07"))
    yield b"".join(hello + message(7, 0x41, b"v") + message(7, 0x41, b"w") + message(7, 0x30, b"") + message(7, 0x08, b""))
    yield b"".join(hello + message(7, 0x03, b"\x00\x03\x00\x00") + message(7, 0x03, b"\x90\x00") + message(7, 0x04, b"\x01"))
    # Interleaved channels, an INIT in the middle of a message, a wrong sequence, a message left unfinished.
    yield b"".join(hello + [init(7, 0x01, b"x" * 57, total=100)] + message(8, 0x10, b"\x04") + [cont(7, 0, b"y" * 43)])
    yield b"".join(hello + [init(7, 0x01, b"x" * 57, total=100)] + message(7, 0x10, b"\x04") + [cont(7, 3, b"")])
    yield b"".join(hello + [init(7, 0x01, b"x" * 57, total=300)] + [cont(7, 0, b"y" * 59)])
    yield b"".join(hello + [cont(9, 0, b"stray")] + [init(7, 0x01, b"", total=9000)] + [b"\x00" * 64])
    for seq in ctaphid_device_seeds():
        if len(seq) % 65 == 0:
            yield b"".join(seq[i + 1:i + 65] for i in range(0, len(seq), 65))


def structure_decoder_seeds(entries):
    """A kind byte (an index into StructureDecoder.Kind.allCases, 0xff to recognise) and the input."""
    kinds = {"cbor": 0, "attestationObject": 1, "authenticatorData": 2, "cose-key": 6, "clientDataJSON": 7,
             "ctap2-response-cbor": 3, "ctap-response": 4}
    for e in entries:
        data = bytes.fromhex(e["hex"])
        if len(data) > 8192: continue
        kind = "cbor" if e["kind"].startswith("cbor-vector") else e["kind"]
        if kind in kinds: yield bytes([kinds[kind]]) + data
        if kind in ("attestationObject", "authenticatorData", "clientDataJSON", "ctap2-response-cbor", "cose-key"):
            yield b"\xff" + data
    for capture in list(ctaphid_capture_seeds())[:4]:
        yield b"\x08" + capture
        yield b"\xff" + capture
    for kind in range(11): yield bytes([kind])
    yield b"\x03\x31"
    yield b"\x03" + cbor({1: ["FIDO_2_0"], 3: b"\x00" * 16, 4: {"up": True}, 0x7f: 1})
    # Not canonical: the keys out of order (decode still shows it, with canonical false).
    yield b"\x03\x00\xa2\x03\x50" + b"\x00" * 16 + b"\x01\x81\x68FIDO_2_0"
    yield b"\x06" + cbor({1: 2, 3: -7, -1: 1, -2: b"\x01" * 32, -3: b"\x02" * 32})
    yield b"\x00\xf9\x7e\x00"
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    client = json.dumps({"type": "webauthn.create", "challenge": b64(b"\x01" * 16), "origin": "https://example.org",
                         "crossOrigin": False, "topOrigin": "https://top.example", "extra": 1}).encode()
    yield b"\x07" + client
    attestation = cbor({"fmt": "none", "attStmt": {}, "authData": b"\x33" * 32 + b"\x41" + b"\x00" * 4 + b"\x00" * 16
                        + b"\x00\x02\xab\xcd" + cbor({1: 2, 3: -7, -1: 1, -2: b"\x01" * 32, -3: b"\x02" * 32})})
    registration = {"id": b64(b"\xab\xcd"), "rawId": b64(b"\xab\xcd"), "type": "public-key",
                    "authenticatorAttachment": "cross-platform",
                    "response": {"clientDataJSON": b64(client), "attestationObject": b64(attestation), "transports": ["usb"]}}
    yield b"\x09" + json.dumps(registration).encode()
    yield b"\xff" + json.dumps(registration).encode()
    assertion = {"id": b64(b"\xab"), "rawId": b64(b"\xab"), "type": "public-key",
                 "response": {"clientDataJSON": b64(client), "authenticatorData": b64(b"\x33" * 32 + b"\x01\x00\x00\x00\x02"),
                              "signature": b64(b"\x30" * 8), "userHandle": b64(b"\x01")}}
    yield b"\x0a" + json.dumps(assertion).encode()
    # A file of hex text (decode FILE reads it as the bytes it spells), and one of odd length.
    yield b"\xff" + b"a2 01 81 68\r\n46 49 44 4f 5f 32 5f 30 03 50" + b"00" * 16 + b"\n"
    yield b"\xffabc\n"
    yield b"\xff" + json.dumps(assertion).encode()
    yield b"\x0a" + json.dumps({"id": "!", "response": {}}).encode()


def daemon_response_seeds():
    """A selector (0 registration, 1 assertion, 2 account list) and securitykeyd's JSON."""
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    auth = b"\x33" * 32 + b"\x01" + b"\x00" * 4
    attestation = cbor({"fmt": "none", "attStmt": {}, "authData": auth})
    # With extension data (ED): the authenticator's own outputs.
    extended = cbor({"fmt": "none", "attStmt": {},
                     "authData": b"\x33" * 32 + b"\x81" + b"\x00" * 4 + cbor({"credProtect": 2, "hmac-secret": True})})
    prf = {"enabled": True, "results": {"first": b64(b"\x01" * 32), "second": b64(b"\x02" * 32)}}
    registration = {"id": b64(b"\x09"), "rawId": b64(b"\x09"), "type": "public-key",
                    "response": {"clientDataJSON": b64(b"{}"), "attestationObject": b64(attestation), "transports": ["usb", "nfc"]},
                    "clientExtensionResults": {"prf": prf, "hmacCreateSecret": True, "credProps": {"rk": True},
                                               "credBlob": True, "appidExclude": False, "largeBlob": {"supported": True}}}
    yield b"\x00" + json.dumps(registration).encode()
    yield b"\x00" + json.dumps(dict(registration, clientExtensionResults={"prf": {"results": {"first": "AA"}}})).encode()
    response = dict(registration["response"], attestationObject=b64(extended))
    yield b"\x00" + json.dumps(dict(registration, response=response)).encode()
    for bad in ({"prf": {"enabled": 1}}, {"prf": {"results": {"first": b64(b"\x01" * 32), "second": "AA"}}},
                {"prf": []}, {"credProps": {"rk": "yes"}}, {"largeBlob": {"supported": 0}}, {"hmacCreateSecret": 1},
                {"prf": {"results": {"first": b64(b"\x01" * 32), "second": 5}}}, {"prf": {"results": 5}}):
        yield b"\x00" + json.dumps(dict(registration, clientExtensionResults=bad)).encode()
    for broken in (b64(b"\xa0"), b64(cbor({"fmt": "none", "attStmt": {}, "authData": b"\x33" * 32 + b"\x81" + b"\x00" * 4 + b"\xff"}))):
        response = dict(registration["response"], attestationObject=broken)
        yield b"\x00" + json.dumps(dict(registration, response=response)).encode()
    assertion = {"id": b64(b"\x09"), "rawId": b64(b"\x09"), "type": "public-key",
                 "response": {"clientDataJSON": b64(b"{}"), "authenticatorData": b64(auth), "signature": b64(b"\x30"),
                              "userHandle": b64(b"\x01")},
                 "clientExtensionResults": {"appid": True, "prf": prf, "getCredBlob": b64(b"blob"),
                                            "largeBlob": {"blob": b64(b"\x05"), "written": True}}}
    yield b"\x01" + json.dumps(assertion).encode()
    yield b"\x01" + json.dumps(dict(assertion, clientExtensionResults={"largeBlob": 1})).encode()
    for bad in ({"appid": 1}, {"getCredBlob": 1}, {"largeBlob": {"blob": 1}}, {"largeBlob": {"written": 1}},
                {"prf": {"results": {"second": b64(b"\x02" * 32)}}}, {"prf": {"results": {"first": b64(b"\x01" * 31)}}}):
        yield b"\x01" + json.dumps(dict(assertion, clientExtensionResults=bad)).encode()
    yield b"\x02" + json.dumps([{"id": b64(b"\x01"), "userHandle": b64(b"\x02"), "name": "a", "displayName": "A"},
                                 {"id": b64(b"\x03"), "name": None, "displayName": None}]).encode()
    yield b"\x02[{\"id\":5}]"


def credential_json_seeds(entries):
    """A selector (bit 0: assertion; bit 1: attested key members or a null user handle; bit 2:
    members beside) and a RegistrationResponseJSON or AuthenticationResponseJSON."""
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    for seed in daemon_response_seeds():
        if seed[0] in (0, 1):
            for extra in (0, 2, 4, 6): yield bytes([seed[0] | extra]) + seed[1:]
    client = json.dumps({"type": "webauthn.create", "challenge": b64(b"\x01" * 16), "origin": "https://example.org"}).encode()
    # Real attestation objects (keys of every kind the vectors hold), as register --json writes them.
    objects = [bytes.fromhex(e["hex"]) for e in entries if e["kind"] == "attestationObject"]
    for obj in objects[:8]:
        registration = {"id": b64(b"\x0a" * 16), "rawId": b64(b"\x0a" * 16), "type": "public-key",
                        "response": {"clientDataJSON": b64(client), "attestationObject": b64(obj), "transports": ["usb"]},
                        "clientExtensionResults": {"credProps": {"rk": False}}}
        yield b"\x06" + json.dumps(registration).encode()
    auth = b"\x33" * 32 + b"\x01" + b"\x00" * 4
    attestation = b64(cbor({"fmt": "none", "attStmt": {}, "authData": auth}))
    registration = {"id": b64(b"\x09"), "rawId": b64(b"\x09"), "type": "public-key",
                    "response": {"clientDataJSON": b64(client), "attestationObject": attestation}}
    yield b"\x00" + json.dumps(registration).encode()
    yield b"\x00" + json.dumps(dict(registration, clientExtensionResults={"credProps": {"rk": None}, "prf": {"enabled": False},
                                                                          "largeBlob": {}, "x": [1, {"y": "\u2028\u0000"}]})).encode()
    for bad in ({"transports": [1]}, {"transports": "usb"}, {"attestationObject": 5}, {"clientDataJSON": None}):
        yield b"\x00" + json.dumps(dict(registration, response=dict(registration["response"], **bad))).encode()
    yield b"\x00" + json.dumps(dict(registration, response=[])).encode()
    yield b"\x00" + json.dumps(dict(registration, clientExtensionResults=[])).encode()
    yield b"\x00[]"
    yield b"\x00{"
    assertion = {"id": b64(b"\x09"), "rawId": b64(b"\x09"), "type": "public-key",
                 "response": {"clientDataJSON": b64(client), "authenticatorData": b64(auth), "signature": b64(b"\x30")}}
    for selector in (1, 3, 7):
        yield bytes([selector]) + json.dumps(assertion).encode()
    hmac = {"output1": b64(b"\x01" * 32), "output2": b64(b"\x02" * 32)}
    for results in ({"hmacGetSecret": hmac, "appid": False}, {"hmacGetSecret": {"output1": b64(b"\x01" * 32)}},
                    {"hmacGetSecret": {"output1": b64(b"\x01" * 31)}}, {"hmacGetSecret": {"output2": b64(b"\x02" * 32)}},
                    {"prf": {}}, {"prf": {"results": {"first": b64(b"\x01" * 32)}}}, {"largeBlob": {"written": False}},
                    {"getCredBlob": ""}):
        yield b"\x05" + json.dumps(dict(assertion, clientExtensionResults=results)).encode()
    for bad in ({"signature": None}, {"userHandle": 7}, {"authenticatorData": "!"}):
        yield b"\x01" + json.dumps(dict(assertion, response=dict(assertion["response"], **bad))).encode()
    yield b"\x01" + json.dumps(dict(assertion, rawId=None)).encode()


# pam-u2f's own test credentials (Yubico/pam-u2f tests/credentials and tests/get_devices.c,
# BSD-2-Clause), made by pamu2fcfg: KEYHANDLE,PUBLICKEY (standard base64) per option set.
PAM_U2F_CREDENTIALS = [
    ("vlcWFQFik8gJySuxMTlRwSDvnq9u/mlMXRIqv4rd7Kq2CJj1V9Uh9PqbTF8UkY3EcQfHeS0G3nY0ibyxXE0pdw==",
     "CTTRrHrqQmqfyI7/bhtAknx9TGCqhd936JdcoekUxUa6PNA6uYzsvFN0qaE+j2LchLPU4vajQPdAOcvvvNfWCA==", "+presence"),
    ("qf/qcQqFloToNoUMnp2cWg8pUPKoJ0CJFyP0wqpbpOgcD+hzEOJEBaHFbnnYP9d/zLKuwTsQ1nRpSc/aDJTEeQ==",
     "kwca39tt8HI+MV7skKO1W1K4y0ptbXv6lFW/nwxZ0GSVeMAwTZgf/XP1O7O0i9+D227F/Ppo5eIc6gquvjiXdA==", "+presence+verification"),
    ("IPbgFVDLguVOr5GzdV7C5MH4Ec+bWfG2hifOy0IWWvNsHUZyN5x0rqbAoGWQPgxbAuQTKfk/n+3U9h4AWf8QXg==",
     "5KfKYcZofwqflFbr+d+df0e9b8nfLulducJ1WMyTBO00Rf3rL3JInYeccS2+xvI+eYNsZmJ3RR6zFAPkkBUhzA==", "+presence+pin"),
    ("HftI6IHewEFB4OhBMeT9WjnG097GYvpE4dTxSS33JTRzRP6V/oBPyj3vurnTRJwif98V8YhceMAH8lDePA1dxQ==",
     "7h0f9+MuzG087QC8zjLK9UoEksAXHmmGmoHGPvWwfkfSsH2cqqp7Qyi4LO7Y58OxlEq79gbWqNYEP0H56zvZ4Q==", "+presence+verification+pin"),
    ("yvFPHZBdPoBcdhF86mImwNQm2DUgfPw0s26QCpm4XQO0is4qlx3nIdyVP9WHszpJ5uFV/1mjd09L3P6ton1fAw==",
     "JTP+Uu9VE/79hD1H+Uzf9yqSCi9HgeMLeuc3jQ43TCxg5o+GeFL7Q6e63p3Dn4/uch2YJ8iNNJmDlktrLouWSg==", ""),
    ("+/l9LJ6dwbnDLff0PqkDhMEOWsruM+aYP+bzQdaCq3QmTGnh0dbcblfLaYs86XgcirS9OEoEkohB5pd8mhwSMQ==",
     "d7sKBe6vgaoYTEXcyovikiB/7IZXLyUPv8qfdaxwWvy7WaGYhwkMvr2H/q6YBBHJmRl0OCU3WTD/hfeAo2RknA==", "+pin"),
    ("*", "b9G0ZYtAB4TQQBnpUfptgTzDArSqLMP3/LxtHYZQrIpXrUnGsqi0gYrKa8ThJoKRlj6f3EJdsJMRdnOr6323+w==", "+presence"),
    ("*", "oO3z71rtDS86RH3EdZFxr/y6ZUOZ7/csyhia9UhiDWWpq7oUoxqvN0qmky9R14Clm6RovaOThX89oIbI84BqxA==", "+verification+pin"),
    ("*", "yBQxzNyU+UEP7nQtlyuwzLmWXslkYCAHFSl5Fq2GxKIz9V0ocqbG7vRqbU+RGT73M4e8OLrBoX1gAZO7/2Q82Q==", ""),
]
# tests/credentials/old_credential: the old (U2F) form, websafe-base64 key handle and hex point.
PAM_U2F_OLD = ("mGvXxDqTMSVkSlDnDRNTVsP5Ij9cceCkdZkSJYeaJCHCOpBtMIFGQXKBBkvZpV5bWuEuJkoElIiMKirhCPAU8Q",
               "0405a35641a6f5b63e2ef4449393e7e1cb2b96711e797fc74dbd63e99dbf410ffe7425e79f8c41d8f049c8f7241a803563a43c139f923f0ab9007fbd0dcc722927")
# tests/credentials/ssh_credential.cred, as get_devices.c reads it: an sk-ecdsa key's handle and point.
PAM_U2F_SSH = ("Li4NkUKcvFym8V6aGagSAI11MXPuKSu6kqdWhdxNmQo3i25Ab1Lkun2I2H2bz4EjuwLD1UQpJjLG5vjbKG8efg==",
               "439pGle7126d1YORADduke347N2t2XyKzOSv8M4naCUjlFYDtTVhP/MXO41wzHFUIzrrzfEzzCGWoOH5FU5Adw==")


def pam_raw_keys(keys):
    """(type name, libfido2 raw public key) of the vectors' COSE keys pam-u2f can list."""
    out = []
    for k in keys:
        try:
            m = cbor_decode(k)[0]
        except Exception:
            continue
        if not isinstance(m, dict): continue
        kty, alg = m.get(1), m.get(3)
        if kty == 2 and alg == -7 and m.get(-1) == 1 and len(m.get(-2, b"")) == 32 and len(m.get(-3, b"")) == 32:
            out.append(("es256", m[-2] + m[-3]))
        elif kty == 1 and alg == -8 and m.get(-1) == 6 and len(m.get(-2, b"")) == 32:
            out.append(("eddsa", m[-2]))
        elif kty == 3 and alg == -257 and isinstance(m.get(-1), bytes) and isinstance(m.get(-2), bytes):
            n, e = m[-1].lstrip(b"\0"), m[-2].lstrip(b"\0")
            if len(n) <= 256 and len(e) <= 3:
                out.append(("rs256", n.rjust(256, b"\0") + e.rjust(3, b"\0")))
    return out


def pam_authfile_seeds(keys):
    """A selector byte (bits 0-1 the user: myuser, the first line's, the last line's, root; bits
    2-3 max_devices: 1, 2, 24, all; bit 7: a COSE key instead) and an authorization file."""
    b64 = lambda b: base64.b64encode(b).decode()
    lines = ["%s,%s,es256,%s" % c for c in PAM_U2F_CREDENTIALS]
    old = "%s,%s" % PAM_U2F_OLD
    raw = pam_raw_keys(keys)
    raw = [r for t in ("es256", "eddsa", "rs256") for r in [r for r in raw if r[0] == t][:4]]
    typed = []
    for i, (name, key) in enumerate(raw):
        attributes = ["+presence", "+presence+verification", "+pin", ""][i % 4]
        typed.append("%s,%s,%s,%s" % (b64(bytes([i]) * 48), b64(key), name, attributes))
    typed.append("*,%s,es256,+presence" % b64(base64.b64decode(PAM_U2F_CREDENTIALS[0][1])))
    # The 0x04-prefixed point pam-u2f's own conversion writes for ES256, accepted too.
    typed.append("%s,%s,es256,+presence" % (b64(b"\x07" * 64), b64(b"\x04" + base64.b64decode(PAM_U2F_CREDENTIALS[1][1]))))
    files = []
    for line in lines + typed + [old]:
        files.append("myuser:" + line + "\n")
    files.append("myuser:" + ":".join(lines[:4]) + "\n")
    files.append("myuser:" + ":".join(lines + typed[:6]) + "\n")
    files.append("alice:" + lines[0] + "\nmyuser:" + old + "\nbob:" + ":".join(typed[:3]) + "\nmyuser:" + lines[1] + ":" + lines[2])
    files.append("root:" + lines[3] + "\n\n# a comment\n")
    files.append("root:" + lines[3] + "\r\nmyuser:" + lines[4] + ":" + lines[5] + "\r\n")
    files.append("myuser:" + lines[6] + "\r\n\r\nalice:" + old + "\r\n")
    # Names that Swift's == takes for equal and bytes do not: é and e with a combining acute,
    # K and the Kelvin sign; and separators followed by a combining mark.
    files.append("jos\u00e9:" + lines[0] + "\njose\u0301:" + lines[1] + ":" + lines[2] + "\n")
    files.append("Kim:" + lines[0] + "\n\u212aim:" + lines[1] + ":" + lines[2] + "\n")
    files.append("myuser:\u0301" + lines[0] + "\n")
    files.append("myuser:" + lines[0] + ",\u0301\n")
    files.append("myuser:" + lines[0] + ":\u0301" + lines[1] + "\n")
    # pam-u2f's malformed lines (AuthorizationFileTests) after a good one.
    resident = PAM_U2F_CREDENTIALS[7][1]
    for bad in ("myuser", ":abc,def,es256,+presence", "myuser:AAAA,AAAA,es256,+presence", "myuser:AAAA",
                "myuser:AAAA,AAAA,AAAA", "myuser:*," + resident + ",es384,+presence",
                "myuser:*," + resident + ",es256,+presence+always", "myuser:*," + resident + ",es256,presence",
                "myuser:*," + resident[:-3] + "xQ==,es256,+presence", "myuser:not base64!," + resident + ",es256,",
                "myuser:*," + resident + ",eddsa,+presence", "myuser:*," + resident + ",rs256,+presence",
                "myuser:,%s,es256," % resident, "myuser:*,%s,es256,+pin+pin" % resident, "myuser:" + old[:-2] + "00",
                "myuser:!!," + old.split(",")[1], "myuser:*,%s,es256,+" % resident, "myuser:*,!!,es256,"):
        files.append("other:" + lines[0] + "\n" + bad + "\n")
    data = [f.encode() for f in files]
    data.append(b"myuser:" + lines[0].encode() + b"\xff\n")
    data.append(b"myuser:" + lines[0].encode() + b"\n" + b"#" * 70000)
    for f in data:
        for selector in (0x00, 0x05, 0x0a, 0x0d, 0x0f, 0x03):
            yield bytes([selector]) + f
    # Enrolment: COSE keys a key returned, the vectors' and ones on another curve or too large.
    for k in cose_keys(keys):
        yield b"\x80" + k
    xy = base64.b64decode(PAM_U2F_CREDENTIALS[0][1])
    yield b"\x80" + cbor({1: 2, 3: -7, -1: 2, -2: xy[:32], -3: xy[32:]})
    yield b"\x80" + cbor({1: 1, 3: -8, -1: 4, -2: xy[:32]})
    yield b"\x80" + cbor({1: 3, 3: -257, -1: b"\xc3" * 512, -2: b"\x01\x00\x01"})
    yield b"\x80" + cbor({1: 3, 3: -257, -1: b"\xc3" * 256, -2: b"\x00\x01\x00\x00\x01"})
    yield b"\x80" + cbor({1: 3, 3: -7, -1: b"\xc3" * 256, -2: b"\x01\x00\x01"})


def ssh_string(b):
    return struct.pack(">I", len(b)) + b


def ssh_key_file(kind, key, application=b"ssh:", flags=1, handle=None, cipher=b"none", count=1, check=(1, 1),
                 pad=None, extra=b"", crlf=False, width=70, before=b"", reserved=b""):
    """An OpenSSH private key file (PROTOCOL.key) holding a security key (PROTOCOL.u2f)."""
    if kind == "ecdsa":
        public = ssh_string(b"sk-ecdsa-sha2-nistp256@openssh.com") + ssh_string(b"nistp256") + ssh_string(key)
    else:
        public = ssh_string(kind.encode() if kind != "ed25519" else b"sk-ssh-ed25519@openssh.com") + ssh_string(key)
    public += ssh_string(application)
    handle = base64.b64decode(PAM_U2F_SSH[0]) if handle is None else handle
    section = struct.pack(">II", *check) + public + bytes([flags]) + ssh_string(handle) + ssh_string(reserved) \
        + ssh_string(b"user@host") + extra
    section += bytes(range(1, 1 + (-len(section)) % 8)) if pad is None else pad
    blob = b"openssh-key-v1\0" + ssh_string(cipher) + ssh_string(b"none" if cipher == b"none" else b"bcrypt") \
        + ssh_string(b"" if cipher == b"none" else ssh_string(b"\x11" * 16) + b"\0\0\0\x10") \
        + struct.pack(">I", count) + ssh_string(public) * max(count, 1) + ssh_string(section)
    body = base64.b64encode(blob)
    end = b"\r\n" if crlf else b"\n"
    rows = [body[i:i + width] for i in range(0, len(body), width)]
    return before + b"-----BEGIN OPENSSH PRIVATE KEY-----" + end + end.join(rows) + end + b"-----END OPENSSH PRIVATE KEY-----" + end


def pam_sshkey_seeds(keys):
    """OpenSSH security-key private key files: pam-u2f's ecdsa-sk credential and the vectors'
    Ed25519 keys, with each flag, and each part of the file broken."""
    point = b"\x04" + base64.b64decode(PAM_U2F_SSH[1])
    eds = [key for name, key in pam_raw_keys(keys) if name == "eddsa"][:2] or [bytes(range(32))]
    for flags in (0x01, 0x00, 0x05, 0x04, 0x21, 0xff):
        yield ssh_key_file("ecdsa", point, flags=flags)
    for ed in eds:
        yield ssh_key_file("ed25519", ed, application=b"ssh:pam", flags=0x05)
    yield ssh_key_file("ecdsa", point, crlf=True)
    yield ssh_key_file("ecdsa", point, width=64, before=b"a comment\n")
    yield ssh_key_file("ecdsa", point, width=10000)
    for broken in (dict(cipher=b"aes256-ctr"), dict(count=2), dict(count=0), dict(check=(1, 2)),
                   dict(pad=b"\x01\x03"), dict(pad=bytes(range(1, 255)) + b"\x01"), dict(handle=b""),
                   dict(application=b""), dict(application=b"\xff\xfe"), dict(extra=b"\0\0\0\xff")):
        yield ssh_key_file("ecdsa", point, **broken)
    yield ssh_key_file("ecdsa", point[:64])
    yield ssh_key_file("ecdsa", b"\x05" + point[1:])
    yield ssh_key_file("ecdsa", point[:-1] + bytes([point[-1] ^ 1]))
    yield ssh_key_file("ed25519", eds[0][:31])
    yield ssh_key_file("ssh-ed25519", eds[0])
    yield ssh_key_file("ssh-rsa", b"\x01\x00\x01")
    good = ssh_key_file("ecdsa", point)
    yield good.replace(b"nistp256", b"nistp384")
    yield good.split(b"-----END")[0]
    yield b"-----END OPENSSH PRIVATE KEY-----\n" + good
    yield good.replace(b"\n", b"\n\n", 2)
    yield good[:60] + b"!" + good[61:]
    yield good.replace(b"BEGIN OPENSSH", b"BEGIN OPENSSL")
    # The blob cut at every field: magic, cipher, kdf, count, public key, section.
    blob = base64.b64decode(b"".join(good.split(b"\n")[1:-2]))
    for cut in (10, 15, 20, 40, 60, 120, len(blob) - 40, len(blob) - 12):
        body = base64.b64encode(blob[:cut])
        yield b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + body + b"\n-----END OPENSSH PRIVATE KEY-----\n"
    yield b"\xff" + good


def pam_options_seeds():
    """pam_securitykey.so's arguments, NUL-separated as PAM passes them (argv)."""
    lines = [
        ["debug", "debug_file=syslog", "origin=pam://host", "appid=pam://host", "authfile=/etc/u2f_mappings",
         "nouserok", "cue", "cue_prompt=Touch it", "interactive", "userpresence=0", "userverification=1",
         "pinverification=2", "max_devices=3", "nodetect", "authpending_file=", "openasuser"],
        ["sshformat", "authfile=.ssh/id_ecdsa_sk", "trace", "debug_file=stdout", "prompt=Insert your key"],
        ["udp=127.0.0.1:8111,[::1]:8112", "timeout=5", "environment", "debug_file=stderr", "max_devices=0"],
        ["max_devices=300", "timeout=600", "debug_file=/var/log/pam_u2f.log", "userpresence=1", "pinverification=0"],
        [],
    ]
    for refused in ("manual", "alwaysok", "frobnicate", "timeout=0", "timeout=601", "timeout=soon", "debug_file=relative",
                    "origin=", "appid=", "authfile=", "max_devices=-1", "max_devices=many", "debug=1", "cue_prompt", ""):
        lines.append(["debug", refused])
    for line in lines:
        yield b"\0".join(a.encode() for a in line)


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
