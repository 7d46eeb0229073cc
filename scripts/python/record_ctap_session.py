#!/usr/bin/env python3
"""Runs one of the python-fido2 checks in this directory and records the CTAP2 commands it
sends (and the key's replies) for the `virtual-key` fuzz target's seeds.

    /work/venv/bin/python3 scripts/python/record_ctap_session.py OUT.json fido2_ctap21_check.py --udp 8111

Writes OUT.json: {"script": ..., "commands": [{"request": hex, "reply": hex}, ...],
"plaintexts": {ciphertext hex: plaintext hex}}. The plaintexts are what python-fido2 encrypted
under its PIN/UV shared secrets (new PINs, PIN hashes, hmac-secret salts), so that
scripts/fuzz-targets.py can turn the recorded commands into ones the fuzz harness completes
with its own shared secrets (the recorded ones belong to another key's ECDH).
"""

import json
import os
import runpy
import sys

from fido2.hid import CTAPHID, CtapHidDevice
from fido2.ctap2 import pin as pin_module


def main() -> int:
    out, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    commands, plaintexts = [], {}
    call = CtapHidDevice.call

    def recording_call(self, cmd, data=b"", *rest, **kw):
        reply = call(self, cmd, data, *rest, **kw)
        if cmd == CTAPHID.CBOR:
            commands.append({"request": bytes(data).hex(), "reply": bytes(reply).hex()})
        return reply

    CtapHidDevice.call = recording_call
    for cls in (pin_module.PinProtocolV1, pin_module.PinProtocolV2):
        def recording_encrypt(self, key, plaintext, _encrypt=cls.encrypt):
            ciphertext = _encrypt(self, key, plaintext)
            plaintexts[bytes(ciphertext).hex()] = bytes(plaintext).hex()
            return ciphertext
        cls.encrypt = recording_encrypt

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.argv = [os.path.join(here, script)] + args
    status = 0
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as e:
        status = e.code or 0
    with open(out, "w") as f:
        json.dump({"script": " ".join([script] + args), "commands": commands, "plaintexts": plaintexts}, f, indent=0)
    print(f"recorded {len(commands)} CTAP2 commands to {out}", file=sys.stderr)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
