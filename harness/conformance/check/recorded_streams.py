"""Reading recorded Responses traffic into streams of events, for `wsmode check`.

The forms read here: JSONL of events (or one JSON array of them), SSE text, the project's wire
logs (JSONL of wire entries, or a certify `report.json`, whose cases sit under `certify.cases`),
whose compact rows are expanded exactly first (`wirelog_compact`). The HTTP recording
containers (cassettes, HAR, test-proxy records) are in `recorded_containers`.

Every connection of a wire log, and every body of a container, is its own `Stream`; a stream
that cannot be judged (its wire log lost frames) is left out with a note saying why.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from harness.conformance.certificates.wirelog_compact import LOSSY_MARKS, expand_entries
from harness.errors import InputError
from harness.protocol.wire import WireFormatError, loads_document
from harness.transport.sse_wire import SseParser, block_fields

# A wire-log frame cut at its size limit (`wirelog.clip`) ends with this marker.
_CLIPPED: Final = " characters elided]…"


class UnreadableInput(InputError):
    """A file that is not one of the readable forms, or a record in it that is broken."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class Located:
    """One event and where it was read: `line` in the file (1-based), `where` for people."""

    event: dict[str, Any]
    line: int | None
    where: str


@dataclass(slots=True)
class Stream:
    """The events of one connection, SSE body or capture, in order."""

    label: str  # "" for a file that is one stream
    events: list[Located] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sse_names: list[tuple[str, str, Located]] = field(default_factory=list)  # (event:, type)
    # a wire log's text frames both ways, in order ("send"/"recv", decoded JSON or None): what
    # the request rules pair creates with (`request_rules.judge_recorded`)
    frames: list[tuple[str, Any]] = field(default_factory=list)
    starting_after: int | None = None  # the request resumed a background stream after N


@dataclass(slots=True)
class Streams:
    """What one file held: its streams, and what was left out (with why) and skipped."""

    streams: list[Stream] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: int = 0  # interactions of a container that are not Responses traffic


# -- JSON and JSONL -----------------------------------------------------------------------------
def read_json(name: str, text: str) -> Streams:
    try:
        document = loads_document(text)
    except ValueError:
        document = None  # JSONL, or broken: read line by line to say which line
    report_cases = _report_cases(document)
    if report_cases is not None:
        return read_report(name, report_cases)
    records: list[tuple[int | None, Any]]
    if isinstance(document, list):
        records = [(None, record) for record in document]
    elif isinstance(document, dict):
        records = [(1, document)]
    else:
        records = list(_jsonl_records(name, text))
    return streams_of_records(name, records, "")


def _report_cases(document: Any) -> list[Any] | None:
    """The cases of a certify report.json (`certify.cases`; a top-level `cases` too)."""
    if not isinstance(document, dict):
        return None
    certify = document.get("certify")
    if isinstance(certify, dict) and isinstance(certify.get("cases"), list):
        return list(certify["cases"])
    cases = document.get("cases")
    return list(cases) if isinstance(cases, list) else None


def _jsonl_records(name: str, text: str) -> Iterator[tuple[int | None, Any]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, loads_document(line)
        except ValueError as exc:
            raise UnreadableInput(name, number, f"not a JSON object ({exc})") from None


def streams_of_records(name: str, records: list[tuple[int | None, Any]], prefix: str) -> Streams:
    """Events, or wire entries (one stream per connection, expanded first), into streams."""
    entries = [(line, r) for line, r in records if isinstance(r, dict) and _is_wire_entry(r)]
    if entries:
        return _wire_log_streams(name, entries, prefix)
    if records and all(_is_fetch_hook(r) for _, r in records):
        return Streams([_fetch_hook_stream(name, records)])
    streams: dict[str, Stream] = {}
    for position, (line, record) in enumerate(records, start=1):
        where = f"line {line}" if line is not None else f"{prefix}entry {position}"
        if not isinstance(record, dict):
            raise UnreadableInput(
                name, line, f"{where}: a JSON {type(record).__name__}, not an object"
            )
        if record.get("kind") == "rollout":
            raise UnreadableInput(
                name,
                line,
                f"{where}: a wsmode-trace holds rollouts, not server events "
                "(record with `wsmode record --events FILE` to judge what the server sent)",
            )
        if not isinstance(record.get("type"), str):
            if len(records) == 1:  # one document: a container this reader does not know
                raise UnreadableInput(name, line, unknown_container(record))
            raise UnreadableInput(name, line, f"{where}: a JSON object without a 'type'")
        stream = streams.setdefault(prefix, Stream(prefix))
        stream.events.append(Located(record, line, where))
    return Streams(list(streams.values()))


def _is_wire_entry(record: Mapping[str, Any]) -> bool:
    return "dir" in record and "kind" in record and "data" in record and "type" not in record


# The forms `wsmode check` reads, named in the message for one it does not.
KNOWN_FORMS: Final = (
    "JSONL or a JSON array of events",
    "SSE text",
    "wsmode wire logs",
    "certify report.json",
    "VCR.py and go-vcr cassettes",
    "Ruby VCR cassettes (YAML or JSON)",
    "HAR",
    "Azure SDK test-proxy records",
    "dd-apm-test-agent cassettes",
    "OpenRouter fetch-hooks JSONL",
)


def unknown_container(document: Mapping[str, Any]) -> str:
    keys = ", ".join(sorted(str(k) for k in document)[:8]) or "none"
    return (
        f"an unknown container (a JSON object with keys: {keys}); wsmode check reads: "
        + "; ".join(KNOWN_FORMS)
    )


# -- OpenRouter fetch-hooks recordings ------------------------------------------------------------
# What @effect-native/fetch-hooks writes (OpenRouter's SDK tests record with it), one JSON object
# per line in the order received: `{"json": event}` (a data payload that parsed), `{"text": t}`
# (one that did not: `[DONE]`, or the start of a payload a network chunk cut, whose rest is the
# raw tail of the next chunk, blank line included), `{"comment": ...}`, `{"delay_ms": n}`. A
# payload whose tail the recorder dropped (a chunk with the tail and the next event keeps only
# the event) cannot be judged: it is left out with a note, not blamed on the server.
_FETCH_HOOK_KEYS: Final = frozenset({"json", "text", "comment", "delay_ms"})
_SSE_FIELDS: Final = ("event:", "id:", "retry:", ":")


def _is_fetch_hook(record: Any) -> bool:
    return isinstance(record, dict) and len(record) == 1 and next(iter(record)) in _FETCH_HOOK_KEYS


def _fetch_hook_stream(name: str, records: list[tuple[int | None, Any]]) -> Stream:
    stream = Stream("")
    pending: tuple[int | None, str] | None = None  # a cut payload: the line it starts at, so far
    for line, record in records:
        text = record.get("text")
        if "json" in record:
            _cut_off(stream, pending)
            pending = None
            event = record["json"]
            if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                raise UnreadableInput(
                    name, line, f"line {line}: a 'json' record without a typed event"
                )
            stream.events.append(Located(event, line, f"line {line}"))
        elif isinstance(text, str) and pending is not None:
            joined = pending[1] + text
            if _payload(joined) is not None:
                _add_fetch_hook_payload(stream, joined, pending[0])
                pending = None
            elif _starts_anew(text) or text.endswith("\n\n"):
                _cut_off(stream, pending)
                pending = _fetch_hook_text(name, stream, text, line)
            else:
                pending = (pending[0], joined)  # a middle piece of a long payload
        elif isinstance(text, str):
            pending = _fetch_hook_text(name, stream, text, line)
    _cut_off(stream, pending)
    return stream


def _fetch_hook_text(
    name: str, stream: Stream, text: str, line: int | None
) -> tuple[int | None, str] | None:
    """A `text` record read on its own; what is left pending when it is a payload's start."""
    lines = [part for part in text.splitlines() if part.strip()]
    if not lines or text.strip() == "[DONE]":
        return None
    if any(part.startswith("data:") for part in lines):  # raw SSE, as a chunk came
        parser = SseParser()
        blocks = parser.blocks(text.encode())
        last = parser.end_block()
        for block in [*blocks, *([last] if last is not None else [])]:
            _add_fetch_hook_block(name, stream, block, line)
        return None
    if all(part.startswith(_SSE_FIELDS) for part in lines):
        return None  # an event name or a comment: its data comes as its own record
    if _payload(text) is not None:
        _add_fetch_hook_payload(stream, text, line)
        return None
    return (line, text)


def _starts_anew(text: str) -> bool:
    stripped = text.strip()
    return stripped == "[DONE]" or stripped.startswith("data:") or _payload(text) is not None


def _payload(text: str) -> Any:
    try:
        return loads_document(text.strip())
    except ValueError:
        return None


def _add_fetch_hook_payload(stream: Stream, text: str, line: int | None) -> None:
    event = _payload(text)
    if isinstance(event, dict) and isinstance(event.get("type"), str):
        stream.events.append(Located(event, line, f"line {line}"))


def _cut_off(stream: Stream, pending: tuple[int | None, str] | None) -> None:
    if pending is not None:
        stream.notes.append(
            f"line {pending[0]}: an event the recorder cut off (only the start of its data"
            " payload was kept): not judged"
        )


def _add_fetch_hook_block(name: str, stream: Stream, block: bytes, line: int | None) -> None:
    event_name, data = block_fields(block)
    if data is None or data == b"[DONE]":
        return
    try:
        event = loads_document(data)
    except ValueError as exc:
        raise UnreadableInput(name, line, f"an SSE data line that is not JSON ({exc})") from None
    if isinstance(event, dict) and isinstance(event.get("type"), str):
        located = Located(event, line, f"line {line}")
        stream.events.append(located)
        if event_name is not None:
            stream.sse_names.append((event_name, event["type"], located))


# -- wire logs ----------------------------------------------------------------------------------
def _wire_log_streams(
    name: str, entries: list[tuple[int | None, dict[str, Any]]], prefix: str
) -> Streams:
    """One stream per connection of a wire log, after expanding its compact rows exactly; a
    connection the log lost frames of is not judged (a note says why)."""
    expanded = expand_entries([entry for _, entry in entries])
    streams: dict[str, Stream] = {}
    for source, entry in expanded.entries:
        conn = str(entry.get("conn", ""))
        if entry.get("kind") not in ("text", "sse") or conn in expanded.unjudgeable:
            continue
        label = f"{prefix}conn {conn}".strip()
        stream = streams.setdefault(label, Stream(label))
        if entry.get("kind") == "text":
            stream.frames.append((str(entry.get("dir")), _decoded(entry.get("data"))))
        if entry.get("dir") != "recv":
            continue
        line = entries[source][0]
        where = f"line {line}" if line is not None else f"{prefix}entry {source + 1}"
        _add_wire_entry(name, stream, entry, line, where)
    result = Streams(list(streams.values()))
    for conn, why in expanded.unjudgeable.items():
        result.notes.append(
            f"{prefix}conn {conn}: not judged: {why} (an abridged wire log; "
            "`wsmode certify --full-wire-log` keeps every frame)".strip()
        )
    return result


def _decoded(data: Any) -> Any:
    try:
        return loads_document(str(data))
    except WireFormatError:
        return None


def _add_wire_entry(
    name: str, stream: Stream, entry: Mapping[str, Any], line: int | None, where: str
) -> None:
    data = str(entry.get("data", ""))
    if entry.get("kind") == "sse":
        block = read_sse(name, data.encode(), stream.label, 0)
        for located in block.events:
            stream.events.append(Located(located.event, line, where))
        stream.sse_names.extend(block.sse_names)
        return
    if data.endswith(_CLIPPED) or any(mark in data for mark in LOSSY_MARKS):
        stream.notes.append(f"{where}: frame clipped by the wire log, left out (not judged)")
        return
    try:
        event = loads_document(data)
    except ValueError:
        stream.notes.append(f"{where}: a received frame that is not JSON (transport.garbage)")
        return
    if isinstance(event, dict):
        stream.events.append(Located(event, line, where))


def read_report(name: str, cases: list[Any]) -> Streams:
    """Every case's wire log of a certify report, each connection its own stream."""
    result = Streams()
    for case in cases:
        if not isinstance(case, dict) or not isinstance(case.get("wire_log"), list):
            continue
        prefix = f"case {case.get('id', '?')} "
        records: list[tuple[int | None, Any]] = [(None, entry) for entry in case["wire_log"]]
        part = streams_of_records(name, records, prefix)
        result.streams.extend(s for s in part.streams if s.events)
        result.notes.extend(part.notes)
    return result


# -- SSE ----------------------------------------------------------------------------------------
def read_sse(name: str, body: bytes, label: str, line_offset: int) -> Stream:
    """SSE text through the transport's parser; each block's line is where it starts."""
    stream = Stream(label)
    for start, event_name, event in sse_events(name, body, line_offset):
        where = f"{label + ', ' if label else ''}line {start}"
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise UnreadableInput(name, start, "an SSE event that is not a typed JSON object")
        located = Located(event, start, where)
        stream.events.append(located)
        if event_name is not None:
            stream.sse_names.append((event_name, event["type"], located))
    return stream


def sse_events(name: str, body: bytes, line_offset: int) -> Iterator[tuple[int, str | None, Any]]:
    """(line, `event:` name, parsed data) of every data block ([DONE] and comments skipped)."""
    parser = SseParser()
    blocks = parser.blocks(body)
    last = parser.end_block()
    if last is not None:
        blocks.append(last)
    line = 1 + line_offset
    for block in blocks:
        start = line + len(block) - len(block.lstrip(b"\n"))
        line += block.count(b"\n") + 2
        event_name, data = block_fields(block)
        if data is None or data == b"[DONE]":
            continue
        try:
            yield start, event_name, loads_document(data)
        except ValueError as exc:
            raise UnreadableInput(
                name, start, f"an SSE data line that is not JSON ({exc})"
            ) from None
