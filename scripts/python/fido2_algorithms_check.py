#!/usr/bin/env python3
"""Cross-checks every COSE algorithm a key offers with python-fido2: for each algorithm named on
the command line (COSE numbers), Fido2Client registers a credential asking for that algorithm
alone and authenticates with it, and python-fido2's Fido2Server verifies both (the attestation
statement with python-fido2's own packed verifier, the signatures with its fido2.cose classes).

Prints one JSON verdict per algorithm and exits non-zero if any fails. The key must have no PIN.

    .venv/bin/python3 scripts/python/fido2_algorithms_check.py --udp 8111 -7 -8 -257
"""

from __future__ import annotations

import argparse
import json
import sys

from fido2 import cose
from fido2.attestation import Attestation
from fido2.client import DefaultClientDataCollector, Fido2Client, UserInteraction
from fido2.server import Fido2Server
from fido2.webauthn import (
    AttestationConveyancePreference,
    PublicKeyCredentialParameters,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialType,
    PublicKeyCredentialUserEntity,
)

from udp_hid import udp_device

RP_ID = "example.org"
ORIGIN = "https://example.org"


class NoPrompts(UserInteraction):
    """The key has no PIN and approves presence by itself."""


def verify_attestation(attestation_object, client_data_hash) -> None:
    """python-fido2's own verifier for the statement's format (packed: x5c or self attestation)."""
    verifier = Attestation.for_type(attestation_object.fmt)()
    verifier.verify(attestation_object.att_stmt, attestation_object.auth_data, client_data_hash)


def check(client: Fido2Client, alg: int, index: int) -> dict:
    key_class = cose.CoseKey.for_alg(alg)
    if key_class is cose.UnsupportedKey:
        return {"alg": alg, "ok": False, "error": "python-fido2 has no COSE class for it"}
    server = Fido2Server(
        PublicKeyCredentialRpEntity(name="Example", id=RP_ID),
        attestation=AttestationConveyancePreference.DIRECT,
        verify_origin=lambda origin: origin == ORIGIN,
        verify_attestation=verify_attestation,
    )
    server.allowed_algorithms = [
        PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=alg)
    ]
    user = PublicKeyCredentialUserEntity(id=bytes([index + 1]) * 8, name=f"user{index}")
    options, state = server.register_begin(user, user_verification="discouraged")
    registration = client.make_credential(options["publicKey"])
    auth_data = server.register_complete(state, registration)
    credential = auth_data.credential_data
    attestation = registration.response.attestation_object

    options, state = server.authenticate_begin([credential], user_verification="discouraged")
    selection = client.get_assertion(options["publicKey"])
    assertion = selection.get_response(0)
    server.authenticate_complete(state, [credential], assertion)

    return {
        "alg": alg,
        "ok": True,
        "class": type(credential.public_key).__name__,
        "keyType": credential.public_key[1],
        "keyAlg": credential.public_key[3],
        "fmt": attestation.fmt,
        "attStmtAlg": attestation.att_stmt.get("alg"),
        "selfAttestation": "x5c" not in attestation.att_stmt,
        "signatureLength": len(assertion.response.signature),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--udp", type=int, required=True, help="UDP port of a CTAPHID-over-UDP key on 127.0.0.1")
    parser.add_argument("algorithms", nargs="+", type=int, help="COSE algorithm numbers")
    args = parser.parse_args()

    client = Fido2Client(
        udp_device(args.udp), client_data_collector=DefaultClientDataCollector(ORIGIN), user_interaction=NoPrompts()
    )
    failed = False
    for index, alg in enumerate(args.algorithms):
        try:
            result = check(client, alg, index)
        except Exception as e:  # noqa: BLE001 - every failure becomes a verdict
            result = {"alg": alg, "ok": False, "error": f"{type(e).__name__}: {e}"}
        result["step"] = str(alg)
        failed |= not result["ok"]
        print(json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
