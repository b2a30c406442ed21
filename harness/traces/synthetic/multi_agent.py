"""Multi-agent rollouts (trace format version 2, PROTOCOL.md §2.2) made from ordinary ones.

`to_multi_agent` keeps a rollout's work and recorded times but runs it the multi-agent way: one
response per user request, whose client-owned function calls are answered in flight by
`response.inject` instead of by the next create. The turns from one user message to the next
become one turn: their outputs in order, and each run of consecutive calls answered by an
inject carrying the recorded outputs after the recorded tool time. The k-th run of calls is
made by `agents[k % len(agents)]` (the root agent first, then its workers); messages and
reasoning are the root's. Calls left unanswered at the end of the rollout get `"ok"`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from harness.traces.format.rollout import Inject, JSONObject, OutputSpec, Rollout, Turn

__all__ = ["DEFAULT_AGENTS", "to_multi_agent"]

DEFAULT_AGENTS = ("root", "worker-1")


def _is_answer(item: JSONObject) -> bool:
    return item.get("type") == "function_call_output"


def _runs(output: Sequence[OutputSpec]) -> list[list[str]]:
    """The call ids of each run of consecutive function calls, in order."""
    runs: list[list[str]] = []
    follows_call = False
    for spec in output:
        if spec.type == "function_call":
            if not follows_call:
                runs.append([])
            runs[-1].append(spec.call_id)
        follows_call = spec.type == "function_call"
    return runs


def _injects(
    runs: list[list[str]], answers: Sequence[JSONObject], tool_wait_ms: float
) -> list[Inject]:
    """The recorded answers to `runs`, one inject per run (each after the recorded tool time)."""
    by_call = {str(item.get("call_id")): item for item in answers}
    injects = []
    for run in runs:
        items = tuple(
            by_call.get(
                call_id, {"type": "function_call_output", "call_id": call_id, "output": "ok"}
            )
            for call_id in run
        )
        injects.append(Inject(input=items, tool_wait_ms=tool_wait_ms))
    return injects


def to_multi_agent(
    rollout: Rollout,
    *,
    agents: Sequence[str] = DEFAULT_AGENTS,
    max_concurrent_subagents: int | None = None,
    rollout_id: str | None = None,
) -> Rollout:
    """`rollout` as a version-2 multi-agent rollout (see the module doc)."""
    if not agents:
        raise ValueError("agents: name at least the root agent")
    groups: list[list[Turn]] = []
    for turn in rollout.turns:
        if not groups or any(not _is_answer(item) for item in turn.input):
            groups.append([])
        groups[-1].append(turn)
    turns: list[Turn] = []
    for index, group in enumerate(groups):
        following = groups[index + 1][0] if index + 1 < len(groups) else None
        output: list[OutputSpec] = []
        injects: list[Inject] = []
        run_count = 0
        for position, turn in enumerate(group):
            specs, run_count = _tagged(turn.output, agents, run_count)
            output.extend(specs)
            answered_by = group[position + 1] if position + 1 < len(group) else following
            answers = [i for i in answered_by.input if _is_answer(i)] if answered_by else []
            wait = answered_by.tool_wait_ms if answered_by is not None else 0.0
            injects.extend(_injects(_runs(turn.output), answers, wait))
        first = group[0]
        turns.append(
            Turn(
                index=index,
                input=tuple(item for item in first.input if not _is_answer(item)),
                output=tuple(output),
                tool_wait_ms=first.tool_wait_ms if index == 0 else 0.0,
                observed={},
                injects=tuple(injects),
            )
        )
    multi_agent: dict[str, Any] = {"enabled": True}
    if max_concurrent_subagents is not None:
        multi_agent["max_concurrent_subagents"] = max_concurrent_subagents
    return replace(
        rollout,
        id=rollout_id or f"{rollout.id}-multi-agent",
        turns=tuple(turns),
        multi_agent=multi_agent,
        meta={**rollout.meta, "multi_agent_from": rollout.id, "agents": list(agents)},
    )


def _tagged(
    output: Sequence[OutputSpec], agents: Sequence[str], run_count: int
) -> tuple[list[OutputSpec], int]:
    """The turn's outputs with their agents; the number of call runs seen so far after them."""
    tagged = []
    follows_call = False
    for spec in output:
        if spec.type == "function_call":
            if not follows_call:
                run_count += 1
            agent = agents[(run_count - 1) % len(agents)]
        else:
            agent = agents[0]
        follows_call = spec.type == "function_call"
        tagged.append(replace(spec, agent=agent))
    return tagged, run_count
