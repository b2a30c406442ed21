"""scripts/third-party/lib.sh for someone who only cloned the repo: a clear first line when
wsmode cannot run, third-party processes without the checkout's PYTHONPATH, heartbeats that
keep the command's status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "scripts" / "third-party" / "lib.sh"


def _bash(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    prelude = f'set -euo pipefail; ROOT={ROOT}; WORK=$(mktemp -d); PIDS=(); . "{LIB}"\n'
    return subprocess.run(
        ["bash", "-c", prelude + script],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT), **env},
        check=False,
    )


def test_a_python_without_wsmode_gets_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'websockets'\" >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    done = _bash("require_wsmode; echo reached", PYTHON=str(fake))
    assert done.returncode == 2 and "reached" not in done.stdout
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"== wsmode is not installed for {fake}")
    assert "No module named 'websockets'" in first and "pip install -e ." in first


def test_wsmode_installed_passes_the_check() -> None:
    done = _bash("require_wsmode; echo reached", PYTHON=sys.executable)
    assert done.returncode == 0 and done.stdout.strip() == "reached", done.stderr


def test_third_party_processes_never_see_the_checkouts_pythonpath() -> None:
    done = _bash("third_party env", PYTHON=sys.executable, PYTHONPATH=str(ROOT))
    assert done.returncode == 0
    assert not [line for line in done.stdout.splitlines() if line.startswith("PYTHONPATH=")]


def test_a_heartbeat_keeps_the_commands_output_and_status(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    done = _bash(
        f'with_heartbeat step {log} sh -c "echo into-log; exit 3" || echo "status $?"',
        PYTHON=sys.executable,
    )
    assert done.stdout.strip() == "status 3"
    assert log.read_text().strip() == "into-log"


def test_stop_started_stops_what_a_background_function_started(tmp_path: Path) -> None:
    """`third_party CMD &` (a function in the background) gives $! of a subshell, and CMD is its
    child: stop_started stops CMD and the process it started too, not the subshell alone."""
    pids = tmp_path / "pids"
    script = (
        f"third_party sh -c 'sleep 300 & echo $$ $! > {pids}; wait' &\n"
        "PIDS+=($!)\n"
        f"while [ ! -s {pids} ]; do sleep 0.05; done\n"
        "stop_started\n"
    )
    done = _bash(script, PYTHON=sys.executable)
    assert done.returncode == 0, done.stderr
    for pid in pids.read_text().split():  # the gateway stand-in and its own child
        state = subprocess.run(
            ["ps", "-o", "stat=", "-p", pid], capture_output=True, text=True, check=False
        ).stdout.strip()
        assert state in ("", "Z"), f"process {pid} outlived stop_started ({state})"
