"""A securitykeyd client written with jeepney (pure-python D-Bus), relying party python-fido2.

usage: daemon_client.py ADDRESS SCENARIO [ARGS...]

  ceremonies N PIN         N x (register + sign in), options from Fido2Server, each verified by it;
                           NEEDS_PIN is answered with PIN (or "-" for none)
  disconnect PIN           starts a registration, leaves the bus when NEEDS_PIN arrives
  foreign PIN              a second connection tries to answer and cancel the first's request
  cancel                   starts a registration and cancels it at NEEDS_PIN (or at once)
  select                   two discoverable credentials for one RP, then a sign-in without
                           allowCredentials: a second connection tries SelectCredential, then the
                           owner chooses the one listed second; Fido2Server verifies the response
  gdbus                    register + sign in with GLib's gdbus as the D-Bus client (no PIN on
                           the key), options from Fido2Server, each response verified by it
  cli SECURITYKEY PIN      register + sign in with `securitykey register|authenticate --via-daemon
                           --options FILE --pin-stdin --json` (UV required, so the CLI answers
                           NEEDS_PIN), options from Fido2Server, each response verified by it
  raw METHOD ORIGIN JSON   one CreateCredential/GetCredential call with the given JSON (- reads stdin)
  follow register|ID [PIN] one registration (options from Fido2Server) or a sign-in allowing only the
                           credential ID (base64url), printing each StateChanged as a JSON line as it
                           comes (flushed: a test acts on them) and then the outcome; NEEDS_PIN is
                           answered with PIN when given

Prints one JSON object; exits non-zero when the relying party does not verify.
"""
import json
import os
import sys

from fido2.server import Fido2Server
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import PublicKeyCredentialRpEntity, PublicKeyCredentialUserEntity
from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

ADDRESS = sys.argv[1]
DAEMON = DBusAddress("/org/securitykey/Daemon1", bus_name="org.securitykey.Daemon1",
                     interface="org.securitykey.Daemon1")
ORIGIN = "https://example.org"


class Call:
    """One CreateCredential/GetCredential in flight on `conn`, answering its StateChanged signals."""

    def __init__(self, conn, method, options, origin=ORIGIN):
        self.conn = conn
        self.serial = next(conn.outgoing_serial)
        conn.send(new_method_call(DAEMON, method, "sss", (origin, "", json.dumps(options))), serial=self.serial)
        self.request_id = None
        self.states = []

    def step(self, timeout=60):
        """The next message for this call: ('state', name, details) or ('reply', body) or ('error', name, text)."""
        while True:
            msg = self.conn.receive(timeout=timeout)
            h = msg.header
            if h.message_type == MessageType.signal and h.fields.get(HeaderFields.member) == "StateChanged":
                request_id, state, details = msg.body
                if state == "STARTED" and details.get("call_serial", (None, None))[1] == self.serial:
                    self.request_id = request_id
                if request_id == self.request_id:
                    self.states.append(state)
                    return ("state", state, details)
            elif h.fields.get(HeaderFields.reply_serial) == self.serial:
                if h.message_type == MessageType.error:
                    return ("error", h.fields.get(HeaderFields.error_name), msg.body[0] if msg.body else "")
                return ("reply", msg.body[0])

    def finish(self, pin):
        """Runs to the end, entering `pin` at each NEEDS_PIN; returns ('reply', json) or ('error', ...)."""
        while True:
            event = self.step()
            if event[0] == "state" and event[1] == "NEEDS_PIN":
                answer = new_method_call(DAEMON, "EnterClientPin", "ss", (self.request_id, pin))
                reply = self.conn.send_and_get_reply(answer, timeout=10)
                assert reply.header.message_type == MessageType.method_return, reply.body
            elif event[0] in ("reply", "error"):
                return event


def server():
    return Fido2Server(PublicKeyCredentialRpEntity(id="example.org", name="Example"), attestation="direct")


def ceremony(conn, pin):
    rp = server()
    user = PublicKeyCredentialUserEntity(id=os.urandom(16), name="alice", display_name="Alice")
    options, state = rp.register_begin(user, user_verification="discouraged")
    call = Call(conn, "CreateCredential", dict(options))
    kind, *rest = call.finish(pin)
    if kind != "reply":
        return {"error": rest[0], "message": rest[1]}
    states = call.states
    registration = json.loads(rest[0])
    auth_data = rp.register_complete(state, registration)
    cred = auth_data.credential_data
    options, state = rp.authenticate_begin([cred], user_verification="discouraged")
    call = Call(conn, "GetCredential", dict(options))
    kind, *rest = call.finish(pin)
    if kind != "reply":
        return {"error": rest[0], "message": rest[1]}
    signed = rp.authenticate_complete(state, [cred], json.loads(rest[0]))
    return {"verified": signed.credential_id == cred.credential_id, "states": states + call.states}


def registration_options():
    user = PublicKeyCredentialUserEntity(id=os.urandom(16), name="bob", display_name="Bob")
    return dict(server().register_begin(user, user_verification="discouraged")[0])


scenario = sys.argv[2]
conn = open_dbus_connection(bus=ADDRESS)
if scenario == "ceremonies":
    count, pin = int(sys.argv[3]), sys.argv[4]
    results = [ceremony(conn, pin) for _ in range(count)]
    print(json.dumps({"results": results}))
    sys.exit(0 if all(r.get("verified") for r in results) else 1)
elif scenario == "disconnect":
    call = Call(conn, "CreateCredential", registration_options())
    while True:
        event = call.step()
        if event[0] != "state" or event[1] == "NEEDS_PIN":
            break
    conn.close()
    print(json.dumps({"left": event[1], "requestId": call.request_id}))
elif scenario in ("foreign", "cancel"):
    call = Call(conn, "CreateCredential", registration_options())
    while True:
        event = call.step()
        if event[0] != "state" or event[1] == "NEEDS_PIN":
            break
    out = {"requestId": call.request_id, "at": event[1]}
    if scenario == "foreign":
        other = open_dbus_connection(bus=ADDRESS)
        for method, signature, args in [("EnterClientPin", "ss", (call.request_id, sys.argv[3])),
                                        ("CancelRequest", "s", (call.request_id,))]:
            reply = other.send_and_get_reply(new_method_call(DAEMON, method, signature, args), timeout=10)
            out[method] = reply.header.fields.get(HeaderFields.error_name, "ok")
        other.close()
        # The owner answers the NEEDS_PIN it received, then runs to the end.
        reply = conn.send_and_get_reply(
            new_method_call(DAEMON, "EnterClientPin", "ss", (call.request_id, sys.argv[3])), timeout=10)
        out["ownerPin"] = reply.header.fields.get(HeaderFields.error_name, "ok")
        kind, *rest = call.finish(sys.argv[3])
        out["owner"] = kind
    else:
        reply = conn.send_and_get_reply(new_method_call(DAEMON, "CancelRequest", "s", (call.request_id,)), timeout=10)
        out["cancelReply"] = reply.header.fields.get(HeaderFields.error_name, "ok")
        kind, *rest = call.finish("-")
        out["outcome"] = rest[0] if kind == "error" else kind
    print(json.dumps(out))
elif scenario == "select":
    rp = server()
    creds, handles = [], []
    for name in ("carol", "dave"):
        user = PublicKeyCredentialUserEntity(id=os.urandom(16), name=name, display_name=name.title())
        options, state = rp.register_begin(user, resident_key_requirement="required",
                                           user_verification="discouraged")
        kind, *rest = Call(conn, "CreateCredential", dict(options)).finish("-")
        if kind != "reply":
            sys.exit(json.dumps({"registration": rest}))
        creds.append(rp.register_complete(state, json.loads(rest[0])).credential_data)
        handles.append(user.id)
    options, state = rp.authenticate_begin(None, user_verification="discouraged")
    request = dict(options)
    call = Call(conn, "GetCredential", request)
    out = {"allowCredentials": len(request["publicKey"].get("allowCredentials") or [])}
    while True:
        event = call.step()
        if event[0] != "state":
            out["unexpected"] = list(event)
            break
        if event[1] != "SELECT_CREDENTIAL":
            continue
        offered = json.loads(event[2]["credentials"][1])
        out["offered"] = sorted(c["id"] for c in offered)
        out["registered"] = sorted(websafe_encode(c.credential_id) for c in creds)
        # Not the one listed first: a daemon that ignored the choice would sign with that one.
        chosen_index = [websafe_encode(c.credential_id) for c in creds].index(offered[1]["id"])
        chosen = creds[chosen_index]
        chosen_id = offered[1]["id"]
        other = open_dbus_connection(bus=ADDRESS)
        reply = other.send_and_get_reply(
            new_method_call(DAEMON, "SelectCredential", "ss", (call.request_id, chosen_id)), timeout=10)
        out["foreign"] = reply.header.fields.get(HeaderFields.error_name, "ok")
        other.close()
        reply = conn.send_and_get_reply(
            new_method_call(DAEMON, "SelectCredential", "ss", (call.request_id, chosen_id)), timeout=10)
        out["owner"] = reply.header.fields.get(HeaderFields.error_name, "ok")
        kind, *rest = call.finish("-")
        if kind != "reply":
            out["outcome"] = rest
            break
        response = json.loads(rest[0])
        signed = rp.authenticate_complete(state, creds, response)
        out["verified"] = websafe_encode(signed.credential_id)
        out["verifiedChosen"] = signed.credential_id == chosen.credential_id
        out["userHandleChosen"] = websafe_decode(response["response"]["userHandle"]) == handles[chosen_index]
        break
    out["states"] = call.states
    print(json.dumps(out, default=str))
elif scenario == "gdbus":
    import subprocess

    def gdbus(method, options):
        """One call through gdbus; its reply is a GVariant text tuple holding one string."""
        done = subprocess.run(
            ["gdbus", "call", "--address", ADDRESS, "--dest", "org.securitykey.Daemon1", "--timeout", "60",
             "--object-path", "/org/securitykey/Daemon1", "--method", "org.securitykey.Daemon1." + method,
             ORIGIN, "", json.dumps(dict(options))], capture_output=True, text=True, timeout=90)
        text = done.stdout.strip()
        if done.returncode != 0 or not (text.startswith("('") and text.endswith("',)")):
            sys.exit(json.dumps({"method": method, "stdout": text, "stderr": done.stderr}))
        # The daemon's JSON holds no quote or backslash GVariant would escape.
        return json.loads(text[2:-3])

    rp = server()
    user = PublicKeyCredentialUserEntity(id=os.urandom(16), name="erin", display_name="Erin")
    options, state = rp.register_begin(user, user_verification="discouraged")
    cred = rp.register_complete(state, gdbus("CreateCredential", options)).credential_data
    options, state = rp.authenticate_begin([cred], user_verification="discouraged")
    signed = rp.authenticate_complete(state, [cred], gdbus("GetCredential", options))
    print(json.dumps({"verified": signed.credential_id == cred.credential_id}))
elif scenario == "cli":
    import subprocess
    import tempfile

    binary, pin = sys.argv[3], sys.argv[4]

    def cli(command, options):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
            json.dump(dict(options), file)
            file.flush()
            done = subprocess.run(
                [binary, command, "--via-daemon", "--bus-address", ADDRESS, "--options", file.name, "--pin-stdin",
                 "--json"], input=pin + "\n", capture_output=True, text=True, timeout=90)
        if done.returncode != 0:
            sys.exit(json.dumps({"command": command, "status": done.returncode, "stdout": done.stdout,
                                 "stderr": done.stderr}))
        return json.loads(done.stdout), done.stderr

    rp = server()
    user = PublicKeyCredentialUserEntity(id=os.urandom(16), name="frank", display_name="Frank")
    options, state = rp.register_begin(user, user_verification="required")
    registration, _ = cli("register", options)
    cred = rp.register_complete(state, registration).credential_data
    options, state = rp.authenticate_begin([cred], user_verification="required")
    assertion, prompts = cli("authenticate", options)
    signed = rp.authenticate_complete(state, [cred], assertion)
    print(json.dumps({"verified": signed.credential_id == cred.credential_id, "registration": registration,
                      "assertion": assertion, "prompts": prompts}))
elif scenario == "raw":
    # The JSON text is sent as given, not re-encoded.
    call = Call.__new__(Call)
    call.conn, call.request_id, call.states = conn, None, []
    call.serial = next(conn.outgoing_serial)
    text = sys.stdin.read() if sys.argv[5] == "-" else sys.argv[5]
    conn.send(new_method_call(DAEMON, sys.argv[3], "sss", (sys.argv[4], "", text)), serial=call.serial)
    kind, *rest = call.finish("-")
    print(json.dumps({"kind": kind, "detail": rest}))
elif scenario == "follow":
    import time

    if sys.argv[3] == "register":
        method, options = "CreateCredential", registration_options()
    else:
        method = "GetCredential"
        options = {"challenge": websafe_encode(os.urandom(32)), "rpId": "example.org", "timeout": 30000,
                   "userVerification": "discouraged",
                   "allowCredentials": [{"type": "public-key", "id": sys.argv[3]}]}
    call = Call(conn, method, options)
    while True:
        event = call.step()
        if event[0] == "state":
            device = event[2].get("device", (None, None))[1]
            print(json.dumps({"state": event[1], "device": device, "at": time.monotonic()}), flush=True)
            if event[1] == "NEEDS_PIN" and len(sys.argv) > 4:
                answer = new_method_call(DAEMON, "EnterClientPin", "ss", (call.request_id, sys.argv[4]))
                conn.send_and_get_reply(answer, timeout=10)
            continue
        outcome = {"outcome": event[1] if event[0] == "error" else "reply", "at": time.monotonic()}
        if event[0] == "error":
            outcome["message"] = event[2]
        print(json.dumps(outcome), flush=True)
        break
else:
    sys.exit("unknown scenario " + scenario)
