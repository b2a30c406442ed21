"""What every converter shares: turn grouping, error locations, file reading, tool inference.

A turn is the model output between two inputs. Inputs (user and developer messages, tool
results) are collected until the model produces output; the outputs (reasoning, assistant
messages, function calls) are collected until the next input, which closes the turn. Calls left
unanswered when the next turn starts get a synthesized ``function_call_output`` of ``"aborted"``
(``meta["synthesized_outputs"]``); a call id the source already used earlier in the rollout is
re-minted (``<id>~2``, ``meta["reminted_call_ids"]``) and its outputs follow the new id; an
output answering no open call is an error; inputs after the last output are dropped
(``meta["dropped_trailing_inputs"]``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.protocol.items import part_text
from harness.protocol.wire import DOCUMENT_MAX_DEPTH, WireFormatError, check_nesting, loads_document
from harness.traces.format import (
    JSONObject,
    OutputSpec,
    Rollout,
    TraceFormatError,
    Turn,
    validate_rollout,
)

#: The output text given to function calls that were never answered.
ABORTED_OUTPUT = "aborted"
_IMAGE_PARTS = ("input_image", "image_url")


def show(value: Any) -> str:
    """A short JSON rendering of a bad value, for error messages."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


@dataclasses.dataclass(frozen=True)
class Where:
    """Where an item came from (file, line, JSON path), for error messages."""

    path: str | None
    line: int | None
    field: str

    def error(self, reason: str, sub: str = "") -> TraceFormatError:
        return TraceFormatError(reason, path=self.path, line=self.line, field=self._join(sub))

    def at(self, sub: str) -> Where:
        return dataclasses.replace(self, field=self._join(sub))

    def _join(self, sub: str) -> str:
        # a path from the document root has no leading dot: "requests[1].in"
        return self.field + sub if self.field else sub.lstrip(".")


@dataclasses.dataclass
class _Open:
    inputs: list[JSONObject] = dataclasses.field(default_factory=list)
    input_times: list[float | None] = dataclasses.field(default_factory=list)
    outputs: list[OutputSpec] = dataclasses.field(default_factory=list)
    output_times: list[float | None] = dataclasses.field(default_factory=list)
    observed: dict[str, Any] = dataclasses.field(default_factory=dict)
    tool_wait_ms: float | None = None


class TurnBuilder:
    """Groups a stream of inputs and outputs into turns (the rules in the module docstring)."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.open = _Open()
        self.pending: list[str] = []  # call ids of the last closed turn not answered yet
        self.prev_out_time: float | None = None
        self.synthesized = 0
        self.dropped = 0
        self.reminted = 0
        self._used_ids: set[str] = set()
        self._renamed: dict[str, str] = {}  # source call id -> the id it has in this trace

    @property
    def started(self) -> bool:
        return bool(self.turns or self.open.inputs)

    def add_input(self, item: JSONObject, when: float | None, where: Where) -> None:
        if self.open.outputs:
            self._close()
        if item.get("type") == "function_call_output":
            item = {**item, "call_id": self._answer(str(item["call_id"]), where)}
        self.open.inputs.append(item)
        self.open.input_times.append(when)

    def _answer(self, source_id: str, where: Where) -> str:
        call_id = self._renamed.get(source_id, source_id)
        if call_id not in self.pending:
            prev = self.turns[-1].call_ids if self.turns else ()
            why = "it was answered already" if call_id in prev else "no such call is open"
            raise where.error(
                f"tool output for call_id {show(source_id)} answers no function call of the "
                f"previous model turn ({why})",
                ".call_id",
            )
        self.pending.remove(call_id)
        return call_id

    def add_output(self, spec: OutputSpec, when: float | None, where: Where) -> None:
        if not self.started:
            raise where.error("model output before any input")
        if spec.type == "function_call" and spec.call_id is not None:
            spec = dataclasses.replace(spec, call_id=self._mint(spec.call_id))
        self.open.outputs.append(spec)
        self.open.output_times.append(when)

    def _mint(self, source_id: str) -> str:
        call_id, n = source_id, 1
        while call_id in self._used_ids:
            n += 1
            call_id = f"{source_id}~{n}"
        if n > 1:
            self.reminted += 1
        self._used_ids.add(call_id)
        self._renamed[source_id] = call_id
        return call_id

    def observe(self, values: Mapping[str, Any]) -> None:
        """Attach recorded measurements to the turn being built (or the last one)."""
        if self.open.outputs or not self.turns:
            self.open.observed.update(values)
        else:
            last = self.turns[-1]
            observed, outputs = _hidden_reasoning({**last.observed, **values}, list(last.output))
            self.turns[-1] = dataclasses.replace(last, observed=observed, output=tuple(outputs))

    def set_tool_wait(self, wait_ms: float) -> None:
        """A recorded tool time for the turn being opened (instead of the timestamp gap)."""
        self.open.tool_wait_ms = max(0.0, wait_ms)

    def _close(self) -> None:
        turn = self.open
        inputs = self._with_aborted(list(turn.inputs))
        observed, outputs = _hidden_reasoning(dict(turn.observed), turn.outputs)
        wait = self._tool_wait(turn, observed)
        out_times = [t for t in turn.output_times if t is not None]
        in_times = [t for t in turn.input_times if t is not None]
        if out_times and in_times and "e2e_ms" not in observed:
            observed["e2e_ms"] = round(max(0.0, max(out_times) - max(in_times)), 1)
        self.turns.append(
            Turn(
                index=len(self.turns),
                input=tuple(inputs),
                output=tuple(outputs),
                tool_wait_ms=round(wait, 1),
                observed=observed,
            )
        )
        self.prev_out_time = max(out_times) if out_times else None
        self.pending = [o.call_id for o in outputs if o.type == "function_call" and o.call_id]
        self.open = _Open()

    def _with_aborted(self, inputs: list[JSONObject]) -> list[JSONObject]:
        if not self.pending:
            return inputs
        # unanswered calls: answer them right after the real tool outputs
        at = max((i + 1 for i, x in enumerate(inputs) if "call_id" in x), default=0)
        filler = [
            {"type": "function_call_output", "call_id": c, "output": ABORTED_OUTPUT}
            for c in self.pending
        ]
        inputs[at:at] = filler
        self.synthesized += len(filler)
        return inputs

    def _tool_wait(self, turn: _Open, observed: dict[str, Any]) -> float:
        tool_times = [
            t
            for x, t in zip(turn.inputs, turn.input_times, strict=True)
            if t is not None and x.get("type") == "function_call_output"
        ]
        if turn.tool_wait_ms is not None:
            return turn.tool_wait_ms if tool_times or self._answers_calls(turn) else 0.0
        any_times = [t for t in turn.input_times if t is not None]
        if self.prev_out_time is not None and tool_times:
            return max(0.0, max(tool_times) - self.prev_out_time)
        if self.prev_out_time is not None and any_times:
            observed["user_wait_ms"] = round(max(0.0, max(any_times) - self.prev_out_time), 1)
        return 0.0

    @staticmethod
    def _answers_calls(turn: _Open) -> bool:
        return any(x.get("type") == "function_call_output" for x in turn.inputs)

    def finish(self, empty: TraceFormatError) -> list[Turn]:
        if self.open.outputs:
            self._close()
        else:
            self.dropped += len(self.open.inputs)
        if not self.turns:
            raise empty
        return self.turns

    def counters(self) -> JSONObject:
        """The non-zero grouping counters, for the rollout's ``meta``."""
        values = {
            "synthesized_outputs": self.synthesized,
            "dropped_trailing_inputs": self.dropped,
            "reminted_call_ids": self.reminted,
        }
        return {k: v for k, v in values.items() if v}


def _hidden_reasoning(
    observed: dict[str, Any], outputs: list[OutputSpec]
) -> tuple[dict[str, Any], list[OutputSpec]]:
    """Move a recorded reasoning-token count onto the turn's first reasoning item."""
    hidden = observed.pop("_reasoning_tokens", None)
    if hidden is None:
        return observed, outputs
    observed["reasoning_tokens"] = hidden
    first = next((i for i, o in enumerate(outputs) if o.type == "reasoning"), None)
    if first is not None and outputs[first].tokens == 0:
        outputs = list(outputs)
        outputs[first] = dataclasses.replace(outputs[first], tokens=int(hidden))
    return observed, outputs


def custom_call_arguments(raw_input: str) -> str:
    """A freeform ``custom_tool_call``'s raw ``input`` as function-call ``arguments``.

    The trace format has function calls only; custom tools (e.g. apply_patch) become one, its
    raw text wrapped as ``{"input": ...}`` (shared by the converter and ``wsmode record``).
    """
    return json.dumps({"input": raw_input})


def infer_tools(turns: Sequence[Turn], declared: Sequence[JSONObject]) -> tuple[JSONObject, ...]:
    """Declared tools plus a bare definition for every other called name, in first-use order."""
    tools = list(declared)
    names = {t["name"] for t in tools}
    for turn in turns:
        for call in turn.function_calls:
            if call.name not in names:
                names.add(call.name)
                tools.append(
                    {
                        "type": "function",
                        "name": call.name,
                        "description": "(inferred from the recorded calls)",
                        "parameters": {"type": "object"},
                    }
                )
    return tuple(tools)


def finish(rollout: Rollout, path: str | None) -> Rollout:
    """Validate a converted rollout; a failure is the converter's, said as such."""
    try:
        validate_rollout(rollout)
    except TraceFormatError as exc:
        raise TraceFormatError(
            f"converted rollout is invalid: {exc}", path=path, field="rollout"
        ) from None
    return rollout


def flat_text(parts: Sequence[Any]) -> str:
    """Content parts as one text, each read by the protocol core; an image leaves a placeholder
    (a trace's text cannot carry the image itself)."""
    texts: list[str] = []
    for part in parts:
        text = part_text(part)
        if text is None and isinstance(part, Mapping) and part.get("type") in _IMAGE_PARTS:
            text = "[image]"
        if text is not None:
            texts.append(text)
    return "".join(texts)


def text_of(content: Any, where: Where, sub: str) -> str:
    """Concatenated text of a content value (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise where.error(f"expected a string or a list of content parts, got {show(content)}", sub)
    return flat_text(content)


def req_str(obj: Mapping[str, Any], key: str, where: Where, *, empty_ok: bool = False) -> str:
    """``obj[key]`` as a (non-empty) string, or an error naming the field."""
    value = obj.get(key)
    if not isinstance(value, str) or (not empty_ok and not value):
        what = "a string" if empty_ok else "a non-empty string"
        missing = " (missing)" if key not in obj else ""
        raise where.error(f"expected {what}, got {show(value)}{missing}", f".{key}")
    return value


# The longest JSONL line a converter reads: memory is bounded by it (and by the rollouts built).
MAX_LINE_BYTES = 64 * 1024 * 1024


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line, read one line at a time; a file holding one
    pretty-printed JSON document is told apart from a broken JSONL line."""
    try:
        with path.open("rb") as f:
            lineno = 0
            while line := f.readline(MAX_LINE_BYTES + 1):
                lineno += 1
                if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                    raise TraceFormatError(
                        f"a line longer than {MAX_LINE_BYTES // 1024 // 1024} MiB",
                        path=path,
                        line=lineno,
                    )
                if not line.strip():
                    continue
                yield lineno, _jsonl_value(path, lineno, line)
    except IsADirectoryError:
        raise TraceFormatError("is a directory, expected a file", path=path) from None
    except OSError as exc:
        raise TraceFormatError(f"cannot read: {exc.strerror}", path=path) from None


def _jsonl_value(path: Path, lineno: int, line: bytes) -> Any:
    try:
        text = line.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"not UTF-8 text: {exc.reason}", path=path, line=lineno) from None
    try:
        return loads_document(text)
    except ValueError as exc:
        # a pretty-printed document fails at line 1: tell it apart (when small enough to read)
        small = lineno == 1 and path.stat().st_size <= MAX_LINE_BYTES
        whole = read_text(path) if small else ""
        raise TraceFormatError(_jsonl_error(whole, exc), path=path, line=lineno) from None


def _jsonl_error(text: str, exc: Exception) -> str:
    try:
        loads_document(text)
    except ValueError:
        return f"invalid JSON on this line: {exc}"
    return (
        "the file is one pretty-printed JSON document, not JSONL (one JSON object per line); "
        "re-save it one object per line"
    )


def read_json(path: Path) -> Any:
    """One JSON document (pretty-printed or not); a JSONL file gets its own error."""
    text = read_text(path)
    try:
        check_nesting(text, DOCUMENT_MAX_DEPTH)  # json.loads would die with RecursionError
        return json.loads(text)
    except WireFormatError as exc:
        raise TraceFormatError(str(exc), path=path) from None
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and text.lstrip().startswith("{"):
            reason = "several JSON values: this looks like JSONL, expected one JSON document"
        else:
            reason = f"invalid JSON: {exc.msg}"
        raise TraceFormatError(reason, path=path, line=exc.lineno) from None
    except RecursionError:
        raise TraceFormatError("invalid JSON: nested too deeply", path=path) from None


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"not UTF-8 text: {exc.reason}", path=path) from None
    except IsADirectoryError:
        raise TraceFormatError("is a directory, expected a file", path=path) from None
    except OSError as exc:
        raise TraceFormatError(f"cannot read: {exc.strerror}", path=path) from None


def timestamp_ms(value: Any) -> float | None:
    """An ISO-8601 timestamp (``Z`` or an offset) in epoch ms, or None."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000.0
    except ValueError:
        return None
