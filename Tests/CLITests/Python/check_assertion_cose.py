"""Checks a `securitykey authenticate --json` output (stdin) with python-fido2's fido2.cose class
for the credential's COSE key, taken from a `register --json` output (any algorithm
python-fido2 knows: ES256/384/512, ES256K, EdDSA, RS256, PS256, ML-DSA).

usage: check_assertion_cose.py REGISTRATION_JSON_FILE
"""
import hashlib
import json
import sys

from fido2.cose import CoseKey
from fido2.utils import websafe_decode
from fido2.webauthn import AttestationObject, AuthenticatorData, CollectedClientData

registration = json.load(open(sys.argv[1]))
credential = AttestationObject(websafe_decode(registration["response"]["attestationObject"])).auth_data.credential_data
assertion = json.load(sys.stdin)
client_data = CollectedClientData(websafe_decode(assertion["response"]["clientDataJSON"]))
auth_data = AuthenticatorData(websafe_decode(assertion["response"]["authenticatorData"]))
signature = websafe_decode(assertion["response"]["signature"])
key = CoseKey.parse(credential.public_key)
key.verify(bytes(auth_data) + client_data.hash, signature)
assert auth_data.rp_id_hash == hashlib.sha256(assertion["rpId"].encode()).digest()
print(json.dumps({
    "verified": True,
    "class": type(key).__name__,
    "alg": key[3],
    "challenge": client_data.challenge.hex(),
    "userPresent": auth_data.is_user_present(),
}))
