"""A relying party made of python-fido2's Fido2Server, for the options-driven ceremony tests.

usage:
  webauthn_server.py register-begin STATE [UV] [RESIDENT]   prints PublicKeyCredentialCreationOptions JSON
  webauthn_server.py register-complete STATE                 reads RegistrationResponseJSON on stdin
  webauthn_server.py authenticate-begin STATE [UV] [EMPTY]   prints PublicKeyCredentialRequestOptions JSON
  webauthn_server.py authenticate-complete STATE             reads AuthenticationResponseJSON on stdin

With WEBAUTHN_EXTENSIONS set to a JSON object, the *-begin commands pass it to the server as
the options' client extension inputs (WebAuthn JSON: binary values base64url).
STATE is a JSON file holding the server's ceremony state and the registered credentials.
UV is discouraged, preferred or required; RESIDENT is "resident" for a discoverable
credential; EMPTY is "empty" to leave allowCredentials empty. The *-complete commands print
what the server verified and exit non-zero when it does not verify.
"""
import json
import os
import sys

from fido2.server import Fido2Server
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import (
    AttestedCredentialData,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialUserEntity,
)

extensions = json.loads(os.environ["WEBAUTHN_EXTENSIONS"]) if os.environ.get("WEBAUTHN_EXTENSIONS") else None
server = Fido2Server(PublicKeyCredentialRpEntity(id="example.org", name="Example"), attestation="direct")
command, path = sys.argv[1], sys.argv[2]
state = json.load(open(path)) if os.path.exists(path) else {"credentials": []}


def save():
    with open(path, "w") as f:
        json.dump(state, f)


def credentials():
    return [AttestedCredentialData(bytes.fromhex(c)) for c in state["credentials"]]


if command == "register-begin":
    uv = sys.argv[3] if len(sys.argv) > 3 else "discouraged"
    resident = len(sys.argv) > 4 and sys.argv[4] == "resident"
    user = PublicKeyCredentialUserEntity(id=os.urandom(16), name="alice@example.org", display_name="Alice")
    options, st = server.register_begin(
        user, credentials(), user_verification=uv,
        resident_key_requirement="required" if resident else "discouraged", extensions=extensions)
    state["state"] = st
    state["userId"] = websafe_encode(user.id)
    save()
    print(json.dumps(dict(options)))
elif command == "register-complete":
    response = json.load(sys.stdin)
    auth_data = server.register_complete(state["state"], response)
    cred = auth_data.credential_data
    state["credentials"].append(bytes(cred).hex())
    save()
    print(json.dumps({
        "credentialId": websafe_encode(cred.credential_id),
        "userVerified": auth_data.is_user_verified(),
        "aaguid": str(cred.aaguid),
    }))
elif command == "authenticate-begin":
    uv = sys.argv[3] if len(sys.argv) > 3 else "discouraged"
    empty = len(sys.argv) > 4 and sys.argv[4] == "empty"
    options, st = server.authenticate_begin(
        None if empty else credentials(), user_verification=uv, extensions=extensions)
    state["state"] = st
    save()
    print(json.dumps(dict(options)))
elif command == "authenticate-complete":
    response = json.load(sys.stdin)
    cred = server.authenticate_complete(state["state"], credentials(), response)
    user_handle = response["response"].get("userHandle")
    print(json.dumps({
        "verified": True,
        "credentialId": websafe_encode(cred.credential_id),
        "userHandleMatches": user_handle is None or user_handle == state.get("userId"),
    }))
else:
    sys.exit("unknown command " + command)
