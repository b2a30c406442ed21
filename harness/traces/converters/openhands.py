"""OpenHands trajectories: an event stream (a JSON list of events, or ``{"events"|"history"}``).

Events have ``id``, ``timestamp``, ``source`` (``user``/``agent``/``environment``) and either
``action`` or ``observation``. An agent action taken through a tool carries
``tool_call_metadata``: ``tool_call_id``, ``function_name`` and ``model_response`` (the chat
completion that issued it, with every tool call of that response and its ``usage``). The
observation answering it carries the same metadata and ``cause`` (the action's id). Mapping:

* user ``message`` action: an input user message (``args.content``);
* agent action with metadata: the outputs of its ``model_response`` (its text once, then each
  of its tool calls), one turn per response id; ``usage`` goes into ``observed``;
* agent ``message`` action without metadata: an output message;
* observation with metadata: the ``function_call_output`` of its call (``content``), the tool
  time being its timestamp minus its action's;
* everything else (environment events, state changes, ``null`` observations): skipped.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.traces.converters.chat import chat_tools
from harness.traces.converters.common import (
    TurnBuilder,
    Where,
    digest,
    finish,
    infer_tools,
    read_json,
    show,
    timestamp_ms,
)
from harness.traces.format import JSONObject, OutputSpec, Rollout, TraceFormatError


@dataclasses.dataclass
class _Stream:
    label: str
    builder: TurnBuilder = dataclasses.field(default_factory=TurnBuilder)
    responses: set[str] = dataclasses.field(default_factory=set)
    action_times: dict[str, float] = dataclasses.field(default_factory=dict)  # event id -> ms
    model: str | None = None
    skipped: int = 0


def _when(event: Mapping[str, Any]) -> float | None:
    return timestamp_ms(event.get("timestamp"))


def _events(doc: Any, label: str) -> tuple[list[Any], str]:
    if isinstance(doc, list):
        return doc, ""
    for key in ("events", "history", "trajectory"):
        if isinstance(doc, Mapping) and isinstance(doc.get(key), list):
            return doc[key], key
    raise TraceFormatError(
        f"expected a list of OpenHands events (or an object with events), got {show(doc)}",
        path=label,
    )


def _response_outputs(s: _Stream, meta: Mapping[str, Any], when: float | None, w: Where) -> None:
    """The outputs of one chat completion, fed once however many actions it produced."""
    response = meta.get("model_response")
    if not isinstance(response, Mapping):
        raise w.error(f"expected an object, got {show(response)}", ".model_response")
    response_id = str(response.get("id") or meta.get("tool_call_id"))
    if response_id in s.responses:
        return
    s.responses.add(response_id)
    if isinstance(response.get("model"), str) and s.model is None:
        s.model = response["model"]
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise w.error(f"expected a non-empty list, got {show(choices)}", ".model_response.choices")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise w.error(
            f"expected an object, got {show(message)}", ".model_response.choices[0].message"
        )
    _message_outputs(s, message, when, w.at(".model_response.choices[0].message"))
    usage = response.get("usage")
    if isinstance(usage, Mapping):
        s.builder.observe(_usage(usage))


def _message_outputs(s: _Stream, message: Mapping[str, Any], when: float | None, w: Where) -> None:
    content = message.get("content")
    if isinstance(content, str) and content:
        s.builder.add_output(OutputSpec.message(content), when, w)
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise w.error(f"expected a list, got {show(calls)}", ".tool_calls")
    for k, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(call.get("id"), str):
            raise w.error(
                f"expected a tool call with id and function, got {show(call)}", f".tool_calls[{k}]"
            )
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise w.error(
                f"expected a non-empty string, got {show(name)}", f".tool_calls[{k}].function.name"
            )
        arguments = fn.get("arguments")
        spec = OutputSpec.function_call(
            name, arguments if isinstance(arguments, str) else "{}", call["id"]
        )
        s.builder.add_output(spec, when, w)


def _usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    observed: dict[str, Any] = {}
    for theirs, ours in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        if isinstance(usage.get(theirs), int):
            observed[ours] = usage[theirs]
    details = usage.get("prompt_tokens_details")
    if isinstance(details, Mapping) and isinstance(details.get("cached_tokens"), int):
        observed["cached_tokens"] = details["cached_tokens"]
    return observed


def _action(s: _Stream, event: Mapping[str, Any], when: float | None, w: Where) -> None:
    meta = event.get("tool_call_metadata")
    args = event.get("args") if isinstance(event.get("args"), Mapping) else {}
    if event.get("source") == "user" and event.get("action") == "message":
        text = args.get("content") if isinstance(args, Mapping) else None
        if not isinstance(text, str):
            raise w.error(f"expected a string, got {show(text)}", ".args.content")
        part = {"type": "input_text", "text": text}
        s.builder.add_input({"type": "message", "role": "user", "content": [part]}, when, w)
    elif event.get("source") == "agent" and isinstance(meta, Mapping):
        if when is not None:
            s.action_times[str(event.get("id"))] = when
        _response_outputs(s, meta, when, w.at(".tool_call_metadata"))
    elif event.get("source") == "agent" and event.get("action") == "message":
        text = args.get("content") if isinstance(args, Mapping) else None
        s.builder.add_output(OutputSpec.message(str(text or event.get("message") or "")), when, w)
    else:
        s.skipped += 1


def _observation(s: _Stream, event: Mapping[str, Any], when: float | None, w: Where) -> None:
    meta = event.get("tool_call_metadata")
    if not isinstance(meta, Mapping):
        s.skipped += 1
        return
    call_id = meta.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise w.error(
            f"expected a tool call id, got {show(call_id)}", ".tool_call_metadata.tool_call_id"
        )
    content = event.get("content", event.get("message"))
    item = {"type": "function_call_output", "call_id": call_id, "output": str(content or "")}
    s.builder.add_input(item, when, w)
    started = s.action_times.get(str(event.get("cause")))
    if started is not None and when is not None:
        s.builder.set_tool_wait(when - started)


def convert_openhands(
    path: str | os.PathLike[str], *, rollout_id: str | None = None, agent_kind: str = "unknown"
) -> Rollout:
    """Convert one OpenHands trajectory (event stream) to a :class:`Rollout`."""
    p = Path(path)
    s = _Stream(str(p))
    events, container = _events(read_json(p), s.label)
    for i, event in enumerate(events):
        w = Where(s.label, None, f"{container}[{i}]" if container else f"[{i}]")
        if not isinstance(event, Mapping):
            raise w.error(f"expected an event object, got {show(event)}")
        when = _when(event)
        if "action" in event:
            _action(s, event, when, w)
        elif "observation" in event:
            _observation(s, event, when, w)
        else:
            raise w.error("expected an event with an action or an observation", ".action")
    turns = s.builder.finish(TraceFormatError("no agent output found", path=s.label))
    meta: JSONObject = {
        "converter": "harness.traces.converters.openhands",
        "converted_from": p.name,
        "timing": "tool time from observation minus action timestamps",
        "skipped_events": s.skipped,
        **s.builder.counters(),
    }
    rollout = Rollout(
        id=rollout_id or f"openhands-{p.stem}-{digest(p.read_bytes())[:6]}",
        source="openhands",
        agent_kind=agent_kind,
        model=s.model or "unknown",
        instructions=None,
        tools=infer_tools(turns, chat_tools(None, Where(s.label, None, "tools"))),
        seed=None,
        meta=meta,
        turns=tuple(turns),
    )
    return finish(rollout, s.label)
