"""Run an adapter so that nothing it starts outlives it: `python reaper.py COMMAND...`.

Killing the adapter's process group is not enough: a child that calls `setsid()` leaves the
group and survives (wsmode issue 42). This wrapper makes itself a *child subreaper*
(`prctl(PR_SET_CHILD_SUBREAPER)`, Linux), so every descendant orphaned below it is re-parented
to it instead of to init, and stays findable through the parent links under /proc. It runs the
adapter with the same stdin, stdout and stderr; when the adapter exits, or the wrapper is told
to stop (SIGTERM, SIGINT, SIGHUP), every process still below it is killed and reaped, and the
wrapper exits with the adapter's status. It tells stderr how many it had to kill.

Standard library only, run as a file (not through the package), so it costs one interpreter
start. Where prctl is missing (not Linux) it still kills every descendant it can find while the
adapter lives, and says that a setsid'd orphan may escape.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from types import FrameType

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants; False where the kernel cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every live process below `root`, by the parent links in /proc."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[0] != "Z":  # a zombie is dead already: reaping is what it needs
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def reap() -> None:
    """Collect every child that has exited (orphans re-parented here among them)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_all_below(root: int, *, spare: int | None = None) -> int:
    """SIGKILL every descendant (but `spare`) until none is left; the number killed."""
    killed: set[int] = set()
    for _ in range(100):  # a fork bomb cannot keep this loop going for ever
        reap()
        alive = [pid for pid in descendants(root) if pid != spare]
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    reap()
    return len(killed)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: reaper.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    subreaper = become_subreaper()
    try:
        adapter = subprocess.Popen(argv)
    except OSError as exc:
        print(f"reaper: cannot start {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    me = os.getpid()

    def stop(signum: int, frame: FrameType | None) -> None:
        with_adapter = kill_all_below(me)
        print(
            f"reaper: stopped by signal {signum}: killed {with_adapter} process(es)",
            file=sys.stderr,
            flush=True,
        )
        os._exit(128 + signum)

    for sig in _STOP_SIGNALS:
        signal.signal(sig, stop)
    code = adapter.wait()
    left = kill_all_below(me)
    if left:
        print(f"reaper: the adapter left {left} process(es) running: killed", file=sys.stderr)
    if not subreaper:
        print(
            "reaper: no child subreaper here: a setsid'd orphan may have escaped", file=sys.stderr
        )
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
