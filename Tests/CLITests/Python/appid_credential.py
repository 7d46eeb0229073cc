"""Makes a credential under a legacy U2F AppID, as a U2F site's were: python-fido2's raw
authenticatorMakeCredential with the AppID URL as the RP ID, over CTAPHID-over-UDP.

Usage: python3 -c "$(cat appid_credential.py)" PORT APPID
Prints {"credentialId": base64url, "appIdHash": hex of the rpIdHash the key stored}.
"""

import hashlib
import json
import os
import sys

from fido2.ctap2 import Ctap2
from udp_hid import b64url, udp_device


port = int(sys.argv[1])
app_id = sys.argv[2]
ctap = Ctap2(udp_device(port))
response = ctap.make_credential(
    os.urandom(32),
    {"id": app_id, "name": app_id},
    {"id": b"legacy-user", "name": "legacy"},
    [{"type": "public-key", "alg": -7}],
)
auth_data = response.auth_data
print(json.dumps({
    "credentialId": b64url(auth_data.credential_data.credential_id),
    "appIdHash": auth_data.rp_id_hash.hex(),
}))
assert auth_data.rp_id_hash == hashlib.sha256(app_id.encode()).digest()
