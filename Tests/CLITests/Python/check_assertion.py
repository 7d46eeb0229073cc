"""Checks a `securitykey authenticate --json` output (stdin) with cryptography, using the
public key (SPKI) of a `register --json` output.

usage: check_assertion.py SPKI_B64URL
"""
import hashlib
import json
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_der_public_key
from fido2.utils import websafe_decode
from fido2.webauthn import AuthenticatorData, CollectedClientData

assertion = json.load(sys.stdin)
key = load_der_public_key(websafe_decode(sys.argv[1]))
client_data = CollectedClientData(websafe_decode(assertion["response"]["clientDataJSON"]))
auth_data = AuthenticatorData(websafe_decode(assertion["response"]["authenticatorData"]))
signature = websafe_decode(assertion["response"]["signature"])
key.verify(signature, bytes(auth_data) + client_data.hash, ec.ECDSA(hashes.SHA256()))
assert auth_data.rp_id_hash == hashlib.sha256(assertion["rpId"].encode()).digest()
print(json.dumps({
    "verified": True,
    "type": client_data.type,
    "challenge": client_data.challenge.hex(),
    "origin": client_data.origin,
    "signCount": auth_data.counter,
    "userPresent": auth_data.is_user_present(),
    "userVerified": auth_data.is_user_verified(),
}))
