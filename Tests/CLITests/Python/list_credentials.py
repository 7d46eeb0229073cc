"""python-fido2's view of a CTAP 2.1 key's discoverable credentials over CTAPHID-over-UDP.

Usage: python3 -c "$(cat list_credentials.py)" PORT < PIN
Prints {"existing", "remaining", "credentials": [{rpId, userName, displayName, credentialId}]}
with credential IDs in base64url, as python-fido2's CredentialManagement reads them.
"""

import json
import sys

from fido2.ctap2 import Ctap2
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.pin import ClientPin, PinProtocolV2
from udp_hid import b64url, udp_device


port = int(sys.argv[1])
pin = sys.stdin.readline().rstrip("\n")
device = udp_device(port)
ctap = Ctap2(device)
protocol = PinProtocolV2()
token = ClientPin(ctap, protocol).get_pin_token(pin, ClientPin.PERMISSION.CREDENTIAL_MGMT)
manager = CredentialManagement(ctap, protocol, token)
metadata = manager.get_metadata()
credentials = []
for rp in manager.enumerate_rps():
    entity = rp[CredentialManagement.RESULT.RP]
    for credential in manager.enumerate_creds(rp[CredentialManagement.RESULT.RP_ID_HASH]):
        user = credential[CredentialManagement.RESULT.USER]
        credentials.append({
            "rpId": entity["id"],
            "userName": user.get("name"),
            "displayName": user.get("displayName"),
            "credentialId": b64url(credential[CredentialManagement.RESULT.CREDENTIAL_ID]["id"]),
        })
print(json.dumps({
    "existing": metadata[CredentialManagement.RESULT.EXISTING_CRED_COUNT],
    "remaining": metadata[CredentialManagement.RESULT.MAX_REMAINING_COUNT],
    "credentials": credentials,
}))
