"""SWE-agent trajectories (``*.traj``): ``{"history": [...], "trajectory": [...], "info"}``.

``history`` is the chat the model saw: ``system``/``user``/``assistant``/``tool`` messages
with SWE-agent's extra keys (``agent``, ``message_type``, ``thought``, ``action``,
``is_demo``). Function-calling agents store ``tool_calls`` and the tool messages'
``tool_call_ids`` as lists, often as their Python ``repr`` text. Older (non function-calling)
agents write the action inside the assistant text and the observation as the next user
message: the converter makes that pair a call of the one tool ``swe_agent_action``
(``{"action": ...}``) and its output, since that is what ran between the two model requests.
``trajectory[k].execution_time`` (seconds) is the tool time of the k-th action.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.traces.converters.chat import ChatDoc, convert_messages
from harness.traces.converters.common import Where, read_json, show
from harness.traces.format import JSONObject, Rollout, TraceFormatError

#: The tool a non function-calling SWE-agent action becomes.
ACTION_TOOL = "swe_agent_action"


def _execution_times_ms(doc: Mapping[str, Any], label: str) -> list[float | None]:
    steps = doc.get("trajectory") or []
    if not isinstance(steps, list):
        raise TraceFormatError(
            f"expected a list, got {show(steps)}", path=label, field="trajectory"
        )
    times: list[float | None] = []
    for step in steps:
        raw = step.get("execution_time") if isinstance(step, Mapping) else None
        try:
            times.append(float(raw) * 1000.0 if raw is not None else None)
        except (TypeError, ValueError):
            times.append(None)
    return times


def _is_observation(msg: Mapping[str, Any]) -> bool:
    return msg.get("role") == "user" and msg.get("message_type", "observation") == "observation"


def normalize_history(history: Sequence[Any], label: str) -> tuple[list[Any], dict[int, int]]:
    """Chat messages with text actions turned into calls; and, per tool message index, the
    index of the action it answers (for the execution times)."""
    out: list[Any] = []
    action_of: dict[int, int] = {}
    actions = 0
    open_action: str | None = None
    for i, msg in enumerate(history):
        if not isinstance(msg, Mapping):
            raise Where(label, None, f"history[{i}]").error(f"expected a message, got {show(msg)}")
        if open_action is not None and _is_observation(msg) and not msg.get("is_demo"):
            out.append({"role": "tool", "tool_call_id": open_action, "content": msg.get("content")})
            action_of[len(out) - 1] = actions - 1
            open_action = None
            continue
        open_action = None
        if msg.get("role") == "tool":
            action_of[len(out)] = actions - 1
        elif msg.get("role") == "assistant" and msg.get("tool_calls"):
            actions += 1
        elif msg.get("role") == "assistant" and isinstance(msg.get("action"), str):
            open_action = f"action_{actions + 1:04d}"
            actions += 1
            msg = _action_call(msg, open_action)
        out.append(msg)
    return out, action_of


def _action_call(msg: Mapping[str, Any], call_id: str) -> JSONObject:
    thought = msg.get("thought")
    text = thought if isinstance(thought, str) else msg.get("content")
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": ACTION_TOOL, "arguments": json.dumps({"action": msg["action"]})},
    }
    return {"role": "assistant", "content": text, "tool_calls": [call]}


def convert_swe_agent(
    path: str | os.PathLike[str], *, rollout_id: str | None = None, agent_kind: str = "unknown"
) -> Rollout:
    """Convert one SWE-agent ``.traj`` file to a :class:`Rollout`."""
    p = Path(path)
    label = str(p)
    doc = read_json(p)
    if not isinstance(doc, Mapping):
        raise TraceFormatError(f"expected a .traj object, got {show(doc)}", path=label)
    history = doc.get("history")
    if not isinstance(history, list):
        missing = " (missing)" if "history" not in doc else ""
        raise TraceFormatError(
            f"expected a list of messages, got {show(history)}{missing}",
            path=label,
            field="history",
        )
    messages, action_of = normalize_history(history, label)
    times = _execution_times_ms(doc, label)
    waits = {
        i: t for i, k in action_of.items() if 0 <= k < len(times) and (t := times[k]) is not None
    }
    info = doc.get("info") if isinstance(doc.get("info"), Mapping) else {}
    meta: JSONObject = {"timing": "tool time from trajectory[].execution_time" if waits else "none"}
    for key in ("exit_status", "model_stats"):
        if isinstance(info, Mapping) and info.get(key) is not None:
            meta[key] = info[key]
    chat = ChatDoc(messages, label, "history", tool_waits_ms=waits)
    return convert_messages(
        chat,
        source="swe-agent",
        converter="harness.traces.converters.swe_agent",
        rollout_id=rollout_id or f"swe-agent-{p.stem}",
        agent_kind=agent_kind,
        meta_extra=meta,
    )
