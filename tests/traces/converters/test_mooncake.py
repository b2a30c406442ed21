"""Mooncake-style traces: the head of Mooncake's FAST'25 conversation trace (as LMCache ships it)
and a later 1,000-request slice (as hiverge/dynamo ships it), sessions inferred from prefix
chains or given by id, the arrival schedule, input errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.protocol.tokenizer import tokenize
from harness.traces.converters.common import read_jsonl
from harness.traces.converters.mooncake import convert_mooncake, infer_sessions, parse_line
from harness.traces.format import Rollout, TraceFormatError

SAMPLE = Path(__file__).resolve().parent / "samples" / "mooncake" / "sample_trace.jsonl"
DYNAMO = SAMPLE.with_name("mooncake_trace.jsonl")


def requests(path: Path, block: int = 512):  # type: ignore[no-untyped-def]
    return [
        parse_line(entry, lineno, i, block, str(path)).request
        for i, (lineno, entry) in enumerate(read_jsonl(path))
    ]


def test_sessions_are_inferred_from_prefix_chains_in_the_real_trace() -> None:
    sessions = infer_sessions(requests(SAMPLE))
    assert (len(sessions), sum(map(len, sessions))) == (193, 200)
    chains = [s for s in sessions if len(s) > 1]
    # each continuation keeps all blocks of its predecessor but the last (partial) one
    assert [(s[0].index, s[1].index) for s in chains] == [
        (1, 137), (10, 134), (30, 191), (41, 180), (44, 177), (64, 166), (66, 133),
    ]  # fmt: skip


def test_the_chains_become_rollouts_with_the_recorded_reuse_and_arrivals() -> None:
    rollouts = convert_mooncake(SAMPLE, min_turns=2)
    assert (len(rollouts), sum(len(r.turns) for r in rollouts)) == (7, 14)
    first = rollouts[0]
    assert first.id == "mooncake-sample_trace-002" and first.source == "mooncake"
    assert first.meta["sessions"] == "inferred from prefix chains"
    assert first.meta["start_offset_ms"] == 0.0
    second = first.turns[1]
    assert second.observed["arrival_ms"] == 48000.0 and second.observed["user_wait_ms"] == 48000.0
    # 7322 -> 7833 tokens sharing 14 blocks: what the service could reuse
    assert (second.observed["input_tokens"], second.observed["cached_tokens"]) == (7833, 14 * 512)
    assert not first.tools and all(not t.function_calls for t in first.turns)


def test_prompts_share_exactly_the_blocks_they_share_in_the_trace() -> None:
    a, b = convert_mooncake(SAMPLE, min_turns=2)[:2]
    first_a = tokenize(a.turns[0].input[0]["content"][0]["text"])
    first_b = tokenize(b.turns[0].input[0]["content"][0]["text"])
    assert len(first_a) == 7322 and len(first_b) == 13544
    # both start with block 0 (the service's shared system prompt), then differ
    shared = next(i for i, (x, y) in enumerate(zip(first_a, first_b, strict=False)) if x != y)
    assert 512 <= shared <= 513


Row = dict[str, Any]
KEYS = ("arrival_ms", "input_tokens", "output_tokens")


def _shared_blocks(a: list[int], b: list[int]) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


@pytest.fixture(scope="module")
def dynamo() -> tuple[list[Row], list[Rollout]]:
    """The second real trace's lines, read as plain JSON, and what the converter makes of them
    (once: synthesizing 1,000 prompts is the slow part)."""
    rows = [json.loads(line) for line in DYNAMO.read_text().splitlines()]
    return rows, convert_mooncake(DYNAMO)


def test_the_second_real_trace_keeps_every_request_and_its_recorded_reuse(
    dynamo: tuple[list[Row], list[Rollout]],
) -> None:
    rows, rollouts = dynamo
    # what the file holds, read without the converter: 1,000 requests under four prefix roots
    # (block 0 and the 12-block prompt 46..57 are system prompts), 736 blocks used more than once
    assert len(rows) == 1000
    assert Counter(r["hash_ids"][0] for r in rows) == {0: 452, 46: 397, 74: 150, 26783: 1}
    uses = Counter(h for r in rows for h in set(r["hash_ids"]))
    assert sum(n > 1 for n in uses.values()) == 736
    turns = [t for r in rollouts for t in r.turns]
    # every request is one turn, with its own arrival and sizes (timestamps are milliseconds)
    seen = Counter((t.observed["arrival_ms"], t.observed["input_tokens"]) for t in turns)
    assert seen == Counter((float(r["timestamp"]), r["input_length"]) for r in rows)
    assert (len(rollouts), sum(len(r.turns) > 1 for r in rollouts)) == (722, 200)
    # each continuation reuses exactly the blocks its request shares with the previous turn's,
    # at least two of them and all of the previous request's but its (partial) last one
    # (arrival and sizes name one line, but for two 74..78 lines that both start a session)
    row_of: dict[tuple[float, int, int], Row] = {}
    for r in rows:
        row_of.setdefault((float(r["timestamp"]), r["input_length"], r["output_length"]), r)
    links = 0
    for rollout in rollouts:
        keys = [tuple(t.observed[k] for k in KEYS) for t in rollout.turns]
        chain = [row_of[(float(at), int(n_in), int(n_out))] for at, n_in, n_out in keys]
        for prev, row, turn in zip(chain, chain[1:], rollout.turns[1:], strict=False):
            shared = _shared_blocks(prev["hash_ids"], row["hash_ids"])
            assert shared >= max(2, len(prev["hash_ids"]) - 1)
            assert turn.observed["cached_tokens"] == shared * 512
            links += 1
    assert links == len(rows) - len(rollouts)


def test_sessions_sharing_the_second_traces_system_prompt_share_its_text(
    dynamo: tuple[list[Row], list[Rollout]],
) -> None:
    rows, rollouts = dynamo
    a, b = (r for r in rollouts if r.meta["first_request"] in (5, 13))
    assert _shared_blocks(rows[5]["hash_ids"], rows[13]["hash_ids"]) == 12
    first_a = tokenize(a.turns[0].input[0]["content"][0]["text"])
    first_b = tokenize(b.turns[0].input[0]["content"][0]["text"])
    assert (len(first_a), len(first_b)) == (rows[5]["input_length"], rows[13]["input_length"])
    shared = next(i for i, (x, y) in enumerate(zip(first_a, first_b, strict=False)) if x != y)
    assert 12 * 512 <= shared <= 12 * 512 + 1


def test_session_ids_group_requests_when_the_trace_has_them(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"

    def row(session: str, t: int, n: int, ids: list[int]) -> dict[str, object]:
        sizes = {"input_length": n, "output_length": 3}
        return {"session_id": session, "timestamp": t, **sizes, "hash_ids": ids}

    rows = [row("x", 0, 20, [1, 2]), row("y", 5, 10, [9]), row("x", 900, 40, [1, 2, 3])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    x, y = convert_mooncake(path, block_size=16)
    assert (len(x.turns), len(y.turns)) == (2, 1)
    assert x.meta["sessions"] == "session_id" and y.meta["start_offset_ms"] == 5.0
    assert x.turns[1].observed["cached_tokens"] == 32


def test_a_truncated_trace_names_the_file_and_line(tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl"
    text = SAMPLE.read_text()[:20000]  # ends inside a line
    cut.write_text(text)
    with pytest.raises(TraceFormatError) as err:
        convert_mooncake(cut)
    assert (err.value.path, err.value.line) == (str(cut), text.count("\n") + 1)
    assert "invalid JSON" in err.value.reason


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        ({"timestamp": 0, "output_length": 1, "hash_ids": [1]}, "input_length", "(missing)"),
        ({"timestamp": -1, "input_length": 9, "output_length": 1}, "timestamp", ">= 0"),
        ({"timestamp": 0, "input_length": 2000, "output_length": 1}, "hash_ids", "do not cover"),
    ],
)
def test_bad_lines_name_file_line_and_field(
    tmp_path: Path, row: dict[str, object], field: str, reason: str
) -> None:
    path = tmp_path / "bad.jsonl"
    good = {"timestamp": 0, "input_length": 9, "output_length": 1, "hash_ids": [1]}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"hash_ids": [1], **row}) + "\n")
    with pytest.raises(TraceFormatError) as err:
        convert_mooncake(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 2, field)
    assert reason in err.value.reason


def test_session_ids_on_some_lines_only_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    rows = [{"timestamp": 0, "input_length": 9, "output_length": 1, "hash_ids": [1]}] * 2
    path.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[1], "session_id": "s"}) + "\n")
    with pytest.raises(TraceFormatError, match="session_id") as err:
        convert_mooncake(path)
    assert err.value.line == 1
