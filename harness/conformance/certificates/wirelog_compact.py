"""The compact wire log certify writes by default, and its exact expansion for `wsmode check`.

A case's wire log is written compactly, without losing anything a checker judges:

* **Delta runs** (a passing case only): `MIN_RUN` or more received `*.delta` frames of one type on
  one connection that differ only in `delta` (and an `obfuscation` pad) with contiguous
  `sequence_number`s become three rows: the first frame, one `deltas` row and the last frame. The
  row's `data` is for people (how many, when, the run's text); its `run` member is for tools:
  the middle frames' deltas and the members they share, enough to rebuild each frame.
* **Repeated long strings**: a string member longer than `LONG_FIELD_CHARS` that a received frame
  repeats from an earlier received frame of the same connection (the text of a `.done` event
  again in `content_part.done`, `output_item.done` and the terminal's `output`) is replaced by
  `…[same as long string #N of CONN, L characters]…`. Long strings are numbered per connection
  in the order a JSON walk meets them, so the reader rebuilds the same table.
* **Sent frames** are shortened for people (`shorten_json`): a checker judges what the target
  sent, not what the harness sent.

`expand_entries` undoes the first two exactly (an `obfuscation` pad of a collapsed delta is not
kept: no rule reads it). Anything it cannot rebuild (an older wsmode's lossy rows: a `deltas`
row without `run`, `elided` rows, frames shortened inside) is reported per connection, so the
checker refuses that connection with a clear note instead of judging what is not there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from harness.conformance.certificates.wirelog import (
    DEFAULT_MAX_CHARS,
    LONG_FIELD_CHARS,
    clip,
    shorten_json,
)
from harness.protocol.wire import loads_document

MIN_RUN: Final = 4  # deltas in a run before it is collapsed (first, middle..., last)
_PAD: Final = "obfuscation"  # a random pad per delta (api.openai.com): not rebuilt, not judged
_SAME_AS: Final = re.compile(r"^…\[same as long string #(\d+) of (.*), (\d+) characters\]…$")
# What an older wsmode's lossy writer left inside a frame: it cannot be judged.
LOSSY_MARKS: Final = (" characters elided]…", " items elided]…")


def _event(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON object a received text frame carries, else None."""
    if entry.get("kind") != "text" or entry.get("dir") != "recv":
        return None
    try:
        event = loads_document(str(entry.get("data", "")))
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _delta_event(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    event = _event(entry) if '.delta"' in str(entry.get("data", "")) else None
    kind = event.get("type") if event is not None else None
    if event is None or not isinstance(kind, str) or not kind.endswith(".delta"):
        return None
    return event if isinstance(event.get("delta"), str) else None


def _shared(event: Mapping[str, Any]) -> dict[str, Any]:
    """The members a delta shares with the others of its run (all but its own)."""
    return {k: v for k, v in event.items() if k not in ("delta", "sequence_number", _PAD)}


def _run_end(entries: list[dict[str, Any]], start: int) -> int:
    """The end (exclusive) of the run of rebuildable deltas starting at `start`."""
    first = _delta_event(entries[start])
    if first is None:
        return start + 1
    conn, shared, seq = entries[start].get("conn"), _shared(first), first.get("sequence_number")
    end = start + 1
    while end < len(entries) and entries[end].get("conn") == conn:
        event = _delta_event(entries[end])
        if event is None or _shared(event) != shared:
            break
        following = event.get("sequence_number")
        if isinstance(seq, int) != isinstance(following, int):
            break
        if isinstance(seq, int) and following != seq + 1:
            break
        seq = following
        end += 1
    return end


def collapse_deltas(
    entries: list[dict[str, Any]], *, min_run: int = MIN_RUN, text_limit: int = DEFAULT_MAX_CHARS
) -> list[dict[str, Any]]:
    """Runs of `min_run` or more deltas become the first frame, one `deltas` row, the last."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(entries):
        end = _run_end(entries, i)
        if end - i < min_run:
            out.extend(entries[i:end])
            i = end
            continue
        run = entries[i:end]
        events = [e for e in map(_delta_event, run) if e is not None]
        middle, middle_events = run[1:-1], events[1:-1]
        kind = str(events[0]["type"])
        first_seq = middle_events[0].get("sequence_number")
        out.append(run[0])
        out.append(
            {
                "t_ms": middle[0]["t_ms"],
                "conn": run[0].get("conn", ""),
                "dir": "recv",
                "kind": "deltas",
                "bytes": sum(int(e.get("bytes", 0)) for e in middle),
                "data": f"{len(middle)} × {kind} collapsed "
                f"({middle[0]['t_ms']:.3f}–{middle[-1]['t_ms']:.3f} ms); the run's text: "
                + json.dumps(
                    clip("".join(e["delta"] for e in events), text_limit), ensure_ascii=False
                ),
                "run": {
                    "shared": _shared(middle_events[0]),
                    "first_sequence_number": first_seq,
                    "deltas": [e["delta"] for e in middle_events],
                    "t_ms": [e["t_ms"] for e in middle],
                },
            }
        )
        out.append(run[-1])
        i = end
    return out


@dataclass
class _LongStrings:
    """Per connection, the long strings met so far, numbered in walk order."""

    seen: dict[str, dict[str, int]] = field(default_factory=dict)
    ordered: dict[str, list[str]] = field(default_factory=dict)

    def number(self, conn: str, text: str) -> int | None:
        return self.seen.setdefault(conn, {}).get(text)

    def add(self, conn: str, text: str) -> None:
        table = self.seen.setdefault(conn, {})
        if text not in table:
            table[text] = len(table)
            self.ordered.setdefault(conn, []).append(text)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _replace(value: Any, replace: Any) -> Any:
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, list):
        return [_replace(v, replace) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, replace) for k, v in value.items()}
    return value


def dedupe_long_strings(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Received frames with every long string met before on their connection referenced."""
    table = _LongStrings()
    out: list[dict[str, Any]] = []
    for entry in entries:
        event = _event(entry)
        if event is None:
            out.append(entry)
            continue
        conn = str(entry.get("conn", ""))

        def reference(text: str, conn: str = conn) -> str:
            if len(text) <= LONG_FIELD_CHARS:
                return text
            number = table.number(conn, text)
            if number is None:
                table.add(conn, text)
                return text
            return f"…[same as long string #{number} of {conn}, {len(text)} characters]…"

        compact = _replace(event, reference)
        out.append(
            {**entry, "data": json.dumps(compact, ensure_ascii=False)}
            if compact != event
            else entry
        )
    return out


# Frames the harness sent are shortened to this in a case that did not fail (cited members kept
# whole), to DEFAULT_MAX_CHARS in one that did; what the target sent is kept.
PASSING_SENT_CHARS: Final = 512


def wire_log_for(entries: list[dict[str, Any]], verdict: str, *, full: bool) -> list[Any]:
    """A case's wire log as written: every frame as it went (`full`: --full-wire-log), else
    compact without losing what a checker judges: delta runs collapsed in a case that did not
    fail, repeated long strings referenced, sent frames shortened (`expand_entries` undoes it)."""
    if full:
        return list(entries)
    failed = str(verdict) in ("FAIL", "ERROR")
    sent_chars = DEFAULT_MAX_CHARS if failed else PASSING_SENT_CHARS
    return compact_entries(entries, collapse=not failed, sent_chars=sent_chars)


def compact_entries(
    entries: list[dict[str, Any]], *, collapse: bool, sent_chars: int
) -> list[dict[str, Any]]:
    """The default wire log of a case: delta runs collapsed (`collapse`, passing cases),
    repeated long strings referenced, sent frames shortened to `sent_chars`."""
    rows = collapse_deltas(entries) if collapse else list(entries)
    rows = [
        {**e, "data": shorten_json(str(e["data"]), sent_chars)}
        if e.get("dir") == "send" and e.get("kind") == "text"
        else e
        for e in rows
    ]
    return dedupe_long_strings(rows)


# -- the way back -------------------------------------------------------------------------------
@dataclass
class Expanded:
    """A wire log with every received frame rebuilt (each with the index of the row it came
    from), and the connections that could not be."""

    entries: list[tuple[int, dict[str, Any]]]
    unjudgeable: dict[str, str] = field(default_factory=dict)  # conn -> why


# What references and collapsed runs may add in all while a log is expanded: far past any real
# log, so a hostile one (a long string referenced a million times) stops here, not in memory.
MAX_EXPANDED_BYTES: Final = 256 * 1024 * 1024
_OVER_BUDGET: Final = (
    f"its references and runs expand past {MAX_EXPANDED_BYTES // 1024 // 1024} MiB "
    "(a broken or hostile wire log)"
)


def expand_entries(entries: list[Mapping[str, Any]]) -> Expanded:
    """Undo `compact_entries` for every received frame (sent frames stay as written); a
    connection whose expansion would pass MAX_EXPANDED_BYTES is left unjudged, with why."""
    table = _LongStrings()
    out = Expanded([])
    budget = [MAX_EXPANDED_BYTES]
    for index, entry in enumerate(entries):
        conn = str(entry.get("conn", ""))
        if conn in out.unjudgeable and out.unjudgeable[conn] == _OVER_BUDGET:
            continue
        if entry.get("kind") == "deltas" and entry.get("dir") == "recv":
            run = entry.get("run")
            if isinstance(run, Mapping):
                shared = len(json.dumps(run.get("shared") or {}, ensure_ascii=False))
                budget[0] -= shared * len(run.get("deltas") or [])
                if budget[0] < 0:
                    out.unjudgeable[conn] = _OVER_BUDGET
                    continue
                out.entries.extend((index, row) for row in _rebuild_run(entry, run))
            else:
                out.unjudgeable.setdefault(conn, "a collapsed run of deltas without its record")
            continue
        if entry.get("kind") == "elided":
            for other in {str(e.get("conn", "")) for e in entries if e.get("dir") == "recv"}:
                out.unjudgeable.setdefault(other, "rows elided from the wire log")
            continue
        event = _event(entry)
        if event is None:
            out.entries.append((index, dict(entry)))
            continue
        problem = _resolve(event, conn, table, budget)
        if isinstance(problem, str):
            out.unjudgeable.setdefault(conn, problem)
            out.entries.append((index, dict(entry)))
            continue
        out.entries.append((index, {**entry, "data": json.dumps(problem, ensure_ascii=False)}))
    return out


def _resolve(
    event: dict[str, Any], conn: str, table: _LongStrings, budget: list[int]
) -> dict[str, Any] | str:
    """The event with its references resolved (and its long strings numbered), or why not;
    `budget` is what references may still add."""
    problems: list[str] = []

    def resolve(text: str) -> str:
        match = _SAME_AS.match(text) if text.startswith("…[same as") else None
        if match is not None:
            number, of = int(match.group(1)), match.group(2)
            known = table.ordered.get(conn, [])
            if of != conn or number >= len(known):
                problems.append(f"an unresolvable reference {text!r}")
                return text
            budget[0] -= len(known[number])
            if budget[0] < 0:
                problems.append(_OVER_BUDGET)
                return text
            return known[number]
        if any(mark in text for mark in LOSSY_MARKS):
            problems.append("a frame shortened inside by the wire log")
        if len(text) > LONG_FIELD_CHARS:
            table.add(conn, text)
        return text

    resolved = _replace(event, resolve)
    return problems[0] if problems else resolved


def _rebuild_run(entry: Mapping[str, Any], run: Mapping[str, Any]) -> list[dict[str, Any]]:
    shared = dict(run.get("shared") or {})
    deltas = [str(d) for d in run.get("deltas") or []]
    times = list(run.get("t_ms") or [entry.get("t_ms", 0.0)] * len(deltas))
    seq = run.get("first_sequence_number")
    rows = []
    for offset, (delta, t_ms) in enumerate(zip(deltas, times, strict=False)):
        event = {**shared, "delta": delta}
        if isinstance(seq, int):
            event["sequence_number"] = seq + offset
        rows.append(
            {
                "t_ms": t_ms,
                "conn": entry.get("conn", ""),
                "dir": "recv",
                "kind": "text",
                "bytes": 0,
                "data": json.dumps(event, ensure_ascii=False),
            }
        )
    return rows
