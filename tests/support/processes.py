"""What /proc says about processes, for the tests that check nothing is left running."""
import os


def stat_of(pid):
    """The fields of /proc/PID/stat after the command (state first, then the parent's
    pid), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def alive(pid):
    """Whether pid runs (a zombie, waiting for a parent to reap it, does not)."""
    stat = stat_of(pid)
    return stat is not None and stat[0] != "Z"


def processes():
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def children(pid):
    """The pids of pid's child processes."""
    return [p for p in processes() if (stat_of(p) or [None, None])[1] == str(pid)]
