"""`wsmode check`: judge recorded Responses traffic offline, with the protocol core's rules.

Reads, by content (never by file name):

* **JSONL** of events, one JSON object per line (an SDK's or gateway's capture, vercel/ai's
  `*.chunks.txt`), or one JSON array of events;
* **SSE text**: `event:`/`data:` blocks as sent on the wire (`[DONE]` and comments tolerated),
  read through the transport's sans-I/O parser (`harness.transport.sse_wire`);
* the project's **wire logs**: JSONL of wire entries (`{t_ms, conn, dir, kind, data}`), or a
  certify `report.json` whose cases carry `wire_log`; every connection is its own stream;
* **VCR cassettes** (`interactions:` YAML, as pydantic-ai and llm record them; needs PyYAML):
  every streamed response body is its own stream.

Each stream goes through `StreamAccumulator`, which splits it into responses at each
`response.created` (or `response.queued` when no created precedes it). Every response gets a
verdict and its findings (rule id, level, the first offending event's position, how many events
shared the cause). Unreadable input raises `UnreadableInput` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import WsmodeError
from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.levels import StreamRuleLevel
from harness.protocol.stream import StreamAccumulator
from harness.protocol.stream_rules import Violation
from harness.transport.sse_wire import SseParser, block_fields

# The marker `harness.conformance.wirelog.clip` leaves in a frame it shortened.
_CLIPPED = "more characters]"


class UnreadableInput(WsmodeError):
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


@dataclass(frozen=True, slots=True)
class CheckFinding:
    rule_id: str
    level: StreamRuleLevel
    message: str
    count: int
    where: str
    line: int | None
    sequence_number: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "level": self.level,
            "message": self.message,
            "count": self.count,
            "where": self.where,
            "line": self.line,
            "sequence_number": self.sequence_number,
        }


@dataclass(slots=True)
class ResponseVerdict:
    stream: str
    index: int  # 1-based within the stream
    response_id: str | None
    first: str  # where its first event was read
    events: int
    terminal: str | None
    findings: list[CheckFinding] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        levels = {f.level for f in self.findings}
        if "MUST" in levels:
            return "FAIL"
        if "SHOULD" in levels:
            return "NON-STRICT"
        return "INFORMATIONAL" if levels else "PASS"

    def as_dict(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "index": self.index,
            "response_id": self.response_id,
            "first": self.first,
            "events": self.events,
            "terminal": self.terminal,
            "verdict": self.verdict,
            "findings": [f.as_dict() for f in self.findings],
        }


@dataclass(slots=True)
class FileReport:
    path: str
    responses: list[ResponseVerdict] = field(default_factory=list)
    findings: list[CheckFinding] = field(default_factory=list)  # of no single response
    notes: list[str] = field(default_factory=list)

    @property
    def must_findings(self) -> int:
        every = [*self.findings, *(f for r in self.responses for f in r.findings)]
        return sum(1 for f in every if f.level == "MUST")

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "responses": [r.as_dict() for r in self.responses],
            "findings": [f.as_dict() for f in self.findings],
            "notes": self.notes,
        }


# -- reading ------------------------------------------------------------------------------------
RECORDED_SUFFIXES = (".jsonl", ".json", ".txt", ".sse", ".yaml", ".yml")


def expand_inputs(paths: list[str]) -> list[str]:
    """Files as given; a directory stands for the recorded files below it, in name order."""
    expanded: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            expanded.append(raw)
            continue
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in RECORDED_SUFFIXES)
        if not found:
            raise UnreadableInput(raw, None, f"no recorded files ({', '.join(RECORDED_SUFFIXES)})")
        expanded.extend(str(p) for p in found)
    return expanded


def read_streams(path: str | Path) -> list[Stream]:
    """The streams in one file, whatever its form; UnreadableInput when it has none."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UnreadableInput(name, None, exc.strerror or str(exc)) from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UnreadableInput(name, line, "not UTF-8 text") from None
    head = text.lstrip()[:64]
    if head.startswith(("{", "[")):
        streams = _read_json(name, text)
    elif head.startswith("interactions:"):
        streams = _read_cassette(name, text)
    else:
        streams = [_read_sse(name, text.encode(), "", 0)]
    if not any(s.events for s in streams):
        raise UnreadableInput(name, None, "no Responses events found (JSONL, SSE, wire log)")
    return streams


def _read_json(name: str, text: str) -> list[Stream]:
    try:
        document = json.loads(text)
    except ValueError:
        document = None  # JSONL, or broken: read line by line to say which line
    if isinstance(document, dict) and isinstance(document.get("cases"), list):
        return _read_report(name, document)
    records: list[tuple[int | None, Any]]
    if isinstance(document, list):
        records = [(None, record) for record in document]
    elif isinstance(document, dict):
        records = [(1, document)]
    else:
        records = list(_jsonl_records(name, text))
    return _streams_of_records(name, records, "")


def _jsonl_records(name: str, text: str) -> Iterator[tuple[int | None, Any]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise UnreadableInput(name, number, f"not a JSON object ({exc.msg})") from None


def _streams_of_records(
    name: str, records: list[tuple[int | None, Any]], prefix: str
) -> list[Stream]:
    """Events, or wire entries (one stream per connection), into streams."""
    streams: dict[str, Stream] = {}
    for position, (line, record) in enumerate(records, start=1):
        where = f"line {line}" if line is not None else f"{prefix}entry {position}"
        if not isinstance(record, dict):
            raise UnreadableInput(
                name, line, f"{where}: a JSON {type(record).__name__}, not an object"
            )
        if _is_wire_entry(record):
            _add_wire_entry(name, streams, record, line, where, prefix)
            continue
        if record.get("kind") == "rollout":
            raise UnreadableInput(
                name,
                line,
                f"{where}: a wsmode-trace holds rollouts, not server events "
                "(record with `wsmode record --events FILE` to judge what the server sent)",
            )
        if not isinstance(record.get("type"), str):
            raise UnreadableInput(name, line, f"{where}: a JSON object without a 'type'")
        stream = streams.setdefault(prefix, Stream(prefix))
        stream.events.append(Located(record, line, where))
    return list(streams.values())


def _is_wire_entry(record: Mapping[str, Any]) -> bool:
    return "dir" in record and "kind" in record and "data" in record and "type" not in record


def _add_wire_entry(
    name: str,
    streams: dict[str, Stream],
    entry: Mapping[str, Any],
    line: int | None,
    where: str,
    prefix: str,
) -> None:
    if entry.get("dir") != "recv" or entry.get("kind") not in ("text", "sse"):
        return
    label = f"{prefix}conn {entry.get('conn', '')}".strip()
    stream = streams.setdefault(label, Stream(label))
    data = str(entry.get("data", ""))
    if data.endswith(_CLIPPED):
        stream.notes.append(f"{where}: frame clipped by the wire log, left out (not judged)")
        return
    if entry.get("kind") == "sse":
        block = _read_sse(name, data.encode(), label, 0)
        for located in block.events:
            stream.events.append(Located(located.event, line, where))
        stream.sse_names.extend(block.sse_names)
        return
    try:
        event = json.loads(data)
    except ValueError:
        stream.notes.append(f"{where}: a received frame that is not JSON (transport.garbage)")
        return
    if isinstance(event, dict):
        stream.events.append(Located(event, line, where))


def _read_report(name: str, report: Mapping[str, Any]) -> list[Stream]:
    streams: list[Stream] = []
    for case in report["cases"]:
        if not isinstance(case, dict) or not isinstance(case.get("wire_log"), list):
            continue
        prefix = f"case {case.get('id', '?')} "
        records: list[tuple[int | None, Any]] = [(None, entry) for entry in case["wire_log"]]
        streams.extend(s for s in _streams_of_records(name, records, prefix) if s.events)
    return streams


def _read_sse(name: str, body: bytes, label: str, line_offset: int) -> Stream:
    """SSE text through the transport's parser; each block's line is where it starts."""
    stream = Stream(label)
    parser = SseParser()
    blocks = parser.blocks(body)
    last = parser.end_block()
    if last is not None:
        blocks.append(last)
    line = 1 + line_offset
    for block in blocks:
        start = line + _leading_newlines(block)
        line += block.count(b"\n") + 2
        event_name, data = block_fields(block)
        if data is None or data == b"[DONE]":
            continue
        where = f"{label + ', ' if label else ''}line {start}"
        try:
            event = json.loads(data.decode("utf-8"))
        except ValueError:
            raise UnreadableInput(name, start, "an SSE data line that is not JSON") from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise UnreadableInput(name, start, "an SSE event that is not a typed JSON object")
        located = Located(event, start, where)
        stream.events.append(located)
        if event_name is not None:
            stream.sse_names.append((event_name, event["type"], located))
    return stream


def _leading_newlines(block: bytes) -> int:
    return len(block) - len(block.lstrip(b"\n"))


def _read_cassette(name: str, text: str) -> list[Stream]:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise UnreadableInput(name, line, "a cassette that is not valid YAML") from None
    interactions = document.get("interactions") if isinstance(document, dict) else None
    if not isinstance(interactions, list):
        raise UnreadableInput(name, None, "a cassette without an 'interactions' list")
    streams = []
    for number, interaction in enumerate(interactions, start=1):
        body = _cassette_body(interaction)
        if body is not None and ("\ndata:" in "\n" + body):
            streams.append(_read_sse(name, body.encode(), f"interaction {number}", 0))
    return streams


def _cassette_body(interaction: Any) -> str | None:
    response = interaction.get("response") if isinstance(interaction, dict) else None
    body = response.get("body") if isinstance(response, dict) else None
    text = body.get("string") if isinstance(body, dict) else body
    return text if isinstance(text, str) else None


# -- judging ------------------------------------------------------------------------------------
def check_stream(stream: Stream) -> tuple[list[ResponseVerdict], list[CheckFinding]]:
    """Every response of one stream, judged; and the findings that belong to no response."""
    splitter = StreamAccumulator()
    order: list[ResponseAccumulator] = []
    first_event: dict[int, Located] = {}
    placed: dict[int, Located] = {}  # id(violation) -> where its first offending event was
    for located in stream.events:
        response = splitter.feed(located.event)
        if isinstance(response, ResponseAccumulator) and id(response) not in first_event:
            first_event[id(response)] = located
            order.append(response)
        for violation in splitter.all_violations():
            placed.setdefault(id(violation), located)
    verdicts = [
        _verdict(stream.label, number, response, first_event[id(response)], placed)
        for number, response in enumerate(order, start=1)
    ]
    loose = [_finding(v, placed.get(id(v))) for v in splitter.violations]
    loose.extend(_sse_name_findings(stream))
    return verdicts, loose


def _verdict(
    label: str,
    number: int,
    response: ResponseAccumulator,
    first: Located,
    placed: Mapping[int, Located],
) -> ResponseVerdict:
    verdict = ResponseVerdict(
        label,
        number,
        response.response_id,
        first.where,
        response.event_count,
        response.terminal_type,
    )
    verdict.findings = [_finding(v, placed.get(id(v))) for v in response.violations]
    return verdict


def _finding(violation: Violation, located: Located | None) -> CheckFinding:
    return CheckFinding(
        violation.rule_id,
        violation.level,
        violation.message,
        violation.count,
        located.where if located is not None else "",
        located.line if located is not None else None,
        violation.sequence_number,
    )


def _sse_name_findings(stream: Stream) -> list[CheckFinding]:
    """`sse.event_name` (SHOULD): a block's `event:` line names its data's type (§3.1)."""
    wrong = [(name, kind, at) for name, kind, at in stream.sse_names if name != kind]
    if not wrong:
        return []
    name, kind, at = wrong[0]
    message = f"event: {name!r} on a {kind} block"
    seq = at.event.get("sequence_number")
    number = seq if isinstance(seq, int) else None
    return [
        CheckFinding("sse.event_name", "SHOULD", message, len(wrong), at.where, at.line, number)
    ]


def check_file(path: str | Path) -> FileReport:
    """Read and judge one file; UnreadableInput when it cannot be read."""
    report = FileReport(str(path))
    for stream in read_streams(path):
        verdicts, loose = check_stream(stream)
        report.responses.extend(verdicts)
        report.findings.extend(loose)
        report.notes.extend(f"{stream.label}: {n}" if stream.label else n for n in stream.notes)
    return report


def render_text(report: FileReport) -> list[str]:
    """Per response: verdict and findings (level, rule id, position, message), for people."""
    lines = []
    for response in report.responses:
        stream = f"{response.stream}, " if response.stream else ""
        lines.append(
            f"{report.path}: {stream}response {response.index} "
            f"({response.response_id or 'no id'}, {response.events} events from {response.first}, "
            f"{response.terminal or 'no terminal'}): {response.verdict}"
        )
        lines.extend(_finding_line(f) for f in response.findings)
    if report.findings:
        lines.append(f"{report.path}: outside any response:")
        lines.extend(_finding_line(f) for f in report.findings)
    lines.extend(f"{report.path}: note: {note}" for note in report.notes)
    return lines


def _finding_line(finding: CheckFinding) -> str:
    seq = f" (seq {finding.sequence_number})" if finding.sequence_number is not None else ""
    count = f" [{finding.count} events]" if finding.count > 1 else ""
    return (
        f"  {finding.level:<6} {finding.rule_id:<28} {finding.where}{seq}: {finding.message}{count}"
    )
