"""`wsmode serve` in a child process on a free loopback port: the bench's embedded server.

The server runs in its own process so the client's measurements never share a GIL with it. The
one copy of this mechanism: `wsmode bench`, the locust tests and the `bench/` scripts use it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.errors import TargetError

DEFAULT_PROFILE = "production-like"
SERVER_START_TIMEOUT_S = 60.0
# the line `wsmode serve` prints once it listens (reference_server/commands.py)
_LISTENING = re.compile(r"(ws://\S+) \(HTTP (http://\S+)\)")


class EmbeddedServerError(TargetError, RuntimeError):
    """The child server exited or printed no listening line within the start timeout."""


@dataclass
class EmbeddedServer:
    """`wsmode serve` in a child process on a free loopback port; `stop()` sends SIGTERM.

    Without `data_dir` the server gets a temporary one, removed on `stop()`. `ws_url` and
    `http_url` are set once `start()` returns.
    """

    profile: str = DEFAULT_PROFILE
    disable: tuple[str, ...] = ()
    api_keys: tuple[str, ...] = ()
    data_dir: Path | None = None
    extra_args: tuple[str, ...] = ()
    ws_url: str = ""
    http_url: str = ""
    process: subprocess.Popen[str] | None = None
    _tmp: tempfile.TemporaryDirectory[str] | None = None
    _log: TextIO | None = None

    def command(self, data_dir: Path) -> list[str]:
        """The `wsmode serve` command line this server runs."""
        return [
            sys.executable,
            "-m",
            "harness.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--profile",
            self.profile,
            "--data-dir",
            str(data_dir),
            "--log-level",  # one line per response is for operators, not for a bench's temp log
            "warning",
            *[a for key in self.api_keys for a in ("--api-key", key)],
            *[a for flag in self.disable for a in ("--disable", flag)],
            *self.extra_args,
        ]

    def start(self) -> EmbeddedServer:
        """Launch the child and wait until it listens (`launch` then `wait_listening`)."""
        return self.launch().wait_listening()

    def launch(self) -> EmbeddedServer:
        """Start the child process without waiting for it: several servers start side by side
        (each spends seconds importing), then `wait_listening` on each."""
        if self.data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="wsmode-bench-")
            self.data_dir = Path(self._tmp.name)
        self._log = tempfile.TemporaryFile("w+", prefix="wsmode-serve-")  # noqa: SIM115
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for name in ("WSMODE_API_KEY", "WSMODE_API_KEYS"):  # only the keys given here
            env.pop(name, None)
        self.process = subprocess.Popen(
            self.command(self.data_dir),
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
            start_new_session=True,  # Ctrl-C is for the command, which stops the server itself
        )
        return self

    def wait_listening(self) -> EmbeddedServer:
        """Wait for the listening line (the URLs set); EmbeddedServerError if none comes."""
        line = self._await_listening()
        if self.ws_url:
            return self
        stderr_tail = self.log_tail()  # before stop() closes the log
        self.stop()
        raise EmbeddedServerError(f"reference server did not start: {line.strip()} {stderr_tail}")

    def _await_listening(self) -> str:
        """Read stdout until the listening line (setting the URLs); return the last line read."""
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            match = _LISTENING.search(line)
            if match:
                self.ws_url, self.http_url = match.group(1), match.group(2)
                break
        return line

    def log_tail(self, n: int = 2000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read()[-n:]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
