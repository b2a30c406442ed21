"""The live progress line (harness/progress.py): rewritten in place on a terminal, plain periodic
lines elsewhere, within 100 columns, numbers separated; and through a real pseudo-terminal, the
line `wsmode load` keeps rewriting."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.progress import MAX_COLUMNS, Progress, clock, count, fit
from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import ServerConfig


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_terminal_gets_one_line_rewritten_in_place() -> None:
    stream, now = io.StringIO(), Clock()
    progress = Progress("bench", total=1200, unit="turns", stream=stream, tty=True, now=now)
    for done in range(0, 1201, 100):
        now.t += 1.0
        progress.update(done, failed=done // 600)
    progress.note("FAIL  a case")  # a permanent line above the live one
    progress.close()
    text = stream.getvalue()
    assert "\n" not in text.split("FAIL  a case")[0], "no newline before the note"
    rewrites = text.count("\r")
    assert rewrites >= 12 and "\x1b[K" in text
    final = text.rstrip("\n").split("\n")[-1].split("\x1b[K")[-1]
    assert final.startswith("bench  1,200/1,200 turns  100.0/s  2 failed  0:13"), final


def test_elsewhere_plain_lines_every_interval_and_an_eta() -> None:
    stream, now = io.StringIO(), Clock()
    progress = Progress(
        "load ws", total=None, unit="requests", duration_s=60, stream=stream, tty=False, now=now
    )
    for second in range(1, 31):
        now.t += 1.0
        progress.update(second * 25_000)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert 3 <= len(lines) <= 4  # every 10 s, then the last
    assert lines[-1] == "load ws  750,000 requests  25,000.0/s  0:30  ETA 0:30"


def test_a_phase_without_a_total_says_how_long_it_took() -> None:
    stream, now = io.StringIO(), Clock()
    progress = Progress("starting the embedded reference server", stream=stream, tty=True, now=now)
    now.t += 8.7
    progress.tick()
    assert stream.getvalue().endswith("starting the embedded reference server ... 8.7 s\x1b[K")


def test_lines_fit_and_numbers_read() -> None:
    stream = io.StringIO()
    progress = Progress("x" * 300, total=5, stream=stream, tty=False)
    progress.close()
    assert len(stream.getvalue().rstrip("\n")) <= MAX_COLUMNS
    assert count(1234567) == "1,234,567" and count(9895.93) == "9,895.9"
    assert clock(65) == "1:05" and clock(3725) == "1:02:05"
    assert fit("abcdef", 4) == "abc…"


# -- a real terminal ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    data = tmp_path_factory.mktemp("pty")
    with running_in_thread(ServerConfig(port=0, profile="zero", data_dir=Path(data))) as running:
        yield running


def test_wsmode_load_rewrites_its_line_on_a_pseudo_terminal(
    server: ReferenceServer, tmp_path: Path
) -> None:
    controller, terminal = pty.openpty()
    command = [sys.executable, "-m", "harness.cli", "load", "--target", server.ws_url]
    command += ["--duration-s", "2", "--processes", "1", "--concurrency", "2"]
    command += ["--output-tokens", "16", "--out", str(tmp_path / "results")]
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, cwd=tmp_path
    )
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 120  # bounds a hang only
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            seen += chunk
        elif process.poll() is not None:
            break
    os.close(controller)
    assert process.wait(30) == 0, seen.decode(errors="replace")
    text = seen.decode(errors="replace")
    rewrites = re.findall(r"\r(load ws  [0-9,]+ requests[^\r\n]*)\x1b\[K", text)
    assert len(rewrites) >= 3, text  # the same line, rewritten as requests end
    lines = text.replace("\x1b[K", "").replace("\r", "\n").splitlines()
    assert all(len(line) <= MAX_COLUMNS for line in lines if not line.startswith("results:"))


def test_ctrl_c_stops_load_with_one_line_and_no_results(tmp_path: Path) -> None:
    """What a terminal's Ctrl-C does (SIGINT to the whole foreground group) mid-run: the client
    processes and the embedded server are not the ones to answer it (no tracebacks, no server
    that seems to die first); the command stops them, says `interrupted`, exits 130, and writes
    no results file."""
    command = [sys.executable, "-m", "harness.cli", "load", "--profile", "zero"]
    command += ["--duration-s", "60", "--processes", "2", "--output-tokens", "16"]
    command += ["--out", str(tmp_path / "results")]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a shell leaves it
    )
    assert process.stderr is not None
    err = b""
    deadline = time.monotonic() + 120  # bounds a hang only
    while b"client processes: " not in err and time.monotonic() < deadline:  # started: running
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if ready:
            err += os.read(process.stderr.fileno(), 65536)
        assert process.poll() is None, err.decode(errors="replace")
    os.killpg(process.pid, signal.SIGINT)
    _, rest = process.communicate(timeout=60)
    text = (err + rest).decode(errors="replace")
    assert process.returncode == 130, text
    assert text.rstrip().endswith("wsmode load: interrupted") and "Traceback" not in text, text
    assert not (tmp_path / "results").exists()
