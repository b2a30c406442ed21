"""Reading ``wsmode-trace`` files: every line checked, every error located.

Rules a per-line schema cannot express are checked here: turn indexes run 0, 1, 2, ...; the
``function_call_output`` items of turn *i* answer exactly the ``call_id`` s of turn *i-1*'s
function calls; ``call_id`` s are unique within a rollout; every called function is declared in
``tools``. In a multi-agent rollout (version 2, ``multi_agent``) every call is answered in flight
instead, by its own turn's ``injects``: each inject answers calls of the first run of
consecutive calls not yet fully answered (the response waits after that run), and none is left.
Loading is strict about structure and tolerant of additions: an unknown ``version`` is refused,
unknown extra fields are ignored (and not preserved), and every error is a
:class:`TraceFormatError` naming file, line and field, e.g.
``traces/x.jsonl:12: turn.tool_wait_ms: expected a number >= 0, got "abc"``.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from harness.protocol.wire import DOCUMENT_MAX_DEPTH, WireFormatError, check_nesting
from harness.traces.format.parse import (
    TraceFormatError,
    declared_version,
    field_error,
    parse_rollout_header,
    parse_turn,
    require,
    show_value,
)
from harness.traces.format.rollout import JSONObject, Rollout, Turn

__all__ = [
    "iter_rollouts",
    "load_traces",
    "loads_rollouts",
    "parse_rollouts",
    "read_objects",
    "trace_files",
    "validate_rollout",
]

_TRACE_SUFFIXES: Final = (".jsonl", ".jsonl.gz")


# --------------------------------------------------------------------------------------------
# Reading


class _RolloutAssembler:
    """Collects one rollout's turns and checks the cross-turn rules as they arrive."""

    def __init__(self, header: Rollout, line: int, version: int = 1) -> None:
        self.header = header
        self.line = line
        self.version = version
        self.turns: list[Turn] = []
        self.tool_names = set(header.tool_names)
        self.call_turn: dict[str, int] = {}

    def add(self, turn: Turn) -> None:
        expected = len(self.turns)
        if turn.index != expected:
            raise TraceFormatError(
                f"expected turn index {expected} (turns are numbered 0, 1, 2, ...), "
                f"got {turn.index}",
                field="turn.index",
            )
        if expected == 0 and not turn.input:
            raise TraceFormatError(
                "the first turn needs at least one input item", field="turn.input"
            )
        self._check_answers(turn)
        if self.header.multi_agent is not None:
            self._check_injects(turn)
        elif turn.injects:
            raise TraceFormatError(
                "injects need a multi-agent rollout (its line's multi_agent)", field="turn.injects"
            )
        for i, out in enumerate(turn.output):
            if out.type != "function_call":
                continue
            where = f"turn.output[{i}]"
            if out.name not in self.tool_names:
                raise TraceFormatError(
                    f"function {show_value(out.name)} is not declared in the rollout's tools",
                    field=f"{where}.name",
                )
            if out.call_id in self.call_turn:
                raise TraceFormatError(
                    f"duplicate call_id {show_value(out.call_id)} "
                    f"(already used in turn {self.call_turn[out.call_id]})",
                    field=f"{where}.call_id",
                )
            self.call_turn[out.call_id] = turn.index
        self.turns.append(turn)

    def _check_injects(self, turn: Turn) -> None:
        """Every call of a multi-agent turn is answered in flight, run of calls by run."""
        runs: list[list[str]] = []
        follows_call = False
        for out in turn.output:
            if out.type == "function_call":
                if not follows_call:
                    runs.append([])
                runs[-1].append(out.call_id)
            follows_call = out.type == "function_call"
        for k, inject in enumerate(turn.injects):
            open_run = next((run for run in runs if run), None)
            for i, call_id in enumerate(inject.call_ids):
                if open_run is None or call_id not in open_run:
                    why = (
                        "it answers no call this turn emitted and still waits for"
                        if all(call_id not in run for run in runs)
                        else "its call is not in the run the response waits after"
                    )
                    raise TraceFormatError(
                        f"function_call_output for call_id {show_value(call_id)}: {why} "
                        f"(waiting for {show_value(open_run or [])})",
                        field=f"turn.injects[{k}].input[{i}].call_id",
                    )
                open_run.remove(call_id)
        left = [call_id for run in runs for call_id in run]
        if left:
            raise TraceFormatError(
                f"function call(s) {show_value(left)} of a multi-agent turn have no "
                "function_call_output in its injects",
                field="turn.injects",
            )

    def _check_answers(self, turn: Turn) -> None:
        previous = self.turns[-1] if self.turns else None
        in_flight = self.header.multi_agent is not None  # answered by their own turn's injects
        pending = list(previous.call_ids) if previous and not in_flight else []
        for i, item in enumerate(turn.input):
            if item.get("type") != "function_call_output":
                continue
            call_id = item["call_id"]
            if call_id not in pending:
                if previous is None:
                    why = "the first turn has no function calls to answer"
                elif in_flight and call_id in previous.call_ids:
                    why = f"it was answered in flight by turn {previous.index}'s injects"
                elif call_id in previous.call_ids:
                    why = "it is answered twice"
                else:
                    why = (
                        f"it answers no function call of turn {previous.index} "
                        f"(expected one of {show_value(list(previous.call_ids))})"
                    )
                raise TraceFormatError(
                    f"function_call_output for call_id {show_value(call_id)}: {why}",
                    field=f"turn.input[{i}].call_id",
                )
            pending.remove(call_id)
        if pending:
            assert previous is not None
            raise TraceFormatError(
                f"function call(s) {show_value(pending)} of turn {previous.index} have no "
                "function_call_output in this turn's input",
                field="turn.input",
            )

    def finish(self) -> Rollout:
        if not self.turns:
            raise TraceFormatError(
                f"rollout {show_value(self.header.id)} has no turns",
                field="rollout",
                line=self.line,
            )
        h = self.header
        return Rollout(
            id=h.id,
            source=h.source,
            agent_kind=h.agent_kind,
            model=h.model,
            instructions=h.instructions,
            tools=h.tools,
            seed=h.seed,
            meta=h.meta,
            turns=tuple(self.turns),
            multi_agent=h.multi_agent,
        )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> JSONObject:
    obj: JSONObject = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _decode_line(text: str) -> Any:
    try:
        check_nesting(text, DOCUMENT_MAX_DEPTH)  # json.loads would die with RecursionError
        return json.loads(
            text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys
        )
    except WireFormatError as exc:
        raise TraceFormatError(f"invalid JSON: {str(exc).removeprefix('Invalid JSON: ')}") from None
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise TraceFormatError(f"invalid JSON: {exc or 'nested too deeply'}") from None


def read_objects(lines: Iterable[tuple[int, Any]], label: str) -> Iterator[Rollout]:
    """Turn ``(line number, decoded JSON)`` pairs into rollouts, located errors included."""
    current: _RolloutAssembler | None = None
    seen_ids: dict[str, int] = {}
    lineno = 0
    try:
        for lineno, obj in lines:
            if not isinstance(obj, dict):
                raise field_error("line", "a JSON object", obj)
            kind = obj.get("kind")
            if kind == "rollout":
                header = parse_rollout_header(obj)
                if header.id in seen_ids:
                    raise TraceFormatError(
                        f"duplicate rollout id {show_value(header.id)} "
                        f"(first defined on line {seen_ids[header.id]})",
                        field="rollout.id",
                    )
                seen_ids[header.id] = lineno
                if current is not None:
                    yield current.finish()
                current = _RolloutAssembler(header, lineno, declared_version(obj))
            elif kind == "turn":
                if current is None:
                    raise TraceFormatError("a turn line before any rollout line", field="turn")
                owner = require(obj, "rollout", "turn")
                if owner != current.header.id:
                    raise TraceFormatError(
                        f"turn belongs to rollout {show_value(owner)} but follows rollout "
                        f"{show_value(current.header.id)} (turns must follow their rollout line)",
                        field="turn.rollout",
                    )
                current.add(parse_turn(obj, current.version))
            else:
                raise field_error("kind", '"rollout" or "turn"', kind)
        if current is not None:
            yield current.finish()
    except TraceFormatError as exc:
        # errors of the line source (I/O, gzip, UTF-8) already name their file and line
        raise (exc if exc.path is not None else exc.located(label, lineno)) from None
    if current is None:
        raise TraceFormatError("no rollouts in trace", path=label)


def validate_rollout(rollout: Rollout) -> None:
    """Check an in-memory rollout against every rule the loader applies.

    Errors are located as ``<rollout ID>:N`` where N is the line the item would have in a dump
    (the rollout line is 1, turn i is line i+2).
    """
    lines = ((n, obj) for n, obj in enumerate(rollout.to_lines(), start=1))
    for _ in read_objects(lines, f"<rollout {rollout.id}>"):
        pass


def parse_rollouts(lines: Iterable[str], path: str = "<string>") -> Iterator[Rollout]:
    """Parse trace lines (text), yielding each rollout once all its turns are read."""

    def decoded() -> Iterator[tuple[int, Any]]:
        for lineno, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                yield lineno, _decode_line(text)
            except TraceFormatError as exc:
                raise exc.located(path, lineno) from None

    return read_objects(decoded(), path)


def loads_rollouts(text: str, path: str = "<string>") -> list[Rollout]:
    """Parse a whole trace document held in memory."""
    return list(parse_rollouts(text.splitlines(), path))


def trace_files(path: str | os.PathLike[str]) -> list[Path]:
    """The trace files ``path`` names: itself, or a directory's ``*.jsonl[.gz]`` (sorted)."""
    p = Path(path)
    try:  # is_dir()/exists() raise too, e.g. for a parent directory without permission
        if p.is_dir():
            files = sorted(
                f for f in p.iterdir() if f.is_file() and f.name.endswith(_TRACE_SUFFIXES)
            )
            if not files:
                raise TraceFormatError("no *.jsonl trace files in directory", path=p)
            return files
        if not p.exists():
            raise TraceFormatError("no such file or directory", path=p)
    except OSError as exc:
        raise TraceFormatError(f"cannot read: {exc.strerror or exc}", path=p) from None
    return [p]


def _read_lines(path: Path) -> Iterator[str]:
    """The lines of a trace file as text (gunzipped if it ends in ``.gz``).

    Lines are decoded one by one so a bad byte is reported with its line number; I/O, gzip and
    UTF-8 failures all become :class:`TraceFormatError` naming the file.
    """
    lineno = 0
    try:
        with gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise TraceFormatError(
                        f"not UTF-8 text: {exc.reason} at byte {exc.start + 1} of the line",
                        path=path,
                        line=lineno,
                    ) from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:  # not gzip, truncated, corrupt
        after = f" after line {lineno}" if lineno else ""
        raise TraceFormatError(f"bad gzip data{after}: {exc}", path=path) from None
    except OSError as exc:
        raise TraceFormatError(f"cannot read: {exc.strerror or exc}", path=path) from None


def iter_rollouts(path: str | os.PathLike[str]) -> Iterator[Rollout]:
    """Stream the rollouts of a trace file or directory; ids must be unique across files.

    Every failure (missing path, unreadable file, bad gzip, bad UTF-8, bad content) is a
    :class:`TraceFormatError`.
    """
    first_seen: dict[str, Path] = {}
    for file in trace_files(path):
        for rollout in parse_rollouts(_read_lines(file), str(file)):
            if rollout.id in first_seen:
                other = first_seen[rollout.id]
                raise TraceFormatError(
                    f"duplicate rollout id {show_value(rollout.id)} (also in {other})",
                    path=file,
                    field="rollout.id",
                )
            first_seen[rollout.id] = file
            yield rollout


def load_traces(path: str | os.PathLike[str]) -> list[Rollout]:
    """Load every rollout of a trace file, or of a directory of ``*.jsonl`` files.

    Raises :class:`TraceFormatError` (a ``ValueError``) and nothing else for a bad path or file.
    """
    return list(iter_rollouts(path))
