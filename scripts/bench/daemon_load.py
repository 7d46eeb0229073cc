"""Load on securitykeyd: many D-Bus clients, many requests, virtual keys over UDP and PC/SC.

usage: daemon_load.py --bin DIR [--clients 200] [--requests 10000] [--udp-keys 4] [--pcsc-keys 4]
                      [--rounds 2] [--seed 1]

Run inside scripts/pcsc-testbed.sh with PCSC_TESTBED_VPCD_DEVICES >= pcsc-keys/2 (each vpcd device
has two readers). Starts a private dbus-daemon, the virtual keys (`securitykey virtual serve`, each
with PIN 123456) and `securitykeyd --address`, then runs ROUNDS rounds of REQUESTS requests spread
over CLIENTS D-Bus connections (jeepney, one asyncio task each, one request at a time each):

  - half registrations (CreateCredential), half sign-ins (GetCredential with the client's own
    credentials, registered on whichever key the daemon chose, in allowCredentials);
  - a third with userVerification "required": the daemon asks NEEDS_PIN and the client answers
    with EnterClientPin; the rest "discouraged";
  - one in ten cancelled by its caller (CancelRequest) halfway: at NEEDS_PIN, or at CONNECTED;
  - one in fifty whose caller leaves the bus at that point (the connection is closed; the client
    goes on with a new one).

Checked (a failed check makes the exit status 1): every call (CreateCredential, GetCredential,
EnterClientPin, CancelRequest) of a connection that stayed answered exactly once, with a result
or an org.securitykey.Daemon1.Error.* error (a connection's last call, ListDevices, is answered
after every earlier reply, as one sender's messages arrive in order, so a late duplicate would be
seen); a request not cancelled nor left succeeds; every key's PIN retries counter at the end
equals the start (read by `securitykey pin status` before the daemon starts and after it stops);
no key is busy in ListDevices after each round; the daemon exits 0 on SIGTERM.

Printed: requests/s, latency p50/p90/p99/max, outcomes, the daemon's RSS and open fds before,
during (median, max) and after each round, and after a settle of 5 s; --json adds a JSON line.
"""
import argparse
import asyncio
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.io.asyncio import open_dbus_connection

from load_common import footprint, percentile

DAEMON = DBusAddress("/org/securitykey/Daemon1", bus_name="org.securitykey.Daemon1",
                     interface="org.securitykey.Daemon1")
ERROR_PREFIX = "org.securitykey.Daemon1.Error."
ORIGIN = "https://load.example"
RP_ID = "load.example"
PIN = "123456"


def b64url(data):
    import base64
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# MARK: The daemon's footprint


class Sampler(threading.Thread):
    """Samples the daemon's RSS and fd count every 200 ms while `active` is set."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.samples = []
        self.active = threading.Event()
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(0.2):
            if self.active.is_set():
                try:
                    self.samples.append(footprint(self.pid))
                except OSError:
                    return


def heap_in_use(pid, log_path):
    """glibc's bytes in use (malloc_stats through gdb, printed on the daemon's stderr), or None."""
    size = os.path.getsize(log_path)
    subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (void)malloc_stats()"],
                   capture_output=True, timeout=120)
    time.sleep(0.3)
    with open(log_path) as f:
        f.seek(size)
        text = f.read()
    totals = re.findall(r"in use bytes\s*=\s*(\d+)", text)
    return int(totals[-1]) if totals else None


def mib(kib):
    return f"{kib / 1024:.1f} MiB"


# MARK: One client

class Connection:
    """A D-Bus connection whose one receiver task files every reply by serial and every
    StateChanged by request."""

    def __init__(self, conn):
        self.conn = conn
        self.replies = {}        # serial -> [Message]
        self.waiters = {}        # serial -> Future
        self.queues = {}         # call serial -> asyncio.Queue of (state, details)
        self.requests = {}       # request id -> call serial
        self.sent = {}           # serial -> method
        self.task = asyncio.create_task(self.receive())
        self.closed = False

    @classmethod
    async def open(cls, address):
        return cls(await open_dbus_connection(address))

    async def receive(self):
        try:
            while True:
                msg = await self.conn.receive()
                h = msg.header
                if h.message_type == MessageType.signal:
                    if h.fields.get(HeaderFields.member) != "StateChanged":
                        continue
                    request_id, state, details = msg.body
                    if state == "STARTED":
                        serial = details.get("call_serial", (None, None))[1]
                        self.requests[request_id] = serial
                    serial = self.requests.get(request_id)
                    if serial in self.queues:
                        self.queues[serial].put_nowait((state, details))
                elif h.message_type in (MessageType.method_return, MessageType.error):
                    serial = h.fields.get(HeaderFields.reply_serial)
                    self.replies.setdefault(serial, []).append(msg)
                    waiter = self.waiters.pop(serial, None)
                    if waiter and not waiter.done():
                        waiter.set_result(msg)
                    if serial in self.queues:
                        self.queues[serial].put_nowait(("REPLY", msg))
        except (EOFError, ConnectionError, OSError, asyncio.CancelledError):
            pass

    async def send(self, method, signature, args, follow=False):
        serial = next(self.conn.outgoing_serial)
        self.sent[serial] = method
        if follow:
            self.queues[serial] = asyncio.Queue()
        else:
            self.waiters[serial] = asyncio.get_running_loop().create_future()
        await self.conn.send(new_method_call(DAEMON, method, signature, args), serial=serial)
        return serial

    async def call(self, method, signature, args, timeout=120):
        serial = await self.send(method, signature, args)
        return await asyncio.wait_for(self.waiters[serial], timeout)

    async def close(self):
        self.closed = True
        self.task.cancel()
        try:
            await self.conn.close()
        except OSError:
            pass


def error_name(msg):
    return msg.header.fields.get(HeaderFields.error_name) if msg.header.message_type == MessageType.error else None


class Stats:
    def __init__(self):
        self.latencies = {}      # kind -> [seconds]
        self.outcomes = {}       # label -> count
        self.failures = []       # strings
        self.calls = 0           # calls checked for exactly one reply
        self.requests = 0        # CreateCredential and GetCredential calls made

    def count(self, label):
        self.outcomes[label] = self.outcomes.get(label, 0) + 1

    def fail(self, text):
        if len(self.failures) < 50:
            self.failures.append(text)
        self.count("FAILED CHECK")


def options(kind, uv, credentials):
    challenge = b64url(os.urandom(32))
    if kind == "register":
        user = os.urandom(16)
        return {"publicKey": {
            "rp": {"id": RP_ID, "name": "Load"},
            "user": {"id": b64url(user), "name": "load", "displayName": "Load"},
            "challenge": challenge,
            "pubKeyCredParams": [{"type": "public-key", "alg": -7}],
            "authenticatorSelection": {"residentKey": "discouraged", "userVerification": uv},
            "attestation": "none", "timeout": 60000}}
    return {"publicKey": {
        "rpId": RP_ID, "challenge": challenge, "userVerification": uv, "timeout": 60000,
        "allowCredentials": [{"type": "public-key", "id": c} for c in credentials]}}


async def run_client(address, plan, stats, credentials, keys):
    """Runs this client's planned requests one after the other."""
    conn = await Connection.open(address)
    connections = [conn]
    for kind, uv, action in plan:
        if kind == "signin" and not credentials:
            kind = "register"
        method = "CreateCredential" if kind == "register" else "GetCredential"
        body = json.dumps(options(kind, uv, credentials[-4:]))
        started = time.monotonic()
        stats.requests += 1
        serial = await conn.send(method, "sss", (ORIGIN, "", body), follow=True)
        queue = conn.queues[serial]
        acted = False
        reply = None
        left = False
        pins = 0
        devices = set()
        states = []
        while reply is None:
            try:
                state, details = await asyncio.wait_for(queue.get(), 120)
            except asyncio.TimeoutError:
                stats.fail(f"{method}: no reply in 120 s")
                break
            if state == "REPLY":
                reply = details
                break
            request_id = next((r for r, s in conn.requests.items() if s == serial), None)
            # Halfway: at the PIN prompt, or (no PIN) once the daemon reports the key or the wait.
            halfway = state == "NEEDS_PIN" or (uv != "required" and state != "STARTED")
            if halfway and action != "plain" and not acted:
                acted = True
                if action == "cancel":
                    await conn.send("CancelRequest", "s", (request_id,))
                    continue
                # Leaves the bus mid-request: the daemon must cancel it and free the key.
                await conn.close()
                left = True
                break
            states.append(state + (f"({details['device'][1]})" if "device" in details else ""))
            if state == "CONNECTED":
                devices.add(details.get("device", ("s", ""))[1])
            if state == "NEEDS_PIN":
                # A sign-in asks for the PIN of each key it tries; only right PINs are given, so
                # every key must say it has all its attempts.
                pins += 1
                attempts = details.get("attempts_left", ("i", -1))[1]
                if pins > keys or attempts != 8:
                    stats.fail(f"{method}: NEEDS_PIN {pins} times, attempts_left {attempts}: {' '.join(states)}")
                await conn.send("EnterClientPin", "ss", (request_id, PIN))
        if left:
            stats.count(f"{kind} left the bus")
            conn = await Connection.open(address)
            connections.append(conn)
            continue
        if reply is None:
            continue
        elapsed = time.monotonic() - started
        name = error_name(reply)
        label = f"{kind} uv={uv} {action}"
        if pins > 1:
            stats.count(f"{kind} uv={uv}: PIN asked on {pins} keys")
        if name is None:
            stats.latencies.setdefault(kind, []).append(elapsed)
            stats.count(f"{label}: result")
            document = json.loads(reply.body[0])
            if not document.get("id") or "response" not in document:
                stats.fail(f"{method}: a result without id or response")
            if kind == "register":
                credentials.append(document["id"])
        elif name.startswith(ERROR_PREFIX):
            stats.count(f"{label}: {name[len(ERROR_PREFIX):]}")
            if action == "plain":
                stats.fail(f"{method} uv={uv} not cancelled failed: {name}: {reply.body[0] if reply.body else ''}")
        else:
            stats.fail(f"{method}: untyped error {name}")
    # The last call: every earlier reply of the daemon on this connection arrives before its answer.
    if not conn.closed:
        try:
            await conn.call("ListDevices", "", ())
        except asyncio.TimeoutError:
            stats.fail("ListDevices: no reply")
    for c in connections:
        if c.closed:
            continue
        await asyncio.sleep(0)
        for serial, method in c.sent.items():
            stats.calls += 1
            replies = c.replies.get(serial, [])
            if len(replies) != 1:
                stats.fail(f"{method} (serial {serial}) answered {len(replies)} times")
                continue
            name = error_name(replies[0])
            if name and not name.startswith(ERROR_PREFIX):
                stats.fail(f"{method}: untyped error {name}")
            elif method == "EnterClientPin" and name:
                stats.fail(f"EnterClientPin refused after NEEDS_PIN: {name}")
            elif method == "CancelRequest":
                stats.count(f"CancelRequest answered {'ok' if not name else name[len(ERROR_PREFIX):]}")
        await c.close()


def plan_requests(count, clients, seed):
    rng = random.Random(seed)
    plans = [[] for _ in range(clients)]
    for index in range(count):
        kind = "register" if rng.random() < 0.5 else "signin"
        uv = "required" if rng.random() < 1 / 3 else "discouraged"
        draw = rng.random()
        action = "cancel" if draw < 0.1 else ("leave" if draw < 0.12 else "plain")
        plans[index % clients].append((kind, uv, action))
    return plans


async def run_round(address, clients, requests, seed, keys):
    stats = Stats()
    plans = plan_requests(requests, clients, seed)
    started = time.monotonic()
    await asyncio.gather(*(run_client(address, plan, stats, [], keys) for plan in plans))
    return stats, time.monotonic() - started


async def busy_keys(address):
    conn = await Connection.open(address)
    reply = await conn.call("ListDevices", "", ())
    await conn.close()
    devices = reply.body[0]
    return [d["uri"][1] for d in devices if d.get("busy", ("b", False))[1]], [d["uri"][1] for d in devices]


# MARK: The bed

def pin_retries(binary, uri, env):
    out = subprocess.run([binary, "pin", "status", "--device", uri, "--json"], capture_output=True, text=True,
                         env=env, timeout=60)
    if out.returncode != 0:
        return f"error: {out.stderr.strip()}"
    return json.loads(out.stdout)["pinRetries"]


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise SystemExit(f"daemon_load: {what} did not happen within {seconds} s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--udp-keys", type=int, default=4)
    parser.add_argument("--pcsc-keys", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds idle before the last sample")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    securitykey = os.path.join(args.bin, "securitykey")
    securitykeyd = os.path.join(args.bin, "securitykeyd")
    env = dict(os.environ)
    readers = [r for r in env.get("SECURITYKEY_VPCD_READERS", "").split("|") if r]
    if args.pcsc_keys and len(readers) < args.pcsc_keys:
        raise SystemExit(f"daemon_load: {args.pcsc_keys} PC/SC keys need as many vpcd readers "
                         f"(scripts/pcsc-testbed.sh with PCSC_TESTBED_VPCD_DEVICES={(args.pcsc_keys + 1) // 2})")

    directory = tempfile.mkdtemp(prefix="daemon-load-")
    processes = []
    failed = []

    def start(argv, **kw):
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, **kw)
        processes.append(p)
        return p

    try:
        bus = start(["dbus-daemon", "--session", "--nofork", "--nopidfile",
                     f"--address=unix:path={directory}/bus", "--print-address=1"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        address = bus.stdout.readline().strip()
        if not address.startswith("unix:"):
            raise SystemExit("daemon_load: dbus-daemon printed no address")
        # A third of a client's requests stay in flight at once at most: 200 connections and
        # their requests stay far below the session bus's limits.
        base = 31000 + (os.getpid() % 1000) * 8
        uris = []
        for i in range(args.udp_keys):
            start([securitykey, "virtual", "serve", "--udp", f"127.0.0.1:{base + i}", "--pin", PIN,
                   "--profile", "ctap21"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            uris.append(f"udp:127.0.0.1:{base + i}")
        vpcd_port = int(env.get("SECURITYKEY_VPCD_PORT", "35963"))
        for i in range(args.pcsc_keys):
            key_env = dict(env, SECURITYKEY_VPCD_PORT=str(vpcd_port + i))
            start([securitykey, "virtual", "serve", "--pcsc", "--pin", PIN, "--profile", "ctap21"],
                  env=key_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            uris.append(f"pcsc:{readers[i]}")
        time.sleep(1.0)
        before = {}
        for uri in uris:
            deadline = time.monotonic() + 20
            while True:
                before[uri] = pin_retries(securitykey, uri, env)
                if isinstance(before[uri], int) or time.monotonic() > deadline:
                    break
                time.sleep(0.3)
        log = open(os.path.join(directory, "daemon.log"), "w")
        daemon_args = [securitykeyd, "--address", address] + [a for i in range(args.udp_keys)
                                                             for a in ("--udp", f"127.0.0.1:{base + i}")]
        if not args.pcsc_keys:
            daemon_args.append("--udp-only")
        # SECURITYKEY_LOAD_DAEMON_WRAPPER (e.g. "heaptrack -o FILE") runs the daemon under a tool.
        wrapper = os.environ.get("SECURITYKEY_LOAD_DAEMON_WRAPPER", "").split()
        daemon = start(wrapper + daemon_args, stdout=subprocess.DEVNULL, stderr=log)

        def listed():
            try:
                return len(asyncio.run(busy_keys(address))[1]) == len(uris)
            except Exception:
                return False
        wait_for(listed, 30, f"securitykeyd listing {len(uris)} keys")
        time.sleep(1.0)
        rss0, fds0 = footprint(daemon.pid)
        print(f"securitykeyd with {args.udp_keys} UDP + {args.pcsc_keys} PC/SC virtual keys (PIN set, ctap21), "
              f"{args.clients} D-Bus clients, {args.requests} requests per round, {args.rounds} rounds")
        print(f"before: RSS {mib(rss0)}, {fds0} open fds (idle, keys listed)")
        sampler = Sampler(daemon.pid)
        sampler.start()
        rounds = []
        for round_index in range(args.rounds):
            sampler.samples = []
            sampler.active.set()
            stats, wall = asyncio.run(run_round(address, args.clients, args.requests, args.seed + round_index, len(uris)))
            sampler.active.clear()
            time.sleep(1.0)
            busy, _ = asyncio.run(busy_keys(address))
            rss, fds = footprint(daemon.pid)
            during = sampler.samples or [(rss, fds)]
            heap = None
            if os.environ.get("SECURITYKEY_LOAD_HEAP") == "1":
                heap = heap_in_use(daemon.pid, os.path.join(directory, "daemon.log"))
            all_latencies = [x for v in stats.latencies.values() for x in v]
            answered = stats.requests
            print(f"\nround {round_index + 1}: {answered} requests in {wall:.1f} s: {answered / wall:.1f} requests/s; "
                  f"{stats.calls} calls on connections that stayed, each answered exactly once" if not stats.failures else
                  f"\nround {round_index + 1}: {answered} requests in {wall:.1f} s")
            for kind, values in sorted(stats.latencies.items()) + [("all", all_latencies)]:
                if values:
                    print(f"  latency {kind:9} n={len(values):5}  p50 {percentile(values, .5) * 1000:7.1f} ms  "
                          f"p90 {percentile(values, .9) * 1000:7.1f} ms  p99 {percentile(values, .99) * 1000:7.1f} ms  "
                          f"max {max(values) * 1000:7.1f} ms")
            for label, n in sorted(stats.outcomes.items()):
                print(f"  {n:6}  {label}")
            rss_during = [s[0] for s in during]
            fds_during = [s[1] for s in during]
            print(f"  daemon during: RSS median {mib(statistics.median(rss_during))} max {mib(max(rss_during))}; "
                  f"fds median {statistics.median(fds_during):.0f} max {max(fds_during)} ({len(during)} samples)")
            print(f"  daemon after:  RSS {mib(rss)}, {fds} open fds; keys busy: {busy or 'none'}"
                  + (f"; malloc in use {heap / 1048576:.2f} MiB" if heap is not None else ""))
            for text in stats.failures:
                print(f"  CHECK FAILED: {text}")
            if stats.failures:
                failed.append(f"round {round_index + 1}: {len(stats.failures)} failed checks")
            if busy:
                failed.append(f"round {round_index + 1}: keys left claimed: {busy}")
            if fds > fds0:
                failed.append(f"round {round_index + 1}: {fds} open fds after, {fds0} before")
            rounds.append({"round": round_index + 1, "requests": answered, "seconds": round(wall, 2),
                           "requests_per_s": round(answered / wall, 1),
                           "p50_ms": round(percentile(all_latencies, .5) * 1000, 1),
                           "p99_ms": round(percentile(all_latencies, .99) * 1000, 1),
                           "rss_during_max_kib": max(rss_during), "rss_after_kib": rss, "fds_after": fds,
                           "outcomes": stats.outcomes})
        sampler.stopped.set()
        time.sleep(args.settle)
        rss_settled, fds_settled = footprint(daemon.pid)
        if os.environ.get("SECURITYKEY_LOAD_HEAP") == "1":
            heap = heap_in_use(daemon.pid, os.path.join(directory, "daemon.log"))
            print(f"\nafter the settle: malloc in use {heap / 1048576:.2f} MiB")
        print(f"\nafter a {args.settle:.0f} s settle: RSS {mib(rss_settled)}, {fds_settled} open fds "
              f"(before: {mib(rss0)}, {fds0}); RSS after each round: "
              + ", ".join(mib(r["rss_after_kib"]) for r in rounds))
        daemon.send_signal(signal.SIGTERM)
        status = daemon.wait(30)
        if status != 0:
            failed.append(f"securitykeyd exited {status} on SIGTERM")
        after = {uri: pin_retries(securitykey, uri, env) for uri in uris}
        print("PIN retries per key, before -> after: "
              + ", ".join(f"{before[u]}->{after[u]}" for u in uris))
        if any(before[u] != after[u] or not isinstance(after[u], int) for u in uris):
            failed.append("a PIN retries counter changed")
        with open(os.path.join(directory, "daemon.log")) as f:
            text = f.read()
        for pattern in ("Fatal error", "fatal error", "Segmentation"):
            if pattern in text:
                failed.append(f"the daemon's log says {pattern}")
        if args.json:
            print(json.dumps({"rss_before_kib": rss0, "fds_before": fds0, "rounds": rounds,
                              "rss_settled_kib": rss_settled, "fds_settled": fds_settled,
                              "pin_retries_before": before, "pin_retries_after": after, "failed": failed}))
    finally:
        for p in reversed(processes):
            if p.poll() is None:
                p.send_signal(signal.SIGKILL if p is processes[0] else signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        subprocess.run(["rm", "-rf", directory])
    for text in failed:
        print(f"FAILED: {text}")
    print("result: " + ("FAILED" if failed else "every check held"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
