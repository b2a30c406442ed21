"""kv-cache-tester traces: anonymised agent sessions as token shapes (no text).

A trace is ``{"id", "block_size", "system_tokens", "tool_tokens", "hash_id_scope",
"requests": [...]}``; a request is ``{"t", "type", "in", "out", "hash_ids", "input_types",
"output_types", "stop", "api_time"?, "think_time"?, "ttft"?}`` (seconds), and an entry of
``type: "subagent"`` holds the sub-agent's own ``requests`` (and ``agent_id``,
``duration_ms``). Text is synthesized by :mod:`token_shape` so that the replayed prompts share
the blocks the recorded ones shared. The mapping, request by request:

* the prompt of request *i* is the text of its ``hash_ids``, ``in`` tokens long; its first
  ``system_tokens + tool_tokens`` tokens are the rollout's ``instructions``;
* the model output of request *i* is what request *i+1*'s prompt holds after request *i*'s
  (``min(out, in[i+1] - in[i])`` tokens); the rest of ``out`` (thinking, which Claude drops
  from later prompts) is hidden reasoning; a ``tool_use`` stop makes it a call of ``tool_use``;
* request *i+1*'s new input is the rest of its prompt: a tool output after a call
  (``tool_wait_ms`` = ``think_time``), else a user message (``observed.user_wait_ms``);
* a request whose prompt does not keep the previous one (all but its last
  ``TAIL_REWRITE_BLOCKS`` blocks: a compaction, an edit of history) cannot continue a
  ``previous_response_id`` chain: it starts a new rollout ``<id>-s2``, ... (``meta.continues``);
* a sub-agent is its own rollout ``<id>-<agent_id>`` (``meta.parent_rollout``,
  ``meta.spawned_after_turn``, ``meta.start_offset_ms`` in the session,
  ``meta.start_after_turn_ms`` after that turn's recorded end); the parent's next request waits
  for it as recorded (its ``think_time`` spans the sub-agent's run).

``observed`` per turn: ``input_tokens`` = ``in``, ``output_tokens`` = ``out``,
``cached_tokens`` = the blocks shared with the previous request × ``block_size``,
``e2e_ms`` = ``api_time``, ``ttft_ms`` = ``ttft`` where recorded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.protocol.tokenizer import count_tokens
from harness.traces.converters.common import Where, finish, infer_tools, read_json, show
from harness.traces.converters.token_shape import fresh_text, prompt_words
from harness.traces.format import JSONObject, OutputSpec, Rollout, TraceFormatError, Turn

#: The one tool a recorded ``tool_use`` stop calls (the captures keep no tool names).
CALL_TOOL = "tool_use"


@dataclasses.dataclass(frozen=True)
class Request:
    """One recorded model request, checked."""

    index: int
    t_s: float
    in_tokens: int
    out_tokens: int
    hash_ids: tuple[int, ...]
    input_types: tuple[str, ...]
    output_types: tuple[str, ...]
    stop: str
    api_time_s: float | None
    think_time_s: float | None
    ttft_s: float | None


@dataclasses.dataclass(frozen=True)
class Agent:
    """The requests of one agent (the main one or a sub-agent) and its fixed prefix size."""

    rollout_id: str
    prefix_tokens: int
    requests: tuple[Request, ...]
    spawned: tuple[tuple[int, Mapping[str, Any], Where], ...]  # (after request k, entry, where)


def _number(
    entry: Mapping[str, Any], key: str, w: Where, *, required: bool = False
) -> float | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        missing = " (missing)" if key not in entry else ""
        raise w.error(f"expected a number >= 0, got {show(value)}{missing}", f".{key}")
    return float(value)


def _count(entry: Mapping[str, Any], key: str, w: Where) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        missing = " (missing)" if key not in entry else ""
        raise w.error(f"expected an integer >= 0, got {show(value)}{missing}", f".{key}")
    return value


def _strings(entry: Mapping[str, Any], key: str, w: Where) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise w.error(f"expected a list of strings, got {show(value)}", f".{key}")
    return tuple(value)


def parse_request(
    entry: Mapping[str, Any], index: int, block: int, w: Where, pad_label: str
) -> Request:
    in_tokens = _count(entry, "in", w)
    ids = entry.get("hash_ids")
    if not isinstance(ids, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in ids
    ):
        missing = " (missing)" if "hash_ids" not in entry else ""
        raise w.error(f"expected a list of integers, got {show(ids)}{missing}", ".hash_ids")
    need = math.ceil(in_tokens / block)
    if not need - 1 <= len(ids) <= need:  # the captures often leave the partial last block out
        raise w.error(
            f"{len(ids)} blocks do not cover in={in_tokens} tokens "
            f"(expected {need} or {need - 1} blocks of {block})",
            ".hash_ids",
        )
    if len(ids) < need:  # an id of its own: this request's tail is shared with no other
        ids = [*ids, -1 - int.from_bytes(hashlib.sha256(pad_label.encode()).digest()[:7], "big")]
    return Request(
        index=index,
        t_s=_number(entry, "t", w, required=True) or 0.0,
        in_tokens=in_tokens,
        out_tokens=_count(entry, "out", w),
        hash_ids=tuple(ids),
        input_types=_strings(entry, "input_types", w),
        output_types=_strings(entry, "output_types", w),
        stop=str(entry.get("stop") or ""),
        api_time_s=_number(entry, "api_time", w),
        think_time_s=_number(entry, "think_time", w),
        ttft_s=_number(entry, "ttft", w),
    )


def parse_agent(doc: Mapping[str, Any], rollout_id: str, block: int, w: Where) -> Agent:
    entries = doc.get("requests")
    if not isinstance(entries, list) or not entries:
        missing = " (missing)" if "requests" not in doc else ""
        raise w.error(f"expected a non-empty list, got {show(entries)}{missing}", ".requests")
    requests: list[Request] = []
    spawned: list[tuple[int, Mapping[str, Any], Where]] = []
    for i, entry in enumerate(entries):
        ew = w.at(f".requests[{i}]")
        if not isinstance(entry, Mapping):
            raise ew.error(f"expected an object, got {show(entry)}")
        if entry.get("type") == "subagent":
            spawned.append((len(requests) - 1, entry, ew))
        else:
            requests.append(parse_request(entry, i, block, ew, f"{rollout_id}:{i}"))
    if not requests:
        raise w.error("no model request (only sub-agent entries)", ".requests")
    prefix = _count_or_zero(doc, "system_tokens", w) + _count_or_zero(doc, "tool_tokens", w)
    return Agent(rollout_id, prefix, tuple(requests), tuple(spawned))


def _count_or_zero(doc: Mapping[str, Any], key: str, w: Where) -> int:
    return _count(doc, key, w) if key in doc else 0


def shared_blocks(a: Request, b: Request) -> int:
    """Leading blocks ``b`` shares with ``a``."""
    k = 0
    for x, y in zip(a.hash_ids, b.hash_ids, strict=False):
        if x != y:
            break
        k += 1
    return k


#: Blocks at the end of a prompt the next request may rewrite and still continue the chain
#: (Claude drops the previous turn's thinking and moves its cache marker there).
TAIL_REWRITE_BLOCKS = 4


def extends(a: Request, b: Request, block: int) -> bool:
    """Does ``b``'s prompt keep ``a``'s (all but a rewritten tail), so a chain can continue?"""
    full = a.in_tokens // block
    kept = shared_blocks(a, b)
    return (
        kept >= full - TAIL_REWRITE_BLOCKS
        and b.in_tokens >= a.in_tokens - TAIL_REWRITE_BLOCKS * block
    )


@dataclasses.dataclass(frozen=True)
class Shape:
    scope: str
    block: int

    def span(self, r: Request, start: int, end: int) -> str:
        """Text of tokens ``[start, end)`` of ``r``'s prompt."""
        if end <= start:
            return ""
        first = start // self.block
        words = prompt_words(self.scope, r.hash_ids[first:], end - first * self.block, self.block)
        return "".join(words[start - first * self.block :])


def _user(text: str) -> JSONObject:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _outputs(shape: Shape, r: Request, nxt: Request | None, call_id: str) -> list[OutputSpec]:
    """Request ``r``'s output: visible text from the next prompt, the rest hidden reasoning."""
    visible = (
        r.out_tokens if nxt is None else max(0, min(r.out_tokens, nxt.in_tokens - r.in_tokens))
    )
    if nxt is None:
        text = fresh_text(shape.scope, f"out:{call_id}", visible)
    else:
        text = shape.span(nxt, r.in_tokens, r.in_tokens + visible)
    outputs: list[OutputSpec] = []
    if r.out_tokens > visible:
        outputs.append(OutputSpec.reasoning("", r.out_tokens - visible))
    if r.stop != "tool_use" and "tool_use" not in r.output_types:
        return [*outputs, OutputSpec.message(text, tokens=visible)]
    cut = text.find(" ", len(text) // 2) if "text" in r.output_types else -1
    if cut > 0:
        outputs.append(OutputSpec.message(text[:cut], tokens=count_tokens(text[:cut])))
    rest = text[max(cut, 0) :]
    arguments = json.dumps({"input": rest})
    spec = OutputSpec.function_call(CALL_TOOL, arguments, call_id, tokens=count_tokens(rest))
    return [*outputs, spec]


def _think_ms(prev: Request, r: Request) -> float:
    if r.think_time_s is not None:
        return r.think_time_s * 1000.0
    return max(0.0, r.t_s - prev.t_s - (prev.api_time_s or 0.0)) * 1000.0


def _observed(r: Request, prev: Request | None, block: int) -> JSONObject:
    observed: JSONObject = {
        "input_tokens": r.in_tokens,
        "output_tokens": r.out_tokens,
        "cached_tokens": min(r.in_tokens, shared_blocks(prev, r) * block) if prev else 0,
    }
    if r.api_time_s is not None:
        observed["e2e_ms"] = round(r.api_time_s * 1000.0, 1)
    if r.ttft_s is not None:
        observed["ttft_ms"] = round(r.ttft_s * 1000.0, 1)
    return observed


def _next_input(
    shape: Shape, r: Request, nxt: Request, called: str | None, visible_end: int
) -> tuple[list[JSONObject], float, float]:
    """(new input items of ``nxt``, its tool wait ms, its user wait ms)."""
    rest = shape.span(nxt, visible_end, nxt.in_tokens)
    think = _think_ms(r, nxt)
    if called is None:
        return [_user(rest)], 0.0, think
    if "tool_result" in nxt.input_types:
        return [{"type": "function_call_output", "call_id": called, "output": rest}], think, 0.0
    aborted = {"type": "function_call_output", "call_id": called, "output": "aborted"}
    return [aborted, _user(rest)], 0.0, think


def segment_turns(
    shape: Shape, segment: Sequence[Request], prefix: int, prev: Request | None
) -> tuple[str, list[Turn]]:
    """(instructions, turns) of one chain of requests, each extending the one before."""
    first = segment[0]
    split = min(prefix, first.in_tokens)
    inputs: list[JSONObject] = [_user(shape.span(first, split, first.in_tokens))]
    tool_wait, user_wait = 0.0, None
    turns: list[Turn] = []
    for j, r in enumerate(segment):
        nxt = segment[j + 1] if j + 1 < len(segment) else None
        call_id = f"call_{r.index:04d}"
        outputs = _outputs(shape, r, nxt, call_id)
        observed = _observed(r, prev, shape.block)
        if user_wait:
            observed["user_wait_ms"] = round(user_wait, 1)
        turns.append(
            Turn(
                index=j,
                input=tuple(inputs),
                output=tuple(outputs),
                tool_wait_ms=round(tool_wait, 1),
                observed=observed,
            )
        )
        if nxt is not None:
            called = call_id if outputs[-1].type == "function_call" else None
            visible = r.out_tokens - sum(o.tokens for o in outputs if o.type == "reasoning")
            inputs, tool_wait, user_wait = _next_input(shape, r, nxt, called, r.in_tokens + visible)
        prev = r
    return shape.span(first, 0, split), turns


def _segments(agent: Agent, block: int) -> list[list[Request]]:
    segments: list[list[Request]] = [[agent.requests[0]]]
    for a, b in zip(agent.requests, agent.requests[1:], strict=False):
        if extends(a, b, block):
            segments[-1].append(b)
        else:
            segments.append([b])
    return segments


def _tool() -> JSONObject:
    return {
        "type": "function",
        "name": CALL_TOOL,
        "description": "A recorded tool call (kv-cache-tester captures keep no tool names).",
        "parameters": {"type": "object"},
    }


def agent_rollouts(
    agent: Agent,
    shape: Shape,
    model: str,
    meta: JSONObject,
    label: str,
    *,
    source: str = "kvcache",
    tools: Sequence[JSONObject] | None = None,
) -> list[Rollout]:
    """The rollouts of one agent (one per chain segment), then its sub-agents'. Other token-shape
    sources (Mooncake) reuse it with their own ``source`` and declared ``tools``."""
    rollouts: list[Rollout] = []
    turn_of: dict[int, tuple[str, int]] = {}  # request index -> (rollout id, turn index)
    prev: Request | None = None
    for n, segment in enumerate(_segments(agent, shape.block)):
        rid = agent.rollout_id if n == 0 else f"{agent.rollout_id}-s{n + 1}"
        instructions, turns = segment_turns(shape, segment, agent.prefix_tokens, prev)
        seg_meta = {**meta, "first_request": segment[0].index}
        if n:
            seg_meta["continues"] = rollouts[-1].id
            seg_meta["start_offset_ms"] = round(segment[0].t_s * 1000.0, 1)
        rollouts.append(
            finish(
                Rollout(
                    id=rid,
                    source=source,
                    agent_kind="unknown",
                    model=model,
                    instructions=instructions or None,
                    tools=infer_tools(turns, [_tool()] if tools is None else tools),
                    seed=None,
                    meta=seg_meta,
                    turns=tuple(turns),
                ),
                label,
            )
        )
        turn_of.update({r.index: (rid, j) for j, r in enumerate(segment)})
        prev = segment[-1]
    for after, entry, where in agent.spawned:
        rollouts += _subagent(agent, entry, where, turn_of, shape, model, meta, label, after)
    return rollouts


def _subagent(
    parent: Agent,
    entry: Mapping[str, Any],
    where: Where,
    turn_of: Mapping[int, tuple[str, int]],
    shape: Shape,
    model: str,
    meta: JSONObject,
    label: str,
    after: int,
) -> list[Rollout]:
    name = str(entry.get("agent_id") or f"agent{where.field}")
    child = parse_agent(entry, f"{parent.rollout_id}-{name}", shape.block, where)
    spawner = parent.requests[max(after, 0)].index
    parent_id, turn = turn_of.get(spawner, (parent.rollout_id, 0))
    start_s = _number(entry, "t", where) or 0.0
    spawner_end_s = parent.requests[max(after, 0)].t_s + (
        parent.requests[max(after, 0)].api_time_s or 0.0
    )
    models = entry.get("models")
    child_model = (
        models[0] if isinstance(models, list) and models and isinstance(models[0], str) else model
    )
    child_meta: JSONObject = {
        **meta,
        "parent_rollout": parent_id,
        "spawned_after_turn": turn,
        "start_offset_ms": round(start_s * 1000.0, 1),
        # after the end of the parent's turn (its t + api_time): what a replay waits to start it
        "start_after_turn_ms": round(max(0.0, start_s - spawner_end_s) * 1000.0, 1),
    }
    for key in ("subagent_type", "duration_ms", "status"):
        if entry.get(key) is not None:
            child_meta[key] = entry[key]
    return agent_rollouts(child, shape, child_model, child_meta, label)


def convert_kvcache(
    path: str | os.PathLike[str], *, rollout_id: str | None = None, agent_kind: str = "unknown"
) -> list[Rollout]:
    """Convert one kv-cache-tester trace file: the main agent's rollouts, then sub-agents'."""
    p = Path(path)
    label = str(p)
    doc = read_json(p)
    top = Where(label, None, "")
    if not isinstance(doc, Mapping):
        raise TraceFormatError(f"expected a trace object, got {show(doc)}", path=label)
    block = _count(doc, "block_size", top) if "block_size" in doc else 64
    if block < 1:
        raise top.error(f"expected an integer >= 1, got {block}", "block_size")
    trace_id = str(doc.get("id") or p.stem)
    scope = "global" if doc.get("hash_id_scope") == "global" else trace_id
    agent = parse_agent(doc, rollout_id or f"kvcache-{trace_id}", block, top)
    models = doc.get("models")
    model = (
        models[0]
        if isinstance(models, list) and models and isinstance(models[0], str)
        else "unknown"
    )
    meta: JSONObject = {
        "converter": "harness.traces.converters.kvcache",
        "converted_from": p.name,
        "timing": "recorded: think_time (tool/user wait), api_time (e2e), ttft where present",
        "text": "synthesized from hash_ids (token_shape)",
        "block_size": block,
    }
    rollouts = agent_rollouts(agent, Shape(scope, block), model, meta, label)
    return [dataclasses.replace(r, agent_kind=agent_kind) for r in rollouts]
