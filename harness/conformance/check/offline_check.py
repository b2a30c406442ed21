"""`wsmode check`: judge recorded Responses traffic offline, with the protocol core's rules.

Reads, by content (never by file name; `recorded_streams` and `recorded_containers` read them):

* **JSONL** of events, one JSON object per line (an SDK's or gateway's capture, vercel/ai's
  `*.chunks.txt`), or one JSON array of events;
* **SSE text**: `event:`/`data:` blocks as sent on the wire (`[DONE]` and comments tolerated),
  read through the transport's sans-I/O parser (`harness.transport.sse_wire`);
* the project's **wire logs**: JSONL of wire entries (`{t_ms, conn, dir, kind, data}`), or a
  certify `report.json` (its cases under `certify.cases`, each with its `wire_log`); the compact
  rows certify writes by default are expanded exactly first, and a connection whose log lost
  frames (an older, abridged log) is not judged, with a note;
* **HTTP recording containers**: VCR.py, go-vcr and Ruby VCR cassettes, HAR files and the Azure
  SDK test-proxy's records; every streamed Responses body is its own stream, and interactions
  that are not Responses traffic are skipped and counted.

Each stream goes through `StreamAccumulator`, which splits it into responses at each
`response.created` (or `response.queued` when no created precedes it). Every response gets a
verdict and its findings (rule id, level, the first offending event's position, how many events
shared the cause). Unreadable input raises `UnreadableInput` naming the file and line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.conformance.check.cassette_yaml import CassetteBoundExceeded, load_cassette
from harness.conformance.check.recorded_containers import container_kind, read_container
from harness.conformance.check.recorded_streams import (
    Located,
    Stream,
    Streams,
    UnreadableInput,
    read_json,
    read_sse,
)
from harness.conformance.check.streaming_read import (
    ReadLimits,
    jsonl_events,
    read_whole,
    sse_events,
    streamable_form,
)
from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.levels import StreamRuleLevel
from harness.protocol.request_rules import judge_recorded
from harness.protocol.stream import StreamAccumulator
from harness.protocol.stream_rules import Violation
from harness.protocol.wire import loads_document

__all__ = [
    "UnreadableInput",
    "check_file",
    "exit_status",
    "expand_inputs",
    "file_line",
    "render_text",
    "summary_line",
]


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
    skipped: int = 0  # interactions of a container that are not Responses traffic
    # Responses handed to `check_file`'s `on_verdict` as judged and not kept: their count.
    said: Counter[str] = field(default_factory=Counter)
    said_must: int = 0  # their MUST findings

    @property
    def must_findings(self) -> int:
        every = [*self.findings, *(f for r in self.responses for f in r.findings)]
        return self.said_must + sum(1 for f in every if f.level == "MUST")

    @property
    def verdicts(self) -> Counter[str]:
        return self.said + Counter(r.verdict for r in self.responses)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "responses": [r.as_dict() for r in self.responses],
            "findings": [f.as_dict() for f in self.findings],
            "notes": self.notes,
            "skipped": self.skipped,
        }


DEFAULT_LIMITS = ReadLimits()


# -- reading ------------------------------------------------------------------------------------
RECORDED_SUFFIXES = (".jsonl", ".json", ".txt", ".sse", ".yaml", ".yml", ".har")


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


def read_streams(path: str | Path, limits: ReadLimits = DEFAULT_LIMITS) -> Streams:
    """The streams in one file read whole, whatever its form; UnreadableInput when it has none."""
    name = str(path)
    try:
        raw = read_whole(name, Path(path), limits)
    except OSError as exc:
        raise UnreadableInput(name, None, exc.strerror or str(exc)) from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UnreadableInput(name, line, "not UTF-8 text") from None
    head = text.lstrip()[:64]
    if head.startswith(("{", "[")):
        document = _json_document(text)
        found = (
            read_container(name, document)
            if container_kind(document) is not None
            else read_json(name, text)
        )
    elif head.startswith(_YAML_HEADS):
        found = read_container(name, _yaml_container(name, text))
    else:
        found = Streams([read_sse(name, text.encode(), "", 0)])
    if not any(s.events for s in found.streams) and not found.skipped and not found.notes:
        raise UnreadableInput(name, None, "no Responses events found (JSONL, SSE, wire log)")
    return found


# The first line of a YAML cassette: VCR.py's, go-vcr's (`---` then `version:`), Ruby VCR's.
_YAML_HEADS = ("interactions:", "http_interactions:", "---", "version:")


def _json_document(text: str) -> Any:
    try:
        return loads_document(text)
    except ValueError:
        return None  # JSONL, or broken: read_json says which line


def _yaml_container(name: str, text: str) -> dict[str, Any]:
    try:
        document = load_cassette(text)
    except CassetteBoundExceeded as exc:
        raise UnreadableInput(name, None, f"a cassette past a reading bound: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise UnreadableInput(name, line, "a cassette that is not valid YAML") from None
    if container_kind(document) is None:
        raise UnreadableInput(
            name, None, "a YAML file without 'interactions' or 'http_interactions' (a cassette)"
        )
    assert isinstance(document, dict)
    return document


# -- judging ------------------------------------------------------------------------------------
def check_stream(
    stream: Stream, seen_responses: Collection[str] = ()
) -> tuple[list[ResponseVerdict], list[CheckFinding]]:
    """Every response of one stream, judged; and the findings that belong to no response.
    `seen_responses` are the ids of the recording's earlier streams: a stream continuing one
    of them is a resumed one (as is one whose request said `starting_after`)."""
    verdicts, loose = check_events(
        stream.label, stream.events, stream.starting_after, seen_responses
    )
    loose.extend(_finding(v, None) for v in judge_recorded(stream.frames))  # §3.5 request rules
    loose.extend(_sse_name_findings(stream))
    return verdicts, loose


def check_events(
    label: str,
    events: Iterable[Located],
    starting_after: int | None = None,
    seen_responses: Collection[str] = (),
    on_verdict: Callable[[ResponseVerdict], None] | None = None,
) -> tuple[list[ResponseVerdict], list[CheckFinding]]:
    """Judge events as they come: a response is judged and let go once it has ended and its
    lane moved on, so memory holds only the responses still open (a streamed file's bound).
    With `on_verdict`, each verdict goes there as it is made and none is kept."""
    splitter = StreamAccumulator(starting_after=starting_after, seen_responses=seen_responses)
    numbers: dict[int, int] = {}  # id(response) -> its 1-based number in the stream
    first_event: dict[int, Located] = {}
    placed: dict[int, Located] = {}  # id(violation) -> where its first offending event was
    verdicts: list[tuple[int, ResponseVerdict]] = []
    for located in events:
        response = splitter.feed(located.event)
        if isinstance(response, ResponseAccumulator) and id(response) not in first_event:
            first_event[id(response)] = located
            numbers[id(response)] = splitter.opened
        for violation in splitter.all_violations():
            placed.setdefault(id(violation), located)
        if len(splitter.finished) > len(splitter.ended):
            _let_go(splitter, label, numbers, first_event, placed, verdicts)
            if on_verdict is not None:
                for _, verdict in sorted(verdicts, key=lambda pair: pair[0]):
                    on_verdict(verdict)
                verdicts.clear()
    for response in (*splitter.finished, *splitter.abandoned, *splitter.current.values()):
        key = id(response)
        if key in first_event:
            verdict = _verdict(label, numbers[key], response, first_event[key], placed)
            verdicts.append((numbers[key], verdict))
    loose = [_finding(v, placed.get(id(v))) for v in splitter.violations]
    ordered = [v for _, v in sorted(verdicts, key=lambda pair: pair[0])]
    if on_verdict is not None:
        for verdict in ordered:
            on_verdict(verdict)
        ordered = []
    return ordered, loose


def _let_go(
    splitter: StreamAccumulator,
    label: str,
    numbers: dict[int, int],
    first_event: dict[int, Located],
    placed: dict[int, Located],
    verdicts: list[tuple[int, ResponseVerdict]],
) -> None:
    """Judge the finished responses no lane still refers to, and forget them."""
    still = {id(r) for r in splitter.ended.values()}
    keep = []
    for response in splitter.finished:
        key = id(response)
        if key in still or key not in first_event:
            keep.append(response)
            continue
        number = numbers.pop(key)
        verdicts.append((number, _verdict(label, number, response, first_event.pop(key), placed)))
        for violation in response.violations:
            placed.pop(id(violation), None)
    splitter.finished = keep


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


def check_file(
    path: str | Path,
    limits: ReadLimits = DEFAULT_LIMITS,
    on_verdict: Callable[[ResponseVerdict], None] | None = None,
) -> FileReport:
    """Read and judge one file; UnreadableInput when it cannot be read. JSONL of events and SSE
    text are judged as they are read (`streaming_read`), any other form read whole. With
    `on_verdict`, a streamed file's verdicts go there as they are made (counted in the report,
    not kept), so memory stays flat however many responses the file holds."""
    report = FileReport(str(path))
    name = str(path)
    try:
        form = streamable_form(Path(path), limits)
    except OSError as exc:
        raise UnreadableInput(name, None, exc.strerror or str(exc)) from None
    if form is not None:
        stream = Stream("")
        events = (
            jsonl_events(name, Path(path), limits)
            if form == "jsonl"
            else sse_events(name, Path(path), limits, stream.sse_names)
        )
        counted = _Counted(events)

        def said(verdict: ResponseVerdict) -> None:
            report.said[verdict.verdict] += 1
            report.said_must += sum(1 for f in verdict.findings if f.level == "MUST")
            if on_verdict is not None:
                on_verdict(verdict)

        keep = on_verdict is None
        report.responses, report.findings = check_events(
            "", counted, on_verdict=None if keep else said
        )
        report.findings.extend(_sse_name_findings(stream))
        if not counted.seen:
            raise UnreadableInput(name, None, "no Responses events found (JSONL, SSE, wire log)")
        return report
    found = read_streams(path, limits)
    report.skipped = found.skipped
    report.notes.extend(found.notes)
    seen: set[str] = set()
    for stream in found.streams:
        verdicts, loose = check_stream(stream, seen)
        seen.update(v.response_id for v in verdicts if v.response_id is not None)
        report.responses.extend(verdicts)
        report.findings.extend(loose)
        report.notes.extend(f"{stream.label}: {n}" if stream.label else n for n in stream.notes)
    return report


class _Counted:
    """Events passed through, counted (a file with none is not a recording)."""

    def __init__(self, events: Iterable[Located]) -> None:
        self.events = events
        self.seen = 0

    def __iter__(self) -> Iterator[Located]:
        for located in self.events:
            self.seen += 1
            yield located


def render_text(report: FileReport) -> list[str]:
    """Per response: verdict and findings (level, rule id, position, message), for people."""
    lines = [
        line for response in report.responses for line in render_response(report.path, response)
    ]
    if report.findings:
        lines.append(f"{report.path}: outside any response:")
        lines.extend(_finding_line(f) for f in report.findings)
    lines.extend(f"{report.path}: note: {note}" for note in report.notes)
    return lines


def render_response(path: str, response: ResponseVerdict) -> list[str]:
    stream = f"{response.stream}, " if response.stream else ""
    lines = [
        f"{path}: {stream}response {response.index} "
        f"({response.response_id or 'no id'}, {response.events} events from {response.first}, "
        f"{response.terminal or 'no terminal'}): {response.verdict}"
    ]
    lines.extend(_finding_line(f) for f in response.findings)
    return lines


def _finding_line(finding: CheckFinding) -> str:
    seq = f" (seq {finding.sequence_number})" if finding.sequence_number is not None else ""
    count = f" [{finding.count} events]" if finding.count > 1 else ""
    return (
        f"  {finding.level:<6} {finding.rule_id:<28} {finding.where}{seq}: {finding.message}{count}"
    )


# -- a run's outcome ----------------------------------------------------------------------------
# Exit statuses (documented in `wsmode check --help`): a CI gate tells "a response FAILed" from
# "a file could not be read", and both from a clean run.
EXIT_CLEAN = 0
EXIT_FAIL = 1
EXIT_UNREADABLE = 2  # nothing read, a usage error, or (--strict) any file unreadable
EXIT_SOME_UNREADABLE = 3
EXIT_FAIL_AND_UNREADABLE = 4


def exit_status(reports: list[FileReport], unreadable: int, *, strict: bool = False) -> int:
    failed = any(r.must_findings for r in reports)
    if unreadable and (strict or not reports):
        return EXIT_UNREADABLE
    if unreadable:
        return EXIT_FAIL_AND_UNREADABLE if failed else EXIT_SOME_UNREADABLE
    return EXIT_FAIL if failed else EXIT_CLEAN


def _tally(reports: list[FileReport]) -> str:
    verdicts: Counter[str] = sum((report.verdicts for report in reports), Counter())
    return ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))


def file_line(path: str, report: FileReport | None, unreadable: str | None) -> str:
    """One file of a run: read (its verdicts) or unreadable (why)."""
    if report is None:
        return f"wsmode check: file {path}: unreadable: {unreadable or 'unknown'}"
    tally = _tally([report]) or "no responses"
    skipped = f", {report.skipped} interactions skipped" if report.skipped else ""
    count = report.verdicts.total()
    return f"wsmode check: file {path}: read, {count} responses: {tally}{skipped}"


def summary_line(reports: list[FileReport], unreadable: int) -> str:
    responses = sum(r.verdicts.total() for r in reports)
    parts = [_tally(reports)] if reports and _tally(reports) else []
    skipped = sum(report.skipped for report in reports)
    if skipped:
        parts.append(f"{skipped} interactions skipped (not Responses traffic)")
    if unreadable:
        parts.append(f"{unreadable} files unreadable")
    counted = f"{responses} responses in {len(reports)} files"
    return f"wsmode check: {counted}" + (f": {'; '.join(parts)}" if parts else "")
