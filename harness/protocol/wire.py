"""Strict JSON for the wire: the traps of `json.loads` turned into one clear error type.

Traps (docs/RELIABILITY.md §1): nesting >= 1000 raises RecursionError, huge ints raise a plain
ValueError, NaN/Infinity and duplicate keys are silently accepted, a literal such as `1e400` parses
as infinity (echoed as `Infinity`, which is not JSON, and refused by a strict store write), and a
lone surrogate breaks a later `ensure_ascii=False` echo. Every one of them becomes
`WireFormatError` here, so callers turn bad frames into one protocol error instead of a
traceback; a non-finite number names the parameter that held it (`param`).

Two codecs, one set of rules. Where `msgspec` is installed (a pure codec, no I/O: the protocol
core stays sans-I/O) it parses and serializes the hot paths, 3-50x faster than `json` with the
hooks strictness needs (bench/README.md). It is only the fast *acceptor*: a document it accepts
is still walked for depth, integer size and duplicate keys (which it would silently merge), and
anything it rejects or the walk doubts is re-parsed by the strict standard-library parser, which
gives the verdict and the error message. So both paths accept exactly the same documents, with
the same errors; `FAST_CODEC` is None where msgspec is missing (or the fallback is forced).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from harness.errors import ProtocolError

try:  # optional: the standard library does everything below, only slower
    import msgspec

    _fast_decoder: msgspec.json.Decoder[Any] | None = msgspec.json.Decoder()
    _fast_encoder: msgspec.json.Encoder | None = msgspec.json.Encoder()
except ImportError:  # pragma: no cover - depends on the platform's wheels
    _fast_decoder = None
    _fast_encoder = None

# The fast codec in use ("msgspec") or None; `use_fast_codec(False)` forces the stdlib path.
FAST_CODEC: str | None = "msgspec" if _fast_decoder is not None else None

DEFAULT_MAX_DEPTH = 64
# Python refuses ints over 4300 digits; we refuse far earlier: no protocol field needs more.
DEFAULT_MAX_INT_DIGITS = 64


class WireFormatError(ProtocolError, ValueError):
    """A frame or body that is not acceptable JSON; `code` is the protocol error code and
    `param` the offending field's path, when there is one."""

    def __init__(self, message: str, code: str = "invalid_json", param: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.param = param


@dataclass(frozen=True, slots=True)
class JsonLimits:
    max_depth: int = DEFAULT_MAX_DEPTH
    max_int_digits: int = DEFAULT_MAX_INT_DIGITS


def _reject_constant(name: str) -> Any:
    raise WireFormatError(f"Invalid JSON: {name} is not a valid JSON value.")


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise WireFormatError(f"Invalid JSON: duplicate key '{_printable(key)}'.")
            seen.add(key)
    return obj


def _printable(text: str, limit: int = 64) -> str:
    clipped = text[:limit]
    return clipped.encode("ascii", "backslashreplace").decode("ascii")


def _check_depth_and_strings(value: Any, max_depth: int) -> None:
    """Iterative walk: depth bound and lone surrogates (recursion would hit the same trap)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                raise WireFormatError(f"Invalid JSON: nesting deeper than {max_depth} levels.")
            for key, child in node.items():
                _check_string(key)
                stack.append((child, depth + 1))
        elif isinstance(node, list):
            if depth > max_depth:
                raise WireFormatError(f"Invalid JSON: nesting deeper than {max_depth} levels.")
            stack.extend((child, depth + 1) for child in node)
        elif isinstance(node, str):
            _check_string(node)


def _check_string(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise WireFormatError("Invalid JSON: string contains a lone surrogate.") from None


# A JSON string (escapes included), a lone quote (an unterminated string: the parser reports
# it), or a bracket: the only tokens nesting depends on.
_NESTING_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|"|[\[\]{}]')


def check_nesting(text: str, max_depth: int) -> None:
    """Bound nesting before parsing: json's C parser and PyYAML's composer recurse and would
    overflow first. Raises WireFormatError past `max_depth`; the one depth bound of the server's
    frames and bodies and of every document the tools read (`loads_document`)."""
    depth = 0
    for match in _NESTING_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                raise WireFormatError(f"Invalid JSON: nesting deeper than {max_depth} levels.")
        elif token in "]}":
            depth -= 1
        elif token == '"':
            return  # unterminated string: nothing after it nests


# Documents the tools read (recordings, traces, results): nesting far beyond any real one, yet
# well inside Python's recursion limit for the parser and the walks that follow it.
DOCUMENT_MAX_DEPTH = 200


def loads_document(text: str | bytes, max_depth: int = DOCUMENT_MAX_DEPTH) -> Any:
    """One JSON document of unknown origin, as `json.loads` reads it (duplicate keys, NaN and
    big integers accepted, as recorders write them), but with nesting bounded: WireFormatError
    past `max_depth`, or for text that is not JSON; never RecursionError."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise WireFormatError("Invalid JSON: not valid UTF-8.") from None
    if text.count("[") + text.count("{") > max_depth:
        check_nesting(text, max_depth)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        message = f"Invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}."
        raise WireFormatError(message) from None
    except (ValueError, RecursionError):
        raise WireFormatError("Invalid JSON: the document could not be parsed.") from None


def _nonfinite_path(value: Any) -> str:
    """The path (`top_p`, `input[0].x`) of the first non-finite float in a parsed document."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return path
        if isinstance(node, dict):
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return ""  # pragma: no cover - only called when the parser saw one


def _refuse_nonfinite(value: Any, literal: str) -> None:
    path = _nonfinite_path(value)
    where = f"'{_printable(path)}'" if path else "the payload"
    raise WireFormatError(
        f"Invalid value for {where}: {_printable(literal, 32)} is out of range "
        "(not a finite number).",
        code="invalid_value",
        param=path or None,
    )


def use_fast_codec(enabled: bool) -> None:
    """Switch the fast codec on (where installed) or off: tests run both paths."""
    global FAST_CODEC
    FAST_CODEC = "msgspec" if enabled and _fast_decoder is not None else None


def loads(text: str | bytes, limits: JsonLimits = JsonLimits()) -> Any:
    """Parse one JSON document under `limits`; raises WireFormatError, never anything else."""
    if FAST_CODEC is not None and _fast_decoder is not None:
        try:
            value = _fast_decoder.decode(text)
        except (ValueError, UnicodeError, RecursionError):
            pass  # the strict parser names the problem (or accepts what msgspec would not)
        else:
            if _fast_value_is_strict(value, text, limits):
                return value
    return _strict_loads(text, limits)


def fast_decode(text: str | bytes) -> Any:
    """msgspec's parse alone, no strictness added; ValueError where msgspec is off or refuses.

    For readers that want `json.loads`' verdict but faster (the client reading a target's
    events): what msgspec accepts, `json.loads` accepts with the same value, so "this, else
    json.loads" is exactly json.loads.
    """
    if FAST_CODEC is None or _fast_decoder is None:
        raise ValueError("no fast codec")
    try:
        return _fast_decoder.decode(text)
    except (UnicodeError, RecursionError) as exc:
        raise ValueError(str(exc)) from None


def _fast_value_is_strict(value: Any, text: str | bytes, limits: JsonLimits) -> bool:
    """What msgspec does not check: depth, integer size, duplicate keys (by counting colons).
    (Non-finite numbers it refuses itself, so they reach the strict parser, which names them.)

    In valid JSON every colon outside strings separates one key from its value, so the colons
    in the text are the keys plus the colons inside strings; a duplicate key leaves the parsed
    value one key short. An escaped colon (\\u003a) breaks the count: such text goes strict.
    """
    colon, escaped = (b":", b"\\u003") if isinstance(text, bytes) else (":", "\\u003")
    if escaped in text:  # type: ignore[operator]
        return False
    int_bound = _int_bound(limits.max_int_digits)
    kind = type(value)
    if kind is not dict and kind is not list:  # a bare scalar: no keys to count
        return kind is not int or -int_bound < value < int_bound
    try:
        colons = _colons_and_bounds(value, 1, limits.max_depth, int_bound)
    except (_OutOfBounds, RecursionError):  # RecursionError: limits deeper than the stack
        return False
    return colons == text.count(colon)  # type: ignore[arg-type]


class _OutOfBounds(Exception):
    """The walk met a node past the depth or integer bound: the strict parser decides."""


def _colons_and_bounds(
    node: dict[str, Any] | list[Any], depth: int, max_depth: int, int_bound: int
) -> int:
    """Keys plus colons inside strings below `node`; raises _OutOfBounds past a bound.

    Recursive over containers only, dispatching on exact types (msgspec builds no subclasses):
    the hot path's walk, ~2x faster than an explicit stack. Depth is bounded by `max_depth`.
    """
    if depth > max_depth:
        raise _OutOfBounds
    colons = 0
    if type(node) is dict:
        colons = len(node)
        for key in node:
            if ":" in key:
                colons += key.count(":")
        children: Any = node.values()
    else:
        children = node
    for child in children:
        kind = type(child)
        if kind is str:
            if ":" in child:
                colons += child.count(":")
        elif kind is dict or kind is list:
            colons += _colons_and_bounds(child, depth + 1, max_depth, int_bound)
        elif kind is int and not -int_bound < child < int_bound:
            raise _OutOfBounds
    return colons


@functools.cache
def _int_bound(digits: int) -> int:
    return int(10**digits)


def _strict_loads(text: str | bytes, limits: JsonLimits) -> Any:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise WireFormatError("Invalid JSON: payload is not valid UTF-8.") from None
    # The scan is only needed when brackets could exceed the bound at all.
    if text.count("[") + text.count("{") > limits.max_depth:
        check_nesting(text, limits.max_depth)

    def parse_int(literal: str) -> int:
        if len(literal.lstrip("-")) > limits.max_int_digits:
            raise WireFormatError(
                f"Invalid JSON: integer longer than {limits.max_int_digits} digits."
            )
        return int(literal)

    overflowed: list[str] = []  # literals too large for a double (they parse as +-inf)

    def parse_float(literal: str) -> float:
        number = float(literal)
        if not math.isfinite(number):
            overflowed.append(literal)
        return number

    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_int=parse_int,
            parse_float=parse_float,
            object_pairs_hook=_unique_object,
        )
    except WireFormatError:
        raise
    except json.JSONDecodeError as exc:
        raise WireFormatError(
            f"Invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}."
        ) from None
    except (ValueError, RecursionError):
        raise WireFormatError("Invalid JSON: the payload could not be parsed.") from None
    _check_depth_and_strings(value, limits.max_depth)
    if overflowed:
        _refuse_nonfinite(value, overflowed[0])
    return value


# One encoder for every call: `json.dumps` with `separators` builds a new one each time.
_STRICT_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def dumps(value: Any) -> str:
    """Serialize compactly; ASCII-only output so no peer ever sees a raw surrogate.

    Non-finite floats are written as null on both paths (msgspec's rule; JSON has no NaN).
    """
    if FAST_CODEC is not None and _fast_encoder is not None:
        try:
            data = _fast_encoder.encode(value)
        except (UnicodeEncodeError, TypeError, msgspec.EncodeError):
            pass  # a lone surrogate (escaped below) or a type msgspec does not know
        else:
            if data.isascii():
                return data.decode("ascii")
    return _strict_dumps(value)


def dumps_bytes(value: Any) -> bytes:
    """UTF-8 JSON for a frame or body: the hot path's form (no ASCII escaping to undo)."""
    if FAST_CODEC is not None and _fast_encoder is not None:
        try:
            return _fast_encoder.encode(value)
        except (UnicodeEncodeError, TypeError, msgspec.EncodeError):
            pass
    return _strict_dumps(value).encode("ascii")


def _strict_dumps(value: Any) -> str:
    try:
        return _STRICT_ENCODER.encode(value)
    except ValueError:  # NaN or Infinity somewhere
        return _STRICT_ENCODER.encode(_finite(value))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(child) for child in value]
    return value
