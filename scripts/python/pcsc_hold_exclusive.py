#!/usr/bin/env python3
"""Holds the card in a PC/SC reader with an exclusive connection until stdin closes, so tests
can check how another client's sharing violation is reported. Prints "held" once it holds it."""

import sys

from smartcard.scard import SCARD_SHARE_EXCLUSIVE
from smartcard.System import readers

name = sys.argv[1]
matches = [r for r in readers() if str(r) == name]
if not matches:
    print("no reader", flush=True)
    sys.exit(1)
connection = matches[0].createConnection()
connection.connect(mode=SCARD_SHARE_EXCLUSIVE)
print("held", flush=True)
sys.stdin.read()
connection.disconnect()
