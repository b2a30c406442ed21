"""The long-session corpus is built at run time from ../shared/recorded/set3: the longest real
rollouts the converters make, valid and replayable; without the recordings the script stops
with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.ratios import long_sessions
from harness.load.core.replay_options import ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.traces.format import load_traces, validate_rollout
from harness.traces.stats import measure
from reference_server.app import ReferenceServer
from tests.load.replay_support import endpoint, reference_server, run
from tests.recorded import needs

SET3 = long_sessions.SET3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    with reference_server(tmp_path_factory.mktemp("server")) as s:
        yield s


@needs(SET3)
def test_the_long_sessions_are_the_longest_real_rollouts(tmp_path: Path) -> None:
    assert long_sessions.main(["corpus", "--out", str(tmp_path)]) == 0
    rollouts = load_traces(tmp_path / "long_sessions.jsonl")
    assert sorted(len(r.turns) for r in rollouts) == [18, 18, 37, 47, 66, 67]
    assert {r.source for r in rollouts} == {"codex", "claude-code"}
    for r in rollouts:
        validate_rollout(r)
    # the 55-turn Claude Code session was compacted: its second chain continues the first
    restart = next(r for r in rollouts if "continues" in r.meta)
    assert measure(rollouts).samples["turns_per_session"].count(55.0) == 1
    assert restart.meta["continues"] in {r.id for r in rollouts}


@needs(SET3)
def test_the_reference_holds_every_session_and_the_tracelab_examples() -> None:
    reference = long_sessions.reference_corpus()
    sources = {r.source for r in reference}
    assert sources == {"codex", "claude-code", "tracelab"}
    # sub-agent transcripts named in the script are linked to their sessions
    assert any("parent_rollout" in r.meta for r in reference if r.source == "claude-code")


@needs(SET3)
def test_a_long_session_replays(server: ReferenceServer) -> None:
    rollout = max(long_sessions.long_corpus(), key=lambda r: len(r.turns))
    result = run(replay_rollout(rollout, endpoint(server), ReplayOptions(mode="ws", max_turns=5)))
    assert result.ok, result.error
    assert len(result.turns) == 5 and all(t.ok for t in result.turns)


def test_without_the_recordings_it_stops_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(long_sessions, "SET3", tmp_path / "absent")
    assert long_sessions.main(["corpus", "--out", str(tmp_path / "out")]) == 2
    assert "real recordings not found at" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
