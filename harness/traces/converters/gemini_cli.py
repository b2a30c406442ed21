"""Gemini CLI sessions (``~/.gemini/tmp/<project-hash>/chats/session-*.json``).

One JSON document: ``{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...]}``.
A message is ``{"id", "timestamp", "type", "content", ...}``: ``type: "user"`` is the user's turn
(``content`` a string or a list of ``{"text"}`` parts); ``type: "gemini"`` is one model request
with ``thoughts`` (``[{"subject", "description", "timestamp"}]``), ``toolCalls`` (``[{"id",
"name", "args", "result": [{"functionResponse": {"id", "name", "response"}}], "timestamp"}]``),
``tokens`` (``input``, ``output``, ``cached``, ``thoughts``, ``tool``, ``total``) and ``model``;
``info``/``error``/``warning`` messages are the CLI's own and skipped. A tool call's result is
recorded with the call: it becomes the ``function_call_output`` opening the next turn. The
mapping is tabled in ``traces/README.md``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.traces.converters.common import (
    TurnBuilder,
    Where,
    digest,
    finish,
    infer_tools,
    read_json,
    show,
    text_of,
    timestamp_ms,
)
from harness.traces.format import JSONObject, OutputSpec, Rollout, TraceFormatError

_CLI_MESSAGES = ("info", "error", "warning")


def _text(content: Any, w: Where) -> str:
    if isinstance(content, list):  # Gemini parts: {"text": ...}
        content = [
            {"type": "text", "text": p["text"]} if isinstance(p, Mapping) and "text" in p else p
            for p in content
        ]
    return text_of(content, w, ".content")


def _result_text(call: Mapping[str, Any]) -> str:
    """A tool call's recorded result as text: each ``functionResponse.response`` (its ``output``
    when that is all it holds, else its JSON)."""
    texts: list[str] = []
    results = call.get("result")
    for part in results if isinstance(results, list) else []:
        response = part.get("functionResponse", {}) if isinstance(part, Mapping) else {}
        body = response.get("response") if isinstance(response, Mapping) else None
        if isinstance(body, Mapping) and set(body) == {"output"}:
            texts.append(str(body["output"]))
        elif body is not None:
            texts.append(json.dumps(body, ensure_ascii=False))
    if not texts and isinstance(call.get("resultDisplay"), str):
        texts.append(call["resultDisplay"])
    return "\n".join(texts)


def _usage(tokens: Any) -> dict[str, int]:
    if not isinstance(tokens, Mapping):
        return {}

    def n(key: str) -> int:
        value = tokens.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return {
        "input_tokens": n("input"),
        "cached_tokens": n("cached"),
        "output_tokens": n("output") + n("thoughts"),
        "_reasoning_tokens": n("thoughts"),
    }


def _model_turn(
    builder: TurnBuilder, message: Mapping[str, Any], when: float | None, w: Where
) -> tuple[list[tuple[str, str, float | None]], int]:
    """Feed one ``gemini`` message's outputs; return its calls' results and its thought count."""
    thoughts = message.get("thoughts") or []
    if not isinstance(thoughts, list):
        raise w.error(f"expected a list, got {show(thoughts)}", ".thoughts")
    if thoughts:
        summary = "\n\n".join(
            f"{t.get('subject', '')}: {t.get('description', '')}".strip(": ")
            for t in thoughts
            if isinstance(t, Mapping)
        )
        builder.add_output(OutputSpec.reasoning(summary, 0), when, w)
    text = _text(message.get("content") or "", w)
    calls = message.get("toolCalls") or []
    if not isinstance(calls, list):
        raise w.error(f"expected a list, got {show(calls)}", ".toolCalls")
    if text or not calls:
        builder.add_output(OutputSpec.message(text), when, w)
    results: list[tuple[str, str, float | None]] = []
    for i, call in enumerate(calls):
        cw = w.at(f".toolCalls[{i}]")
        if not isinstance(call, Mapping):
            raise cw.error(f"expected an object, got {show(call)}")
        for key in ("id", "name"):
            if not isinstance(call.get(key), str) or not call[key]:
                missing = " (missing)" if key not in call else ""
                raise cw.error(
                    f"expected a non-empty string, got {show(call.get(key))}{missing}", f".{key}"
                )
        arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
        builder.add_output(OutputSpec.function_call(call["name"], arguments, call["id"]), when, cw)
        done = timestamp_ms(call.get("timestamp"))
        results.append((call["id"], _result_text(call), done if done is not None else when))
    builder.observe(_usage(message.get("tokens")))
    return results, len(thoughts)


def convert_gemini_cli(
    path: str | os.PathLike[str], *, rollout_id: str | None = None, agent_kind: str = "unknown"
) -> Rollout:
    """Convert one Gemini CLI session file to a :class:`Rollout`."""
    p = Path(path)
    label = str(p)
    doc = read_json(p)
    if not isinstance(doc, Mapping):
        raise TraceFormatError(f"expected a session object, got {show(doc)}", path=label)
    messages = doc.get("messages")
    if not isinstance(messages, list):
        missing = " (missing)" if "messages" not in doc else ""
        raise Where(label, None, "messages").error(
            f"expected a list, got {show(messages)}{missing}"
        )
    builder = TurnBuilder()
    models: list[str] = []
    skipped: dict[str, int] = {}
    thoughts = 0
    for i, message in enumerate(messages):
        w = Where(label, None, f"messages[{i}]")
        if not isinstance(message, Mapping):
            raise w.error(f"expected an object, got {show(message)}")
        kind = message.get("type")
        when = timestamp_ms(message.get("timestamp"))
        if kind == "user":
            text = _text(message.get("content"), w)
            builder.add_input(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                },
                when,
                w,
            )
        elif kind in ("gemini", "model"):
            model = message.get("model")
            if isinstance(model, str) and model and model not in models:
                models.append(model)
            results, n = _model_turn(builder, message, when, w)
            thoughts += n
            for call_id, output, done in results:
                item: JSONObject = {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": output,
                }
                builder.add_input(item, done, w.at(".toolCalls"))
        elif kind in _CLI_MESSAGES:
            skipped[str(kind)] = skipped.get(str(kind), 0) + 1
        else:
            raise w.error(f"unknown message type {show(kind)}", ".type")
    turns = builder.finish(TraceFormatError("no model output found", path=label))
    session = doc.get("sessionId")
    meta: JSONObject = {
        "converter": "harness.traces.converters.gemini_cli",
        "converted_from": p.name,
        "timing": "message and tool call timestamps",
        "session_id": session,
        **builder.counters(),
    }
    if thoughts:
        meta["thoughts"] = thoughts
    if skipped:
        meta["skipped_messages"] = dict(sorted(skipped.items()))
    if len(models) > 1:
        meta["models"] = models
    rollout = Rollout(
        id=rollout_id
        or (
            f"gemini-{session}"
            if isinstance(session, str) and session
            else f"gemini-{digest(p.read_bytes())}"
        ),
        source="gemini-cli",
        agent_kind=agent_kind,
        model=models[0] if models else "unknown",
        instructions=None,
        tools=infer_tools(turns, []),
        seed=None,
        meta=meta,
        turns=tuple(turns),
    )
    return finish(rollout, label)
