"""Converters from recorded agent sessions to ``wsmode-trace`` rollouts.

Two inputs are understood:

* **Codex CLI rollout files** (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): one
  ``{"timestamp", "type", "payload"}`` object per line, ``type`` being ``session_meta``,
  ``response_item``, ``turn_context``, ``event_msg`` or ``compacted`` (codex-rs
  ``RolloutLine``/``RolloutItem``). ``response_item`` payloads are Responses items.
* **Chat-format trajectories** (OpenHands / SWE-agent exports and anything else in the OpenAI
  chat format): a list of ``{"role", "content", "tool_calls", "tool_call_id"}`` messages.

Both become turns the same way: a turn is the model output between two inputs. Inputs (user and
developer messages, tool results) are collected until the model produces output; the outputs
(reasoning, assistant messages, function calls) are collected until the next input, which closes
the turn. Function calls left unanswered when the next turn starts (an interrupted tool, a user
who cut in) get a synthesized ``function_call_output`` of ``"aborted"`` (counted in
``meta["synthesized_outputs"]``), so every converted rollout satisfies the format's call-id rule;
an output answering no call of the previous turn is an error. Inputs after the last output are
dropped (``meta["dropped_trailing_inputs"]``).

``traces/README.md`` documents the mappings in full; malformed input raises
:class:`~harness.traces.format.TraceFormatError` with file, line (or message index) and field.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.protocol.items import part_text, summary_text
from harness.traces.format import (
    JSONObject,
    OutputSpec,
    Rollout,
    TraceFormatError,
    Turn,
)

__all__ = [
    "ABORTED_OUTPUT",
    "convert_chat",
    "convert_codex",
    "custom_call_arguments",
    "infer_tools",
    "iter_codex_sessions",
]

#: The output text given to function calls that were never answered.
ABORTED_OUTPUT = "aborted"

# Responses item types codex records that have no place in a replayable trace (hosted tools,
# snapshots, compaction blobs); they are skipped and counted in meta["skipped_items"].
_IMAGE_PARTS = ("input_image", "image_url")
_CODEX_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_CODEX_CALL_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclasses.dataclass
class _Where:
    """Where an item came from, for error messages."""

    path: str | None
    line: int | None
    field: str

    def error(self, reason: str, sub: str = "") -> TraceFormatError:
        return TraceFormatError(reason, path=self.path, line=self.line, field=self.field + sub)


# --------------------------------------------------------------------------------------------
# Turn grouping shared by both converters


@dataclasses.dataclass
class _Open:
    inputs: list[JSONObject] = dataclasses.field(default_factory=list)
    input_times: list[float | None] = dataclasses.field(default_factory=list)
    outputs: list[OutputSpec] = dataclasses.field(default_factory=list)
    output_times: list[float | None] = dataclasses.field(default_factory=list)
    observed: dict[str, Any] = dataclasses.field(default_factory=dict)


class _TurnBuilder:
    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.open = _Open()
        self.pending: list[str] = []  # call ids of the last closed turn not answered yet
        self.prev_out_time: float | None = None
        self.synthesized = 0
        self.dropped = 0

    def add_input(self, item: JSONObject, when: float | None, where: _Where) -> None:
        if self.open.outputs:
            self._close()
        if item.get("type") == "function_call_output":
            call_id = item["call_id"]
            if call_id not in self.pending:
                prev = self.turns[-1].call_ids if self.turns else ()
                why = "it was answered already" if call_id in prev else "no such call is open"
                raise where.error(
                    f"tool output for call_id {_show(call_id)} answers no function call of the "
                    f"previous model turn ({why})",
                    ".call_id",
                )
            self.pending.remove(call_id)
        self.open.inputs.append(item)
        self.open.input_times.append(when)

    def add_output(self, spec: OutputSpec, when: float | None, where: _Where) -> None:
        if not self.turns and not self.open.inputs:
            raise where.error("model output before any input")
        self.open.outputs.append(spec)
        self.open.output_times.append(when)

    def observe(self, values: Mapping[str, Any]) -> None:
        """Attach recorded measurements to the turn being built (or the last one)."""
        if self.open.outputs or not self.turns:
            self.open.observed.update(values)
        else:
            last = self.turns[-1]
            self.turns[-1] = dataclasses.replace(last, observed={**last.observed, **values})

    def _close(self) -> None:
        turn = self.open
        inputs = list(turn.inputs)
        if self.pending:  # unanswered calls: answer them right after the real tool outputs
            at = max((i + 1 for i, x in enumerate(inputs) if "call_id" in x), default=0)
            filler = [
                {"type": "function_call_output", "call_id": c, "output": ABORTED_OUTPUT}
                for c in self.pending
            ]
            inputs[at:at] = filler
            self.synthesized += len(filler)
        observed = dict(turn.observed)
        outputs = turn.outputs
        hidden = observed.pop("_reasoning_tokens", None)
        if hidden is not None:
            observed["reasoning_tokens"] = hidden
            first = next((i for i, o in enumerate(outputs) if o.type == "reasoning"), None)
            if first is not None and outputs[first].tokens == 0:
                outputs = list(outputs)
                outputs[first] = dataclasses.replace(outputs[first], tokens=int(hidden))
        wait = 0.0
        tool_times = [
            t
            for x, t in zip(turn.inputs, turn.input_times, strict=True)
            if t is not None and x.get("type") == "function_call_output"
        ]
        any_times = [t for t in turn.input_times if t is not None]
        if self.prev_out_time is not None and tool_times:
            wait = max(0.0, max(tool_times) - self.prev_out_time)
        elif self.prev_out_time is not None and any_times:
            observed["user_wait_ms"] = round(max(0.0, max(any_times) - self.prev_out_time), 1)
        out_times = [t for t in turn.output_times if t is not None]
        if out_times and any_times:
            observed["e2e_ms"] = round(max(0.0, max(out_times) - max(any_times)), 1)
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
        self.pending = [o.call_id for o in outputs if o.type == "function_call"]
        self.open = _Open()

    def finish(self, empty: TraceFormatError) -> list[Turn]:
        if self.open.outputs:
            self._close()
        else:
            self.dropped += len(self.open.inputs)
        if not self.turns:
            raise empty
        return self.turns


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


def _finish(rollout: Rollout, path: str | None) -> Rollout:
    try:
        rollout.validate()
    except TraceFormatError as exc:  # a converter bug, or input the checks above missed
        raise TraceFormatError(
            f"converted rollout is invalid: {exc}", path=path, field="rollout"
        ) from None
    return rollout


# --------------------------------------------------------------------------------------------
# Codex CLI rollouts


def _timestamp_ms(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000.0
    except ValueError:
        return None


def _text_of(content: Any, where: _Where, sub: str) -> str:
    """Concatenated text of a Responses content value (string or list of parts)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise where.error(
            f"expected a string or a list of content parts, got {_show(content)}", sub
        )
    return _flat_text(content)


def _flat_text(parts: Iterable[Any]) -> str:
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


def _codex_output_text(output: Any, where: _Where) -> str:
    # FunctionCallOutputPayload: a string, a list of content items, or (old CLIs) an object
    # {"content": str, "success": bool}.
    if isinstance(output, Mapping) and "content" in output:
        output = output["content"]
    return _text_of(output, where, ".output")


def _req_str(obj: Mapping[str, Any], key: str, where: _Where, *, empty_ok: bool = False) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or (not empty_ok and not value):
        raise where.error(
            f"expected a {'string' if empty_ok else 'non-empty string'}, got {_show(value)}",
            f".{key}",
        )
    return value


def _codex_item(
    builder: _TurnBuilder, item: Mapping[str, Any], when: float | None, where: _Where
) -> str | None:
    """Feed one response_item payload; returns its type if it was skipped."""
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role == "assistant":
            text = _text_of(item.get("content"), where, ".content")
            builder.add_output(OutputSpec.message(text), when, where)
        elif role in ("user", "developer", "system"):
            content = item.get("content")
            _text_of(content, where, ".content")  # type check
            builder.add_input({"type": "message", "role": role, "content": content}, when, where)
        else:
            raise where.error(f"unknown message role {_show(role)}", ".role")
    elif kind == "reasoning":
        summary = item.get("summary") or []
        if not isinstance(summary, list):
            raise where.error(f"expected a list of summary parts, got {_show(summary)}", ".summary")
        builder.add_output(OutputSpec.reasoning(summary_text(item), 0), when, where)
    elif kind in _CODEX_CALLS:
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise where.error(f"expected a call_id, got {_show(call_id)}", ".call_id")
        if kind == "function_call":
            name = _req_str(item, "name", where)
            arguments = _req_str(item, "arguments", where, empty_ok=True)
        elif kind == "custom_tool_call":  # freeform tools (apply_patch): wrap the raw input
            name = _req_str(item, "name", where)
            arguments = custom_call_arguments(_req_str(item, "input", where, empty_ok=True))
        else:
            name, arguments = "local_shell", json.dumps(item.get("action"))
        builder.add_output(OutputSpec.function_call(name, arguments, call_id), when, where)
    elif kind in _CODEX_CALL_OUTPUTS:
        call_id = _req_str(item, "call_id", where)
        output = _codex_output_text(item.get("output"), where)
        builder.add_input(
            {"type": "function_call_output", "call_id": call_id, "output": output}, when, where
        )
    else:
        return str(kind)
    return None


def _codex_tools(meta: Mapping[str, Any], where: _Where) -> list[JSONObject]:
    raw = meta.get("dynamic_tools") or meta.get("tools") or []
    if not isinstance(raw, list):
        raise where.error(f"expected a list of tools, got {_show(raw)}", ".dynamic_tools")
    tools: list[JSONObject] = []
    for i, spec in enumerate(raw):
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            raise where.error(
                f"expected a tool with a name, got {_show(spec)}", f".dynamic_tools[{i}]"
            )
        params = spec.get("inputSchema", spec.get("input_schema", spec.get("parameters")))
        tools.append(
            {
                "type": "function",
                "name": spec["name"],
                "description": str(spec.get("description") or ""),
                "parameters": params if isinstance(params, dict) else {"type": "object"},
            }
        )
    return tools


def _read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        with path.open(encoding="utf-8") as fh:
            for lineno, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                try:
                    yield lineno, json.loads(text)
                except (ValueError, RecursionError) as exc:
                    raise TraceFormatError(f"invalid JSON: {exc}", path=path, line=lineno) from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"not UTF-8 text: {exc.reason}", path=path) from None
    except OSError as exc:
        raise TraceFormatError(f"cannot read: {exc.strerror}", path=path) from None


def convert_codex(
    path: str | os.PathLike[str],
    *,
    rollout_id: str | None = None,
    agent_kind: str = "unknown",
) -> Rollout:
    """Convert one Codex CLI rollout file (``rollout-*.jsonl``) to a :class:`Rollout`.

    Timings come from the line timestamps (approximate: when codex persisted each item):
    ``tool_wait_ms`` = last tool output of a turn minus the previous turn's last output item;
    ``observed.e2e_ms`` = a turn's last output minus its last input; a turn opened by a user
    message gets ``tool_wait_ms = 0`` and ``observed.user_wait_ms``. ``token_count`` events give
    ``observed.input_tokens`` / ``cached_tokens`` / ``output_tokens`` and the hidden reasoning
    tokens.
    """
    p = Path(path)
    label = str(p)
    builder = _TurnBuilder()
    session: Mapping[str, Any] | None = None
    session_where = _Where(label, None, "session_meta.payload")
    models: list[str] = []
    skipped: dict[str, int] = {}
    compactions = 0
    for lineno, line in _read_jsonl(p):
        where = _Where(label, lineno, "payload")
        if not isinstance(line, Mapping):
            raise TraceFormatError(
                f"expected a JSON object, got {_show(line)}", path=label, line=lineno
            )
        kind = line.get("type")
        payload = line.get("payload")
        if not isinstance(kind, str):
            raise _Where(label, lineno, "type").error(f"expected a string, got {_show(kind)}")
        if not isinstance(payload, Mapping):
            raise where.error(f"expected an object, got {_show(payload)}")
        when = _timestamp_ms(line.get("timestamp"))
        if kind == "session_meta":
            if session is None:  # resumed/forked files may repeat it: the first one wins
                session, session_where = payload, _Where(label, lineno, "payload")
        elif kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model and (not models or models[-1] != model):
                models.append(model)
        elif kind == "response_item":
            dropped = _codex_item(builder, payload, when, where)
            if dropped is not None:
                skipped[dropped] = skipped.get(dropped, 0) + 1
        elif kind == "event_msg":
            info = payload.get("info") if payload.get("type") == "token_count" else None
            usage = info.get("last_token_usage") if isinstance(info, Mapping) else None
            if isinstance(usage, Mapping):
                builder.observe(_codex_usage(usage))
        elif kind == "compacted":
            compactions += 1
        else:
            skipped[f"line:{kind}"] = skipped.get(f"line:{kind}", 0) + 1
    turns = builder.finish(TraceFormatError("no model output found", path=label))
    meta_in: Mapping[str, Any] = session or {}
    instructions = meta_in.get("instructions")
    base = meta_in.get("base_instructions")
    if not isinstance(instructions, str) and isinstance(base, Mapping):
        instructions = base.get("text")
    session_id = meta_in.get("id")
    meta: JSONObject = {
        "converted_from": p.name,
        "converter": "harness.traces.convert.convert_codex",
        "timing": "approximate, from rollout line timestamps",
        "session_id": session_id,
    }
    for key in ("timestamp", "cwd", "originator", "cli_version", "source", "model_provider", "git"):
        if meta_in.get(key) is not None:
            meta[key] = meta_in[key]
    if len(models) > 1:
        meta["models"] = models
    for key, value in (
        ("skipped_items", dict(sorted(skipped.items()))),
        ("compactions", compactions),
        ("synthesized_outputs", builder.synthesized),
        ("dropped_trailing_inputs", builder.dropped),
    ):
        if value:
            meta[key] = value
    default_id = f"codex-{session_id}" if isinstance(session_id, str) and session_id else None
    rollout = Rollout(
        id=rollout_id or default_id or f"codex-{_digest(p.read_bytes())}",
        source="codex",
        agent_kind=agent_kind,
        model=models[0] if models else str(meta_in.get("model") or "unknown"),
        instructions=instructions if isinstance(instructions, str) else None,
        tools=infer_tools(turns, _codex_tools(meta_in, session_where)),
        seed=None,
        meta=meta,
        turns=tuple(turns),
    )
    return _finish(rollout, label)


def _codex_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    mapping = {
        "input_tokens": "input_tokens",
        "cached_input_tokens": "cached_tokens",
        "output_tokens": "output_tokens",
        "reasoning_output_tokens": "_reasoning_tokens",
    }
    return {
        ours: usage[theirs]
        for theirs, ours in mapping.items()
        if isinstance(usage.get(theirs), int) and usage[theirs] >= 0
    }


def iter_codex_sessions(root: str | os.PathLike[str]) -> Iterator[Path]:
    """Codex rollout files under ``root`` (e.g. ``~/.codex/sessions``), oldest first."""
    yield from sorted(Path(root).rglob("rollout-*.jsonl"))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# Chat-format trajectories


def _chat_content(content: Any, where: _Where) -> list[JSONObject]:
    """Chat content (string or parts) as Responses ``input_*`` parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}] if content else []
    if not isinstance(content, list):
        raise where.error(f"expected a string or a list of parts, got {_show(content)}", ".content")
    parts: list[JSONObject] = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            parts.append({"type": "input_text", "text": part})
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            parts.append({"type": "input_text", "text": part["text"]})
        elif isinstance(part, Mapping) and part.get("type") == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, Mapping) else url
            parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
        else:
            raise where.error(f"unsupported content part {_show(part)}", f".content[{i}]")
    return parts


def _chat_tools(raw: Any, where: _Where) -> list[JSONObject]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise where.error(f"expected a list, got {_show(raw)}")
    tools: list[JSONObject] = []
    for i, tool in enumerate(raw):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        spec = fn if isinstance(fn, Mapping) else tool  # chat nests under "function"
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            raise where.error(f"expected a function tool, got {_show(tool)}", f"[{i}]")
        converted: JSONObject = {
            "type": "function",
            "name": spec["name"],
            "description": str(spec.get("description") or ""),
            "parameters": spec.get("parameters") or {"type": "object"},
        }
        if isinstance(spec.get("strict"), bool):
            converted["strict"] = spec["strict"]
        tools.append(converted)
    return tools


def _load_chat(source: Any) -> tuple[Any, str | None, bool]:
    """(document, path label, one message per line?) for a path or an in-memory object."""
    if isinstance(source, str | os.PathLike):
        p = Path(source)
        if p.suffix == ".jsonl":
            return [obj for _, obj in _read_jsonl(p)], str(p), True
        try:
            return json.loads(p.read_text(encoding="utf-8")), str(p), False
        except (ValueError, RecursionError) as exc:
            raise TraceFormatError(f"invalid JSON: {exc}", path=p) from None
        except OSError as exc:
            raise TraceFormatError(f"cannot read: {exc.strerror}", path=p) from None
    return source, None, False


def convert_chat(
    source: str | os.PathLike[str] | Sequence[Any] | Mapping[str, Any],
    *,
    rollout_id: str | None = None,
    agent_kind: str = "unknown",
    model: str | None = None,
) -> Rollout:
    """Convert a chat-format trajectory (OpenAI chat messages) to a :class:`Rollout`.

    ``source`` is a path (``.json``: a message list or an object with ``messages`` or
    ``history``; ``.jsonl``: one message per line) or the decoded object. An object may carry
    ``tools`` (chat or Responses form), ``model`` and ``id``. Leading system messages become
    ``instructions``; chat exports carry no timings, so ``tool_wait_ms`` is 0.
    """
    doc, label, per_line = _load_chat(source)
    tools_raw: Any = None
    meta: JSONObject = {"converter": "harness.traces.convert.convert_chat"}
    if label is not None:
        meta["converted_from"] = Path(label).name
    container = "messages"
    if isinstance(doc, Mapping):
        container = "messages" if "messages" in doc else "history"
        messages = doc.get(container)
        tools_raw = doc.get("tools")
        model = model or (doc.get("model") if isinstance(doc.get("model"), str) else None)
        doc_id = doc.get("id") or doc.get("instance_id")
        rollout_id = rollout_id or (str(doc_id) if doc_id else None)
    else:
        messages = doc
    if not isinstance(messages, list):
        raise TraceFormatError(
            f"expected a list of chat messages, got {_show(messages)}",
            path=label,
            field=container,
        )

    def where_of(i: int) -> _Where:
        if per_line:
            return _Where(label, i + 1, "message")
        return _Where(label, None, f"{container}[{i}]")

    builder = _TurnBuilder()
    instructions: list[str] = []
    call_counter = 0
    for i, msg in enumerate(messages):
        where = where_of(i)
        if not isinstance(msg, Mapping):
            raise where.error(f"expected a message object, got {_show(msg)}")
        role = msg.get("role")
        if role == "system" and not builder.turns and not builder.open.inputs:
            instructions.append(_flat_text(_chat_content(msg.get("content"), where)))
        elif role in ("user", "system", "developer"):
            parts = _chat_content(msg.get("content"), where)
            builder.add_input({"type": "message", "role": role, "content": parts}, None, where)
        elif role == "assistant":
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                builder.add_output(OutputSpec.reasoning(reasoning, 0), None, where)
            text = _flat_text(_chat_content(msg.get("content"), where))
            calls = msg.get("tool_calls") or []
            if not isinstance(calls, list):
                raise where.error(f"expected a list, got {_show(calls)}", ".tool_calls")
            if text or not calls:
                builder.add_output(OutputSpec.message(text), None, where)
            for k, call in enumerate(calls):
                call_id, name, arguments = _chat_call(call, where, f".tool_calls[{k}]")
                if not call_id:
                    call_counter += 1
                    call_id = f"call_{call_counter:04d}"
                builder.add_output(OutputSpec.function_call(name, arguments, call_id), None, where)
        elif role == "tool":
            answered = msg.get("tool_call_id")
            if not isinstance(answered, str) or not answered:
                raise where.error(
                    f"expected a tool_call_id, got {_show(answered)}", ".tool_call_id"
                )
            output = _flat_text(_chat_content(msg.get("content"), where))
            builder.add_input(
                {"type": "function_call_output", "call_id": answered, "output": output},
                None,
                where,
            )
        else:
            raise where.error(
                f"unsupported role {_show(role)} (expected system, developer, user, assistant "
                "or tool; the legacy 'function' role is not supported)",
                ".role",
            )
    turns = builder.finish(TraceFormatError("no assistant message found", path=label))
    for key, value in (
        ("synthesized_outputs", builder.synthesized),
        ("dropped_trailing_inputs", builder.dropped),
    ):
        if value:
            meta[key] = value
    tools = _chat_tools(tools_raw, _Where(label, None, "tools"))
    rollout = Rollout(
        id=rollout_id or f"chat-{_digest(json.dumps(messages, sort_keys=True).encode())}",
        source="chat-export",
        agent_kind=agent_kind,
        model=model or "unknown",
        instructions="\n\n".join(instructions) if instructions else None,
        tools=infer_tools(turns, tools),
        seed=None,
        meta=meta,
        turns=tuple(turns),
    )
    return _finish(rollout, label)


def _chat_call(call: Any, where: _Where, sub: str) -> tuple[str, str, str]:
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        raise where.error(f"expected a tool call with a function, got {_show(call)}", sub)
    fn = call["function"]
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise where.error(f"expected a non-empty string, got {_show(name)}", f"{sub}.function.name")
    arguments = fn.get("arguments", "")
    if not isinstance(arguments, str):  # some exports keep arguments decoded
        arguments = json.dumps(arguments)
    call_id = call.get("id")
    return (call_id if isinstance(call_id, str) else ""), name, arguments
