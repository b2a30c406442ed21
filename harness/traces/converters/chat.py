"""Chat-format trajectories: OpenAI chat messages (``role``, ``content``, ``tool_calls``,
``tool_call_id``), as a JSON list, an object with ``messages`` (or ``history``), or JSONL with
one message per line. SWE-agent's ``.traj`` files reuse :func:`convert_messages`.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.protocol.wire import loads_document
from harness.traces.converters.common import (
    TurnBuilder,
    Where,
    digest,
    finish,
    flat_text,
    infer_tools,
    read_json,
    read_jsonl,
    show,
)
from harness.traces.format import JSONObject, OutputSpec, Rollout, TraceFormatError

_ROLES = "system, developer, user, assistant or tool; the legacy 'function' role is not supported"


@dataclasses.dataclass
class ChatDoc:
    """A decoded chat trajectory and where its messages are."""

    messages: Sequence[Any]
    label: str | None
    container: str
    per_line: bool = False
    tools: Any = None
    model: str | None = None
    doc_id: str | None = None
    tool_waits_ms: Mapping[int, float] = dataclasses.field(default_factory=dict)

    def where(self, i: int) -> Where:
        if self.per_line:
            return Where(self.label, i + 1, "message")
        return Where(self.label, None, f"{self.container}[{i}]")


def chat_content(content: Any, where: Where) -> list[JSONObject]:
    """Chat content (string or parts) as Responses ``input_*`` parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}] if content else []
    if not isinstance(content, list):
        raise where.error(f"expected a string or a list of parts, got {show(content)}", ".content")
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
            raise where.error(f"unsupported content part {show(part)}", f".content[{i}]")
    return parts


def chat_tools(raw: Any, where: Where) -> list[JSONObject]:
    """Tool definitions in chat form (nested under ``function``) or Responses form."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise where.error(f"expected a list, got {show(raw)}")
    tools: list[JSONObject] = []
    for i, tool in enumerate(raw):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        spec = fn if isinstance(fn, Mapping) else tool
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            raise where.error(f"expected a function tool, got {show(tool)}", f"[{i}]")
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


def decoded_list(value: Any, where: Where, sub: str) -> list[Any]:
    """A list field that some exporters store as its JSON or Python ``repr`` text
    (SWE-agent writes ``tool_calls`` and ``tool_call_ids`` as ``"[{'id': ...}]"``)."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = loads_document(value)
        except ValueError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise where.error(f"expected a list, got the text {show(value)}", sub) from None
    if not isinstance(value, list):
        raise where.error(f"expected a list, got {show(value)}", sub)
    return value


def _chat_call(call: Any, where: Where, sub: str) -> tuple[str, str, str]:
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        raise where.error(f"expected a tool call with a function, got {show(call)}", sub)
    fn = call["function"]
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise where.error(f"expected a non-empty string, got {show(name)}", f"{sub}.function.name")
    arguments = fn.get("arguments", "")
    if not isinstance(arguments, str):  # some exports keep arguments decoded
        arguments = json.dumps(arguments)
    call_id = call.get("id")
    return (call_id if isinstance(call_id, str) else ""), name, arguments


class _ChatFeeder:
    """Feeds chat messages into a :class:`TurnBuilder`."""

    def __init__(self, doc: ChatDoc) -> None:
        self.doc = doc
        self.builder = TurnBuilder()
        self.instructions: list[str] = []
        self.calls_minted = 0

    def feed(self, i: int, msg: Any) -> None:
        where = self.doc.where(i)
        if not isinstance(msg, Mapping):
            raise where.error(f"expected a message object, got {show(msg)}")
        role = msg.get("role")
        if role == "system" and not self.builder.started:
            self.instructions.append(flat_text(chat_content(msg.get("content"), where)))
        elif role in ("user", "system", "developer"):
            parts = chat_content(msg.get("content"), where)
            self.builder.add_input({"type": "message", "role": role, "content": parts}, None, where)
        elif role == "assistant":
            self._assistant(msg, where)
        elif role == "tool":
            self._tool(i, msg, where)
        else:
            missing = " (missing)" if "role" not in msg else ""
            raise where.error(
                f"unsupported role {show(role)}{missing} (expected {_ROLES})", ".role"
            )

    def _assistant(self, msg: Mapping[str, Any], where: Where) -> None:
        reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self.builder.add_output(OutputSpec.reasoning(reasoning, 0), None, where)
        text = flat_text(chat_content(msg.get("content"), where))
        calls = decoded_list(msg.get("tool_calls"), where, ".tool_calls")
        if text or not calls:
            self.builder.add_output(OutputSpec.message(text), None, where)
        for k, call in enumerate(calls):
            call_id, name, arguments = _chat_call(call, where, f".tool_calls[{k}]")
            if not call_id:
                self.calls_minted += 1
                call_id = f"call_{self.calls_minted:04d}"
            self.builder.add_output(OutputSpec.function_call(name, arguments, call_id), None, where)

    def _tool(self, i: int, msg: Mapping[str, Any], where: Where) -> None:
        if "tool_call_ids" in msg:  # SWE-agent: a list (one observation may answer several)
            answered = decoded_list(msg.get("tool_call_ids"), where, ".tool_call_ids")
            sub = ".tool_call_ids"
        else:
            answered, sub = [msg.get("tool_call_id")], ".tool_call_id"
        if not answered or not all(isinstance(a, str) and a for a in answered):
            missing = " (missing)" if sub[1:] not in msg else ""
            raise where.error(f"expected a {sub[1:]}, got {show(msg.get(sub[1:]))}{missing}", sub)
        output = flat_text(chat_content(msg.get("content"), where))
        wait_ms = self.doc.tool_waits_ms.get(i)
        for call_id in answered:
            item = {"type": "function_call_output", "call_id": call_id, "output": output}
            self.builder.add_input(item, None, where)
        if wait_ms is not None:
            self.builder.set_tool_wait(wait_ms)


def convert_messages(
    doc: ChatDoc,
    *,
    source: str,
    converter: str,
    rollout_id: str | None,
    agent_kind: str,
    meta_extra: Mapping[str, Any] | None = None,
) -> Rollout:
    """The turns of a chat message list, as a rollout of ``source``."""
    feeder = _ChatFeeder(doc)
    for i, msg in enumerate(doc.messages):
        feeder.feed(i, msg)
    turns = feeder.builder.finish(TraceFormatError("no assistant message found", path=doc.label))
    meta: JSONObject = {"converter": converter}
    if doc.label is not None:
        meta["converted_from"] = Path(doc.label).name
    meta.update(meta_extra or {})
    meta.update(feeder.builder.counters())
    fallback = f"{source}-{digest(json.dumps(doc.messages, sort_keys=True, default=str).encode())}"
    rollout = Rollout(
        id=rollout_id or doc.doc_id or fallback,
        source=source,
        agent_kind=agent_kind,
        model=doc.model or "unknown",
        instructions="\n\n".join(feeder.instructions) if feeder.instructions else None,
        tools=infer_tools(turns, chat_tools(doc.tools, Where(doc.label, None, "tools"))),
        seed=None,
        meta=meta,
        turns=tuple(turns),
    )
    return finish(rollout, doc.label)


def load_chat(source: Any) -> ChatDoc:
    """A path (``.json`` document or ``.jsonl`` one message per line) or a decoded object."""
    if isinstance(source, str | os.PathLike):
        p = Path(source)
        if p.suffix == ".jsonl":
            return ChatDoc([obj for _, obj in read_jsonl(p)], str(p), "message", per_line=True)
        return _chat_doc(read_json(p), str(p))
    return _chat_doc(source, None)


def _chat_doc(doc: Any, label: str | None) -> ChatDoc:
    if (
        isinstance(doc, list)
        and doc
        and all(isinstance(e, Mapping) and {"task_id", "traj"} <= e.keys() for e in doc)
    ):
        raise TraceFormatError("tau-bench results, not one chat: use --from tau-bench", path=label)
    if not isinstance(doc, Mapping):
        messages = doc
        container = "messages"
        if not isinstance(messages, list):
            raise TraceFormatError(
                f"expected a list of chat messages or an object with messages, got {show(doc)}",
                path=label,
            )
        return ChatDoc(messages, label, container)
    container = "messages" if "messages" in doc else "history"
    messages = doc.get(container)
    if not isinstance(messages, list):
        missing = " (missing)" if container not in doc else ""
        raise TraceFormatError(
            f"expected a list of chat messages, got {show(messages)}{missing}",
            path=label,
            field=container,
        )
    model = doc.get("model") if isinstance(doc.get("model"), str) else None
    doc_id = doc.get("id") or doc.get("instance_id")
    return ChatDoc(messages, label, container, False, doc.get("tools"), model, _id(doc_id))


def _id(value: Any) -> str | None:
    return str(value) if value else None


def convert_chat(
    source: str | os.PathLike[str] | Sequence[Any] | Mapping[str, Any],
    *,
    rollout_id: str | None = None,
    agent_kind: str = "unknown",
    model: str | None = None,
) -> Rollout:
    """Convert a chat-format trajectory (OpenAI chat messages) to a :class:`Rollout`.

    Leading system messages become ``instructions``; chat exports carry no timings, so
    ``tool_wait_ms`` is 0.
    """
    doc = load_chat(source)
    if model:
        doc = dataclasses.replace(doc, model=model)
    return convert_messages(
        doc,
        source="chat-export",
        converter="harness.traces.converters.chat",
        rollout_id=rollout_id,
        agent_kind=agent_kind,
    )


__all__ = ["ChatDoc", "convert_chat", "convert_messages", "load_chat"]
