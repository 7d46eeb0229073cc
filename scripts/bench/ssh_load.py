"""Many `ssh` logins through the OpenSSH provider (libsecuritykey-sk.so) in a row.

usage: ssh_load.py --bin DIR --provider SO [--count 200]

Starts one virtual key (`securitykey virtual serve --udp`, found by the provider through
SECURITYKEY_UDP), enrols an ecdsa-sk key with Debian's `ssh-keygen -w SO`, starts an sshd of its
own on 127.0.0.1 (as the SSH tests do: its own host key, config and authorized_keys; needs root),
then runs COUNT `ssh -o SecurityKeyProvider=SO root@127.0.0.1 echo logged-in` one after the other.

Checked (a failed check makes the exit status 1): every login printed "logged-in"; the key
server's and the sshd listener's open fds are the same after as before; no ssh-sk-helper is left
running. Printed: logins/s, wall time per login p50/p90/p99/max, the key server's RSS and fds.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from load_common import footprint, percentile, verdict


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def helpers():
    """PIDs of running ssh-sk-helper processes."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().strip() == "ssh-sk-helper":
                        found.append(int(entry))
            except OSError:
                pass
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--provider", required=True)
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()
    provider = os.path.abspath(args.provider)
    work = tempfile.mkdtemp(prefix="ssh-load-")
    path = lambda name: os.path.join(work, name)  # noqa: E731
    udp = free_port()
    env = dict(os.environ, SECURITYKEY_UDP=f"127.0.0.1:{udp}", HOME=work)
    env.pop("SSH_AUTH_SOCK", None)
    failed = []
    key = subprocess.Popen([os.path.join(args.bin, "securitykey"), "virtual", "serve", "--udp", f"127.0.0.1:{udp}"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sshd_pid = None
    try:
        time.sleep(0.5)
        run = lambda argv, **kw: subprocess.run(argv, capture_output=True, text=True, env=env,  # noqa: E731
                                                stdin=subprocess.DEVNULL, timeout=120, **kw)
        enrol = run(["ssh-keygen", "-t", "ecdsa-sk", "-w", provider, "-f", path("id"), "-N", ""])
        if enrol.returncode != 0:
            raise SystemExit(f"ssh_load: ssh-keygen -w failed: {enrol.stderr.strip()}")
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path("host_key")])
        with open(path("id.pub")) as f, open(path("authorized_keys"), "w") as out:
            out.write(f.read())
        port = free_port()
        with open(path("sshd_config"), "w") as f:
            f.write(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {path("host_key")}
PidFile {path("sshd.pid")}
AuthorizedKeysFile {path("authorized_keys")}
StrictModes no
UsePAM no
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PubkeyAcceptedAlgorithms sk-ecdsa-sha2-nistp256@openssh.com,sk-ssh-ed25519@openssh.com
MaxStartups 100
LogLevel INFO
""")
        os.makedirs("/run/sshd", exist_ok=True)
        started = run(["/usr/sbin/sshd", "-f", path("sshd_config"), "-E", path("sshd.log")])
        if started.returncode != 0:
            raise SystemExit(f"ssh_load: sshd did not start: {started.stderr.strip()}")
        for _ in range(100):
            if os.path.exists(path("sshd.pid")):
                break
            time.sleep(0.05)
        with open(path("sshd.pid")) as f:
            sshd_pid = int(f.read().strip())
        login = ["ssh", "-F", "/dev/null", "-p", str(port), "-o", "StrictHostKeyChecking=no",
                 "-o", "UserKnownHostsFile=/dev/null", "-o", "PasswordAuthentication=no",
                 "-o", "KbdInteractiveAuthentication=no", "-o", "ConnectTimeout=20", "-o", "IdentitiesOnly=yes",
                 "-o", f"IdentityFile={path('id')}", "-o", f"SecurityKeyProvider={provider}",
                 "root@127.0.0.1", "echo logged-in"]
        first = run(login)
        if "logged-in" not in first.stdout:
            raise SystemExit(f"ssh_load: the first login failed: {first.stderr.strip()}")
        time.sleep(0.3)
        key_rss0, key_fds0 = footprint(key.pid)
        sshd_fds0 = footprint(sshd_pid)[1]
        print(f"{args.count} `ssh` logins in a row through {os.path.basename(provider)} (ecdsa-sk, one virtual key "
              f"over UDP, an sshd on 127.0.0.1)")
        print(f"before: key server RSS {key_rss0 / 1024:.1f} MiB, {key_fds0} fds; sshd listener {sshd_fds0} fds")
        times = []
        wall_start = time.monotonic()
        step = max(1, args.count // 5)
        for index in range(args.count):
            t0 = time.monotonic()
            out = run(login)
            times.append(time.monotonic() - t0)
            if out.returncode != 0 or "logged-in" not in out.stdout:
                failed.append(f"login {index + 1}: status {out.returncode}: {out.stderr.strip()[-300:]}")
            if (index + 1) % step == 0 and index + 1 < args.count:
                rss, fds = footprint(key.pid)
                print(f"  after {index + 1:4}: key server RSS {rss / 1024:.1f} MiB, {fds} fds; "
                      f"sshd listener {footprint(sshd_pid)[1]} fds")
        wall = time.monotonic() - wall_start
        time.sleep(0.5)
        key_rss, key_fds = footprint(key.pid)
        sshd_fds = footprint(sshd_pid)[1]
        left = helpers()
        print(f"{args.count} logins in {wall:.1f} s: {args.count / wall:.1f} logins/s; wall time per login "
              f"p50 {percentile(times, .5) * 1000:.1f} ms, p90 {percentile(times, .9) * 1000:.1f} ms, "
              f"p99 {percentile(times, .99) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")
        print(f"after: key server RSS {key_rss / 1024:.1f} MiB, {key_fds} fds; sshd listener {sshd_fds} fds; "
              f"ssh-sk-helper left running: {len(left)}; failed logins: {len(failed)}")
        if key_fds != key_fds0:
            failed.append(f"key server fds {key_fds0} before, {key_fds} after")
        if sshd_fds != sshd_fds0:
            failed.append(f"sshd fds {sshd_fds0} before, {sshd_fds} after")
        if left:
            failed.append(f"ssh-sk-helper left running: {left}")
    finally:
        if sshd_pid:
            os.kill(sshd_pid, signal.SIGTERM)
        key.send_signal(signal.SIGTERM)
        key.wait(10)
        subprocess.run(["rm", "-rf", work])
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
