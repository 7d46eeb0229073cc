#!/usr/bin/env python3
"""Cross-checks a CTAP 2.1 authenticator with python-fido2's CredentialManagement and Config:
metadata, RP and credential enumeration, delete, update user, setMinPINLength with a forced PIN
change and the minPinLength extension, alwaysUv, and enterprise attestation. The key must start
without a PIN, without discoverable credentials and with enterprise attestation disabled.

With --preview it checks a FIDO_2_1_PRE key instead: credentialMgmtPreview (command 0x41) with a
legacy PIN token.

Prints one JSON verdict per step (python-fido2's view of the key) and exits non-zero if any fails.

    .venv/bin/python3 scripts/python/fido2_ctap21_check.py --reader "Virtual PCD 00 00"
    .venv/bin/python3 scripts/python/fido2_ctap21_check.py --udp 8111 [--preview]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

from fido2.attestation import Attestation
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.config import Config
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.pin import ClientPin, PinProtocolV2

from fido2_pcsc_check import run_step, verdict
from udp_hid import udp_device
import fido2_pcsc_check as base

PIN = "1234"
RESULT = CredentialManagement.RESULT
PERM = ClientPin.PERMISSION


def open_device(args):
    if args.udp is not None:
        return udp_device(args.udp)
    return base.find_device(args.reader, args.timeout)


def expect_error(code, fn, *a, **kw):
    """Runs fn and returns the CTAP error name it raised; fails when it succeeds or raises another."""
    try:
        fn(*a, **kw)
    except CtapError as e:
        if e.code != code:
            raise AssertionError(f"expected {code.name}, got {e.code.name}")
        return e.code.name
    raise AssertionError(f"expected {code.name}, but the request succeeded")


def cdh() -> bytes:
    return hashlib.sha256(os.urandom(32)).digest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", default="Virtual PCD")
    parser.add_argument("--udp", type=int, default=None, help="UDP port of a CTAPHID-over-UDP key on 127.0.0.1")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--preview", action="store_true")
    args = parser.parse_args()

    dev = open_device(args)
    ctap = Ctap2(dev)
    protocol = PinProtocolV2()
    client_pin = ClientPin(ctap, protocol)
    state: dict = {}

    def register(rp_id, rp_name, user_id, name, display_name, extensions=None, rk=True, ep=None):
        permissions = None if args.preview else PERM.MAKE_CREDENTIAL
        token = client_pin.get_pin_token(state["pin"], permissions, None if args.preview else rp_id)
        h = cdh()
        response = ctap.make_credential(
            h, {"id": rp_id, "name": rp_name}, {"id": user_id, "name": name, "displayName": display_name},
            [{"type": "public-key", "alg": -7}], extensions=extensions, options={"rk": rk},
            pin_uv_param=protocol.authenticate(token, h), pin_uv_protocol=protocol.VERSION,
            enterprise_attestation=ep)
        Attestation.for_type(response.fmt)().verify(response.att_stmt, response.auth_data, h)
        return response

    def credman(rp_id=None):
        if args.preview:
            token = client_pin.get_pin_token(state["pin"])
        else:
            token = client_pin.get_pin_token(state["pin"], PERM.CREDENTIAL_MGMT, rp_id)
        return CredentialManagement(ctap, protocol, token)

    def config():
        token = client_pin.get_pin_token(state["pin"], PERM.AUTHENTICATOR_CFG)
        return Config(ctap, protocol, token)

    def info():
        i = ctap.get_info()
        return {
            "versions": i.versions, "options": i.options, "remaining": i.remaining_disc_creds,
            "minPINLength": i.min_pin_length, "maxRPIDs": i.max_rpids_for_min_pin,
            "forcePINChange": i.force_pin_change, "extensions": i.extensions,
        }

    def set_pin():
        client_pin.set_pin(PIN)
        state["pin"] = PIN
        return {"clientPin": ctap.get_info().options.get("clientPin")}

    def make_credentials():
        state["creds"] = {}
        for rp_id, rp_name, user_id, name in [
            ("example.com", "Example", b"\x01" * 8, "alice"),
            ("example.com", "Example", b"\x02" * 8, "bob"),
            ("example.org", "Other", b"\x03" * 8, "carol"),
        ]:
            response = register(rp_id, rp_name, user_id, name, name.title())
            data = response.auth_data.credential_data
            state["creds"][name] = {"id": data.credential_id, "key": dict(data.public_key), "user": user_id}
        return {"ids": {n: c["id"].hex() for n, c in state["creds"].items()}}

    def metadata():
        m = credman().get_metadata()
        return {"existing": m[RESULT.EXISTING_CRED_COUNT], "remaining": m[RESULT.MAX_REMAINING_COUNT]}

    def enumerate_rps():
        rps = credman().enumerate_rps()
        out = []
        for rp in rps:
            entity = rp[RESULT.RP]
            if rp[RESULT.RP_ID_HASH] != hashlib.sha256(entity["id"].encode()).digest():
                raise AssertionError("rpIDHash is not SHA-256 of the RP ID")
            out.append({"id": entity["id"], "name": entity.get("name")})
        return {"rps": sorted(out, key=lambda r: r["id"])}

    def enumerate_creds(rp_id="example.com"):
        creds = credman().enumerate_creds(hashlib.sha256(rp_id.encode()).digest())
        out = []
        for c in creds:
            user = c[RESULT.USER]
            cred_id = c[RESULT.CREDENTIAL_ID]["id"]
            known = [n for n, s in state["creds"].items() if s["id"] == cred_id]
            if not known:
                raise AssertionError("an enumerated credential ID was never registered")
            if dict(c[RESULT.PUBLIC_KEY]) != state["creds"][known[0]]["key"]:
                raise AssertionError("the enumerated public key differs from the registered one")
            out.append({
                "credential": known[0], "userId": user["id"].hex(), "name": user.get("name"),
                "displayName": user.get("displayName"), "credProtect": c.get(RESULT.CRED_PROTECT),
            })
        return {"credentials": sorted(out, key=lambda r: r["credential"]), "total": len(creds)}

    def update_user():
        bob = state["creds"]["bob"]
        cm = credman()
        cm.update_user_info({"type": "public-key", "id": bob["id"]},
                            {"id": bob["user"], "name": "robert", "displayName": "Robert B."})
        wrong = expect_error(CtapError.ERR.INVALID_PARAMETER, credman().update_user_info,
                             {"type": "public-key", "id": bob["id"]}, {"id": b"\x09" * 8, "name": "mallory"})
        return {"wrongUserID": wrong, **enumerate_creds()}

    def delete():
        credman().delete_cred({"type": "public-key", "id": state["creds"]["carol"]["id"]})
        missing = expect_error(CtapError.ERR.NO_CREDENTIALS, credman().delete_cred,
                               {"type": "public-key", "id": state["creds"]["carol"]["id"]})
        return {"deleteAgain": missing, **metadata(), **enumerate_rps()}

    def rp_bound_token():
        cm = credman("example.com")
        refused = expect_error(CtapError.ERR.PIN_AUTH_INVALID, cm.get_metadata)
        other = expect_error(CtapError.ERR.PIN_AUTH_INVALID, credman("example.com").enumerate_creds,
                             hashlib.sha256(b"example.org").digest())
        own = credman("example.com").enumerate_creds(hashlib.sha256(b"example.com").digest())
        return {"metadata": refused, "otherRP": other, "ownRP": len(own)}

    def min_pin_length():
        config().set_min_pin_length(min_pin_length=6, rp_ids=["example.com"])
        after = info()
        blocked = expect_error(CtapError.ERR.PIN_POLICY_VIOLATION, client_pin.get_pin_token, PIN, PERM.GET_ASSERTION)
        too_short = expect_error(CtapError.ERR.PIN_POLICY_VIOLATION, client_pin.change_pin, PIN, "12345")
        client_pin.change_pin(PIN, "123456")
        state["pin"] = "123456"
        changed = info()
        lower = expect_error(CtapError.ERR.PIN_POLICY_VIOLATION, config().set_min_pin_length, min_pin_length=5)
        config().set_min_pin_length(force_change_pin=True)
        forced = info()
        forced_token = expect_error(CtapError.ERR.PIN_POLICY_VIOLATION, client_pin.get_pin_token,
                                    state["pin"], PERM.MAKE_CREDENTIAL)
        client_pin.change_pin(state["pin"], "654321")
        state["pin"] = "654321"
        listed = register("example.com", "Example", b"\x04" * 8, "dave", "Dave", extensions={"minPinLength": True},
                          rk=False)
        unlisted = register("example.org", "Other", b"\x05" * 8, "erin", "Erin", extensions={"minPinLength": True},
                            rk=False)
        return {
            "minPINLength": after["minPINLength"], "forcePINChange": after["forcePINChange"],
            "tokenBeforeChange": blocked, "tooShort": too_short, "forcePINChangeAfterChange": changed["forcePINChange"],
            "lower": lower, "forcedAgain": forced["forcePINChange"], "forcedToken": forced_token,
            "forcePINChangeAtEnd": info()["forcePINChange"],
            "extensionListed": (listed.auth_data.extensions or {}).get("minPinLength"),
            "extensionUnlisted": (unlisted.auth_data.extensions or {}).get("minPinLength"),
        }

    def always_uv():
        config().toggle_always_uv()
        on = info()["options"]
        h = cdh()
        mc = expect_error(CtapError.ERR.PUAT_REQUIRED, ctap.make_credential, h, {"id": "example.com"},
                          {"id": b"\x06" * 8, "name": "frank"}, [{"type": "public-key", "alg": -7}])
        ga = expect_error(CtapError.ERR.PUAT_REQUIRED, ctap.get_assertion, "example.com", h)
        with_token = register("example.com", "Example", b"\x06" * 8, "frank", "Frank", rk=False)
        config().toggle_always_uv()
        off = info()["options"]
        return {
            "alwaysUvOn": on.get("alwaysUv"), "makeCredUvNotRqdOn": on.get("makeCredUvNotRqd"),
            "makeCredential": mc, "getAssertion": ga, "withTokenUV": with_token.auth_data.is_user_verified(),
            "alwaysUvOff": off.get("alwaysUv"), "makeCredUvNotRqdOff": off.get("makeCredUvNotRqd"),
        }

    def enterprise_attestation():
        before = info()["options"].get("ep")
        refused = expect_error(CtapError.ERR.INVALID_PARAMETER, register, "example.com", "Example", b"\x07" * 8,
                               "gina", "Gina", rk=False, ep=2)
        config().enable_enterprise_attestation()
        after = info()["options"].get("ep")
        ea = register("example.com", "Example", b"\x07" * 8, "gina", "Gina", rk=False, ep=2)
        vendor = register("unlisted.example", "Unlisted", b"\x08" * 8, "hank", "Hank", rk=False, ep=1)
        plain = register("example.com", "Example", b"\x09" * 8, "ivy", "Ivy", rk=False)
        bad = expect_error(CtapError.ERR.INVALID_OPTION, register, "example.com", "Example", b"\x0a" * 8, "jo",
                           "Jo", rk=False, ep=3)
        return {
            "epBefore": before, "beforeEnable": refused, "epAfter": after,
            "epAtt": ea.ep_att, "epCertificate": ea.att_stmt["x5c"][0].hex(),
            "vendorUnlistedEpAtt": vendor.ep_att, "vendorCertificate": vendor.att_stmt["x5c"][0].hex(),
            "plainEpAtt": plain.ep_att, "plainCertificate": plain.att_stmt["x5c"][0].hex(), "badValue": bad,
        }

    def preview_update():
        try:
            credman().update_user_info({"type": "public-key", "id": state["creds"]["bob"]["id"]},
                                       {"id": state["creds"]["bob"]["user"], "name": "x"})
        except ValueError:
            return {"updateSupported": False}
        raise AssertionError("python-fido2 offered updateUserInformation on a preview key")

    steps = [("getInfo", info), ("setPIN", set_pin), ("makeCredentials", make_credentials),
             ("getCredsMetadata", metadata), ("enumerateRPs", enumerate_rps), ("enumerateCredentials", enumerate_creds)]
    if args.preview:
        steps += [("updateUserInformation", preview_update), ("deleteCredential", delete)]
    else:
        steps += [("updateUserInformation", update_user), ("deleteCredential", delete),
                  ("rpBoundToken", rp_bound_token), ("setMinPINLength", min_pin_length),
                  ("toggleAlwaysUv", always_uv), ("enterpriseAttestation", enterprise_attestation),
                  ("getInfoAtEnd", info)]
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
