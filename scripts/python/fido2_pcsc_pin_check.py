#!/usr/bin/env python3
"""Cross-checks an authenticator's clientPIN on a PC/SC reader with python-fido2's ClientPin:
set PIN, change PIN, a wrong PIN (attempts left), PIN/UV auth tokens with permissions, and
makeCredential / getAssertion with user verification, verifying the signatures.

The key must start without a PIN. Prints one JSON verdict per step; exits non-zero if any fails.

    .venv/bin/python3 scripts/python/fido2_pcsc_pin_check.py --reader "Virtual PCD 00 00" [--protocol 1|2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

from fido2.attestation import Attestation
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.pin import ClientPin, PinProtocolV1, PinProtocolV2

from fido2_pcsc_check import find_device, run_step, verdict
import fido2_pcsc_check as base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", default="Virtual PCD")
    parser.add_argument("--rp-id", default="example.com")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--protocol", type=int, choices=[1, 2], default=2)
    args = parser.parse_args()

    dev = find_device(args.reader, args.timeout)
    ctap2 = Ctap2(dev)
    protocol = PinProtocolV2() if args.protocol == 2 else PinProtocolV1()
    client_pin = ClientPin(ctap2, protocol)
    state: dict = {}
    perm = ClientPin.PERMISSION

    def options():
        info = ctap2.get_info()
        if info.options.get("clientPin") is not False:
            raise AssertionError(f"a fresh key must report clientPin false, got {info.options}")
        if args.protocol not in info.pin_uv_protocols:
            raise AssertionError(f"protocol {args.protocol} not in {info.pin_uv_protocols}")
        return {"pin_uv_protocols": info.pin_uv_protocols}

    def set_pin():
        client_pin.set_pin("1234")
        info = ctap2.get_info()
        if info.options.get("clientPin") is not True:
            raise AssertionError("clientPin is not true after setPIN")
        retries, _ = client_pin.get_pin_retries()
        if retries != 8:
            raise AssertionError(f"expected 8 retries after setPIN, got {retries}")
        return {"retries": retries}

    def change_pin():
        client_pin.change_pin("1234", "98765")
        return {}

    def wrong_pin():
        try:
            client_pin.get_pin_token("1234", perm.GET_ASSERTION, args.rp_id)
        except CtapError as e:
            if e.code != CtapError.ERR.PIN_INVALID:
                raise AssertionError(f"expected PIN_INVALID for the old PIN, got {e.code.name}")
            retries, _ = client_pin.get_pin_retries()
            if retries != 7:
                raise AssertionError(f"expected 7 retries after one wrong PIN, got {retries}")
            return {"error": e.code.name, "retries": retries}
        raise AssertionError("the old PIN was accepted after changePIN")

    def register():
        token = client_pin.get_pin_token("98765", perm.MAKE_CREDENTIAL, args.rp_id)
        retries, _ = client_pin.get_pin_retries()
        if retries != 8:
            raise AssertionError(f"a correct PIN must restore 8 retries, got {retries}")
        cdh = hashlib.sha256(os.urandom(32)).digest()
        user = {"id": os.urandom(16), "name": "alice@example.com", "displayName": "Alice"}
        response = ctap2.make_credential(
            cdh, {"id": args.rp_id, "name": "Example"}, user, [{"type": "public-key", "alg": -7}],
            options={"rk": True}, pin_uv_param=protocol.authenticate(token, cdh),
            pin_uv_protocol=protocol.VERSION)
        if not response.auth_data.is_user_verified():
            raise AssertionError("the UV flag is not set on a makeCredential with a PIN token")
        Attestation.for_type(response.fmt)().verify(response.att_stmt, response.auth_data, cdh)
        state["credential"] = response.auth_data.credential_data
        state["user"] = user
        return {"fmt": response.fmt, "uv": True}

    def sign_in():
        token = client_pin.get_pin_token("98765", perm.GET_ASSERTION, args.rp_id)
        cdh = hashlib.sha256(os.urandom(32)).digest()
        response = ctap2.get_assertion(
            args.rp_id, cdh, None, pin_uv_param=protocol.authenticate(token, cdh),
            pin_uv_protocol=protocol.VERSION)
        if not response.auth_data.is_user_verified():
            raise AssertionError("the UV flag is not set on a getAssertion with a PIN token")
        response.verify(cdh, state["credential"].public_key)
        if response.user.get("id") != state["user"]["id"]:
            raise AssertionError("the discoverable assertion returned another user")
        return {"uv": True}

    def wrong_rp():
        token = client_pin.get_pin_token("98765", perm.GET_ASSERTION, args.rp_id)
        cdh = hashlib.sha256(os.urandom(32)).digest()
        try:
            ctap2.get_assertion("other.example", cdh, None,
                                pin_uv_param=protocol.authenticate(token, cdh),
                                pin_uv_protocol=protocol.VERSION)
        except CtapError as e:
            if e.code != CtapError.ERR.PIN_AUTH_INVALID:
                raise AssertionError(f"expected PIN_AUTH_INVALID for a token of another RP, got {e.code.name}")
            return {"error": e.code.name}
        raise AssertionError("a token bound to one RP signed for another")

    for name, step in [("getInfo", options), ("setPIN", set_pin), ("changePIN", change_pin),
                       ("wrongPIN", wrong_pin), ("makeCredential(uv)", register),
                       ("getAssertion(uv)", sign_in), ("tokenBoundToRP", wrong_rp)]:
        run_step(name, step)

    try:
        dev.close()
    except Exception:  # noqa: BLE001
        pass
    verdict("summary", base.failures == 0, failures=base.failures)
    return 0 if base.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
