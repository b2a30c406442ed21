"""The real corpus (traces/real/) is what the converters make of the committed public samples,
and every new source round-trips: convert, ``wsmode traces validate``, a short replay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main as wsmode
from harness.load.core.replay_options import ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.traces.commands import CONVERT_SOURCES, MOONCAKE_BLOCK_TOKENS
from harness.traces.converters.mooncake import MOONCAKE_BLOCK_TOKENS as BLOCK
from harness.traces.converters.sources import SOURCES, ConvertOptions, convert_inputs
from harness.traces.format import dump_rollouts, dumps_rollouts, load_traces
from reference_server.app import ReferenceServer
from tests.load.replay_support import endpoint, reference_server, run

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "tests" / "traces" / "converters" / "samples"
REAL = ROOT / "traces" / "real"
CLAUDE = SAMPLES / "claude-code"

#: traces/real/<file>: (source, inputs, options) -- the commands in traces/real/README.md
CORPUS = {
    "claude_code.jsonl": (
        "claude-code",
        [
            CLAUDE / "c45af7b1-cb7c-4e51-93db-8cbb250a877a.jsonl",
            CLAUDE / "5da894cf-39f2-4285-8dad-323adb2d00ef.jsonl",
        ],
        ConvertOptions(agent_kind="claude-code"),
    ),
    "mooncake.jsonl": (
        "mooncake",
        [SAMPLES / "mooncake" / "sample_trace.jsonl"],
        ConvertOptions(agent_kind="conversation", min_turns=2),
    ),
    "swe_agent.jsonl": ("swe-agent", [SAMPLES / "swe-agent"], ConvertOptions("swe-agent")),
    "openhands.jsonl": ("openhands", [SAMPLES / "openhands"], ConvertOptions("openhands")),
}


def test_the_cli_offers_every_source_and_the_converters_default_block_size() -> None:
    assert CONVERT_SOURCES == SOURCES and MOONCAKE_BLOCK_TOKENS == BLOCK


def test_the_real_corpus_is_the_conversion_of_the_committed_samples() -> None:
    assert sorted(p.name for p in REAL.glob("*.jsonl")) == sorted(CORPUS)
    for name, (source, inputs, options) in CORPUS.items():
        rollouts = convert_inputs(source, inputs, options)
        assert dumps_rollouts(rollouts) == (REAL / name).read_text(encoding="utf-8"), name


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    with reference_server(tmp_path_factory.mktemp("server")) as s:
        yield s


ROUND_TRIPS = [
    ("claude-code", CLAUDE / "c45af7b1-cb7c-4e51-93db-8cbb250a877a.jsonl"),
    ("claude-code", CLAUDE / "handwritten" / "0f1e2d3c-4b5a-4c6d-8e7f-000000000001.jsonl"),
    ("codex", SAMPLES / "codex-desktop" / "handwritten"),
    ("codex", SAMPLES / "codex-desktop"),
    ("mooncake", SAMPLES / "mooncake" / "sample_trace.jsonl"),
    ("mooncake", SAMPLES / "mooncake" / "mooncake_trace.jsonl"),
    ("gemini-cli", SAMPLES / "gemini-cli"),
]


@pytest.mark.parametrize(
    ("source", "path"), ROUND_TRIPS, ids=[f"{s}-{p.name}" for s, p in ROUND_TRIPS]
)
def test_converted_rollouts_validate_and_replay(
    source: str,
    path: Path,
    tmp_path: Path,
    server: ReferenceServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "converted.jsonl"
    assert (
        wsmode(
            [
                "traces",
                "convert",
                "--from",
                source,
                str(path),
                "--min-turns",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert wsmode(["traces", "validate", str(out)]) == 0
    assert f"ok {out}:" in capsys.readouterr().out
    rollout = load_traces(out)[0]
    result = run(replay_rollout(rollout, endpoint(server), ReplayOptions(mode="ws", max_turns=3)))
    assert result.ok, result.error
    assert len(result.turns) == min(3, len(rollout.turns)) and all(t.ok for t in result.turns)


def test_a_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "trace.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 9, "output_length": 1}\n')
    code = wsmode(
        ["traces", "convert", "--from", "mooncake", str(bad), "--out", str(tmp_path / "o.jsonl")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"wsmode traces convert: {bad}:1: hash_ids: expected a list")
    assert not (tmp_path / "o.jsonl").exists()


def test_min_turns_leaves_short_rollouts_out(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    dump_rollouts(
        convert_inputs("openhands", [SAMPLES / "openhands"], ConvertOptions(min_turns=4)), out
    )
    assert [len(r.turns) for r in load_traces(out)] == [4]
