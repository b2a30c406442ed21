"""What ``wsmode traces convert`` does besides parsing arguments: find the input files of a
source, convert them, and say what was kept."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from harness.traces.convert import (
    convert_chat,
    convert_codex,
    convert_kvcache,
    convert_openhands,
    convert_swe_agent,
)
from harness.traces.format import Rollout, TraceFormatError

#: Per source: the file pattern searched in a directory, and the converter of one file.
_SOURCES: dict[str, tuple[str, Callable[[Path, str], list[Rollout]]]] = {
    "codex": ("rollout-*.jsonl", lambda p, k: [convert_codex(p, agent_kind=k)]),
    "chat": ("*.json", lambda p, k: [convert_chat(p, agent_kind=k)]),
    "swe-agent": ("*.traj", lambda p, k: [convert_swe_agent(p, agent_kind=k)]),
    "openhands": ("*.json", lambda p, k: [convert_openhands(p, agent_kind=k)]),
    "kvcache": ("*.json", lambda p, k: convert_kvcache(p, agent_kind=k)),
}


def input_files(source: str, path: Path) -> list[Path]:
    """``path`` itself, or the source's files under the directory ``path`` (none: an error)."""
    pattern = _SOURCES[source][0]
    if not path.exists():
        raise TraceFormatError("no such file or directory", path=path)
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.rglob(pattern) if p.is_file())
    if not files:
        raise TraceFormatError(f"no {source} files ({pattern}) in this directory", path=path)
    return files


def convert_inputs(source: str, paths: Sequence[Path], agent_kind: str) -> list[Rollout]:
    convert = _SOURCES[source][1]
    rollouts: list[Rollout] = []
    for path in paths:
        for file in input_files(source, path):
            rollouts += convert(file, agent_kind)
    seen: set[str] = set()
    for r in rollouts:
        if r.id in seen:
            raise TraceFormatError(f"two inputs convert to the rollout id {r.id!r}", field="id")
        seen.add(r.id)
    return rollouts


def summary_line(rollouts: Sequence[Rollout]) -> str:
    """Rollouts, turns, tool calls and linked outputs, and the timings kept."""
    turns = [t for r in rollouts for t in r.turns]
    calls = sum(len(t.function_calls) for t in turns)
    linked = sum(
        1
        for t in turns
        for x in t.input
        if x.get("type") == "function_call_output" and x.get("output") != "aborted"
    )
    timed = sum(1 for t in turns if "ttft_ms" in t.observed or "e2e_ms" in t.observed)
    subagents = sum(1 for r in rollouts if "parent_rollout" in r.meta)
    text = (
        f"{len(rollouts)} rollouts, {len(turns)} turns, {calls} tool calls, "
        f"{linked} linked to their outputs, {timed} turns with recorded timings"
    )
    return text + (f", {subagents} sub-agent rollouts" if subagents else "")
