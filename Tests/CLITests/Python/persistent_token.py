"""python-fido2's view of a CTAP 2.2 key's persistent PinUvAuthToken over CTAPHID-over-UDP.

Usage: python3 -c "$(cat persistent_token.py)" PORT < PIN
Obtains a token with the pcmr permission (ClientPin.PERMISSION.PERSISTENT_CREDENTIAL_MGMT) with
the PIN, decrypts encIdentifier and encCredStoreState with python-fido2's Info.get_identifier and
Info.get_cred_store_state, reads the credentials metadata and RPs with it, and tries to delete a
credential with it. Prints {"perCredMgmtRO", "identifier", "identifierAgain", "encIdentifierDiffers",
"credStoreState", "existing", "rpIds", "deleteWithPersistentToken"}, byte strings in hex.
"""

import json
import sys

from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.pin import ClientPin, PinProtocolV2
from udp_hid import udp_device


port = int(sys.argv[1])
pin = sys.stdin.readline().rstrip("\n")
device = udp_device(port)
ctap = Ctap2(device)
protocol = PinProtocolV2()
token = ClientPin(ctap, protocol).get_pin_token(pin, ClientPin.PERMISSION.PERSISTENT_CREDENTIAL_MGMT)
first = ctap.get_info()
second = ctap.get_info()
manager = CredentialManagement(ctap, protocol, token)
metadata = manager.get_metadata()
rps = manager.enumerate_rps()
rp_ids = [rp[CredentialManagement.RESULT.RP]["id"] for rp in rps]
delete = "succeeded"
if rps:
    creds = manager.enumerate_creds(rps[0][CredentialManagement.RESULT.RP_ID_HASH])
    try:
        manager.delete_cred(creds[0][CredentialManagement.RESULT.CREDENTIAL_ID])
    except CtapError as e:
        delete = e.code.name
identifier = first.get_identifier(token)
state = first.get_cred_store_state(token)
print(json.dumps({
    "perCredMgmtRO": CredentialManagement.is_readonly_supported(first),
    "identifier": identifier.hex() if identifier else None,
    "identifierAgain": (second.get_identifier(token) or b"").hex(),
    "encIdentifierDiffers": first.enc_identifier != second.enc_identifier,
    "credStoreState": state.hex() if state else None,
    "existing": metadata[CredentialManagement.RESULT.EXISTING_CRED_COUNT],
    "rpIds": rp_ids,
    "deleteWithPersistentToken": delete,
}))
