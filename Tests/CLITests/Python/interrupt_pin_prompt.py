"""Runs a securitykey command on a pseudo-terminal, waits for its PIN prompt, sends SIGINT (as
Ctrl-C does) and reports what the terminal looked like during and after, and how it exited.

usage: interrupt_pin_prompt.py BINARY ARGS...
"""
import json
import os
import pty
import select
import signal
import sys
import termios
import time

pid, master = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen = b""
deadline = time.time() + 20
while time.time() < deadline and b"PIN" not in seen:
    ready, _, _ = select.select([master], [], [], 0.1)
    if ready:
        try:
            seen += os.read(master, 1024)
        except OSError:
            break
echo_during = bool(termios.tcgetattr(master)[3] & termios.ECHO)
os.kill(pid, signal.SIGINT)
_, status = os.waitpid(pid, 0)
echo_after = bool(termios.tcgetattr(master)[3] & termios.ECHO)
print(json.dumps({
    "prompt": seen.decode(errors="replace"),
    "echoDuringPrompt": echo_during,
    "echoAfter": echo_after,
    "exitCode": os.waitstatus_to_exitcode(status),
}))
