#!/usr/bin/env python3
"""python-fido2's side of securitykey-bench's fleet scenario: find K keys and run getInfo on each,
with one thread per key (python-fido2's API is blocking).

    fido2_fleet.py --repeat R udp:127.0.0.1:P1 udp:127.0.0.1:P2 ...   keys on UDP ports
    fido2_fleet.py --repeat R --pcsc                                  every PC/SC reader

After three warm-ups it prints {"warm":true}, measures R times and prints one JSON line
{"times_ns":[...R...],"found":[...R...],"cpu_ns":N} (found = keys that answered getInfo; cpu_ns =
this process's CPU time over the R rounds), or {"error":"..."}; then it waits for a line or the end
of its input before it exits, so that the orchestrator can read its peak memory (/proc/PID/status).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fido2.ctap2 import Ctap2  # noqa: E402
from fido2_driver import open_device  # noqa: E402


def probe_udp(uri: str) -> bool:
    device = open_device(uri)  # CTAPHID_INIT
    try:
        return Ctap2(device).info is not None  # Ctap2() runs getInfo
    finally:
        device.close()


def probe_reader(reader) -> bool:
    from fido2.pcsc import CtapPcscDevice

    device = CtapPcscDevice(reader.createConnection(), reader.name)  # connect, SELECT
    try:
        return Ctap2(device).info is not None
    finally:
        device.close()


def in_threads(work, items) -> int:
    results = [False] * len(items)

    def run(index, item):
        try:
            results[index] = work(item)
        except Exception:  # noqa: BLE001 - an empty reader or a silent key is not found
            results[index] = False

    threads = [threading.Thread(target=run, args=(i, item)) for i, item in enumerate(items)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(results)


def once(args) -> int:
    if args == ["--pcsc"]:
        from smartcard.System import readers

        return in_threads(probe_reader, list(readers()))  # listing is part of the measured time
    return in_threads(probe_udp, args)


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[0] != "--repeat" or not argv[1].isdigit():
        print("usage: fido2_fleet.py --repeat R (--pcsc | URI...)", file=sys.stderr)
        return 2
    repeat, targets = int(argv[1]), argv[2:]
    try:
        for _ in range(3):
            once(targets)
        print(json.dumps({"warm": True}), flush=True)
        times, found = [], []
        cpu_start = time.process_time_ns()
        for _ in range(repeat):
            start = time.perf_counter_ns()
            found.append(once(targets))
            times.append(time.perf_counter_ns() - start)
        cpu = time.process_time_ns() - cpu_start
    except Exception as e:  # noqa: BLE001 - reported to the orchestrator
        print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}), flush=True)
        return 1
    print(json.dumps({"times_ns": times, "found": found, "cpu_ns": cpu}), flush=True)
    sys.stdin.readline()
    return 0


if __name__ == "__main__":
    sys.exit(main())
