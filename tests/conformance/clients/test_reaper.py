"""Nothing an adapter starts outlives its case: a grandchild that calls setsid() escapes the
process-group kill, and the reaper (a child subreaper) still ends it. Real processes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from harness.conformance.clients.contract import Task, Turn, run_adapter

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

# An adapter whose child forks a grandchild that leaves the process group (setsid) and lives on,
# holding nothing of the adapter's (its stdio closed), then reports its pid and the turn.
ESCAPING_ADAPTER = """
import json, os, sys, time
sys.stdin.readline()
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        os.write(write, str(os.getpid()).encode())
        os.close(write)
        time.sleep(120)
        os._exit(0)
    os._exit(0)
os.close(write)
pid = int(os.read(read, 32))
print(json.dumps({"turn": 0, "status": "completed", "text": str(pid)}), flush=True)
if sys.argv[1:] == ["hang"]:
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _run(script: Path, *args: str, contain: bool = True, timeout_s: float = 20.0) -> int:
    task = Task(case="reaper", turns=(Turn("x"),), timeout_s=timeout_s)
    command = (sys.executable, str(script), *args)
    run = asyncio.run(run_adapter(command, task, dict(os.environ), contain=contain))
    report = run.for_turn(0)
    assert report is not None and report.text is not None, run
    return int(report.text)


@pytest.fixture
def adapter(tmp_path: Path) -> Path:
    path = tmp_path / "escaping_adapter.py"
    path.write_text(ESCAPING_ADAPTER, encoding="utf-8")
    return path


def _gone_soon(pid: int) -> bool:
    for _ in range(200):  # the kill is sent before run_adapter returns; the exit follows it
        if not _alive(pid):
            return True
        time.sleep(0.01)
    return False


def test_without_the_reaper_a_setsid_grandchild_escapes(adapter: Path) -> None:
    """The failure the reaper exists for: a process-group kill misses it."""
    pid = _run(adapter, contain=False)
    try:
        assert _alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_setsid_grandchild_does_not_outlive_an_adapter_that_exits(adapter: Path) -> None:
    pid = _run(adapter)
    assert _gone_soon(pid)


def test_a_setsid_grandchild_does_not_outlive_an_adapter_killed_at_its_bound(
    adapter: Path,
) -> None:
    pid = _run(adapter, "hang", timeout_s=2.0)
    assert _gone_soon(pid)
