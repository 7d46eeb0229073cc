"""Many `securitykey authenticate` processes in a row on one virtual key.

usage: cli_load.py --bin DIR [--count 1000] [--transport pcsc|udp]

Starts one virtual key (`securitykey virtual serve`, PIN 123456, state in a file, so the key holds
its state file's lock), registers one credential, then runs COUNT `securitykey authenticate
--device URI --credential ID --json` processes one after the other: two in three with --no-uv,
one in three with --uv --pin-stdin. Each must exit 0 and sign with that credential. The CLI runs
with HOME and the XDG directories in a fresh folder, so any file it leaves (a lock, a cache) is seen.

Checked (a failed check makes the exit status 1): every process succeeded; the key server's open
fds and (PC/SC) pcscd's are the same after as before; the locks the kernel lists (/proc/locks)
for the key server and pcscd are the same; the CLI left no file behind but the ones it left after
the first run; the PIN retries counter is the same. PC/SC runs inside scripts/pcsc-testbed.sh.

Printed: processes/s, wall time per process p50/p90/p99/max, the key server's RSS and fds
before, every COUNT/10 processes and after.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from load_common import footprint, percentile, verdict

PIN = "123456"


def locks(pids):
    """The /proc/locks lines held by `pids` (type and inode, without the lock's ordinal)."""
    held = []
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"
            if len(fields) >= 6 and fields[4].isdigit() and int(fields[4]) in pids:
                held.append(" ".join(fields[1:6]))
    return sorted(held)


def files_under(root):
    found = set()
    for directory, _, names in os.walk(root):
        for name in names:
            found.add(os.path.relpath(os.path.join(directory, name), root))
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--transport", choices=["pcsc", "udp"], default="pcsc")
    args = parser.parse_args()
    securitykey = os.path.join(args.bin, "securitykey")
    directory = tempfile.mkdtemp(prefix="cli-load-")
    home = os.path.join(directory, "home")
    os.makedirs(os.path.join(home, "run"), mode=0o700)
    env = dict(os.environ, HOME=home, XDG_RUNTIME_DIR=os.path.join(home, "run"),
               XDG_STATE_HOME=os.path.join(home, "state"), XDG_CACHE_HOME=os.path.join(home, "cache"),
               XDG_CONFIG_HOME=os.path.join(home, "config"), XDG_DATA_HOME=os.path.join(home, "data"))
    state = os.path.join(directory, "key.json")
    failed = []
    if args.transport == "udp":
        port = 33000 + os.getpid() % 1000
        where = ["--udp", f"127.0.0.1:{port}"]
        uri = f"udp:127.0.0.1:{port}"
        watched_names = ["key server"]
    else:
        readers = [r for r in os.environ.get("SECURITYKEY_VPCD_READERS", "").split("|") if r]
        if not readers:
            raise SystemExit("cli_load: --transport pcsc runs inside scripts/pcsc-testbed.sh")
        where = ["--pcsc"]
        uri = f"pcsc:{readers[0]}"
        watched_names = ["key server", "pcscd"]
    key = subprocess.Popen([securitykey, "virtual", "serve", *where, "--pin", PIN, "--state", state,
                            "--profile", "ctap21"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        watched = [key.pid]
        if args.transport == "pcsc":
            with open(os.path.join(os.environ["SECURITYKEY_PCSC_TESTBED"], "pcscd.pid")) as f:
                watched.append(int(f.read().strip()))

        def run(arguments, stdin=None):
            started = time.monotonic()
            out = subprocess.run([securitykey, *arguments], input=stdin, capture_output=True, text=True,
                                 env=env, timeout=120)
            return out, time.monotonic() - started

        deadline = time.monotonic() + 30
        while True:
            out, _ = run(["register", "--device", uri, "--rp", "load.example", "--user", "load", "--no-uv", "--json"])
            if out.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        if out.returncode != 0:
            raise SystemExit(f"cli_load: register failed: {out.stderr.strip()}")
        credential = json.loads(out.stdout)["id"]
        pin_before = json.loads(run(["pin", "status", "--device", uri, "--json"])[0].stdout)["pinRetries"]

        def authenticate(index):
            uv = ["--uv", "--pin-stdin"] if index % 3 == 2 else ["--no-uv"]
            out, elapsed = run(["authenticate", "--device", uri, "--rp", "load.example", "--credential",
                                credential, "--json", *uv], stdin=PIN + "\n" if index % 3 == 2 else None)
            if out.returncode != 0:
                failed.append(f"process {index + 1} exited {out.returncode}: {out.stderr.strip()}")
            elif json.loads(out.stdout).get("id") != credential:
                failed.append(f"process {index + 1} signed with another credential")
            return elapsed

        # One run first, so that whatever the CLI keeps between runs exists before the baseline.
        authenticate(0)
        time.sleep(0.5)
        fds_before = [footprint(p)[1] for p in watched]
        rss_before = footprint(key.pid)[0]
        locks_before = locks(watched)
        files_before = files_under(home)
        print(f"{args.count} `securitykey authenticate` processes in a row on one virtual key ({uri}, PIN set, "
              f"state file), two in three --no-uv, one in three --uv with the PIN on stdin")
        print(f"before: key server RSS {rss_before / 1024:.1f} MiB; open fds: "
              + ", ".join(f"{n} {c}" for n, c in zip(watched_names, fds_before))
              + f"; locks held: {len(locks_before)}; files the CLI left: {sorted(files_before) or 'none'}")
        times = []
        started = time.monotonic()
        step = max(1, args.count // 10)
        for index in range(args.count):
            times.append(authenticate(index + 1))
            if (index + 1) % step == 0 and index + 1 < args.count:
                rss, fds = footprint(key.pid)
                extra = f", pcscd fds {footprint(watched[1])[1]}" if len(watched) > 1 else ""
                print(f"  after {index + 1:5}: key server RSS {rss / 1024:.1f} MiB, fds {fds}{extra}")
        wall = time.monotonic() - started
        time.sleep(0.5)
        fds_after = [footprint(p)[1] for p in watched]
        rss_after = footprint(key.pid)[0]
        locks_after = locks(watched)
        files_after = files_under(home)
        pin_after = json.loads(run(["pin", "status", "--device", uri, "--json"])[0].stdout)["pinRetries"]
        print(f"{args.count} processes in {wall:.1f} s: {args.count / wall:.1f} processes/s; wall time per process "
              f"p50 {percentile(times, .5) * 1000:.1f} ms, p90 {percentile(times, .9) * 1000:.1f} ms, "
              f"p99 {percentile(times, .99) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")
        print(f"after: key server RSS {rss_after / 1024:.1f} MiB; open fds: "
              + ", ".join(f"{n} {c}" for n, c in zip(watched_names, fds_after))
              + f"; locks held: {len(locks_after)} ({'same' if locks_after == locks_before else 'CHANGED'}); "
              f"new files the CLI left: {sorted(files_after - files_before) or 'none'}; "
              f"PIN retries {pin_before} -> {pin_after}; failed processes: {len(failed)}")
        if fds_after != fds_before:
            failed.append(f"open fds {fds_before} before, {fds_after} after")
        if locks_after != locks_before:
            failed.append(f"locks {locks_before} before, {locks_after} after")
        if files_after != files_before:
            failed.append(f"the CLI left {sorted(files_after - files_before)}")
        if pin_after != pin_before:
            failed.append(f"PIN retries {pin_before} before, {pin_after} after")
    finally:
        key.send_signal(signal.SIGTERM)
        key.wait(10)
        subprocess.run(["rm", "-rf", directory])
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
