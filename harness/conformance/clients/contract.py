"""The adapter contract: how `wsmode certify-client` drives a client under test, in any language.

An adapter is a command. For each case it is started once with

* environment: `WSMODE_CLIENT_BASE_URL` (`http://127.0.0.1:PORT/v1`, what an SDK's `base_url`
  takes), `WSMODE_CLIENT_WS_URL` (`ws://127.0.0.1:PORT/v1/responses`), `WSMODE_CLIENT_API_KEY`,
  `WSMODE_CLIENT_CASE` (the case id) and `WSMODE_CLIENT_HOME` (an empty scratch directory);
  `OPENAI_BASE_URL` and `OPENAI_API_KEY` carry the same values, so a client that reads the usual
  variables finds the case's server and never a real key;
* stdin: one JSON task (`Task.as_json`): "send this conversation, continue it N times";
* stdout: JSON lines, one per turn, in any order (`TurnReport`), optionally preceded by
  `{"client": NAME, "version": V}`; stderr is kept (its tail) for the report.

Every wait is bounded: an adapter still running at the case's deadline is killed and judged on
what it reported; it never hangs the harness. Nothing it starts outlives the case: it runs under
`reaper.py`, a child subreaper that kills every process left below it, setsid'd ones included.
suites/clients/README.md is the contract for adapter authors, with a 30-line example.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from harness.errors import InputError

ENV_BASE_URL: Final = "WSMODE_CLIENT_BASE_URL"
ENV_WS_URL: Final = "WSMODE_CLIENT_WS_URL"
ENV_API_KEY: Final = "WSMODE_CLIENT_API_KEY"
ENV_CASE: Final = "WSMODE_CLIENT_CASE"
ENV_HOME: Final = "WSMODE_CLIENT_HOME"
STATUSES: Final = ("completed", "incomplete", "failed", "error", "unsupported")
Status = Literal["completed", "incomplete", "failed", "error", "unsupported"]
STDERR_TAIL_LINES: Final = 40
_KILL_GRACE_S: Final = 2.0  # after SIGTERM, before SIGKILL
REAPER: Final = Path(__file__).with_name("reaper.py")  # run as a file: stdlib only


@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn: its text, how long to wait before sending it, its lane (`stream_id`),
    and whether it starts a new conversation (the next task of the same client: nothing of the
    earlier turns, no previous_response_id, the same client and connection as it likes)."""

    input: str
    delay_ms: int = 0
    stream_id: str | None = None
    new_conversation: bool = False

    def as_json(self) -> dict[str, Any]:
        line: dict[str, Any] = {
            "input": self.input,
            "delay_ms": self.delay_ms,
            "stream_id": self.stream_id,
        }
        if self.new_conversation:
            line["new_conversation"] = True
        return line


@dataclass(frozen=True, slots=True)
class Task:
    """What the adapter is asked to do in one case.

    Sequential (the default): send turn 0 as a new conversation; send each later turn as the
    continuation of the last turn that completed (the client's own way: `previous_response_id`
    and only the new message over WebSocket mode), after its `delay_ms`. `parallel`: send every
    turn at once, each a conversation of its own, without waiting for answers (queued creates,
    or lanes when a turn names a `stream_id`).
    """

    case: str
    turns: tuple[Turn, ...]
    model: str = "wsmode-client-test"
    instructions: str = "You are the client certification's test assistant. Answer briefly."
    store: bool = False
    parallel: bool = False
    timeout_s: float = 30.0  # the adapter's whole run; the harness kills it after this

    def as_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "model": self.model,
            "instructions": self.instructions,
            "store": self.store,
            "parallel": self.parallel,
            "timeout_s": self.timeout_s,
            "turns": [turn.as_json() for turn in self.turns],
        }


@dataclass(frozen=True, slots=True)
class TurnReport:
    """One turn's outcome as the caller of the client saw it."""

    turn: int
    status: Status
    at_ms: float  # when the line arrived, since the adapter started
    response_id: str | None = None
    text: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    error_status: int | None = None
    stream_id: str | None = None  # the lane the outcome names (errors carry their lane)
    incomplete_reason: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


class ReportLineError(InputError, ValueError):
    """A stdout line that is not a turn report (kept as a finding, never raised to the user)."""


def _opt_str(line: Mapping[str, Any], key: str) -> str | None:
    value = line.get(key)
    return value if isinstance(value, str) else None


def parse_report(line: Mapping[str, Any], at_ms: float) -> TurnReport:
    """A turn report from one decoded stdout line; `ReportLineError` says what is wrong."""
    turn, status = line.get("turn"), line.get("status")
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 0:
        raise ReportLineError(f"'turn' must be an integer >= 0, got {turn!r}")
    if status not in STATUSES:
        raise ReportLineError(f"'status' must be one of {', '.join(STATUSES)}, got {status!r}")
    error = line.get("error")
    if isinstance(error, str):  # a client that only has a message
        error = {"message": error}
    error = error if isinstance(error, Mapping) else {}
    error_status = error.get("status")
    return TurnReport(
        turn=turn,
        status=status,
        at_ms=at_ms,
        response_id=_opt_str(line, "response_id"),
        text=_opt_str(line, "text"),
        error_code=_opt_str(error, "code"),
        error_message=_opt_str(error, "message"),
        error_status=error_status if isinstance(error_status, int) else None,
        stream_id=_opt_str(line, "stream_id") or _opt_str(error, "stream_id"),
        incomplete_reason=_opt_str(line, "incomplete_reason"),
        raw=dict(line),
    )


@dataclass
class AdapterRun:
    """What one run of the adapter produced."""

    reports: list[TurnReport] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)  # stdout lines that were no report
    client: str | None = None
    version: str | None = None
    exit_code: int | None = None
    killed: bool = False  # still running at the deadline
    duration_ms: float = 0.0
    stderr_tail: list[str] = field(default_factory=list)
    start_error: str | None = None  # the command could not be started
    lines: list[tuple[float, str]] = field(default_factory=list)  # stdout, with arrival ms

    def for_turn(self, turn: int) -> TurnReport | None:
        """The turn's report (the last one, if an adapter wrote several)."""
        found = [r for r in self.reports if r.turn == turn]
        return found[-1] if found else None


def adapter_environment(
    base: Mapping[str, str], *, base_url: str, ws_url: str, api_key: str, case: str, home: str
) -> dict[str, str]:
    env = dict(base)
    # a real key or endpoint in the caller's environment never reaches the client under test
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        env.pop(name, None)
    env.update(
        {
            ENV_BASE_URL: base_url,
            ENV_WS_URL: ws_url,
            ENV_API_KEY: api_key,
            ENV_CASE: case,
            ENV_HOME: home,
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": api_key,
        }
    )
    return env


async def run_adapter(
    command: Sequence[str],
    task: Task,
    env: Mapping[str, str],
    *,
    cwd: str | None = None,
    on_line: Any = None,
    contain: bool = True,
) -> AdapterRun:
    """Start the adapter, hand it the task, collect its lines until it exits or the task's
    deadline passes (then its process group is terminated, and killed if it lingers). With
    `contain` (always, but in the test that shows why) it runs under the reaper, so whatever it
    started is killed when it ends."""
    run = AdapterRun()
    started = time.perf_counter()
    if not command:
        run.start_error = "no adapter command"
        return run
    if contain:
        if shutil.which(command[0]) is None and not os.path.exists(command[0]):
            run.start_error = f"cannot start {command[0]!r}: no such program"
            return run
        command = (sys.executable, str(REAPER), *command)
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,  # its own process group: a hung client's children go too
        )
    except OSError as exc:
        run.start_error = f"cannot start {command[0]!r}: {exc}"
        return run
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    stderr: list[str] = []

    async def read_stdout() -> None:
        assert process.stdout is not None
        async for raw in process.stdout:
            at_ms = (time.perf_counter() - started) * 1000
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not text.strip():
                continue
            run.lines.append((at_ms, text))
            if on_line is not None:
                on_line(at_ms, text)
            _take_line(run, text, at_ms)

    async def read_stderr() -> None:
        assert process.stderr is not None
        async for raw in process.stderr:
            stderr.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
            del stderr[:-STDERR_TAIL_LINES]

    readers = [asyncio.ensure_future(read_stdout()), asyncio.ensure_future(read_stderr())]
    with contextlib.suppress(ConnectionError):
        process.stdin.write(json.dumps(task.as_json()).encode() + b"\n")
        await process.stdin.drain()
        process.stdin.close()
    try:
        async with asyncio.timeout(task.timeout_s):
            await process.wait()
            await asyncio.gather(*readers)
    except TimeoutError:
        run.killed = True
        await _stop(process)
    finally:
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    run.exit_code = process.returncode
    run.duration_ms = (time.perf_counter() - started) * 1000
    run.stderr_tail = stderr
    return run


def _take_line(run: AdapterRun, text: str, at_ms: float) -> None:
    try:
        line = json.loads(text)
    except ValueError:
        run.bad_lines.append(text)
        return
    if not isinstance(line, dict):
        run.bad_lines.append(text)
        return
    if "client" in line and "turn" not in line:
        run.client = str(line.get("client"))
        version = line.get("version")
        run.version = str(version) if version is not None else None
        return
    try:
        run.reports.append(parse_report(line, at_ms))
    except ReportLineError as exc:
        run.bad_lines.append(f"{text} ({exc})")


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM to the adapter's process group, SIGKILL after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            async with asyncio.timeout(_KILL_GRACE_S):
                await process.wait()
            return
        except TimeoutError:
            continue
