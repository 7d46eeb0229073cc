#!/usr/bin/env python3
"""Cross-checks an authenticator's CTAP2 extensions with python-fido2's Fido2Client and its
extension classes (HmacSecretExtension with PRF and hmac-secret, CredProtectExtension,
CredBlobExtension, MinPinLengthExtension, CredPropsExtension, LargeBlobExtension), and with Ctap2 directly where the
client hides what the key said (PIN/UV auth protocol one, malformed hmac-secret inputs, the
exclude list, credential management).

The key must start without a PIN and without credentials, offer hmac-secret, hmac-secret-mc,
credProtect, credBlob, minPinLength and largeBlobKey (with largeBlobs), and be a CTAP 2.1 key
(credMgmt, authnrCfg).

Prints one JSON verdict per step (python-fido2's view of the key) and exits non-zero if any fails.

    .venv/bin/python3 scripts/python/fido2_extensions_check.py --udp 8111
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

from fido2.client import ClientError, DefaultClientDataCollector, Fido2Client, UserInteraction
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.config import Config
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.extensions import (
    CredBlobExtension,
    CredPropsExtension,
    CredProtectExtension,
    HmacSecretExtension,
    LargeBlobExtension,
    MinPinLengthExtension,
)
from fido2.ctap2.pin import ClientPin, PinProtocolV1, PinProtocolV2

import fido2_pcsc_check as base
from fido2_ctap21_check import expect_error, open_device
from fido2_pcsc_check import run_step, verdict

PIN = "4321"
PERM = ClientPin.PERMISSION
RESULT = CredentialManagement.RESULT
ORIGIN = "https://example.com"


class Interaction(UserInteraction):
    """Answers PIN prompts with the PIN once one is set; presence is the virtual key's business."""

    def __init__(self):
        self.pin = None

    def request_pin(self, permissions, rp_id):
        return self.pin


def prf_salt(secret: bytes) -> bytes:
    """WebAuthn L3 §10.1.4: the hmac-secret salt the PRF extension derives from an input."""
    return hashlib.sha256(b"WebAuthn PRF\x00" + secret).digest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", default="Virtual PCD")
    parser.add_argument("--udp", type=int, default=None, help="UDP port of a CTAPHID-over-UDP key on 127.0.0.1")
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()

    dev = open_device(args)
    ctap = Ctap2(dev)
    interaction = Interaction()
    client = Fido2Client(
        dev, DefaultClientDataCollector(ORIGIN, verify=lambda rp_id, origin: True), interaction,
        extensions=[HmacSecretExtension(allow_hmac_secret=True), CredProtectExtension(), CredBlobExtension(),
                    MinPinLengthExtension(), CredPropsExtension(), LargeBlobExtension()])
    state: dict = {}
    x1, x2 = b"first PRF input", b"second PRF input"

    def register(rp_id, user_id, rk="required", uv="discouraged", extensions=None, exclude=None):
        options = {
            "rp": {"id": rp_id, "name": rp_id}, "user": {"id": user_id, "name": user_id.hex(), "displayName": "U"},
            "challenge": os.urandom(32), "pubKeyCredParams": [{"type": "public-key", "alg": -7}],
            "authenticatorSelection": {"residentKey": rk, "userVerification": uv},
            "extensions": extensions or {},
        }
        if exclude:
            options["excludeCredentials"] = [{"type": "public-key", "id": i} for i in exclude]
        response = client.make_credential(options)
        auth_data = response.response.attestation_object.auth_data
        return response, auth_data

    def authenticate(rp_id, allow=None, uv="discouraged", extensions=None):
        options = {"challenge": os.urandom(32), "rpId": rp_id, "userVerification": uv, "extensions": extensions or {}}
        if allow:
            options["allowCredentials"] = [{"type": "public-key", "id": i} for i in allow]
        selection = client.get_assertion(options)
        response = selection.get_response(0)
        return response, selection.get_assertions()[0]

    def refused(fn, *a, **kw):
        """The CTAP error behind a client failure, or 'ok' when the ceremony succeeded."""
        try:
            fn(*a, **kw)
        except ClientError as e:
            if isinstance(e.cause, CtapError):
                return e.cause.code.name
            raise
        return "ok"

    def prf_results(response):
        prf = response.client_extension_results.prf
        if prf is None or prf.results is None:
            return None
        return prf.results.first, prf.results.second

    def info():
        i = ctap.get_info()
        return {"extensions": i.extensions, "maxCredBlobLength": i.max_cred_blob_length}

    def register_prf():
        response, auth_data = register(
            "example.com", b"\x01" * 16,
            extensions={"prf": {"eval": {"first": x1}}, "credProps": True, "credBlob": b"a credential blob",
                        "credentialProtectionPolicy": "userVerificationOptional"})
        ext = auth_data.extensions or {}
        results = prf_results(response)
        state["a"] = auth_data.credential_data.credential_id
        state["mcFirst"] = results[0] if results else None
        return {
            "prfEnabled": response.client_extension_results.prf.enabled,
            "mcResult": results is not None and len(results[0]) == 32,
            "credProps": response.client_extension_results.cred_props.rk,
            "hmacSecret": ext.get("hmac-secret"), "credBlob": ext.get("credBlob"),
            "credProtect": ext.get("credProtect"), "uv": auth_data.is_user_verified(),
        }

    def prf_without_uv():
        r1, a1 = authenticate("example.com", extensions={"prf": {"eval": {"first": x1}}})
        r2, _ = authenticate("example.com", [state["a"]], extensions={"prf": {"eval": {"first": x1}}})
        r3, _ = authenticate("example.com", extensions={"prf": {"eval": {"first": x2}}})
        r4, _ = authenticate("example.com", extensions={"prf": {"eval": {"first": x1, "second": x2}}})
        first = prf_results(r1)[0]
        state["noUV"] = first
        both = prf_results(r4)
        return {
            "uv": a1.auth_data.is_user_verified(), "length": len(first),
            "stable": first == prf_results(r2)[0], "matchesRegistration": first == state["mcFirst"],
            "differsAcrossSalts": first != prf_results(r3)[0],
            "pairMatches": both[0] == first and both[1] == prf_results(r3)[0],
        }

    def hmac_secret_without_uv():
        # hmac-secret with the salt PRF derives from x1 must give PRF's output: the PRF layer is
        # only a salt hash on top of hmac-secret.
        r, _ = authenticate("example.com", extensions={"hmacGetSecret": {"salt1": prf_salt(x1)}})
        out = r.client_extension_results.hmac_get_secret
        return {"equalsPRF": out.output1 == state["noUV"], "output2Length": len(out.output2 or b"")}

    def cred_blob():
        _, assertion = authenticate("example.com", extensions={"getCredBlob": True})
        _, non_rk = register("example.com", b"\x02" * 16, rk="discouraged", extensions={"credBlob": b"x" * 8})
        return {"blob": (assertion.auth_data.extensions or {}).get("credBlob", b"").decode(),
                "nonDiscoverableStored": (non_rk.extensions or {}).get("credBlob")}

    def non_discoverable_prf():
        response, auth_data = register("example.com", b"\x03" * 16, rk="discouraged",
                                       extensions={"prf": {}, "credProps": True})
        cred = auth_data.credential_data.credential_id
        r1, _ = authenticate("example.com", [cred], extensions={"prf": {"eval": {"first": x1}}})
        r2, _ = authenticate("example.com", [cred], extensions={"prf": {"eval": {"first": x1}}})
        plain = register("example.com", b"\x04" * 16, rk="discouraged")[1].credential_data.credential_id
        r3, _ = authenticate("example.com", [plain], extensions={"prf": {"eval": {"first": x1}}})
        return {
            "prfEnabled": response.client_extension_results.prf.enabled,
            "credProps": response.client_extension_results.cred_props.rk,
            "stable": prf_results(r1) == prf_results(r2), "differsFromDiscoverable": prf_results(r1)[0] != state["noUV"],
            "withoutHmacSecret": prf_results(r3),
        }

    def cred_protect_without_uv():
        _, level3 = register("cp3.example", b"\x13" * 16,
                             extensions={"credentialProtectionPolicy": "userVerificationRequired",
                                         "enforceCredentialProtectionPolicy": True})
        _, level2 = register("cp2.example", b"\x12" * 16,
                             extensions={"credentialProtectionPolicy": "userVerificationOptionalWithCredentialIDList"})
        state["l3"] = level3.credential_data.credential_id
        state["l2"] = level2.credential_data.credential_id
        return {
            "level3Output": level3.extensions.get("credProtect"), "level2Output": level2.extensions.get("credProtect"),
            "level3Discovery": refused(authenticate, "cp3.example"),
            "level3AllowList": refused(authenticate, "cp3.example", [state["l3"]]),
            "level2Discovery": refused(authenticate, "cp2.example"),
            "level2AllowList": refused(authenticate, "cp2.example", [state["l2"]]),
        }

    def exclude_without_uv():
        # CTAP 2.1 §6.1.2 step 12: without UV a userVerificationRequired credential does not
        # exclude; makeCredUvNotRqd lets a non-discoverable credential be made without UV.
        h = hashlib.sha256(os.urandom(8)).digest()
        ctap.make_credential(h, {"id": "cp3.example"}, {"id": b"\x14" * 16, "name": "n"},
                             [{"type": "public-key", "alg": -7}],
                             exclude_list=[{"type": "public-key", "id": state["l3"]}])
        return {"created": True}

    def set_pin():
        ClientPin(ctap, PinProtocolV2()).set_pin(PIN)
        interaction.pin = PIN
        return {"clientPin": ctap.get_info().options.get("clientPin")}

    def with_uv():
        r1, a1 = authenticate("example.com", [state["a"]], uv="required", extensions={"prf": {"eval": {"first": x1}}})
        r2, _ = authenticate("example.com", uv="required", extensions={"prf": {"eval": {"first": x1}}})
        r3, _ = authenticate("example.com", [state["a"]], extensions={"prf": {"eval": {"first": x1}}})
        with_uv_first = prf_results(r1)[0]
        return {
            "uv": a1.auth_data.is_user_verified(), "stable": with_uv_first == prf_results(r2)[0],
            "differsFromNoUV": with_uv_first != state["noUV"], "noUVStillSame": prf_results(r3)[0] == state["noUV"],
        }

    def large_blob():
        # Registration asks for a largeBlobKey; the write reuses the getAssertion's token (which
        # then keeps only its lbw permission) for authenticatorLargeBlobs, as the client does.
        response, auth_data = register("blob.example", b"\x21" * 16, uv="required",
                                       extensions={"largeBlob": {"support": "required"}})
        credential_id = auth_data.credential_data.credential_id
        data = b"written through python-fido2's LargeBlobExtension"
        written, _ = authenticate("blob.example", [credential_id], uv="required",
                                  extensions={"largeBlob": {"write": data}})
        read, _ = authenticate("blob.example", [credential_id], uv="required",
                               extensions={"largeBlob": {"read": True}})
        return {
            "supported": response.client_extension_results.large_blob.supported,
            "written": written.client_extension_results.large_blob.written,
            "readBack": read.client_extension_results.large_blob.blob == data,
        }

    def cred_protect_with_uv():
        _, d3 = authenticate("cp3.example", uv="required")
        _, l3 = authenticate("cp3.example", [state["l3"]], uv="required")
        _, d2 = authenticate("cp2.example", uv="required")
        h = hashlib.sha256(os.urandom(8)).digest()
        protocol = PinProtocolV2()
        token = ClientPin(ctap, protocol).get_pin_token(PIN, PERM.MAKE_CREDENTIAL, "cp3.example")
        excluded = expect_error(
            CtapError.ERR.CREDENTIAL_EXCLUDED, ctap.make_credential, h, {"id": "cp3.example"},
            {"id": b"\x15" * 16, "name": "n"}, [{"type": "public-key", "alg": -7}],
            exclude_list=[{"type": "public-key", "id": state["l3"]}],
            pin_uv_param=protocol.authenticate(token, h), pin_uv_protocol=protocol.VERSION)
        return {
            "level3Discovery": d3.credential["id"] == state["l3"], "level3AllowList": l3.credential["id"] == state["l3"],
            "level2Discovery": d2.credential["id"] == state["l2"], "excludeWithUV": excluded,
        }

    def enumerate_levels():
        levels = {}
        for rp_id in ["example.com", "cp2.example", "cp3.example"]:
            token = ClientPin(ctap, PinProtocolV2()).get_pin_token(PIN, PERM.CREDENTIAL_MGMT)
            creds = CredentialManagement(ctap, PinProtocolV2(), token).enumerate_creds(
                hashlib.sha256(rp_id.encode()).digest())
            levels[rp_id] = [c.get(RESULT.CRED_PROTECT) for c in creds]
        return {"levels": levels}

    def protocol_one():
        # PIN/UV auth protocol one by hand (the client always picks two): the same credential and
        # salt give the same output whichever protocol carried it, and a missing protocol is one.
        protocol = PinProtocolV1()
        key_agreement, shared = ClientPin(ctap, protocol)._get_shared_secret()
        salt_enc = protocol.encrypt(shared, prf_salt(x1))
        salt_auth = protocol.authenticate(shared, salt_enc)
        outputs = []
        for extra in ({4: 1}, {}):
            h = hashlib.sha256(os.urandom(8)).digest()
            hmac_input = {1: key_agreement, 2: salt_enc, 3: salt_auth, **extra}
            response = ctap.get_assertion("example.com", h, [{"type": "public-key", "id": state["a"]}],
                                          {"hmac-secret": hmac_input})
            outputs.append(protocol.decrypt(shared, response.auth_data.extensions["hmac-secret"]))
        bad_auth = bytes([salt_auth[0] ^ 1]) + salt_auth[1:]
        h = hashlib.sha256(os.urandom(8)).digest()
        bad = expect_error(CtapError.ERR.PIN_AUTH_INVALID, ctap.get_assertion, "example.com", h, None,
                           {"hmac-secret": {1: key_agreement, 2: salt_enc, 3: bad_auth, 4: 1}})
        short_enc = protocol.encrypt(shared, b"\x00" * 16)
        short = expect_error(CtapError.ERR.INVALID_LENGTH, ctap.get_assertion, "example.com", h, None,
                             {"hmac-secret": {1: key_agreement, 2: short_enc,
                                              3: protocol.authenticate(shared, short_enc), 4: 1}})
        return {"equalsProtocolTwo": outputs[0] == state["noUV"], "defaultIsOne": outputs[1] == outputs[0],
                "badSaltAuth": bad, "shortSalt": short}

    def min_pin_length():
        protocol = PinProtocolV2()
        token = ClientPin(ctap, protocol).get_pin_token(PIN, PERM.AUTHENTICATOR_CFG)
        Config(ctap, protocol, token).set_min_pin_length(rp_ids=["example.com"])
        _, listed = register("example.com", b"\x05" * 16, rk="discouraged", uv="required",
                             extensions={"minPinLength": True})
        _, unlisted = register("example.org", b"\x06" * 16, rk="discouraged", uv="required",
                               extensions={"minPinLength": True})
        return {"listed": (listed.extensions or {}).get("minPinLength"),
                "unlisted": (unlisted.extensions or {}).get("minPinLength")}

    steps = [("getInfo", info), ("registerPRF", register_prf), ("prfWithoutUV", prf_without_uv),
             ("hmacSecretWithoutUV", hmac_secret_without_uv), ("credBlob", cred_blob),
             ("nonDiscoverablePRF", non_discoverable_prf), ("credProtectWithoutUV", cred_protect_without_uv),
             ("excludeWithoutUV", exclude_without_uv), ("setPIN", set_pin), ("prfWithUV", with_uv),
             ("largeBlob", large_blob), ("credProtectWithUV", cred_protect_with_uv), ("enumerateCredProtect", enumerate_levels),
             ("protocolOne", protocol_one), ("minPinLength", min_pin_length)]
    for name, step in steps:
        run_step(name, step)

    try:
        dev.close()
    except Exception:  # noqa: BLE001
        pass
    verdict("summary", base.failures == 0, failures=base.failures)
    return 0 if base.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
