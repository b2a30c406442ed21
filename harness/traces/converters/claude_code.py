"""Claude Code session files (``~/.claude/projects/<project>/<session-id>.jsonl``).

Each line is one record: ``type`` ``user`` or ``assistant`` with the Anthropic ``message``,
``uuid``/``parentUuid``, ``timestamp``, ``sessionId``, ``isSidechain`` (and ``agentId`` in a
sub-agent's transcript); ``system`` records (``subtype: compact_boundary`` marks a compaction);
bookkeeping records (``summary``, ``file-history-snapshot``, ``queue-operation``, ``progress``,
...) that are skipped and counted. Claude Code writes one ``assistant`` record per content block,
all carrying the request's ``message.id``: the blocks of one id are one model request.

Sub-agents (the ``Task`` tool) write their own transcripts: ``<session-id>/subagents/agent-*.jsonl``
or ``<file stem>/subagents/agent-*.jsonl`` (Claude Code 2.x), ``agent-*.jsonl`` beside the session
with its ``sessionId`` (1.x), or sidechain records inside the session file. A sub-agent's
transcript given alone (every record a sidechain) converts on its own, naming its parent
session. Each becomes a rollout linked to the ``Task`` call that spawned it
(``meta.parent_rollout``, ``spawned_after_turn``, ``start_after_turn_ms``, ``spawn_call_id``,
``link``: how the call was found). The mapping is tabled in ``traces/README.md``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.protocol.wire import loads_document
from harness.traces.converters.common import (
    TurnBuilder,
    Where,
    finish,
    flat_text,
    infer_tools,
    read_jsonl,
    show,
    timestamp_ms,
)
from harness.traces.format import JSONObject, OutputSpec, Rollout, TraceFormatError

_SPAWN_TOOLS = ("Task", "Agent")
_AGENT_ID_TEXT = re.compile(r"agentId:\s*([A-Za-z0-9_-]+)")
_SYNTHETIC_MODEL = "<synthetic>"


@dataclasses.dataclass
class _Event:
    """One input item or model output item, with when and where it was recorded."""

    kind: str  # "in" or "out"
    item: JSONObject | OutputSpec
    when: float | None
    where: Where
    request: str | None = None  # the model request (message id) of an output


@dataclasses.dataclass
class Transcript:
    """The records of one agent (the session's main agent or a sub-agent), checked."""

    label: str
    agent_id: str | None
    segments: list[list[_Event]] = dataclasses.field(default_factory=lambda: [[]])
    usage: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    calls: dict[str, tuple[float | None, Mapping[str, Any]]] = dataclasses.field(
        default_factory=dict
    )  # tool_use id -> (when, input)
    agent_of_call: dict[str, str] = dataclasses.field(default_factory=dict)  # Task id -> agent
    models: list[str] = dataclasses.field(default_factory=list)
    skipped: dict[str, int] = dataclasses.field(default_factory=dict)
    thinking_blocks: int = 0
    merged_requests: int = 0
    first_prompt: str | None = None
    first_when: float | None = None
    session_id: str | None = None
    version: str | None = None
    uuids: set[str] = dataclasses.field(default_factory=set)  # of an inline sidechain
    _last_request: str | None = None
    _last_out: int = -1  # index in the current segment of the last output event

    def skip(self, name: str) -> None:
        self.skipped[name] = self.skipped.get(name, 0) + 1

    @property
    def events(self) -> list[_Event]:
        return self.segments[-1]

    def add_input(self, item: JSONObject, when: float | None, where: Where) -> None:
        self.events.append(_Event("in", item, when, where))

    def add_output(self, spec: OutputSpec, when: float | None, where: Where, request: str) -> None:
        # A request's blocks arrive one record each; tool results Claude Code ran while the
        # request was still streaming are moved after it, where the next request sees them.
        at = len(self.events)
        if request == self._last_request and self._last_out >= 0:
            at = self._last_out + 1
        self.events.insert(at, _Event("out", spec, when, where, request))
        self._last_request, self._last_out = request, at

    def new_segment(self) -> None:
        if self.events:
            self.segments.append([])
        self._last_request, self._last_out = None, -1


# -- reading records ----------------------------------------------------------------------------


def _content(message: Mapping[str, Any], where: Where) -> list[Any] | str:
    content = message.get("content")
    if isinstance(content, str | list):
        return content
    missing = " (missing)" if "content" not in message else ""
    raise where.error(f"expected a string or a list of blocks, got {show(content)}{missing}")


def _result_text(content: Any, where: Where) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return flat_text(
            [
                {"type": "text", "text": part.get("text", "")}
                if isinstance(part, Mapping) and part.get("type") == "text"
                else part
                for part in content
            ]
        )
    raise where.error(f"expected a string or a list of blocks, got {show(content)}")


def _user(t: Transcript, record: Mapping[str, Any], when: float | None, w: Where) -> None:
    message = record.get("message")
    if not isinstance(message, Mapping):
        missing = " (missing)" if "message" not in record else ""
        raise w.error(f"expected an object, got {show(message)}{missing}", "message")
    content = _content(message, w.at("message.content"))
    if isinstance(content, str):
        _user_text(t, content, when, w)
        return
    texts: list[str] = []
    for i, block in enumerate(content):
        bw = w.at(f"message.content[{i}]")
        if not isinstance(block, Mapping):
            raise bw.error(f"expected a content block, got {show(block)}")
        kind = block.get("type")
        if kind == "tool_result":
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str) or not call_id:
                missing = " (missing)" if "tool_use_id" not in block else ""
                raise bw.error(
                    f"expected a tool_use id, got {show(call_id)}{missing}", ".tool_use_id"
                )
            output = _result_text(block.get("content"), bw.at(".content"))
            t.add_input(
                {"type": "function_call_output", "call_id": call_id, "output": output}, when, bw
            )
            _note_agent(t, call_id, record.get("toolUseResult"), output)
        elif kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "image":
            texts.append("[image]")
        else:
            t.skip(f"user:{kind}")
    if texts:
        _user_text(t, "\n".join(texts), when, w)


def _user_text(t: Transcript, text: str, when: float | None, w: Where) -> None:
    if t.first_prompt is None:
        t.first_prompt = text
    t.add_input(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        when,
        w,
    )


def _note_agent(t: Transcript, call_id: str, result: Any, output: str) -> None:
    """A Task result names the sub-agent it ran (``toolUseResult.agentId``, or the result text's
    ``agentId: ...`` line)."""
    if isinstance(result, Mapping) and isinstance(result.get("agentId"), str):
        t.agent_of_call[call_id] = result["agentId"]
    elif call_id in t.calls and (match := _AGENT_ID_TEXT.search(output)):
        t.agent_of_call.setdefault(call_id, match.group(1))


def _assistant(t: Transcript, record: Mapping[str, Any], when: float | None, w: Where) -> None:
    message = record.get("message")
    if not isinstance(message, Mapping):
        missing = " (missing)" if "message" not in record else ""
        raise w.error(f"expected an object, got {show(message)}{missing}", "message")
    model = message.get("model")
    if model == _SYNTHETIC_MODEL:  # written by Claude Code itself, no model request behind it
        t.skip("assistant:synthetic")
        return
    if isinstance(model, str) and model and model not in t.models:
        t.models.append(model)
    request = str(message.get("id") or record.get("requestId") or record.get("uuid") or "")
    content = _content(message, w.at("message.content"))
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    for i, block in enumerate(blocks):
        bw = w.at(f"message.content[{i}]")
        spec = _output(t, block, when, bw)
        if spec is not None:
            t.add_output(spec, when, bw, request)
    usage = message.get("usage")
    if isinstance(usage, Mapping):
        t.usage[request] = _usage(usage, t.usage.get(request, {}))


def _output(t: Transcript, block: Any, when: float | None, w: Where) -> OutputSpec | None:
    if not isinstance(block, Mapping):
        raise w.error(f"expected a content block, got {show(block)}")
    kind = block.get("type")
    if kind == "thinking":
        t.thinking_blocks += 1
        return OutputSpec.reasoning(str(block.get("thinking") or ""), 0)
    if kind == "redacted_thinking":
        t.thinking_blocks += 1
        return OutputSpec.reasoning("", 0)
    if kind == "text":
        text = block.get("text")
        return OutputSpec.message(text) if isinstance(text, str) and text else None
    if kind == "tool_use":
        call_id, name = block.get("id"), block.get("name")
        for key, value in (("id", call_id), ("name", name)):
            if not isinstance(value, str) or not value:
                missing = " (missing)" if key not in block else ""
                raise w.error(f"expected a non-empty string, got {show(value)}{missing}", f".{key}")
        assert isinstance(call_id, str) and isinstance(name, str)
        arguments = block.get("input", {})
        t.calls[call_id] = (when, arguments if isinstance(arguments, Mapping) else {})
        return OutputSpec.function_call(name, json.dumps(arguments, ensure_ascii=False), call_id)
    t.skip(f"assistant:{kind}")
    return None


def _usage(usage: Mapping[str, Any], seen: Mapping[str, int]) -> dict[str, int]:
    """A request's usage: the prompt is input + cache writes + cache reads; every record of the
    request repeats it, the output count grows to its final value."""

    def n(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    prompt = n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens")
    return {
        "input_tokens": max(prompt, seen.get("input_tokens", 0)),
        "cached_tokens": max(n("cache_read_input_tokens"), seen.get("cached_tokens", 0)),
        "output_tokens": max(n("output_tokens"), seen.get("output_tokens", 0)),
    }


def _record(t: Transcript, lineno: int, record: Any, sidechains: dict[str, Transcript]) -> None:
    if not isinstance(record, Mapping):
        raise TraceFormatError(
            f"expected a JSON object, got {show(record)}", path=t.label, line=lineno
        )
    kind = record.get("type")
    if not isinstance(kind, str):
        missing = " (missing)" if "type" not in record else ""
        raise Where(t.label, lineno, "type").error(f"expected a string, got {show(kind)}{missing}")
    w = Where(t.label, lineno, "")
    when = timestamp_ms(record.get("timestamp"))
    if kind in ("user", "assistant"):
        target = t
        if record.get("isSidechain") is True and t.agent_id is None:
            # sidechain records inside the session file: a sub-agent of their own
            key = _sidechain_key(record, sidechains)
            target = sidechains.setdefault(key, Transcript(t.label, key))
        elif t.agent_id is not None and isinstance(record.get("agentId"), str):
            t.agent_id = record["agentId"]
        if target.first_when is None:
            target.first_when = when
        if target is not t:
            target.uuids.add(str(record.get("uuid")))
        target.session_id = target.session_id or _str_or_none(record.get("sessionId"))
        target.version = target.version or _str_or_none(record.get("version"))
        (_user if kind == "user" else _assistant)(target, record, when, w)
    elif kind == "system" and record.get("subtype") == "compact_boundary":
        t.new_segment()
        t.skip("system:compact_boundary")
    elif kind == "progress":
        _progress(t, record)
    else:
        t.skip(kind if kind != "system" else f"system:{record.get('subtype')}")


def _sidechain_key(record: Mapping[str, Any], sidechains: Mapping[str, Transcript]) -> str:
    """Which inline sidechain a record belongs to: its ``agentId``, else the sidechain of its
    ``parentUuid`` (each chain of records from a root is one sub-agent)."""
    if isinstance(record.get("agentId"), str):
        return str(record["agentId"])
    parent = record.get("parentUuid")
    for key, chain in sidechains.items():
        if parent in chain.uuids:
            chain.uuids.add(str(record.get("uuid")))
            return key
    key = f"sidechain{len(sidechains) + 1}"
    return key


def _progress(t: Transcript, record: Mapping[str, Any]) -> None:
    """``agent_progress`` records name the Task call a sub-agent works for."""
    data = record.get("data")
    call = record.get("parentToolUseID")
    if isinstance(data, Mapping) and isinstance(data.get("agentId"), str) and isinstance(call, str):
        t.agent_of_call.setdefault(call, data["agentId"])
    t.skip("progress")


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def read_transcript(path: Path, agent_id: str | None = None) -> tuple[Transcript, list[Transcript]]:
    """(the file's own transcript, the sidechains recorded inside it)."""
    t = Transcript(str(path), agent_id)
    sidechains: dict[str, Transcript] = {}
    for lineno, record in read_jsonl(path):
        _record(t, lineno, record, sidechains)
    return t, list(sidechains.values())


# -- turns and rollouts -------------------------------------------------------------------------


def _segment_rollout(
    t: Transcript, events: Sequence[_Event], rollout_id: str, meta: JSONObject, agent_kind: str
) -> Rollout | None:
    builder = TurnBuilder()
    open_calls: set[str] = set()
    dropped_outputs = 0
    request: str | None = None
    for e in events:
        if e.kind == "in":
            assert isinstance(e.item, dict)
            call_id = e.item.get("call_id")
            if call_id is not None and call_id not in open_calls:
                dropped_outputs += 1  # answers a call of an earlier (compacted) segment
                continue
            if not builder.started and e.item.get("type") == "function_call_output":
                dropped_outputs += 1
                continue
            builder.add_input(e.item, e.when, e.where)
            continue
        assert isinstance(e.item, OutputSpec)
        if not builder.started:
            t.skip("output-before-input")
            continue
        if e.request != request and request is not None and builder.open.outputs:
            t.merged_requests += 1  # no input between two requests: one turn for both
        if e.request != request and request is not None:
            builder.observe(t.usage.get(request, {}))
        builder.add_output(e.item, e.when, e.where)
        if e.item.type == "function_call":
            open_calls.add(e.item.call_id)
        request = e.request
    if request is not None:
        builder.observe(t.usage.get(request, {}))
    if not builder.turns and not builder.open.outputs:
        return None
    turns = builder.finish(TraceFormatError("no model output", path=t.label))
    meta = {**meta, **builder.counters()}
    if t.merged_requests:
        meta["merged_requests"] = t.merged_requests
    if dropped_outputs:
        meta["dropped_tool_outputs"] = dropped_outputs
    return finish(
        Rollout(
            id=rollout_id,
            source="claude-code",
            agent_kind=agent_kind,
            model=t.models[0] if t.models else "unknown",
            instructions=None,
            tools=infer_tools(turns, []),
            seed=None,
            meta=meta,
            turns=tuple(turns),
        ),
        t.label,
    )


def transcript_rollouts(
    t: Transcript, rollout_id: str, meta: JSONObject, agent_kind: str
) -> list[Rollout]:
    """One rollout per segment (a compaction starts ``<id>-s2``: a chain only appends)."""
    base: JSONObject = {
        **meta,
        "converter": "harness.traces.converters.claude_code",
        "converted_from": Path(t.label).name,
        "timing": "record timestamps: tool wait, user wait and request time (e2e) per turn",
    }
    if t.version:
        base["claude_code_version"] = t.version
    if t.thinking_blocks:
        base["thinking_blocks"] = t.thinking_blocks
    if t.skipped:
        base["skipped_records"] = dict(sorted(t.skipped.items()))
    if len(t.models) > 1:
        base["models"] = t.models
    rollouts: list[Rollout] = []
    for events in t.segments:
        rid = rollout_id if not rollouts else f"{rollout_id}-s{len(rollouts) + 1}"
        seg_meta = {**base, "continues": rollouts[-1].id} if rollouts else base
        rollout = _segment_rollout(t, events, rid, seg_meta, agent_kind)
        if rollout is not None:
            rollouts.append(rollout)
    return rollouts


def subagent_files(path: Path, session_id: str) -> Iterator[Path]:
    """Sub-agent transcripts of a session: ``<session id>/subagents/agent-*.jsonl`` or
    ``<file stem>/subagents/agent-*.jsonl`` (2.x; the two differ when the file was renamed) and
    ``agent-*.jsonl`` beside it that carry its ``sessionId`` (1.x)."""
    for folder in dict.fromkeys((session_id, path.stem)):
        nested = path.parent / folder / "subagents"
        if nested.is_dir():
            yield from sorted(nested.rglob("agent-*.jsonl"))
    for sibling in sorted(path.parent.glob("agent-*.jsonl")):
        if sibling != path and _session_of(sibling) == session_id:
            yield sibling


def _session_of(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                record = loads_document(line) if line.strip() else None
                if isinstance(record, Mapping) and isinstance(record.get("sessionId"), str):
                    return str(record["sessionId"])
    except (OSError, ValueError):
        return None
    return None


def _link(parent: Transcript, child: Transcript) -> tuple[str, str] | None:
    """(the Task call id that spawned ``child``, how it was found), or None."""
    for call_id, agent in parent.agent_of_call.items():
        if agent == child.agent_id and call_id in parent.calls:
            return call_id, "task result names the agent"
    if child.first_prompt is not None:
        for call_id, (_, arguments) in parent.calls.items():
            if (
                arguments.get("prompt") == child.first_prompt
                and call_id not in parent.agent_of_call
            ):
                return call_id, "task prompt equals the sub-agent's first message"
    return None


def _turn_of_call(rollouts: Sequence[Rollout], call_id: str) -> tuple[str, int] | None:
    for rollout in rollouts:
        for turn in rollout.turns:
            if call_id in turn.call_ids:
                return rollout.id, turn.index
    return None


def _child_meta(
    parent: Transcript, parent_rollouts: Sequence[Rollout], child: Transcript
) -> JSONObject:
    link = _link(parent, child)
    at = _turn_of_call(parent_rollouts, link[0]) if link else None
    if link is None or at is None:
        meta: JSONObject = {
            "session_rollout": parent_rollouts[0].id if parent_rollouts else None,
            "link": "no Task call spawned it (e.g. Claude Code's warm-up); replayed on its own",
        }
        if child.first_when is not None and parent.first_when is not None:
            meta["start_offset_ms"] = round(child.first_when - parent.first_when, 1)
        return meta
    call_id, how = link
    call_when, arguments = parent.calls[call_id]
    meta = {
        "parent_rollout": at[0],
        "spawned_after_turn": at[1],
        "spawn_call_id": call_id,
        "link": how,
        "start_after_turn_ms": round(max(0.0, (child.first_when or 0.0) - (call_when or 0.0)), 1)
        if child.first_when is not None and call_when is not None
        else 0.0,
    }
    if isinstance(arguments.get("subagent_type"), str):
        meta["subagent_type"] = arguments["subagent_type"]
    return meta


def convert_claude_code(
    path: str | os.PathLike[str],
    *,
    subagents: Sequence[str | os.PathLike[str]] | None = None,
    rollout_id: str | None = None,
    agent_kind: str = "unknown",
) -> list[Rollout]:
    """Convert one Claude Code session file and its sub-agents' transcripts (found beside it
    unless ``subagents`` names them): the session's rollouts first, then each sub-agent's."""
    p = Path(path)
    main, inline = read_transcript(p)
    session = main.session_id or p.stem
    base_id = rollout_id or f"claude-{session}"
    rollouts = transcript_rollouts(main, base_id, {"session_id": session}, agent_kind)
    if not rollouts and inline:
        parent = next((c.session_id for c in inline if c.session_id), None)
        return _subagent_on_its_own(p, parent, rollout_id, agent_kind)
    if not rollouts:
        raise TraceFormatError("no model request in this file", path=p)
    files = (
        [Path(s) for s in subagents] if subagents is not None else list(subagent_files(p, session))
    )
    children = list(inline)
    for file in files:
        child, _ = read_transcript(file, agent_id=_agent_id_of(file))
        children.append(child)
    for child in children:
        meta = {
            "session_id": session,
            "agent_id": child.agent_id,
            **_child_meta(main, rollouts, child),
        }
        rollouts += transcript_rollouts(child, f"{base_id}-{child.agent_id}", meta, agent_kind)
    return rollouts


def _subagent_on_its_own(
    path: Path, session: str | None, rollout_id: str | None, agent_kind: str
) -> list[Rollout]:
    """A sub-agent's transcript given without its session (every record a sidechain): its own
    rollouts, naming the parent session they cannot be linked into."""
    child, _ = read_transcript(path, agent_id=_agent_id_of(path))
    meta: JSONObject = {
        "session_id": session,
        "agent_id": child.agent_id,
        "link": f"a sub-agent transcript converted on its own (parent session {session}, "
        "not given: convert the session file to link it to its Task call)",
    }
    base_id = rollout_id or f"claude-{session or 'nosession'}-{child.agent_id}"
    rollouts = transcript_rollouts(child, base_id, meta, agent_kind)
    if not rollouts:
        raise TraceFormatError("no model request in this sub-agent transcript", path=path)
    return rollouts


def _agent_id_of(path: Path) -> str:
    stem = path.stem
    return stem[len("agent-") :] if stem.startswith("agent-") else stem


def iter_claude_sessions(root: str | os.PathLike[str]) -> Iterator[Path]:
    """Session files under ``root`` (e.g. ``~/.claude/projects``): every ``*.jsonl`` but the
    sub-agent transcripts, which convert with their session; then the sub-agent transcripts
    no session here claims, which convert on their own."""
    files = sorted(Path(root).rglob("*.jsonl"))
    sessions = [f for f in files if not _is_subagent_file(f)]
    yield from sessions
    claimed = {sub for s in sessions for sub in subagent_files(s, _session_of(s) or s.stem)}
    yield from (f for f in files if _is_subagent_file(f) and f not in claimed)


def _is_subagent_file(path: Path) -> bool:
    return path.name.startswith("agent-") or "subagents" in path.parts
