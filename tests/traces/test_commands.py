"""`wsmode traces generate|validate|convert` and the corpus tool
(`python -m harness.traces.commands corpus`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.traces.format import load_traces
from harness.traces.synthetic.corpus import CORPUS_SEED
from harness.traces.synthetic.generator import derive_seed

SMOKE = Path(__file__).resolve().parents[2] / "traces" / "smoke.jsonl"


def test_traces_generate_then_validate(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "gen.jsonl"
    assert cli_main(["traces", "generate", "--count", "2", "--turns", "3", "--out", str(out)]) == 0
    rollouts = load_traces(out)
    assert [len(r.turns) for r in rollouts] == [3, 3]
    assert cli_main(["traces", "validate", str(out), str(SMOKE)]) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "bogus"}\n')
    assert cli_main(["traces", "validate", str(bad)]) == 1
    assert "INVALID" in capsys.readouterr().out


def test_traces_generate_without_count_refuses_the_count_options(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "k"
    argv = ["traces", "generate", "--out", f"{out}/", "--kind", "refactor", "--turns", "10"]
    assert cli_main([*argv, "--size-scale", "0.1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wsmode traces generate: --kind, --turns, --size-scale need --count")
    assert cli_main(["traces", "generate", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "--out is a directory" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no corpus was written


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--count", "0"], "--count must be >= 1, got 0"),
        (["--count", "1", "--turns", "0"], "--turns must be >= 1, got 0"),
        (["--count", "1", "--size-scale", "0"], "--size-scale must be a number > 0, got 0.0"),
        (["--count", "1", "--size-scale", "nan"], "--size-scale must be a number > 0, got nan"),
    ],
)
def test_traces_generate_refuses_bad_numbers(  # type: ignore[no-untyped-def]
    tmp_path: Path, capsys, extra: list[str], message: str
) -> None:
    out = tmp_path / "g.jsonl"
    assert cli_main(["traces", "generate", "--out", str(out), *extra]) == 2
    assert capsys.readouterr().err == f"wsmode traces generate: {message}\n"
    assert not out.exists()


def test_traces_generate_refuses_an_unknown_kind(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as info:
        cli_main(["traces", "generate", "--out", "g.jsonl", "--count", "1", "--kind", "nonsense"])
    assert info.value.code == 2
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err


def test_traces_generate_count_into_a_directory(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    small = ["--count", "1", "--turns", "2", "--size-scale", "0.05"]
    existing = tmp_path / "existing.jsonl"  # a directory, despite its name
    existing.mkdir()
    for out, written in [
        (f"{tmp_path / 'dir2'}/", tmp_path / "dir2" / "generated.jsonl"),
        (str(existing), existing / "generated.jsonl"),
        (str(tmp_path / "plain"), tmp_path / "plain" / "generated.jsonl"),
    ]:
        assert cli_main(["traces", "generate", "--out", out, *small]) == 0
        assert capsys.readouterr().out.startswith(f"{written}: 1 rollouts")
        assert len(load_traces(written)) == 1


def test_traces_generate_count_defaults_to_the_corpus_seed(tmp_path: Path) -> None:
    argv = ["traces", "generate", "--count", "2", "--turns", "2", "--size-scale", "0.05"]
    assert cli_main([*argv, "--out", str(tmp_path / "a.jsonl")]) == 0
    assert [r.seed for r in load_traces(tmp_path / "a.jsonl")] == [
        derive_seed(CORPUS_SEED, i) for i in range(2)
    ]


def test_traces_validate_reports_bad_gzip_and_utf8_without_traceback(  # type: ignore[no-untyped-def]
    tmp_path: Path, capsys
) -> None:
    fake = tmp_path / "fake.jsonl.gz"
    fake.write_bytes(SMOKE.read_bytes())
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(SMOKE.read_bytes().replace(b"\n", b"\n\xff", 1))
    assert cli_main(["traces", "validate", str(fake), str(latin), str(tmp_path / "none")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"INVALID {fake}: bad gzip data: Not a gzipped file")
    assert out[1:] == [
        f"INVALID {latin}:2: not UTF-8 text: invalid start byte at byte 1 of the line",
        f"INVALID {tmp_path / 'none'}: no such file or directory",
    ]


def test_traces_convert_chat(tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps(
            [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
            ]
        )
    )
    out = tmp_path / "conv.jsonl"
    assert cli_main(["traces", "convert", "--from", "chat", str(chat), "--out", str(out)]) == 0
    (rollout,) = load_traces(out)
    assert rollout.instructions == "be brief" and len(rollout.turns) == 1


def test_the_corpus_tool_rewrites_the_committed_corpus_byte_for_byte(tmp_path: Path) -> None:
    """`python -m harness.traces.commands corpus` (traces/README.md), run as the README says."""
    done = subprocess.run(
        [sys.executable, "-m", "harness.traces.commands", "corpus", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.jsonl"))
    assert written and len(done.stdout.splitlines()) == len(written)
    for relative in written:
        assert (tmp_path / relative).read_bytes() == (SMOKE.parent / relative).read_bytes()


@pytest.mark.parametrize("source", ["codex", "chat", "claude-code", "openhands", "kvcache"])
@pytest.mark.parametrize(
    "text", ["[" * 200_000 + "]" * 200_000, '{"a":' * 10_000 + "1" + "}" * 10_000 + "\n"]
)
def test_convert_of_deep_json_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, text: str
) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(text)
    out = tmp_path / "out.jsonl"
    assert cli_main(["traces", "convert", "--from", source, "--out", str(out), str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "nesting deeper than 200 levels" in err and "\n" not in err
