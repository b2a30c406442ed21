"""Agent-rollout traces: the versioned ``wsmode-trace`` JSONL format, its loader and its writer.

A trace file holds one or more rollouts. Each line is one JSON object with a ``kind``:

``{"kind": "rollout", "format": "wsmode-trace", "version": 1, "id", "source", ...}``
    starts a rollout; the turn lines that follow belong to it.
``{"kind": "turn", "rollout", "index": i, "input": [...], "tool_wait_ms", "output": [...]}``
    one model request: the *new* input items of that request, the client-side tool time spent
    before sending it, and the model output a replay must reproduce.

``traces/README.md`` documents every field; ``trace_schema.json`` beside this module is the JSON
Schema of one line. Rules a per-line schema cannot express are checked here: turn indexes run
0, 1, 2, ...; the ``function_call_output`` items of turn *i* answer exactly the ``call_id`` s of
turn *i-1*'s function calls; ``call_id`` s are unique within a rollout; every called function is
declared in ``tools``.

Loading is strict about structure and tolerant of additions: an unknown ``version`` is refused,
unknown extra fields are ignored (and not preserved), and every error is a
:class:`TraceFormatError` naming file, line and field, e.g.
``traces/x.jsonl:12: turn.tool_wait_ms: expected a number >= 0, got "abc"``.

The dataclasses are frozen; the JSON objects inside them (input items, tools, meta) are plain
dicts shared with the caller and must be treated as read-only.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, cast

from harness.errors import WsmodeError

__all__ = [
    "CHARS_PER_TOKEN",
    "ITEM_OVERHEAD_TOKENS",
    "KNOWN_AGENT_KINDS",
    "OBSERVED_KEYS",
    "OUTPUT_TYPES",
    "SOURCES",
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "JSONObject",
    "OutputSpec",
    "Rollout",
    "TraceFormatError",
    "Turn",
    "dump_rollouts",
    "dumps_rollouts",
    "estimate_item_tokens",
    "estimate_tokens",
    "input_message",
    "item_text",
    "iter_rollouts",
    "load_traces",
    "loads_rollouts",
    "parse_rollouts",
    "trace_files",
    "trace_schema",
]

JSONObject: TypeAlias = dict[str, Any]
OutputType: TypeAlias = Literal["message", "function_call", "reasoning"]

TRACE_FORMAT: Final = "wsmode-trace"
TRACE_VERSION: Final = 1
SOURCES: Final = ("generated", "codex", "chat-export", "recorded")
KNOWN_AGENT_KINDS: Final = ("bug_fix", "refactor", "test_fix", "unknown")
OUTPUT_TYPES: Final = ("message", "function_call", "reasoning")
OBSERVED_KEYS: Final = ("ttft_ms", "e2e_ms", "input_tokens", "cached_tokens", "output_tokens")
INPUT_ROLES: Final = ("user", "system", "developer", "assistant")

#: Token estimates are ``ceil(chars / CHARS_PER_TOKEN)``: no tokenizer, stdlib only.
CHARS_PER_TOKEN: Final = 4
#: Added per conversation item for role/framing tokens, like real chat templates do.
ITEM_OVERHEAD_TOKENS: Final = 4

_TRACE_SUFFIXES: Final = (".jsonl", ".jsonl.gz")


# --------------------------------------------------------------------------------------------
# Errors


class TraceFormatError(WsmodeError, ValueError):
    """A trace (or a converter's input) is malformed.

    ``str(err)`` is ``"<path>:<line>: <field>: <reason>"``, leaving out the parts that are unknown.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        location = self.path or ""
        if self.line is not None:
            location = f"{location}:{self.line}" if location else f"line {self.line}"
        parts = [p for p in (location, self.field) if p]
        return ": ".join([*parts, self.reason])

    def located(
        self, path: str | os.PathLike[str] | None, line: int | None = None
    ) -> TraceFormatError:
        """The same error with a file location filled in (kept if already set)."""
        return TraceFormatError(
            self.reason,
            path=self.path if self.path is not None else path,
            line=self.line if self.line is not None else line,
            field=self.field,
        )


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(field_name: str, expected: str, value: Any) -> TraceFormatError:
    return TraceFormatError(f"expected {expected}, got {_show(value)}", field=field_name)


# --------------------------------------------------------------------------------------------
# Token estimates


def estimate_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: the format's stand-in for a tokenizer."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
                else:
                    parts.append(json.dumps(part))
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


def item_text(item: Mapping[str, Any]) -> str:
    """The text of a Responses item that a model would read (used for token estimates)."""
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        return _content_text(item.get("content"))
    if kind == "function_call":
        return f"{item.get('name', '')}{item.get('arguments', '')}"
    if kind == "function_call_output":
        return _content_text(item.get("output"))
    if kind == "reasoning":
        return _content_text(item.get("summary"))
    return json.dumps(item)


def estimate_item_tokens(item: Mapping[str, Any]) -> int:
    """Estimated prompt tokens of one Responses item: its text / 4 plus a small framing cost."""
    return estimate_tokens(item_text(item)) + ITEM_OVERHEAD_TOKENS


def input_message(text: str, role: str = "user") -> JSONObject:
    """A Responses input message item carrying one ``input_text`` part."""
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


# --------------------------------------------------------------------------------------------
# Model


@dataclass(frozen=True, kw_only=True)
class OutputSpec:
    """One model output item to reproduce: a message, a function call or a reasoning item.

    ``tokens``: for a message or function call, the output tokens the item cost when recorded
    (≈ chars / 4 when generated; a replaying server derives its own count from the text). For
    reasoning, the *hidden* reasoning tokens, decoded before the visible ``summary`` (the
    reference server's scripted ``tokens``); :attr:`total_tokens` adds the summary. Fields that
    do not apply to ``type`` stay empty.
    """

    type: OutputType
    tokens: int
    text: str = ""
    name: str = ""
    arguments: str = ""
    call_id: str = ""
    summary: str = ""

    @classmethod
    def message(cls, text: str, tokens: int | None = None) -> OutputSpec:
        return cls(type="message", text=text, tokens=_default_tokens(tokens, text))

    @classmethod
    def function_call(
        cls, name: str, arguments: str, call_id: str, tokens: int | None = None
    ) -> OutputSpec:
        return cls(
            type="function_call",
            name=name,
            arguments=arguments,
            call_id=call_id,
            tokens=_default_tokens(tokens, name + arguments),
        )

    @classmethod
    def reasoning(cls, summary: str, tokens: int = 0) -> OutputSpec:
        return cls(type="reasoning", summary=summary, tokens=tokens)

    @property
    def total_tokens(self) -> int:
        """Output tokens of the item: ``tokens``, plus the summary's estimate for reasoning."""
        if self.type == "reasoning":
            return self.tokens + estimate_tokens(self.summary)
        return self.tokens

    def to_json(self) -> JSONObject:
        """The trace-file form of this output item."""
        if self.type == "message":
            return {"type": "message", "text": self.text, "tokens": self.tokens}
        if self.type == "function_call":
            return {
                "type": "function_call",
                "name": self.name,
                "arguments": self.arguments,
                "call_id": self.call_id,
                "tokens": self.tokens,
            }
        return {"type": "reasoning", "summary": self.summary, "tokens": self.tokens}

    def script_item(self) -> JSONObject:
        """The scripted-mode item the reference server's engine accepts for this output."""
        if self.type == "message":
            return {"type": "message", "text": self.text}
        if self.type == "function_call":
            return {
                "type": "function_call",
                "name": self.name,
                "arguments": self.arguments,
                "call_id": self.call_id,
            }
        return {"type": "reasoning", "summary": self.summary, "tokens": self.tokens}

    def history_item(self, *, include_reasoning: bool = False) -> JSONObject | None:
        """This output as a Responses *input* item, as a stateless client resends it.

        Reasoning is left out by default (``None``): a real stateless client can only resend
        reasoning as an ``rs_`` id plus ``encrypted_content``, neither of which a trace has.
        With ``include_reasoning`` it becomes a summary-only reasoning item.
        """
        if self.type == "message":
            return {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": self.text}],
            }
        if self.type == "function_call":
            return {
                "type": "function_call",
                "call_id": self.call_id,
                "name": self.name,
                "arguments": self.arguments,
            }
        if not include_reasoning:
            return None
        summary = [{"type": "summary_text", "text": self.summary}] if self.summary else []
        return {"type": "reasoning", "summary": summary}


def _default_tokens(tokens: int | None, text: str) -> int:
    return max(1, estimate_tokens(text)) if tokens is None else tokens


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One model request of a rollout."""

    index: int
    input: tuple[JSONObject, ...]
    output: tuple[OutputSpec, ...]
    tool_wait_ms: float = 0.0
    observed: Mapping[str, Any] = field(default_factory=dict)

    @property
    def function_calls(self) -> tuple[OutputSpec, ...]:
        return tuple(o for o in self.output if o.type == "function_call")

    @property
    def call_ids(self) -> tuple[str, ...]:
        """The ``call_id`` s of this turn's function calls, in output order."""
        return tuple(o.call_id for o in self.output if o.type == "function_call")

    @property
    def answered_call_ids(self) -> tuple[str, ...]:
        """The ``call_id`` s this turn's ``function_call_output`` inputs answer."""
        return tuple(
            str(item.get("call_id"))
            for item in self.input
            if item.get("type") == "function_call_output"
        )

    @property
    def output_tokens(self) -> int:
        """Output tokens of the turn (reasoning summaries included)."""
        return sum(o.total_tokens for o in self.output)

    def script(self) -> list[JSONObject]:
        """This turn's outputs as reference-server scripted items."""
        return [o.script_item() for o in self.output]

    def to_json(self, rollout_id: str) -> JSONObject:
        line: JSONObject = {
            "kind": "turn",
            "rollout": rollout_id,
            "index": self.index,
            "input": list(self.input),
            "tool_wait_ms": self.tool_wait_ms,
            "output": [o.to_json() for o in self.output],
        }
        if self.observed:
            line["observed"] = dict(self.observed)
        return line


@dataclass(frozen=True, kw_only=True)
class Rollout:
    """One agent rollout: what one WebSocket (one ``previous_response_id`` chain) carries."""

    id: str
    source: str
    agent_kind: str
    model: str
    instructions: str | None = None
    tools: tuple[JSONObject, ...] = ()
    seed: int | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    turns: tuple[Turn, ...] = ()

    # -- history ------------------------------------------------------------------------------

    def full_history(self, upto_turn: int, *, include_reasoning: bool = False) -> list[JSONObject]:
        """The full ``input`` a stateless client (no ``previous_response_id``) sends at a turn.

        That is every input item of turns ``0..upto_turn`` interleaved with the outputs of turns
        ``0..upto_turn-1`` rendered as Responses items (see :meth:`OutputSpec.history_item`;
        reasoning is skipped unless ``include_reasoning``). ``upto_turn == len(turns)`` gives the
        whole conversation including the last turn's output.
        """
        self._check_turn_number(upto_turn)
        history: list[JSONObject] = []
        for turn in self.turns[:upto_turn]:
            history.extend(turn.input)
            for out in turn.output:
                item = out.history_item(include_reasoning=include_reasoning)
                if item is not None:
                    history.append(item)
        if upto_turn < len(self.turns):
            history.extend(self.turns[upto_turn].input)
        return history

    def context_tokens_estimate(self, turn: int) -> int:
        """Estimated prompt tokens of the request at ``turn`` (≈ chars / 4).

        Counts instructions, tool definitions and :meth:`full_history` (reasoning excluded),
        with :data:`ITEM_OVERHEAD_TOKENS` per item. ``turn == len(turns)`` is the context after
        the last output.
        """
        self._check_turn_number(turn)
        before, inputs = self._token_prefix[turn]
        return before + inputs

    @cached_property
    def _token_prefix(self) -> list[tuple[int, int]]:
        # (tokens of everything before turn i's input, tokens of turn i's input)
        base = estimate_tokens(self.instructions or "")
        if self.tools:
            base += estimate_tokens(json.dumps(list(self.tools)))
        table: list[tuple[int, int]] = []
        running = base
        for turn in self.turns:
            inputs = sum(estimate_item_tokens(i) for i in turn.input)
            table.append((running, inputs))
            running += inputs
            for out in turn.output:
                item = out.history_item()
                if item is not None:
                    running += estimate_item_tokens(item)
        table.append((running, 0))
        return table

    def _check_turn_number(self, turn: int) -> None:
        if not 0 <= turn <= len(self.turns):
            raise IndexError(f"turn {turn} out of range 0..{len(self.turns)}")

    # -- summaries ------------------------------------------------------------------------------

    @property
    def final_context_tokens(self) -> int:
        """:meth:`context_tokens_estimate` after the last turn."""
        return self.context_tokens_estimate(len(self.turns))

    @property
    def total_output_tokens(self) -> int:
        return sum(t.output_tokens for t in self.turns)

    @property
    def total_tool_wait_ms(self) -> float:
        return sum(t.tool_wait_ms for t in self.turns)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(str(t.get("name")) for t in self.tools)

    # -- serialisation ----------------------------------------------------------------------------

    def header_json(self) -> JSONObject:
        """The ``kind: rollout`` line."""
        return {
            "kind": "rollout",
            "format": TRACE_FORMAT,
            "version": TRACE_VERSION,
            "id": self.id,
            "source": self.source,
            "agent_kind": self.agent_kind,
            "model": self.model,
            "instructions": self.instructions,
            "tools": list(self.tools),
            "seed": self.seed,
            "meta": dict(self.meta),
        }

    def to_lines(self) -> list[JSONObject]:
        """Every line of this rollout, as JSON objects."""
        return [self.header_json(), *(t.to_json(self.id) for t in self.turns)]

    def validate(self) -> None:
        """Check an in-memory rollout against every rule the loader applies.

        Errors are located as ``<rollout ID>:N`` where N is the line the item would have in a
        dump (the rollout line is 1, turn i is line i+2).
        """
        lines = ((n, obj) for n, obj in enumerate(self.to_lines(), start=1))
        for _ in _read_objects(lines, f"<rollout {self.id}>"):
            pass


# --------------------------------------------------------------------------------------------
# Field checks (each raises TraceFormatError with `field` set; the reader adds path and line)


def _require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise TraceFormatError("missing required field", field=f"{where}.{key}")
    return obj[key]


def _str(obj: Mapping[str, Any], key: str, where: str, *, empty_ok: bool = False) -> str:
    value = _require(obj, key, where)
    if not isinstance(value, str) or (not empty_ok and not value):
        raise _fail(f"{where}.{key}", "a string" if empty_ok else "a non-empty string", value)
    return value


def _opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise _fail(f"{where}.{key}", "a string or null", value)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _tokens(obj: Mapping[str, Any], where: str, text: str | None) -> int:
    if "tokens" not in obj:
        return 0 if text is None else max(1, estimate_tokens(text))
    value = obj["tokens"]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _fail(f"{where}.tokens", "an integer >= 0", value)
    return value


def _parse_tool(tool: Any, where: str) -> JSONObject:
    if not isinstance(tool, dict):
        raise _fail(where, "a function tool object", tool)
    if tool.get("type") != "function":
        raise _fail(f"{where}.type", '"function"', tool.get("type"))
    _str(tool, "name", where)
    _opt_str(tool, "description", where)
    params = tool.get("parameters")
    if params is not None and not isinstance(params, dict):
        raise _fail(f"{where}.parameters", "a JSON Schema object or null", params)
    strict = tool.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise _fail(f"{where}.strict", "a boolean or null", strict)
    return tool


def _parse_rollout_header(obj: JSONObject) -> Rollout:
    w = "rollout"
    fmt = obj.get("format")
    if fmt != TRACE_FORMAT:
        raise _fail(f"{w}.format", f'"{TRACE_FORMAT}"', fmt)
    version = _require(obj, "version", w)
    if version != TRACE_VERSION or isinstance(version, bool):
        raise TraceFormatError(
            f"unsupported trace format version {_show(version)}: this wsmode reads version "
            f"{TRACE_VERSION} only (a newer wsmode may read it; re-export or upgrade)",
            field=f"{w}.version",
        )
    rollout_id = _str(obj, "id", w)
    source = _str(obj, "source", w)
    if source not in SOURCES:
        raise _fail(f"{w}.source", "one of " + ", ".join(SOURCES), source)
    agent_kind = _str(obj, "agent_kind", w)
    model = _str(obj, "model", w)
    instructions = _opt_str(obj, "instructions", w)
    tools_raw = obj.get("tools", [])
    if not isinstance(tools_raw, list):
        raise _fail(f"{w}.tools", "a list of function tools", tools_raw)
    tools = tuple(_parse_tool(t, f"{w}.tools[{i}]") for i, t in enumerate(tools_raw))
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if tool["name"] in seen:
            raise TraceFormatError(
                f"duplicate tool name {_show(tool['name'])}", field=f"{w}.tools[{i}].name"
            )
        seen.add(tool["name"])
    seed = obj.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise _fail(f"{w}.seed", "an integer or null", seed)
    meta = obj.get("meta", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise _fail(f"{w}.meta", "an object", meta)
    return Rollout(
        id=rollout_id,
        source=source,
        agent_kind=agent_kind,
        model=model,
        instructions=instructions,
        tools=tools,
        seed=seed,
        meta=meta,
    )


def _parse_input_item(item: Any, where: str) -> JSONObject:
    if not isinstance(item, dict):
        raise _fail(where, "an input item object", item)
    kind = item.get("type")
    if kind is None and "role" not in item:
        raise TraceFormatError("expected an input item with a type or a role", field=where)
    if kind is not None and not isinstance(kind, str):
        raise _fail(f"{where}.type", "a string", kind)
    if kind in (None, "message"):
        role = item.get("role")
        if role not in INPUT_ROLES:
            raise _fail(f"{where}.role", "one of " + ", ".join(INPUT_ROLES), role)
        content = _require(item, "content", where)
        if not isinstance(content, str | list):
            raise _fail(f"{where}.content", "a string or a list of content parts", content)
    elif kind == "function_call_output":
        _str(item, "call_id", where)
        output = _require(item, "output", where)
        if not isinstance(output, str | list):
            raise _fail(f"{where}.output", "a string or a list of content parts", output)
    # Other item types (item_reference, images, ...) pass through unchecked.
    return item


def _parse_output(out: Any, where: str) -> OutputSpec:
    if not isinstance(out, dict):
        raise _fail(where, "an output item object", out)
    kind = out.get("type")
    if kind == "message":
        text = _str(out, "text", where, empty_ok=True)
        return OutputSpec(type="message", text=text, tokens=_tokens(out, where, text))
    if kind == "function_call":
        name = _str(out, "name", where)
        arguments = _str(out, "arguments", where, empty_ok=True)
        call_id = _str(out, "call_id", where)
        return OutputSpec(
            type="function_call",
            name=name,
            arguments=arguments,
            call_id=call_id,
            tokens=_tokens(out, where, name + arguments),
        )
    if kind == "reasoning":
        summary = _str(out, "summary", where, empty_ok=True)
        return OutputSpec(type="reasoning", summary=summary, tokens=_tokens(out, where, None))
    raise _fail(f"{where}.type", "one of " + ", ".join(OUTPUT_TYPES), kind)


def _parse_observed(obj: Any) -> dict[str, Any]:
    w = "turn.observed"
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise _fail(w, "an object", obj)
    for key in OBSERVED_KEYS:
        value = obj.get(key)
        if value is not None and (not _is_number(value) or value < 0):
            raise _fail(f"{w}.{key}", "a number >= 0", value)
    return {k: v for k, v in obj.items() if v is not None}


def _parse_turn(obj: JSONObject) -> Turn:
    w = "turn"
    index = _require(obj, "index", w)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise _fail(f"{w}.index", "an integer >= 0", index)
    inputs = _require(obj, "input", w)
    if not isinstance(inputs, list):
        raise _fail(f"{w}.input", "a list of input items", inputs)
    items = tuple(_parse_input_item(it, f"{w}.input[{i}]") for i, it in enumerate(inputs))
    wait = obj.get("tool_wait_ms", 0.0)
    if not _is_number(wait) or wait < 0:
        raise _fail(f"{w}.tool_wait_ms", "a number >= 0", wait)
    outputs = _require(obj, "output", w)
    if not isinstance(outputs, list) or not outputs:
        raise _fail(f"{w}.output", "a non-empty list of output items", outputs)
    specs = tuple(_parse_output(o, f"{w}.output[{i}]") for i, o in enumerate(outputs))
    return Turn(
        index=index,
        input=items,
        output=specs,
        tool_wait_ms=float(wait),
        observed=_parse_observed(obj.get("observed")),
    )


# --------------------------------------------------------------------------------------------
# Reading


class _RolloutAssembler:
    """Collects one rollout's turns and checks the cross-turn rules as they arrive."""

    def __init__(self, header: Rollout, line: int) -> None:
        self.header = header
        self.line = line
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
        for i, out in enumerate(turn.output):
            if out.type != "function_call":
                continue
            where = f"turn.output[{i}]"
            if out.name not in self.tool_names:
                raise TraceFormatError(
                    f"function {_show(out.name)} is not declared in the rollout's tools",
                    field=f"{where}.name",
                )
            if out.call_id in self.call_turn:
                raise TraceFormatError(
                    f"duplicate call_id {_show(out.call_id)} "
                    f"(already used in turn {self.call_turn[out.call_id]})",
                    field=f"{where}.call_id",
                )
            self.call_turn[out.call_id] = turn.index
        self.turns.append(turn)

    def _check_answers(self, turn: Turn) -> None:
        previous = self.turns[-1] if self.turns else None
        pending = list(previous.call_ids) if previous else []
        for i, item in enumerate(turn.input):
            if item.get("type") != "function_call_output":
                continue
            call_id = item["call_id"]
            if call_id not in pending:
                if previous is None:
                    why = "the first turn has no function calls to answer"
                elif call_id in previous.call_ids:
                    why = "it is answered twice"
                else:
                    why = (
                        f"it answers no function call of turn {previous.index} "
                        f"(expected one of {_show(list(previous.call_ids))})"
                    )
                raise TraceFormatError(
                    f"function_call_output for call_id {_show(call_id)}: {why}",
                    field=f"turn.input[{i}].call_id",
                )
            pending.remove(call_id)
        if pending:
            assert previous is not None
            raise TraceFormatError(
                f"function call(s) {_show(pending)} of turn {previous.index} have no "
                "function_call_output in this turn's input",
                field="turn.input",
            )

    def finish(self) -> Rollout:
        if not self.turns:
            raise TraceFormatError(
                f"rollout {_show(self.header.id)} has no turns", field="rollout", line=self.line
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
        return json.loads(
            text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys
        )
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise TraceFormatError(f"invalid JSON: {exc or 'nested too deeply'}") from None


def _read_objects(lines: Iterable[tuple[int, Any]], label: str) -> Iterator[Rollout]:
    """Turn ``(line number, decoded JSON)`` pairs into rollouts, located errors included."""
    current: _RolloutAssembler | None = None
    seen_ids: dict[str, int] = {}
    lineno = 0
    try:
        for lineno, obj in lines:
            if not isinstance(obj, dict):
                raise _fail("line", "a JSON object", obj)
            kind = obj.get("kind")
            if kind == "rollout":
                header = _parse_rollout_header(obj)
                if header.id in seen_ids:
                    raise TraceFormatError(
                        f"duplicate rollout id {_show(header.id)} "
                        f"(first defined on line {seen_ids[header.id]})",
                        field="rollout.id",
                    )
                seen_ids[header.id] = lineno
                if current is not None:
                    yield current.finish()
                current = _RolloutAssembler(header, lineno)
            elif kind == "turn":
                if current is None:
                    raise TraceFormatError("a turn line before any rollout line", field="turn")
                owner = _require(obj, "rollout", "turn")
                if owner != current.header.id:
                    raise TraceFormatError(
                        f"turn belongs to rollout {_show(owner)} but follows rollout "
                        f"{_show(current.header.id)} (turns must follow their rollout line)",
                        field="turn.rollout",
                    )
                current.add(_parse_turn(obj))
            else:
                raise _fail("kind", '"rollout" or "turn"', kind)
        if current is not None:
            yield current.finish()
    except TraceFormatError as exc:
        # errors of the line source (I/O, gzip, UTF-8) already name their file and line
        raise (exc if exc.path is not None else exc.located(label, lineno)) from None
    if current is None:
        raise TraceFormatError("no rollouts in trace", path=label)


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

    return _read_objects(decoded(), path)


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
                    f"duplicate rollout id {_show(rollout.id)} (also in {other})",
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


# --------------------------------------------------------------------------------------------
# Writing


def _line(obj: JSONObject) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_rollouts(rollouts: Iterable[Rollout]) -> str:
    """Serialise rollouts to trace text (one JSON object per line, trailing newline)."""
    return "".join(_line(obj) + "\n" for r in rollouts for obj in r.to_lines())


def dump_rollouts(
    rollouts: Iterable[Rollout], path: str | os.PathLike[str], *, validate: bool = True
) -> int:
    """Write rollouts to ``path`` (gzip if it ends in ``.gz``) atomically; returns bytes written.

    With ``validate`` every rollout is checked first, so a written trace always loads.
    """
    items: Sequence[Rollout] = list(rollouts)
    if validate:
        ids: set[str] = set()
        for r in items:
            r.validate()
            if r.id in ids:
                raise TraceFormatError(f"duplicate rollout id {_show(r.id)}", field="rollout.id")
            ids.add(r.id)
    target = Path(path)
    data = dumps_rollouts(items).encode("utf-8")
    if target.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:  # a plain open keeps the umask's permissions
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return len(data)


# --------------------------------------------------------------------------------------------
# Schema


def trace_schema() -> JSONObject:
    """The JSON Schema (draft 2020-12) of one trace line, shipped as package data."""
    text = (
        resources.files(__package__ or "harness.load")
        .joinpath("trace_schema.json")
        .read_text(encoding="utf-8")
    )
    return cast(JSONObject, json.loads(text))
