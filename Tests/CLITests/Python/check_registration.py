"""Checks a `securitykey register --json` output (stdin) with python-fido2 and cryptography.

usage: check_registration.py ROOT_PEM
Prints what python-fido2 found; exits non-zero when anything does not verify.
"""
import hashlib
import json
import sys

from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_der_public_key
from fido2.attestation import Attestation
from fido2.utils import websafe_decode
from fido2.webauthn import AttestationObject, CollectedClientData

reg = json.load(sys.stdin)
client_data = CollectedClientData(websafe_decode(reg["response"]["clientDataJSON"]))
att = AttestationObject(websafe_decode(reg["response"]["attestationObject"]))
result = Attestation.for_type(att.fmt)().verify(att.att_stmt, att.auth_data, client_data.hash)
cred = att.auth_data.credential_data
root = x509.load_pem_x509_certificate(open(sys.argv[1], "rb").read())
chained = False
if result.trust_path:
    leaf = x509.load_der_x509_certificate(result.trust_path[0])
    leaf.verify_directly_issued_by(root)
    chained = True
# The SPKI the CLI printed is the COSE key python-fido2 parsed from the authenticator data.
spki = load_der_public_key(websafe_decode(reg["response"]["publicKey"]))
cose = cred.public_key
assert dict(type(cose).from_cryptography_key(spki)) == dict(cose), "publicKey differs from the COSE key"
assert reg["response"]["publicKeyAlgorithm"] == cose[3]
assert websafe_decode(reg["rawId"]) == cred.credential_id
assert att.auth_data.rp_id_hash == hashlib.sha256(reg["rpId"].encode()).digest()
print(json.dumps({
    "fmt": att.fmt,
    "attestationType": result.attestation_type.name,
    "chainedToRoot": chained,
    "aaguid": str(cred.aaguid),
    "challenge": client_data.challenge.hex(),
    "origin": client_data.origin,
    "type": client_data.type,
    "userVerified": att.auth_data.is_user_verified(),
}))
