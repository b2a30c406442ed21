"""A crash inside the client library, named: its exception type and the frame it was raised in.

A client that meets an error event it cannot parse often raises a programming error of its own
(an AttributeError inside pydantic-ai's error mapping) that reaches the caller as the turn's
"error". Read as an error outcome it looks like a client that lost the code; the finding must say
it was a crash, and where. Two witnesses: the adapter's report (`error.exception`: `type`,
`where`, which the bundled adapters fill from the exception's traceback), and the adapter's
stderr (a Python traceback or a node stack), for a crash that ended the process.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

# Exceptions that are a bug in the code that raised them, never a server's answer.
PROGRAMMING_ERRORS: Final = frozenset(
    {
        "AttributeError",
        "TypeError",
        "KeyError",
        "IndexError",
        "NameError",
        "UnboundLocalError",
        "AssertionError",
        "RecursionError",
        "ZeroDivisionError",
        "ReferenceError",  # node
        "RangeError",  # node
        "SyntaxError",  # node: JSON.parse of a frame it did not expect
    }
)
_PY_FRAME: Final = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_PY_LAST: Final = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit))(?::\s*(?P<m>.*))?$"
)
_NODE_HEAD: Final = re.compile(r"^(?:Uncaught )?(?P<type>[A-Z]\w*Error)(?::\s*(?P<m>.*))?$")
_NODE_AT: Final = re.compile(
    r"^\s*at (?:(?P<func>[^(]+) \()?(?:file://)?(?P<file>[^():]+):(?P<line>\d+)"
)


@dataclass(frozen=True, slots=True)
class Crash:
    type: str
    where: str  # "package/module.py:123 in function", inside the library where known
    message: str = ""

    def describe(self) -> str:
        return f"a crash inside the client library: {self.type} at {self.where}" + (
            f" ({self.message[:100]})" if self.message else ""
        )


def library_path(path: str) -> str:
    """A path from its package on: what follows site-packages/ or node_modules/."""
    for marker in ("site-packages/", "node_modules/", "dist-packages/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    return path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1] if "/" in path else path


def from_report(raw: Mapping[str, Any]) -> Crash | None:
    """The crash an adapter reported in `error.exception`, if it is a programming error."""
    error = raw.get("error")
    exception = error.get("exception") if isinstance(error, Mapping) else None
    if not isinstance(exception, Mapping):
        return None
    kind = str(exception.get("type") or "")
    if kind.rsplit(".", 1)[-1] not in PROGRAMMING_ERRORS:
        return None
    return Crash(kind, str(exception.get("where") or "an unknown place"))


def from_stderr(lines: Sequence[str]) -> Crash | None:
    """The last Python traceback or node stack in an adapter's stderr, named by its innermost
    frame inside a library (else its innermost frame)."""
    return _python(lines) or _node(lines)


def _python(lines: Sequence[str]) -> Crash | None:
    frames: list[tuple[str, str, str]] = []
    crash: Crash | None = None
    for line in lines:
        if line.startswith("Traceback (most recent call last)"):
            frames = []
        elif (frame := _PY_FRAME.match(line)) is not None:
            frames.append((frame["file"], frame["line"], frame["func"]))
        elif frames and (last := _PY_LAST.match(line.strip())) is not None:
            crash = Crash(last["type"], _innermost(frames), last["m"] or "")
    return crash


def _node(lines: Sequence[str]) -> Crash | None:
    for index, line in enumerate(lines):
        head = _NODE_HEAD.match(line.strip())
        if head is None:
            continue
        frames = []
        for after in lines[index + 1 :]:
            at = _NODE_AT.match(after)
            if at is None:
                break
            frames.append((at["file"], at["line"], (at["func"] or "<anonymous>").strip()))
        if frames:
            return Crash(head["type"], _innermost(list(reversed(frames))), head["m"] or "")
    return None


def _innermost(frames: Sequence[tuple[str, str, str]]) -> str:
    """The innermost frame inside a library (site-packages, node_modules), else the innermost;
    `frames` run outermost first."""
    inside = [f for f in frames if "site-packages/" in f[0] or "node_modules/" in f[0]]
    file, line, func = (inside or list(frames))[-1]
    return f"{library_path(file)}:{line} in {func}"
