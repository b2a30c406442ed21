"""Codex CLI session files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is codex-rs ``RolloutLine``: ``{"timestamp", "type", "payload"}``, ``type`` being
``session_meta``, ``response_item`` (a Responses item), ``turn_context``, ``event_msg`` or
``compacted``. ``event_msg`` ``token_count`` gives the usage of each model request and
``task_complete`` the recorded ``duration_ms`` and ``time_to_first_token_ms`` of a task (the
model requests answering one user message). The mapping is tabled in ``traces/README.md``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.protocol.items import summary_text
from harness.traces.converters.common import (
    TurnBuilder,
    Where,
    custom_call_arguments,
    digest,
    finish,
    infer_tools,
    read_jsonl,
    req_str,
    show,
    text_of,
    timestamp_ms,
)
from harness.traces.format import JSONObject, OutputSpec, Rollout, TraceFormatError

_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_CALL_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
_META_KEYS = ("timestamp", "cwd", "originator", "cli_version", "source", "model_provider", "git")
_USAGE = {
    "input_tokens": "input_tokens",
    "cached_input_tokens": "cached_tokens",
    "output_tokens": "output_tokens",
    "reasoning_output_tokens": "_reasoning_tokens",
}


@dataclasses.dataclass
class _Session:
    """What a pass over a codex file collects besides the turns."""

    label: str
    builder: TurnBuilder = dataclasses.field(default_factory=TurnBuilder)
    meta: Mapping[str, Any] | None = None
    meta_where: Where | None = None
    models: list[str] = dataclasses.field(default_factory=list)
    skipped: dict[str, int] = dataclasses.field(default_factory=dict)
    compactions: int = 0
    task_start: int = 0  # index of the first turn of the current task
    tasks_timed: int = 0
    user_in_task: bool = False  # a response_item user message since the task started
    event_user: str | None = None  # the text of a user turn taken from event_msg user_message
    user_turns_from_events: int = 0

    def skip(self, name: str) -> None:
        self.skipped[name] = self.skipped.get(name, 0) + 1


def _output_text(output: Any, where: Where) -> str:
    # FunctionCallOutputPayload: a string, a list of content items, or (old CLIs) an object
    # {"content": str, "success": bool}.
    if isinstance(output, Mapping) and "content" in output:
        output = output["content"]
    return text_of(output, where, ".output")


def _message(s: _Session, item: Mapping[str, Any], when: float | None, w: Where) -> None:
    role = item.get("role")
    builder = s.builder
    if role == "assistant":
        builder.add_output(OutputSpec.message(text_of(item.get("content"), w, ".content")), when, w)
        s.event_user = None
    elif role in ("user", "developer", "system"):
        content = item.get("content")
        text = text_of(content, w, ".content")
        if role == "user":
            s.user_in_task = True
            if s.event_user is not None and text == s.event_user:
                s.event_user = None  # the response item repeats the turn made from the event
                return
        builder.add_input({"type": "message", "role": role, "content": content}, when, w)
    else:
        raise w.error(f"unknown message role {show(role)}", ".role")


def _call(item: Mapping[str, Any], where: Where) -> OutputSpec:
    kind = item.get("type")
    call_id = item.get("call_id") or item.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise where.error(f"expected a call_id, got {show(call_id)}", ".call_id")
    if kind == "function_call":
        name = req_str(item, "name", where)
        arguments = req_str(item, "arguments", where, empty_ok=True)
    elif kind == "custom_tool_call":  # freeform tools (apply_patch): wrap the raw input
        name = req_str(item, "name", where)
        arguments = custom_call_arguments(req_str(item, "input", where, empty_ok=True))
    else:
        name, arguments = "local_shell", json.dumps(item.get("action"))
    return OutputSpec.function_call(name, arguments, call_id)


def _item(s: _Session, item: Mapping[str, Any], when: float | None, where: Where) -> None:
    """Feed one response_item payload (skipped types are counted)."""
    kind = item.get("type")
    if kind == "message":
        _message(s, item, when, where)
    elif kind == "reasoning":
        summary = item.get("summary") or []
        if not isinstance(summary, list):
            raise where.error(f"expected a list of summary parts, got {show(summary)}", ".summary")
        s.builder.add_output(OutputSpec.reasoning(summary_text(item), 0), when, where)
    elif kind in _CALLS:
        s.builder.add_output(_call(item, where), when, where)
    elif kind in _CALL_OUTPUTS:
        call_id = req_str(item, "call_id", where)
        output = _output_text(item.get("output"), where)
        s.builder.add_input(
            {"type": "function_call_output", "call_id": call_id, "output": output}, when, where
        )
    else:
        s.skip(str(kind))


def _event(s: _Session, payload: Mapping[str, Any], when: float | None, where: Where) -> None:
    kind = payload.get("type")
    if kind == "token_count":
        info = payload.get("info")
        usage = info.get("last_token_usage") if isinstance(info, Mapping) else None
        if isinstance(usage, Mapping):
            s.builder.observe(_usage(usage))
    elif kind == "task_started":
        _task_started(s)
    elif kind == "user_message":
        if not s.user_in_task:  # a new task without task_started (older CLIs)
            _task_started(s)
        _user_event(s, payload, when, where)
    elif kind == "task_complete":
        _task_complete(s, payload)


def _task_started(s: _Session) -> None:
    b = s.builder
    s.task_start = len(b.turns) + (1 if b.open.outputs else 0)
    s.user_in_task = False


def _user_event(s: _Session, payload: Mapping[str, Any], when: float | None, w: Where) -> None:
    """The user's turn, from the event when no response item carried it (Codex Desktop and newer
    CLIs write only the event); a response item repeating it later is dropped."""
    if s.user_in_task:
        return  # the response item was written first: the event duplicates it
    message = payload.get("message")
    if not isinstance(message, str):
        missing = " (missing)" if "message" not in payload else ""
        raise w.error(f"expected a string, got {show(message)}{missing}", ".message")
    content: list[JSONObject] = [{"type": "input_text", "text": message}]
    images = payload.get("images")
    if isinstance(images, list):
        content += [{"type": "input_image", "image_url": str(u)} for u in images if u]
    s.builder.add_input({"type": "message", "role": "user", "content": content}, when, w)
    s.user_in_task = True
    s.event_user = message
    s.user_turns_from_events += 1


def _task_complete(s: _Session, payload: Mapping[str, Any]) -> None:
    """The recorded task timings: TTFT on the task's first turn, duration on its last."""
    ttft = _ms(payload.get("time_to_first_token_ms"))
    duration = _ms(payload.get("duration_ms"))
    b = s.builder
    if duration is not None:
        b.observe({"task_duration_ms": duration})
        s.tasks_timed += 1
    if ttft is not None and s.task_start < len(b.turns):
        first = b.turns[s.task_start]
        b.turns[s.task_start] = dataclasses.replace(
            first, observed={**first.observed, "ttft_ms": ttft}
        )
    elif ttft is not None and b.open.outputs:
        b.open.observed["ttft_ms"] = ttft


def _ms(value: Any) -> float | None:
    """A recorded duration in ms, or None when absent or not a number >= 0."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    return {
        ours: usage[theirs]
        for theirs, ours in _USAGE.items()
        if isinstance(usage.get(theirs), int) and usage[theirs] >= 0
    }


def _line(s: _Session, lineno: int, line: Any) -> None:
    if not isinstance(line, Mapping):
        raise TraceFormatError(
            f"expected a JSON object, got {show(line)}", path=s.label, line=lineno
        )
    kind, payload = line.get("type"), line.get("payload")
    where = Where(s.label, lineno, "payload")
    if not isinstance(kind, str):
        missing = " (missing)" if "type" not in line else ""
        raise Where(s.label, lineno, "type").error(f"expected a string, got {show(kind)}{missing}")
    if not isinstance(payload, Mapping):
        missing = " (missing)" if "payload" not in line else ""
        raise where.error(f"expected an object, got {show(payload)}{missing}")
    when = timestamp_ms(line.get("timestamp"))
    if kind == "session_meta":
        if s.meta is None:  # resumed/forked files may repeat it: the first one wins
            s.meta, s.meta_where = payload, where
    elif kind == "turn_context":
        model = payload.get("model")
        if isinstance(model, str) and model and (not s.models or s.models[-1] != model):
            s.models.append(model)
    elif kind == "response_item":
        _item(s, payload, when, where)
    elif kind == "event_msg":
        _event(s, payload, when, where)
    elif kind == "compacted":
        s.compactions += 1
    else:
        s.skip(f"line:{kind}")


def _tools(meta: Mapping[str, Any], where: Where) -> list[JSONObject]:
    raw = meta.get("dynamic_tools") or meta.get("tools") or []
    if not isinstance(raw, list):
        raise where.error(f"expected a list of tools, got {show(raw)}", ".dynamic_tools")
    tools: list[JSONObject] = []
    for i, spec in enumerate(raw):
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            raise where.error(
                f"expected a tool with a name, got {show(spec)}", f".dynamic_tools[{i}]"
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


def _rollout_meta(s: _Session, name: str) -> JSONObject:
    meta_in: Mapping[str, Any] = s.meta or {}
    timing = "approximate, from rollout line timestamps"
    if s.tasks_timed:
        timing = (
            "task duration and TTFT recorded (task_complete); per-request times from timestamps"
        )
    meta: JSONObject = {
        "converted_from": name,
        "converter": "harness.traces.converters.codex",
        "timing": timing,
        "session_id": meta_in.get("id"),
    }
    meta.update({k: meta_in[k] for k in _META_KEYS if meta_in.get(k) is not None})
    if len(s.models) > 1:
        meta["models"] = s.models
    if s.skipped:
        meta["skipped_items"] = dict(sorted(s.skipped.items()))
    if s.compactions:
        meta["compactions"] = s.compactions
    if s.user_turns_from_events:
        meta["user_turns_from_events"] = s.user_turns_from_events
    meta.update(s.builder.counters())
    return meta


def convert_codex(
    path: str | os.PathLike[str], *, rollout_id: str | None = None, agent_kind: str = "unknown"
) -> Rollout:
    """Convert one Codex CLI rollout file (``rollout-*.jsonl``) to a :class:`Rollout`."""
    p = Path(path)
    s = _Session(str(p))
    for lineno, line in read_jsonl(p):
        _line(s, lineno, line)
    turns = s.builder.finish(TraceFormatError("no model output found", path=s.label))
    meta_in: Mapping[str, Any] = s.meta or {}
    instructions = meta_in.get("instructions")
    base = meta_in.get("base_instructions")
    if not isinstance(instructions, str) and isinstance(base, Mapping):
        instructions = base.get("text")
    session_id = meta_in.get("id")
    default_id = f"codex-{session_id}" if isinstance(session_id, str) and session_id else None
    rollout = Rollout(
        id=rollout_id or default_id or f"codex-{digest(p.read_bytes())}",
        source="codex",
        agent_kind=agent_kind,
        model=s.models[0] if s.models else str(meta_in.get("model") or "unknown"),
        instructions=instructions if isinstance(instructions, str) else None,
        tools=infer_tools(turns, _tools(meta_in, s.meta_where or Where(s.label, None, "payload"))),
        seed=None,
        meta=_rollout_meta(s, p.name),
        turns=tuple(turns),
    )
    return finish(rollout, s.label)


def iter_codex_sessions(root: str | os.PathLike[str]) -> Iterator[Path]:
    """Codex rollout files under ``root`` (e.g. ``~/.codex/sessions``), oldest first."""
    yield from sorted(Path(root).rglob("rollout-*.jsonl"))
