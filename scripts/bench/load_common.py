"""What the load benchmarks (daemon_load.py, cli_load.py, ssh_load.py) share."""
import os


def footprint(pid):
    """(RSS in KiB, open fds) of `pid`, from /proc."""
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def percentile(values, fraction):
    """The nearest-rank `fraction` percentile of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def verdict(failed):
    """Prints the failed checks (20 at most) and the result line; the exit status."""
    for text in failed[:20]:
        print(f"FAILED: {text}")
    print("result: " + ("FAILED" if failed else "every check held"))
    return 1 if failed else 0
