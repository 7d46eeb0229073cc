"""python-fido2's view of a CTAP 2.1 key's large blobs over CTAPHID-over-UDP.

Usage: python3 -c "$(cat large_blobs.py)" PORT ACTION ARGS... < PIN
Actions (each prints one JSON object):
  make RP USER        a discoverable credential made with the largeBlobKey extension:
                      {credentialId (base64url), largeBlobKey (hex, from makeCredential)}
  keys                {credentialId: largeBlobKey (hex)} as credential management lists them
  put CREDID HEX      fido2.ctap2.blob.LargeBlobs.put_blob with the credential's key: {}
  get CREDID          LargeBlobs.get_blob: {data: hex or null}
  raw HEX             writes HEX as the serialized array, unchanged, in fragments with an lbw
                      token (so an array that is not a CBOR array can be stored): {}
  serialized          the serialized array as read, unchecked: {serialized: hex}
"""

import base64
import hashlib
import json
import os
import struct
import sys

from fido2.ctap2 import Ctap2
from fido2.ctap2.blob import LargeBlobs
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.pin import ClientPin, PinProtocolV2
from udp_hid import b64url, udp_device


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


port = int(sys.argv[1])
action = sys.argv[2]
args = sys.argv[3:]
pin = sys.stdin.readline().rstrip("\n")
device = udp_device(port)
ctap = Ctap2(device)
protocol = PinProtocolV2()
P = ClientPin.PERMISSION


def token(permissions, rp_id=None):
    return ClientPin(ctap, protocol).get_pin_token(pin, permissions, rp_id)


def keys(tok):
    manager = CredentialManagement(ctap, protocol, tok)
    out = {}
    for rp in manager.enumerate_rps():
        for cred in manager.enumerate_creds(rp[CredentialManagement.RESULT.RP_ID_HASH]):
            key = cred.get(CredentialManagement.RESULT.LARGE_BLOB_KEY)
            if key is not None:
                out[b64url(cred[CredentialManagement.RESULT.CREDENTIAL_ID]["id"])] = key
    return out


if action == "make":
    rp_id, user = args
    client_data_hash = os.urandom(32)
    tok = token(P.MAKE_CREDENTIAL, rp_id)
    response = ctap.make_credential(
        client_data_hash,
        {"id": rp_id, "name": rp_id},
        {"id": os.urandom(16), "name": user, "displayName": user},
        [{"type": "public-key", "alg": -7}],
        extensions={"largeBlobKey": True},
        options={"rk": True},
        pin_uv_param=protocol.authenticate(tok, client_data_hash),
        pin_uv_protocol=protocol.VERSION,
    )
    credential_id = response.auth_data.credential_data.credential_id
    print(json.dumps({"credentialId": b64url(credential_id), "largeBlobKey": response.large_blob_key.hex()}))
elif action == "keys":
    print(json.dumps({k: v.hex() for k, v in keys(token(P.CREDENTIAL_MGMT)).items()}))
elif action == "put":
    credential_id, data = args
    tok = token(P.CREDENTIAL_MGMT | P.LARGE_BLOB_WRITE)
    key = keys(tok)[credential_id]
    LargeBlobs(ctap, protocol, tok).put_blob(key, bytes.fromhex(data))
    print(json.dumps({}))
elif action == "get":
    (credential_id,) = args
    key = keys(token(P.CREDENTIAL_MGMT))[credential_id]
    data = LargeBlobs(ctap).get_blob(key)
    print(json.dumps({"data": None if data is None else data.hex()}))
elif action == "raw":
    (serialized,) = args
    data = bytes.fromhex(serialized)
    tok = token(P.LARGE_BLOB_WRITE)
    fragment_length = ctap.info.max_msg_size - 64
    offset = 0
    while offset < len(data):
        fragment = data[offset : offset + fragment_length]
        message = b"\xff" * 32 + b"\x0c\x00" + struct.pack("<I", offset) + hashlib.sha256(fragment).digest()
        ctap.large_blobs(
            offset,
            set=fragment,
            length=len(data) if offset == 0 else None,
            pin_uv_param=protocol.authenticate(tok, message),
            pin_uv_protocol=protocol.VERSION,
        )
        offset += len(fragment)
    print(json.dumps({}))
elif action == "serialized":
    fragment_length = ctap.info.max_msg_size - 64
    out = b""
    while True:
        fragment = ctap.large_blobs(len(out), get=fragment_length)[1]
        out += fragment
        if len(fragment) < fragment_length:
            break
    print(json.dumps({"serialized": out.hex()}))
else:
    raise SystemExit("unknown action " + action)
