"""What ``wsmode traces convert`` does besides parsing arguments: find the input files of a
source, convert them, and say what was kept."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from harness.traces.converters import (
    convert_chat,
    convert_claude_code,
    convert_codex,
    convert_gemini_cli,
    convert_kvcache,
    convert_mooncake,
    convert_openhands,
    convert_swe_agent,
    convert_tau_bench,
    iter_claude_sessions,
)
from harness.traces.converters.common import ABORTED_OUTPUT
from harness.traces.converters.mooncake import MOONCAKE_BLOCK_TOKENS
from harness.traces.converters.tracelab import convert_tracelab
from harness.traces.format import Rollout, TraceFormatError


@dataclasses.dataclass(frozen=True)
class ConvertOptions:
    """What the command line passes to every converter (each uses what applies to it)."""

    agent_kind: str = "unknown"
    min_turns: int = 1
    block_size: int = MOONCAKE_BLOCK_TOKENS


Converter = Callable[[Path, ConvertOptions], list[Rollout]]

#: Per source: the file pattern searched in a directory, and the converter of one file.
_SOURCES: dict[str, tuple[str, Converter]] = {
    "codex": ("rollout-*.jsonl", lambda p, o: [convert_codex(p, agent_kind=o.agent_kind)]),
    "chat": ("*.json", lambda p, o: [convert_chat(p, agent_kind=o.agent_kind)]),
    "swe-agent": ("*.traj", lambda p, o: [convert_swe_agent(p, agent_kind=o.agent_kind)]),
    "openhands": ("*.json", lambda p, o: [convert_openhands(p, agent_kind=o.agent_kind)]),
    "kvcache": ("*.json", lambda p, o: convert_kvcache(p, agent_kind=o.agent_kind)),
    "claude-code": ("*.jsonl", lambda p, o: convert_claude_code(p, agent_kind=o.agent_kind)),
    "mooncake": (
        "*.jsonl",
        lambda p, o: convert_mooncake(
            p, agent_kind=o.agent_kind, min_turns=o.min_turns, block_size=o.block_size
        ),
    ),
    "gemini-cli": ("session-*.json", lambda p, o: [convert_gemini_cli(p, agent_kind=o.agent_kind)]),
    "tracelab": ("*.jsonl*", lambda p, o: convert_tracelab(p, agent_kind=o.agent_kind)),
    "tau-bench": ("*.json", lambda p, o: convert_tau_bench(p, agent_kind=o.agent_kind)),
}
SOURCES = tuple(_SOURCES)


def _found(source: str, directory: Path) -> Iterator[Path]:
    if source == "claude-code":  # sub-agent transcripts convert with their session
        yield from iter_claude_sessions(directory)
        return
    yield from sorted(p for p in directory.rglob(_SOURCES[source][0]) if p.is_file())


def input_files(source: str, path: Path) -> list[Path]:
    """``path`` itself, or the source's files under the directory ``path`` (none: an error)."""
    pattern = _SOURCES[source][0]
    if not path.exists():
        raise TraceFormatError("no such file or directory", path=path)
    if not path.is_dir():
        return [path]
    files = list(_found(source, path))
    if not files:
        raise TraceFormatError(f"no {source} files ({pattern}) in this directory", path=path)
    return files


def convert_inputs(
    source: str,
    paths: Sequence[Path],
    options: ConvertOptions | str = ConvertOptions(),
    problems: list[TraceFormatError] | None = None,
) -> list[Rollout]:
    """Every input's rollouts, those of fewer than ``min_turns`` turns left out. With
    ``problems``, a file found in a directory that cannot be converted is added there and the
    rest converted (one bad file never aborts a folder); a file named itself still raises."""
    if isinstance(options, str):  # the agent kind alone
        options = ConvertOptions(agent_kind=options)
    convert = _SOURCES[source][1]
    rollouts: list[Rollout] = []
    for path in paths:
        for file in input_files(source, path):
            try:
                refuse_unsupported(file)
                converted = convert(file, options)
            except TraceFormatError as exc:
                if problems is None or not path.is_dir():
                    raise
                problems.append(exc)
                continue
            rollouts += [r for r in converted if len(r.turns) >= options.min_turns]
    if not rollouts:
        raise TraceFormatError(f"no rollout has at least {options.min_turns} turns (--min-turns)")
    seen: set[str] = set()
    for r in rollouts:
        if r.id in seen:
            raise TraceFormatError(f"two inputs convert to the rollout id {r.id!r}", field="id")
        seen.add(r.id)
    return rollouts


def refuse_unsupported(path: Path) -> None:
    """A format no converter reads, named as such rather than misread as another."""
    if path.name.endswith(".aider.chat.history.md") or _has_line(path, b"# aider chat started at"):
        raise TraceFormatError(
            "aider's chat history (.aider.chat.history.md) is not supported: it is the chat as "
            "aider printed it (Markdown), without the model requests, tool calls or timings a "
            "rollout needs",
            path=path,
        )


def _has_line(path: Path, start: bytes, within_bytes: int = 65_536) -> bool:
    """Whether a line in the file's first `within_bytes` begins with `start`."""
    try:
        with path.open("rb") as f:
            head = b"\n" + f.read(within_bytes)
    except OSError:
        return False
    return b"\n" + start in head


def summary_line(rollouts: Sequence[Rollout]) -> str:
    """Rollouts, turns, tool calls and linked outputs, and the timings kept."""
    turns = [t for r in rollouts for t in r.turns]
    calls = sum(len(t.function_calls) for t in turns)
    linked = sum(
        1
        for t in turns
        for x in t.input
        if x.get("type") == "function_call_output" and x.get("output") != ABORTED_OUTPUT
    )
    timed = sum(1 for t in turns if "ttft_ms" in t.observed or "e2e_ms" in t.observed)
    subagents = sum(1 for r in rollouts if "parent_rollout" in r.meta)
    text = (
        f"{len(rollouts)} rollouts, {len(turns)} turns, {calls} tool calls, "
        f"{linked} linked to their outputs, {timed} turns with recorded timings"
    )
    return text + (f", {subagents} sub-agent rollouts" if subagents else "")
