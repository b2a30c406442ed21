"""Reading a results file in pieces, so that memory follows its largest record, not its size.

A results file is one JSON object whose bulk is arrays of records one level down
(`certify.cases`, `bench.samples`, `bench.rollouts`, `load.samples`). `read_result_document`
reads the file in 1 MiB chunks; a scanner over the bytes (strings, escapes, brackets) finds
where each value ends, and every element of those arrays, and every other member, is parsed on
its own: nesting bounded (`wire.check_nesting`, the one depth bound), NaN and Infinity refused,
at most `max_record_bytes` each. `drop` names fields removed from each element as soon as it is
parsed: gate and board never read a certify case's `wire_log` (95 % of a certificate's bytes).

Bounds, each a `ResultsReadError` (a ValueError) naming the place, never a traceback:
* `max_record_bytes` (64 MiB): one record, or one member outside the arrays;
* `max_kept_bytes` (256 MiB): the JSON bytes of what is kept after `drop`, in all (as Python
  objects ~3-6x that: the bound that keeps a hostile file from the machine's memory).

So reading takes the largest record (twice while it is parsed) plus what is kept: for a
certificate read by gate or board, ~0.4 kB of JSON per case (~2.8 kB as Python objects)
whatever its wire logs; for a bench or load result, every turn's sample (~0.9 kB of JSON each),
which those tools use. Measured (bench/ratios/check_memory.py --forms board gate): a 1 GiB
certificate of 76,555 cases peaks at 261 MiB in `wsmode board` (477 MiB in `wsmode gate`, which
holds baseline and current), a 256 MiB one at 98 MiB where the whole read took 815 MiB.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from pathlib import Path
from typing import IO, Any, Final

from harness.protocol.wire import DOCUMENT_MAX_DEPTH, WireFormatError, check_nesting

MIB: Final = 1024 * 1024
_CHUNK_BYTES: Final = MIB
_WHITESPACE: Final = b" \t\r\n"
# A JSON string (escapes included), a lone quote (a string the buffer cuts: read more), a bracket.
_TOKENS: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|"|[\[\]{}]')
_SCALAR_END: Final = re.compile(rb"[,\]}\s]")


class ResultsReadError(ValueError):
    """A results file that cannot be read within the bounds, or is not JSON."""


def _refuse_constant(name: str) -> Any:
    raise ResultsReadError(f"{name} is not valid JSON")


def parse_record(text: bytes | str, where: str) -> Any:
    """One JSON value of a results file: depth bounded, NaN/Infinity refused."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        if text.count("[") + text.count("{") > DOCUMENT_MAX_DEPTH:
            check_nesting(text, DOCUMENT_MAX_DEPTH)  # json.loads would die with RecursionError
        return json.loads(text, parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        raise ResultsReadError(f"{where}: not valid UTF-8") from None
    except WireFormatError as exc:
        raise ResultsReadError(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ResultsReadError(f"{where}: not JSON: {exc}") from None
    except ResultsReadError as exc:
        raise ResultsReadError(f"{where}: {exc}") from None


class _Scanner:
    """The file's bytes from a position on, read ahead in chunks as a value needs them."""

    def __init__(self, file: IO[bytes], max_record_bytes: int) -> None:
        self._file = file
        # bytes, not a bytearray: a regex match keeps its subject exported, and a bytearray
        # cannot grow while it is
        self._buf = b""
        self._pos = 0
        self._eof = False
        self.max_record_bytes = max_record_bytes

    def _more(self) -> bool:
        """Read a chunk more; positions into the buffer stay valid."""
        if self._eof:
            return False
        chunk = self._file.read(_CHUNK_BYTES)
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def _compact(self) -> None:
        """Drop what was consumed (between values only: a value's scan holds positions)."""
        if self._pos > _CHUNK_BYTES:
            self._buf = self._buf[self._pos :]
            self._pos = 0

    def peek(self, where: str) -> int:
        """The next byte that is not whitespace (not consumed)."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in _WHITESPACE:
                self._pos += 1
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._more():
                raise ResultsReadError(f"{where}: the file ends inside the document")

    def expect(self, char: bytes, where: str) -> None:
        if self.peek(where) != char[0]:
            found = chr(self._buf[self._pos])
            raise ResultsReadError(f"{where}: expected {char.decode()!r}, found {found!r}")
        self._pos += 1

    def value(self, where: str) -> bytes:
        """The bytes of the next whole JSON value (at most `max_record_bytes`), consumed."""
        first = self.peek(where)
        self._compact()
        start = self._pos
        if first in b"[{":
            end = self._container_end(start, where)
        elif first == ord('"'):
            end = self._string_end(start, where)
        else:
            end = self._scalar_end(start, where)
        if end - start > self.max_record_bytes:
            self._check_size(start, where, end)  # raises, as it does mid-scan
        self._pos = end
        return self._buf[start:end]

    def _check_size(self, start: int, where: str, end: int | None = None) -> None:
        if (len(self._buf) if end is None else end) - start > self.max_record_bytes:
            raise ResultsReadError(
                f"{where}: a record larger than {self.max_record_bytes // MIB} MiB "
                "(the per-record limit)"
            )

    def _container_end(self, start: int, where: str) -> int:
        depth, scan = 0, start
        while True:
            for match in _TOKENS.finditer(self._buf, scan):
                token = match.group()
                if token == b'"':  # a string the buffer cuts: rescan it with more
                    scan = match.start()
                    break
                if token in (b"[", b"{"):
                    depth += 1
                elif token in (b"]", b"}"):
                    depth -= 1
                    if depth == 0:
                        return match.end()
                scan = match.end()
            else:
                scan = len(self._buf)
            self._check_size(start, where)
            if not self._more():
                raise ResultsReadError(f"{where}: the file ends inside a value")

    def _string_end(self, start: int, where: str) -> int:
        while True:
            match = _TOKENS.match(self._buf, start)
            if match is not None and match.group() != b'"':
                return match.end()
            self._check_size(start, where)
            if not self._more():
                raise ResultsReadError(f"{where}: the file ends inside a string")

    def _scalar_end(self, start: int, where: str) -> int:
        while True:
            match = _SCALAR_END.search(self._buf, start)
            if match is not None:
                return match.start()
            self._check_size(start, where)
            if not self._more():
                return len(self._buf)

    def at_end(self) -> bool:
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in _WHITESPACE:
                self._pos += 1
            if self._pos < len(self._buf):
                return False
            if not self._more():
                return True


class _Document:
    """The walk: the top object and the objects it holds member by member, their arrays
    element by element; every other value parsed whole."""

    def __init__(
        self, scanner: _Scanner, drop: Collection[str], max_kept_bytes: int, source: str
    ) -> None:
        self.scanner = scanner
        self.drop = drop
        self.max_kept_bytes = max_kept_bytes
        self.kept_bytes = 0
        self.source = source

    def _keep(self, raw: bytes, where: str) -> Any:
        value = parse_record(raw, f"{self.source}: {where}")
        size = len(raw)
        if self.drop and isinstance(value, dict) and any(key in value for key in self.drop):
            for key in self.drop:
                value.pop(key, None)
            size = len(json.dumps(value))  # what is kept of it
        self.kept_bytes += size
        if self.kept_bytes > self.max_kept_bytes:
            raise ResultsReadError(
                f"{self.source}: more than {self.max_kept_bytes // MIB} MiB to keep "
                f"(at {where}): too large a results file for this tool"
            )
        return value

    def object(self, where: str, level: int) -> dict[str, Any]:
        scan = self.scanner
        scan.expect(b"{", where)
        members: dict[str, Any] = {}
        if scan.peek(where) == ord("}"):
            scan.expect(b"}", where)
            return members
        while True:
            key = parse_record(scan.value(where), f"{self.source}: {where}")
            if not isinstance(key, str):
                raise ResultsReadError(f"{self.source}: {where}: a member name that is not text")
            scan.expect(b":", where)
            path = f"{where}.{key}" if where else key
            nxt = scan.peek(path)
            if level == 0 and nxt == ord("{"):
                members[key] = self.object(path, 1)
            elif level == 1 and nxt == ord("["):
                members[key] = self.array(path)
            else:
                members[key] = self._keep(scan.value(path), path)
            if scan.peek(where) == ord(","):
                scan.expect(b",", where)
                continue
            scan.expect(b"}", where)
            return members

    def array(self, where: str) -> list[Any]:
        scan = self.scanner
        scan.expect(b"[", where)
        elements: list[Any] = []
        if scan.peek(where) == ord("]"):
            scan.expect(b"]", where)
            return elements
        while True:
            path = f"{where}[{len(elements)}]"
            elements.append(self._keep(scan.value(path), path))
            if scan.peek(where) == ord(","):
                scan.expect(b",", where)
                continue
            scan.expect(b"]", where)
            return elements


def read_result_document(
    path: Path,
    *,
    drop: Collection[str] = (),
    max_record_bytes: int = 64 * MIB,
    max_kept_bytes: int = 256 * MIB,
) -> dict[str, Any]:
    """The results file's JSON object, read in pieces (`drop`: fields left out of each array
    element). ResultsReadError when it is not one JSON object, or is past a bound; OSError when
    it cannot be opened."""
    with path.open("rb") as file:
        scanner = _Scanner(file, max_record_bytes)
        head = scanner.peek(str(path))
        if head != ord("{"):
            raise ResultsReadError(f"{path}: not a JSON object (a results file is one)")
        document = _Document(scanner, drop, max_kept_bytes, str(path))
        result = document.object("", 0)  # paths name members from the top: bench.samples[3]
        if not scanner.at_end():
            raise ResultsReadError(f"{path}: extra data after the JSON object")
    return result
