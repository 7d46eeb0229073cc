#!/usr/bin/env python3
"""Cross-checks a FIDO2 authenticator on a PC/SC reader with python-fido2, an independent
implementation: getInfo, makeCredential (non-resident and resident), getAssertion (with an
allow list and discoverable), verifying the attestation and assertion signatures.

Prints one JSON verdict per step on stdout and exits non-zero if any step fails.

    scripts/pcsc-testbed.sh run -- sh -c '<start the virtual key on the vpcd reader> &
        .venv/bin/python3 scripts/python/fido2_pcsc_check.py --reader "Virtual PCD 00 00"'

The reader is matched as a substring of the PC/SC reader name (python-fido2's list_devices).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import traceback

from fido2.attestation import Attestation
from fido2.ctap2 import Ctap2
from fido2.pcsc import CtapPcscDevice
from fido2.webauthn import AuthenticatorData

ES256 = -7
EDDSA = -8

failures = 0


def verdict(step: str, ok: bool, **detail) -> None:
    global failures
    if not ok:
        failures += 1
    print(json.dumps({"step": step, "ok": ok, **detail}, default=str), flush=True)


def run_step(step: str, fn):
    try:
        detail = fn() or {}
        verdict(step, True, **detail)
        return detail
    except Exception as e:  # noqa: BLE001 - every failure becomes a verdict
        verdict(step, False, error=f"{type(e).__name__}: {e}",
                trace=traceback.format_exc(limit=3) if os.environ.get("FIDO2_CHECK_TRACE") else None)
        return None


def find_device(name: str, timeout: float) -> CtapPcscDevice:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        devices = list(CtapPcscDevice.list_devices(name))
        if devices:
            return devices[0]
        last = "no FIDO card answered on a reader matching %r" % name
        time.sleep(0.2)
    raise RuntimeError(last or "no reader")


def check_auth_data(auth_data: AuthenticatorData, rp_id: str, attested: bool) -> None:
    expected = hashlib.sha256(rp_id.encode()).digest()
    if auth_data.rp_id_hash != expected:
        raise AssertionError("rpIdHash is not SHA-256 of the RP ID")
    if not auth_data.is_user_present():
        raise AssertionError("the UP flag is not set")
    if attested and not auth_data.is_attested():
        raise AssertionError("the AT flag is not set on a makeCredential response")
    if attested and auth_data.credential_data is None:
        raise AssertionError("no attested credential data")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", default="Virtual PCD", help="substring of the reader name")
    parser.add_argument("--rp-id", default="example.com")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the card")
    parser.add_argument("--extended", action="store_true", help="use extended APDUs, not chaining")
    args = parser.parse_args()

    state: dict = {}
    rp = {"id": args.rp_id, "name": "Example RP"}

    def open_device():
        dev = find_device(args.reader, args.timeout)
        dev.use_ext_apdu = args.extended
        state["dev"] = dev
        state["ctap2"] = Ctap2(dev)
        return {"device": repr(dev), "atr": dev.get_atr().hex(), "capabilities": int(dev.capabilities)}

    if run_step("open", open_device) is None:
        return 1

    ctap2: Ctap2 = state["ctap2"]

    def get_info():
        info = ctap2.get_info()
        state["info"] = info
        if "FIDO_2_0" not in info.versions and "FIDO_2_1" not in info.versions:
            raise AssertionError(f"no FIDO_2_x version in {info.versions}")
        if len(info.aaguid) != 16:
            raise AssertionError("aaguid is not 16 bytes")
        return {"versions": info.versions, "aaguid": info.aaguid.hex(), "options": info.options,
                "algorithms": info.algorithms, "max_msg_size": info.max_msg_size}

    run_step("getInfo", get_info)

    def make_credential(rk: bool):
        def step():
            client_data_hash = hashlib.sha256(os.urandom(32)).digest()
            user = {"id": os.urandom(16), "name": "alice@example.com", "displayName": "Alice"}
            response = ctap2.make_credential(
                client_data_hash, rp, user,
                [{"type": "public-key", "alg": ES256}, {"type": "public-key", "alg": EDDSA}],
                options={"rk": True} if rk else None)
            check_auth_data(response.auth_data, args.rp_id, attested=True)
            attestation = Attestation.for_type(response.fmt)()
            result = attestation.verify(response.att_stmt, response.auth_data, client_data_hash)
            cred = response.auth_data.credential_data
            state["rk" if rk else "nonrk"] = {"id": cred.credential_id, "key": cred.public_key, "user": user}
            return {"fmt": response.fmt, "attestation_type": result.attestation_type.name,
                    "credential_id_length": len(cred.credential_id),
                    "alg": cred.public_key.ALGORITHM, "sign_count": response.auth_data.counter}
        return step

    run_step("makeCredential", make_credential(rk=False))
    run_step("makeCredential(rk)", make_credential(rk=True))

    def get_assertion(which: str, discoverable: bool):
        def step():
            cred = state.get(which)
            if cred is None:
                raise RuntimeError(f"no credential from the {which} makeCredential step")
            client_data_hash = hashlib.sha256(os.urandom(32)).digest()
            allow = None if discoverable else [{"type": "public-key", "id": cred["id"]}]
            response = ctap2.get_assertion(args.rp_id, client_data_hash, allow)
            check_auth_data(response.auth_data, args.rp_id, attested=False)
            if response.credential["id"] != cred["id"]:
                raise AssertionError("the assertion names a different credential")
            response.verify(client_data_hash, cred["key"])
            detail = {"sign_count": response.auth_data.counter}
            if discoverable:
                if not response.user or response.user.get("id") != cred["user"]["id"]:
                    raise AssertionError("a discoverable assertion must return the user id")
                detail["user_name"] = response.user.get("name")
            return detail
        return step

    run_step("getAssertion", get_assertion("nonrk", discoverable=False))
    run_step("getAssertion(rk, discoverable)", get_assertion("rk", discoverable=True))

    try:
        state["dev"].close()
    except Exception:  # noqa: BLE001
        pass
    verdict("summary", failures == 0, failures=failures)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
