"""Claude Code sub-agent transcripts on their own, both layouts beside a session, and a folder
with one bad file (real transcripts from ../shared/recorded, laid out in a temporary folder)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.traces.converters import convert_claude_code
from harness.traces.converters.sources import convert_inputs, input_files
from harness.traces.format import TraceFormatError, load_traces
from tests.recorded import RECORDED, needs

CLAUDE = RECORDED / "set3" / "traces" / "claude-code"
SESSION = CLAUDE / "incremental-subagents__turn-2.jsonl"  # session e9fb405b-...
SUBAGENT = CLAUDE / "incremental-subagents__turn-2__subagents__agent-a485154.jsonl"
SESSION_ID = "e9fb405b-169f-40eb-9396-7e75076f045d"

pytestmark = needs(CLAUDE)


def test_a_subagent_transcript_alone_converts_and_names_its_parent_session() -> None:
    (rollout,) = convert_claude_code(SUBAGENT)
    assert rollout.id == f"claude-{SESSION_ID}-a485154"
    assert len(rollout.turns) == 6
    assert SESSION_ID in str(rollout.meta["link"]) and "on its own" in str(rollout.meta["link"])


@pytest.mark.parametrize("folder", ["session-id", "file-stem"])
def test_subagents_are_found_beside_the_session_in_both_layouts(
    tmp_path: Path, folder: str
) -> None:
    session = tmp_path / "session.jsonl"
    shutil.copy(SESSION, session)
    nested = tmp_path / (SESSION_ID if folder == "session-id" else "session") / "subagents"
    nested.mkdir(parents=True)
    shutil.copy(SUBAGENT, nested / "agent-a485154.jsonl")
    rollouts = convert_claude_code(session)
    assert [r.id for r in rollouts] == [f"claude-{SESSION_ID}", f"claude-{SESSION_ID}-a485154"]
    assert rollouts[1].meta["session_id"] == SESSION_ID
    # a folder holds the session once; its sub-agent converts with it, not again on its own
    assert input_files("claude-code", tmp_path) == [session]


def test_a_folder_of_subagents_without_their_session_converts_them_on_their_own(
    tmp_path: Path,
) -> None:
    nested = tmp_path / "other" / "subagents"
    nested.mkdir(parents=True)
    shutil.copy(SUBAGENT, nested / "agent-a485154.jsonl")
    (rollout,) = convert_inputs("claude-code", [tmp_path])
    assert rollout.id.endswith("-a485154")


def test_one_bad_file_never_aborts_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(SESSION, tmp_path / "a-session.jsonl")
    (tmp_path / "b-broken.jsonl").write_text('{"type": "user"\n')
    problems: list[TraceFormatError] = []
    rollouts = convert_inputs("claude-code", [tmp_path], problems=problems)
    assert [r.id for r in rollouts] == [f"claude-{SESSION_ID}"]
    assert len(problems) == 1 and "b-broken.jsonl:1" in str(problems[0])
    out = tmp_path / "out.jsonl"
    argv = ["traces", "convert", "--from", "claude-code", "--out", str(out), str(tmp_path)]
    assert cli_main(argv) == 3
    err = capsys.readouterr().err
    assert "not converted:" in err and "b-broken.jsonl:1" in err
    assert [r.id for r in load_traces(out)] == [f"claude-{SESSION_ID}"]
    with pytest.raises(TraceFormatError):  # a file named itself is still an error
        convert_inputs("claude-code", [tmp_path / "b-broken.jsonl"], problems=[])
