#!/usr/bin/env python3
"""python-fido2 as a benchmark driver for securitykey-bench (Docs/Performance.md).

    fido2_driver.py --device udp:127.0.0.1:PORT      CTAPHID over UDP (64-byte reports)
    fido2_driver.py --device "pcsc:Reader Name"      CtapPcscDevice on that PC/SC reader

The line protocol every driver speaks: after opening the device it runs one getInfo and one
makeCredential (ES256, rk=false, rp "bench.example") for getAssertion's allow list and prints
{"ready":true}. Then, for each line "OP COUNT" (OP is getinfo, mc or ga) on standard input, it runs
the operation COUNT times and prints one JSON line
{"op":OP,"latencies_ns":[...],"cpu_ns":N}, cpu_ns being this process's CPU time (user+sys) over
the batch, or {"op":OP,"error":"..."}. "quit" or end of input ends it.
"""

from __future__ import annotations

import json
import socket
import sys
import time

from fido2.ctap2 import Ctap2
from fido2.hid import CtapHidDevice
from fido2.hid.base import CtapHidConnection, HidDescriptor

RP = {"id": "bench.example", "name": "Bench"}
USER = {"id": b"bench-user-0001", "name": "bench", "displayName": "Bench User"}
ES256 = [{"type": "public-key", "alg": -7}]
CLIENT_DATA_HASH = bytes(range(32))
REPORT_SIZE = 64
OPEN_SECONDS = 10.0
IO_TIMEOUT_SECONDS = 30.0


class UdpCtapHidConnection(CtapHidConnection):
    """One 64-byte CTAPHID report per datagram, to the key's port from a bound local port."""

    def __init__(self, host: str, port: int, local_port: int = 0):
        self.address = (host, port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1" if host == "127.0.0.1" else "", local_port))
        self.sock.settimeout(IO_TIMEOUT_SECONDS)

    def write_packet(self, data: bytes) -> None:
        self.sock.sendto(data, self.address)

    def read_packet(self) -> bytes:
        while True:
            data, sender = self.sock.recvfrom(REPORT_SIZE + 1)
            if sender[1] == self.address[1]:
                return data

    def close(self) -> None:
        self.sock.close()


def parse_udp(uri: str) -> tuple[str, int, int]:
    rest = uri[len("udp:"):]
    local = 0
    if "?" in rest:
        rest, query = rest.split("?", 1)
        for item in query.split("&"):
            key, _, value = item.partition("=")
            if key == "local":
                local = int(value)
    host, _, port = rest.rpartition(":")
    return host, int(port), local


def open_device(uri: str):
    if uri.startswith("udp:"):
        host, port, local = parse_udp(uri)
        connection = UdpCtapHidConnection(host, port, local)
        descriptor = HidDescriptor(uri, 0, 0, REPORT_SIZE, REPORT_SIZE, "CTAPHID over UDP", None)
        return CtapHidDevice(descriptor, connection)
    if uri.startswith("pcsc:"):
        from fido2.pcsc import CtapPcscDevice
        from smartcard.System import readers

        name = uri[len("pcsc:"):]
        deadline = time.monotonic() + OPEN_SECONDS
        last = "no reader named %r" % name
        while time.monotonic() < deadline:
            for reader in readers():
                if reader.name == name:
                    try:
                        return CtapPcscDevice(reader.createConnection(), reader.name)
                    except Exception as e:  # noqa: BLE001 - the card may not be inserted yet
                        last = "%s: %s" % (type(e).__name__, e)
            time.sleep(0.1)
        raise RuntimeError("cannot open %s within %.0f s (%s)" % (uri, OPEN_SECONDS, last))
    raise ValueError("unsupported device URI %r (udp:HOST:PORT or pcsc:READER)" % uri)


def main() -> int:
    args = sys.argv[1:]
    if len(args) != 2 or args[0] != "--device":
        print("usage: fido2_driver.py --device URI", file=sys.stderr)
        return 2
    emit = lambda obj: print(json.dumps(obj, separators=(",", ":")), flush=True)  # noqa: E731
    try:
        ctap = Ctap2(open_device(args[1]))
        ctap.get_info()
        made = ctap.make_credential(CLIENT_DATA_HASH, RP, USER, ES256, options={"rk": False})
        credential_id = made.auth_data.credential_data.credential_id
    except Exception as e:  # noqa: BLE001 - reported to the orchestrator
        emit({"ready": False, "error": "%s: %s" % (type(e).__name__, e)})
        return 1
    allow = [{"type": "public-key", "id": credential_id}]
    operations = {
        "getinfo": lambda: ctap.get_info(),
        "mc": lambda: ctap.make_credential(CLIENT_DATA_HASH, RP, USER, ES256, options={"rk": False}),
        "ga": lambda: ctap.get_assertion(RP["id"], CLIENT_DATA_HASH, allow),
    }
    emit({"ready": True})
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words == ["quit"]:
            break
        op = words[0]
        if op not in operations or len(words) != 2 or not words[1].isdigit():
            emit({"op": op, "error": "expected 'getinfo|mc|ga COUNT' or 'quit', got %r" % line.strip()})
            continue
        run = operations[op]
        latencies = []
        try:
            cpu_start = time.process_time_ns()
            for _ in range(int(words[1])):
                start = time.perf_counter_ns()
                run()
                latencies.append(time.perf_counter_ns() - start)
            cpu = time.process_time_ns() - cpu_start
        except Exception as e:  # noqa: BLE001 - reported to the orchestrator
            emit({"op": op, "error": "%s: %s" % (type(e).__name__, e)})
            continue
        emit({"op": op, "latencies_ns": latencies, "cpu_ns": cpu})
    return 0


if __name__ == "__main__":
    sys.exit(main())
