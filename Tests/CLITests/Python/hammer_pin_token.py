"""Another application on the same PC/SC card: python-fido2 over pyscard asks for a
pinUvAuthToken (and getInfo) over and over, each getPinToken voiding the token the key issued
before, until STOPFILE exists.

Usage: python3 -c "$(cat hammer_pin_token.py)" READER STOPFILE < PIN
Appends one byte to STOPFILE.tokens per token obtained, as it goes. Prints {"tokens": N, "infos": N, "refused": N}: tokens obtained, getInfo answers, and attempts
that failed (pcscd refused an APDU while another application held the card, or similar).
"""

import json
import os
import sys

from fido2.ctap2 import Ctap2
from fido2.ctap2.pin import ClientPin
from fido2.pcsc import CtapPcscDevice
from smartcard.System import readers

reader_name, stop_file = sys.argv[1], sys.argv[2]
pin = sys.stdin.readline().rstrip("\n")
counts = {"tokens": 0, "infos": 0, "refused": 0}
device = None
progress = open(stop_file + ".tokens", "wb", buffering=0)
while not os.path.exists(stop_file):
    try:
        if device is None:
            reader = next(r for r in readers() if str(r) == reader_name)
            device = CtapPcscDevice(reader.createConnection(), reader_name)
        ctap = Ctap2(device)
        counts["infos"] += 1
        ClientPin(ctap).get_pin_token(pin)
        counts["tokens"] += 1
        progress.write(b".")
        progress.flush()
    except Exception:
        # pcscd refused an APDU while another handle held the card in a transaction, or a
        # response chain was cut: try again straight away, as an impatient application would.
        counts["refused"] += 1
print(json.dumps(counts))
