"""Reading a recording as a stream, so `wsmode check`'s memory is bounded by its largest record.

JSONL of events and SSE text (the forms a capture of any size comes in) are read record by
record: a JSONL line, an SSE block. Everything else (a JSON document or array, a certify
report.json, a wire log whose compact rows refer back, a YAML cassette, a HAR, fetch-hooks
JSONL) is one record: read whole, up to `ReadLimits.max_document_bytes`.

Bounds, each a clear `UnreadableInput`, never a traceback or an unbounded allocation:
* `max_record_bytes`: one JSONL line or SSE block (a 1 GiB SSE text without a blank line stops
  there, not at the machine's memory);
* `max_document_bytes`: a form read whole;
* nesting depth (`wire.check_nesting`) and YAML aliases (`cassette_yaml`) as everywhere.

So a streamed file's memory is one record (at most `max_record_bytes`, twice while it is
parsed) plus the state of the responses open at once (the text their deltas add up to); the
text output prints each verdict as it is made and keeps none (`--json` keeps every verdict,
~0.7 kB each). Measured: `bench/ratios/check_memory.py` (1 GiB JSONL, 98,598 responses: the
same 40 MiB peak RSS as 16 MiB).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from harness.conformance.check.recorded_streams import Located, UnreadableInput
from harness.protocol.wire import loads_document
from harness.transport.sse_wire import SseParser, block_fields

MIB: Final = 1024 * 1024
_CHUNK_BYTES: Final = 1 * MIB
_SNIFF_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class ReadLimits:
    max_record_bytes: int = 64 * MIB
    max_document_bytes: int = 512 * MIB


def streamable_form(path: Path, limits: ReadLimits) -> str | None:
    """ "jsonl" or "sse" when the file is events read record by record, else None (a form read
    whole). Decided from the file's start: SSE text, or a first JSONL line that is a typed
    event (not a wire entry, a fetch-hooks record, a container or a rollout)."""
    with path.open("rb") as f:
        head = f.read(_SNIFF_BYTES).removeprefix(b"\xef\xbb\xbf").lstrip()
        if head.startswith(b"["):
            return None
        if not head.startswith(b"{"):
            return None if _looks_like_yaml(head) else "sse"
        f.seek(0)
        first = _first_line(f, limits)
    if len(first) > limits.max_record_bytes:
        return "jsonl"  # whose reader says the line is past the per-record limit
    try:
        record = loads_document(first)
    except ValueError:
        return None  # a pretty-printed document, or broken: the whole-file reader says which
    return "jsonl" if _is_plain_event(record) else None


def _looks_like_yaml(head: bytes) -> bool:
    return head.startswith((b"interactions:", b"http_interactions:", b"---", b"version:"))


def _first_line(f: IO[bytes], limits: ReadLimits) -> bytes:
    line = f.readline(limits.max_record_bytes + 1)
    while line and not line.strip():
        line = f.readline(limits.max_record_bytes + 1)
    return line.removeprefix(b"\xef\xbb\xbf")


def _is_plain_event(record: Any) -> bool:
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        return False
    return record.get("kind") != "rollout" and not {"dir", "data"} <= record.keys()


def jsonl_events(name: str, path: Path, limits: ReadLimits) -> Iterator[Located]:
    """Each line's event, read one line at a time."""
    with path.open("rb") as f:
        for number, line in enumerate(_lines(name, f, limits), start=1):
            if not line.strip():
                continue
            try:
                record = loads_document(line)
            except ValueError as exc:
                raise UnreadableInput(name, number, f"not a JSON object ({exc})") from None
            where = f"line {number}"
            if not isinstance(record, dict) or not isinstance(record.get("type"), str):
                raise UnreadableInput(name, number, f"{where}: not a typed JSON event object")
            yield Located(record, number, where)


def _lines(name: str, f: IO[bytes], limits: ReadLimits) -> Iterator[bytes]:
    number = 0
    while True:
        line = f.readline(limits.max_record_bytes + 1)
        if not line:
            return
        number += 1
        if len(line) > limits.max_record_bytes and not line.endswith(b"\n"):
            raise UnreadableInput(name, number, _too_large("a JSONL line", limits))
        yield line.removeprefix(b"\xef\xbb\xbf") if number == 1 else line


def sse_events(
    name: str, path: Path, limits: ReadLimits, names: list[tuple[str, str, Located]]
) -> Iterator[Located]:
    """Each SSE block's event, read a chunk at a time; `names` gets every block whose `event:`
    line names another type than its data's."""
    parser = SseParser()
    line = 1
    with path.open("rb") as f:
        first = True
        while chunk := f.read(_CHUNK_BYTES):
            if first:
                chunk, first = chunk.removeprefix(b"\xef\xbb\xbf"), False
            for block in parser.blocks(chunk):
                start = line + len(block) - len(block.lstrip(b"\n"))
                line += block.count(b"\n") + 2
                located = _sse_event(name, block, start, names)
                if located is not None:
                    yield located
            if len(parser.buffer) > limits.max_record_bytes:
                raise UnreadableInput(name, line, _too_large("an SSE event", limits))
        last = parser.end_block()
        if last is not None:
            located = _sse_event(name, last, line + len(last) - len(last.lstrip(b"\n")), names)
            if located is not None:
                yield located


def _sse_event(
    name: str, block: bytes, start: int, names: list[tuple[str, str, Located]]
) -> Located | None:
    event_name, data = block_fields(block)
    if data is None or data == b"[DONE]":
        return None
    try:
        event = loads_document(data)
    except ValueError as exc:
        raise UnreadableInput(name, start, f"an SSE data line that is not JSON ({exc})") from None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise UnreadableInput(name, start, "an SSE event that is not a typed JSON object")
    located = Located(event, start, f"line {start}")
    if event_name is not None and event_name != event["type"]:
        names.append((event_name, event["type"], located))
    return located


def read_whole(name: str, path: Path, limits: ReadLimits) -> bytes:
    """A form read whole, up to `max_document_bytes`."""
    with path.open("rb") as f:
        raw = f.read(limits.max_document_bytes + 1)
    if len(raw) > limits.max_document_bytes:
        mib = limits.max_document_bytes // MIB
        raise UnreadableInput(
            name,
            None,
            f"larger than {mib} MiB in a form read whole (a JSON or YAML document); "
            "JSONL of events and SSE text are read record by record at any size",
        )
    return raw


def _too_large(what: str, limits: ReadLimits) -> str:
    return (
        f"{what} larger than {limits.max_record_bytes // MIB} MiB (the per-record limit, "
        "--max-record-mib)"
    )
