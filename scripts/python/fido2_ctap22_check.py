#!/usr/bin/env python3
"""Cross-checks a CTAP 2.2 authenticator with python-fido2: its Info parses every CTAP 2.2
getInfo member, ClientPin meets a PIN complexity policy, Fido2Client makes a thirdPartyPayment
credential that credential management and getAssertion report, makeCredential's
attestationFormatsPreference picks the format, and uvCountSinceLastPinEntry counts built-in
verifications until the PIN is entered. The key must start without a PIN and without
credentials, with built-in UV, a PIN complexity policy and maxPINLength 32.

Prints one JSON verdict per step (python-fido2's view of the key) and exits non-zero if any fails.

    .venv/bin/python3 scripts/python/fido2_ctap22_check.py --udp 8111
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

from fido2.attestation import Attestation
from fido2.client import DefaultClientDataCollector, Fido2Client, UserInteraction
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.base import AttestationResponse, args as ctap_args
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.extensions import ThirdPartyPaymentExtension
from fido2.ctap2.pin import ClientPin, PinProtocolV2
from fido2.webauthn import (
    PublicKeyCredentialCreationOptions,
    PublicKeyCredentialParameters,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialType,
    PublicKeyCredentialUserEntity,
    AuthenticatorSelectionCriteria,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from fido2_ctap21_check import cdh, expect_error
from fido2_pcsc_check import run_step
from udp_hid import udp_device
import fido2_pcsc_check as base

PIN = "1357"
RESULT = CredentialManagement.RESULT
PERM = ClientPin.PERMISSION


class PinInteraction(UserInteraction):
    def request_pin(self, permissions, rp_id):
        return PIN

    def request_uv(self, permissions, rp_id):
        return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--udp", type=int, required=True, help="UDP port of a CTAPHID-over-UDP key on 127.0.0.1")
    args = parser.parse_args()

    dev = udp_device(args.udp)
    ctap = Ctap2(dev)
    protocol = PinProtocolV2()
    client_pin = ClientPin(ctap, protocol)
    state: dict = {}

    def info():
        i = ctap.get_info()
        return {
            "versions": i.versions, "extensions": i.extensions,
            "attestationFormats": i.attestation_formats,
            "uvCountSinceLastPinEntry": i.uv_count_since_pin,
            "longTouchForReset": i.long_touch_for_reset,
            "transportsForReset": i.transports_for_reset,
            "pinComplexityPolicy": i.pin_complexity_policy,
            "pinComplexityPolicyURL": (i.pin_complexity_policy_url or b"").decode(),
            "maxPINLength": i.max_pin_length,
            "authenticatorConfigCommands": i.authenticator_config_commands,
            "preferredPlatformUvAttempts": i.preferred_platform_uv_attempts,
            "uvModality": i.uv_modality,
        }

    def pin_policy():
        refused = {}
        for name, pin in [("repeated", "1111"), ("ascending", "123456"), ("descending", "98765"),
                          ("tooLong", "13" * 17)]:
            refused[name] = expect_error(CtapError.ERR.PIN_POLICY_VIOLATION, client_pin.set_pin, pin)
        client_pin.set_pin(PIN)
        return {"refused": refused, "clientPin": ctap.get_info().options.get("clientPin"),
                "retries": client_pin.get_pin_retries()[0]}

    def uv_count():
        counts = [ctap.get_info().uv_count_since_pin]
        for _ in range(2):
            client_pin.get_uv_token(PERM.GET_ASSERTION, "example.com")
            counts.append(ctap.get_info().uv_count_since_pin)
        client_pin.get_pin_token(PIN, PERM.GET_ASSERTION, "example.com")
        counts.append(ctap.get_info().uv_count_since_pin)
        return {"counts": counts}

    def payment_registration():
        client = Fido2Client(
            dev, DefaultClientDataCollector("https://example.com"), PinInteraction(),
            extensions=[ThirdPartyPaymentExtension()])
        made = {}
        for name, payment in [("pay", True), ("plain", False)]:
            options = PublicKeyCredentialCreationOptions(
                rp=PublicKeyCredentialRpEntity(id="example.com", name="Example"),
                user=PublicKeyCredentialUserEntity(id=name.encode() * 4, name=name, display_name=name),
                challenge=os.urandom(32),
                pub_key_cred_params=[PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=-7)],
                authenticator_selection=AuthenticatorSelectionCriteria(
                    resident_key=ResidentKeyRequirement.REQUIRED,
                    user_verification=UserVerificationRequirement.DISCOURAGED),
                extensions={"payment": {"isPayment": payment}},
            )
            result = client.make_credential(options)
            made[name] = result.raw_id
        state["creds"] = made
        return {"ids": {n: c.hex() for n, c in made.items()}}

    def payment_credman():
        token = client_pin.get_pin_token(PIN, PERM.CREDENTIAL_MGMT)
        creds = CredentialManagement(ctap, protocol, token).enumerate_creds(
            hashlib.sha256(b"example.com").digest())
        return {"byUser": {c[RESULT.USER]["name"]: c.get(RESULT.THIRD_PARTY_PAYMENT) for c in creds}}

    def payment_assertion():
        outputs = {}
        for name, cred_id in state["creds"].items():
            response = ctap.get_assertion(
                "example.com", cdh(), [{"type": "public-key", "id": cred_id}],
                extensions={"thirdPartyPayment": True}, options={"up": True})
            outputs[name] = (response.auth_data.extensions or {}).get("thirdPartyPayment")
        return {"outputs": outputs}

    def attestation_formats():
        chosen = {}
        for label, preference in [("none", ["none"]), ("tpmThenPacked", ["tpm", "packed"]),
                                  ("unknown", ["tpm"])]:
            token = client_pin.get_pin_token(PIN, PERM.MAKE_CREDENTIAL, "example.org")
            h = cdh()
            # python-fido2's make_credential has no attestationFormatsPreference (0x0B): sent raw.
            raw = ctap.send_cbor(Ctap2.CMD.MAKE_CREDENTIAL, ctap_args(
                h, {"id": "example.org"}, {"id": b"\x09" * 8, "name": "f"}, [{"type": "public-key", "alg": -7}],
                None, None, None, protocol.authenticate(token, h), protocol.VERSION, None, preference))
            response = AttestationResponse.from_dict(raw)
            Attestation.for_type(response.fmt)().verify(response.att_stmt, response.auth_data, h)
            chosen[label] = response.fmt
        return {"formats": chosen}

    run_step("getInfo", info)
    run_step("pinPolicy", pin_policy)
    run_step("uvCount", uv_count)
    run_step("paymentRegistration", payment_registration)
    if "creds" in state:
        run_step("paymentCredentialManagement", payment_credman)
        run_step("paymentAssertion", payment_assertion)
    run_step("attestationFormats", attestation_formats)
    return 1 if base.failures else 0


if __name__ == "__main__":
    sys.exit(main())
