#!/usr/bin/env python3
"""python-fido2's view of a card on a PC/SC reader, below CTAP2: opens it with
`fido2.pcsc.CtapPcscDevice` (SELECT + getInfo probe), then sends raw NFCCTAP_MSG payloads and a
U2F APDU, chained and extended, and prints what came back as one JSON object.

Used by the VPCD tests with an echo handler; takes the payloads as hex arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from fido2.hid import CTAPHID
from fido2.pcsc import CtapPcscDevice


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reader", required=True)
    parser.add_argument("--cbor", action="append", default=[], help="hex payload for NFCCTAP_MSG")
    parser.add_argument("--u2f", action="append", default=[], help="hex U2F APDU")
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()

    deadline = time.monotonic() + args.timeout
    devices = []
    while not devices and time.monotonic() < deadline:
        devices = list(CtapPcscDevice.list_devices(args.reader))
        if not devices:
            time.sleep(0.1)
    if not devices:
        print(json.dumps({"error": "no device"}))
        return 1
    dev = devices[0]
    out = {"capabilities": int(dev.capabilities), "atr": dev.get_atr().hex(), "chained": {}, "extended": {}}
    for mode in ("chained", "extended"):
        dev.use_ext_apdu = mode == "extended"
        out[mode]["cbor"] = [dev.call(CTAPHID.CBOR, bytes.fromhex(p)).hex() for p in args.cbor]
        out[mode]["u2f"] = [dev.call(CTAPHID.MSG, bytes.fromhex(p)).hex() for p in args.u2f]
    dev.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
