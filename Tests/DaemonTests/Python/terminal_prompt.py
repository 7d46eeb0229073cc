"""Runs a command on a pseudo-terminal of its own, as a user at a terminal would, and never
types anything: once MARKER (a prompt) appears, waits up to LIMIT seconds for the command to
exit by itself, then kills it.

    terminal_prompt.py LIMIT MARKER COMMAND [ARG...]

Prints one line: `prompted` or `no-prompt`, then `exited:STATUS` or `alive`, then the seconds
from the prompt to the exit (or to LIMIT). The command's terminal output goes to stderr.
"""
import os
import pty
import select
import sys
import time


def main():
    limit = float(sys.argv[1])
    marker = sys.argv[2].encode()
    command = sys.argv[3:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(command[0], command)
    output = b""
    started = time.monotonic()
    prompted = None
    exited = None
    while exited is None:
        now = time.monotonic()
        if prompted is None and now - started > 60:
            break
        if prompted is not None and now - prompted > limit:
            break
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            output += chunk
            if prompted is None and marker in output:
                prompted = time.monotonic()
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            exited = os.waitstatus_to_exitcode(status)
    elapsed = (time.monotonic() - prompted) if prompted is not None else -1
    if exited is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    print("prompted" if prompted is not None else "no-prompt",
          "alive" if exited is None else "exited:%d" % exited, "%.2f" % elapsed)
    sys.stderr.write(output.decode(errors="replace"))


if __name__ == "__main__":
    main()
