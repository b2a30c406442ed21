"""TraceLab normalized round rows: TraceLab's own sanitized example sessions (stored unedited in
tests/data/tracelab), gzip, the token split, tool waits from the effective latency, compactions,
sub-agents linked where the rows say so, input errors, the CLI and a replay."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as wsmode
from harness.load.core.replay_options import ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.protocol.items import item_text
from harness.protocol.tokenizer import count_tokens
from harness.traces.converters.tracelab import MICRO_REDUCTION_TOKENS, convert_tracelab
from harness.traces.format import Rollout, TraceFormatError, load_traces
from reference_server.app import ReferenceServer
from tests.load.replay_support import endpoint, reference_server, run

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "data" / "tracelab" / "sanitized" / "round_trace.jsonl"
)
CLAUDE = "claude:92ee5b8a-429c-e80b-5db6-5381512f4697"


def rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]


def write(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def converted() -> tuple[Rollout, Rollout]:
    claude, codex = convert_tracelab(EXAMPLE)
    return claude, codex


def test_each_example_session_becomes_a_rollout_with_its_calls() -> None:
    claude, codex = converted()
    assert (claude.id, claude.source, claude.model, len(claude.turns)) == (
        "tracelab-claude-92ee5b8a-429c-e80b-5db6-5381512f4697",
        "tracelab",
        "claude-opus-4-8",
        10,
    )
    assert (codex.model, len(codex.turns)) == ("gpt-5.4", 9)
    assert [len(t.function_calls) for t in claude.turns] == [2, 1, 1, 1, 0, 1, 1, 1, 1, 0]
    assert [len(t.function_calls) for t in codex.turns] == [3, 1, 1, 2, 0, 2, 0, 1, 0]
    assert claude.turns[0].call_ids == (
        "toolu_2a5ccaf03cb1cdbd5fe2bf",
        "toolu_fa282ca228ccfde5098ce6",
    )
    assert [c.name for c in claude.turns[0].function_calls] == ["Bash", "WebSearch"]
    # each call is answered by the next turn's input; a user message opens turns 5 (Claude) and
    # 5 and 7 (Codex), as their user_message events say
    assert claude.turns[1].answered_call_ids == claude.turns[0].call_ids
    firsts = [t.input[-1]["type"] for t in codex.turns]
    assert [i for i, kind in enumerate(firsts) if kind == "message"] == [0, 5, 7]
    assert claude.tool_names == ("Bash", "WebSearch", "Write", "WebFetch")


def test_the_prompt_is_the_recorded_prefix_plus_append_token_for_token() -> None:
    rows_by_round = [r for r in rows() if r["session_id"] == CLAUDE]
    claude, _ = converted()
    assert count_tokens(claude.instructions or "") == rows_by_round[0]["prefix_tokens"] == 27217
    context = count_tokens(claude.instructions or "")
    for turn, row in zip(claude.turns, rows_by_round, strict=True):
        context += sum(count_tokens(item_text(i)) for i in turn.input)
        # every prompt of this session grew: the replayed prompt is the recorded one
        assert context == row["input_tokens_total"] == turn.observed["input_tokens"]
        assert turn.observed["cached_tokens"] == row["prefix_tokens"]
        assert turn.output_tokens <= row["output_tokens"] == turn.observed["output_tokens"]
        context += sum(o.tokens for o in turn.output if o.type != "reasoning")
    # Claude's thinking does not come back in the next prompt: it is hidden reasoning there
    assert claude.turns[0].output_tokens == 931 and claude.turns[1].output_tokens == 1016


def test_codex_reasoning_tokens_are_hidden_reasoning() -> None:
    _, codex = converted()
    first = codex.turns[0]
    assert first.output[0].type == "reasoning" and first.output[0].tokens == 199
    assert first.observed["reasoning_tokens"] == 199 and first.output_tokens == 444


def test_tool_waits_are_the_union_of_the_calls_effective_latencies() -> None:
    claude, codex = converted()
    # Bash 860 ms (wall, no runner figure) from 05:40:30.836, WebSearch 19,287 ms (internal)
    # from 05:40:31.647: they overlap, the agent waited 30.836 -> 50.934
    assert claude.turns[1].tool_wait_ms == 20098.0
    # three parallel exec_command: runner-reported 0, 0 (seen taking 67 and 79 ms: the wall
    # time) and 1,002 ms, emitted at 5.480, 5.527, 5.528 -> 5.480 .. 6.530
    assert codex.turns[1].tool_wait_ms == 1050.0
    assert codex.turns[3].tool_wait_ms == 8.0  # internal null: the wall time
    assert [t.tool_wait_ms for t in claude.turns if t.input[-1]["type"] == "message"] == [0.0, 0.0]
    assert claude.turns[5].observed["user_wait_ms"] == 19913.0  # 05:42:23.420 -> 05:42:43.333


def test_gzip_converts_the_same(tmp_path: Path) -> None:
    packed = tmp_path / "round_trace.jsonl.gz"
    packed.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    plain, zipped = convert_tracelab(EXAMPLE), convert_tracelab(packed)
    assert [r.meta["converted_from"] for r in zipped] == ["round_trace.jsonl.gz"] * 2
    assert [r.to_lines()[1:] for r in zipped] == [r.to_lines()[1:] for r in plain]
    assert [r.instructions for r in zipped] == [r.instructions for r in plain]


def test_a_compaction_starts_a_new_chain(tmp_path: Path) -> None:
    entries = [r for r in rows() if r["session_id"] == CLAUDE][:4]
    shrunk = entries[3]
    shrunk.update(input_tokens_total=9000, prefix_tokens=0, newly_append_tokens=9000)
    (first, second) = convert_tracelab(write(tmp_path / "t.jsonl", entries))
    assert (len(first.turns), len(second.turns)) == (3, 1)
    assert second.id == first.id + "-s2" and second.meta["continues"] == first.id
    # the new chain keeps what its 9,000-token prompt holds of the system prompt (a prefix)
    restart = count_tokens(item_text(second.turns[0].input[-1]))
    assert count_tokens(second.instructions or "") + restart == 9000
    assert (first.instructions or "").startswith(second.instructions or "-")
    # a drop within the jitter bound continues the chain
    entries[3].update(input_tokens_total=41131 - MICRO_REDUCTION_TOKENS)
    entries[3].update(newly_append_tokens=41131 - MICRO_REDUCTION_TOKENS)
    assert len(convert_tracelab(write(tmp_path / "u.jsonl", entries))) == 1


def test_a_subagent_links_to_the_spawning_call(tmp_path: Path) -> None:
    entries = [r for r in rows() if r["session_id"] == CLAUDE]
    entries[2]["tools"][0]["tool_name"] = "Task"  # the Write call of round 2, as a spawn
    child = [dict(r, session_id=CLAUDE + "/subagents/agent-a1") for r in entries[5:]]
    for n, r in enumerate(child):
        r["round_index"] = n
    parent, sub = convert_tracelab(write(tmp_path / "t.jsonl", entries + child))
    assert sub.id == "tracelab-claude-92ee5b8a-429c-e80b-5db6-5381512f4697-subagents-agent-a1"
    assert sub.meta["parent_rollout"] == parent.id and sub.meta["spawned_after_turn"] == 2
    assert sub.meta["spawn_call_id"] == "toolu_5abceaef8ee4c1cf2e8cda"
    assert sub.meta["start_after_turn_ms"] == 59318.0  # 05:41:44.015 -> 05:42:43.333
    assert sub.meta["link"] == "session id <parent>/subagents/<agent>"
    # a parent_session_id field links the same way; a parent not in the file is said so
    other = [dict(r, session_id="codex:x", parent_session_id="codex:absent") for r in entries[:2]]
    (lone,) = convert_tracelab(write(tmp_path / "u.jsonl", other))
    assert "not in this file" in lone.meta["link"] and "parent_rollout" not in lone.meta


BAD = [
    ({"session_id": None}, "session_id: expected a non-empty string, got null"),
    ({"prefix_tokens": 1}, "input_tokens_total 32272 is not prefix_tokens 1 + newly_append"),
    ({"output_tokens": -1}, "output_tokens: expected an integer >= 0, got -1"),
    ({"tools": {"a": 1}}, "tools: expected a list of objects"),
    ({"round_index": "0"}, 'round_index: expected an integer >= 0, got "0"'),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_rows_say_which_field(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    entry = rows()[0]
    entry.update(change)
    path = write(tmp_path / "bad.jsonl", [rows()[1], entry])
    with pytest.raises(TraceFormatError) as caught:
        convert_tracelab(path)
    assert f"{path}:2:" in str(caught.value) and message in str(caught.value)


def test_broken_files_are_one_clear_error(tmp_path: Path) -> None:
    cases = {
        "empty.jsonl": b"\n",
        "notgzip.jsonl.gz": b"plain text",
        "cut.jsonl.gz": gzip.compress(EXAMPLE.read_bytes())[:200],
        "broken.jsonl": b'{"provider": ',
        "twice.jsonl": (EXAMPLE.read_text().splitlines()[0] + "\n").encode() * 2,
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(TraceFormatError) as caught:
            convert_tracelab(tmp_path / name)
        assert str(tmp_path / name) in str(caught.value), name
    with pytest.raises(TraceFormatError, match="round_index 0 appears twice"):
        convert_tracelab(tmp_path / "twice.jsonl")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    with reference_server(tmp_path_factory.mktemp("server")) as s:
        yield s


def test_the_cli_converts_and_the_rollouts_replay(
    tmp_path: Path, server: ReferenceServer, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tracelab.jsonl"
    assert wsmode(["traces", "convert", "--from", "tracelab", str(EXAMPLE), "--out", str(out)]) == 0
    assert "2 rollouts, 19 turns, 19 tool calls, 19 linked" in capsys.readouterr().out
    for rollout in load_traces(out):
        result = run(
            replay_rollout(rollout, endpoint(server), ReplayOptions(mode="ws", max_turns=4))
        )
        assert result.ok, result.error
        assert len(result.turns) == 4 and all(t.ok for t in result.turns)
