"""`wsmode results list|show` and the registration of the report subcommands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import build_parser
from harness.cli import main as cli_main
from harness.results.store import write_result


def test_report_commands_are_registered() -> None:
    parser = build_parser()
    for argv in (
        ["gate", "--baseline", "a", "--current", "b"],
        ["board", "x.json"],
        ["results", "list"],
        ["results", "show", "f.json"],
    ):
        args = parser.parse_args(argv)
        assert callable(args.handler)


def test_results_list_and_show(synth: Any, tmp_path: Path, capsys: Any) -> None:
    root = tmp_path / "results"
    assert cli_main(["results", "list", "--root", str(root)]) == 0
    assert "no results under" in capsys.readouterr().out

    nightly = synth.bench(rollouts=3, turns=2, label="nightly")
    nightly["bench"]["comparisons"][0]["work"] = {"pairs": 3, "equal_pairs": 2}
    bench_path = write_result(root, nightly)
    cert_path = write_result(root, synth.certify(synth.cases))
    assert cli_main(["results", "list", "--root", str(root)]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split()[:6] == ["started", "run", "target", "outcome", "label", "file"]
    assert header.endswith(f"file (under {root})")
    assert all(len(line) <= 100 for line in lines)
    files = [word for line in lines for word in line.split() if word.endswith(".json")]
    assert [f.split("/")[0] for f in files] == ["certify", "bench"]  # relative to the root
    rows = [[w for w in line.split() if w not in files] for line in lines if line[0] != " "]
    assert [row[2:] for row in rows] == [
        ["certify", "reference", "PASS", "MUST", "3/3", "certify"],  # the run and its outcome
        ["bench", "reference", "ok", "nightly"],
    ]

    assert cli_main(["results", "show", str(bench_path)]) == 0
    out = capsys.readouterr().out
    assert "bench result 'nightly' (schema v2)" in out
    assert "ttft:    first-content-token" in out
    assert "speedup ws vs http:" in out and "; 2 of 3 pairs equal work" in out
    assert any(line.split()[:3] == ["ws", "ttft_ms", "6"] for line in out.splitlines())

    assert cli_main(["results", "show", str(cert_path)]) == 0
    out = capsys.readouterr().out
    assert "MUST 3/3  SHOULD 1/2" in out
    assert "FAIL" in out and "4.2.cache.evict" in out

    assert cli_main(["results", "show", "--json", str(cert_path)]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "certify"

    (root / "bench" / "broken.json").write_text("[]")
    assert cli_main(["results", "list", "--root", str(root)]) == 1
    assert "INVALID" in capsys.readouterr().out
    assert cli_main(["results", "show", str(root / "bench" / "broken.json")]) == 2


def test_results_without_action_prints_usage_on_stderr(capsys: Any) -> None:
    assert cli_main(["results"]) == 2
    captured = capsys.readouterr()
    assert "list" in captured.err and captured.out == ""


@pytest.mark.parametrize("command", ["gate", "board"])
def test_help_mentions_the_exit_codes_or_outputs(command: str, capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli_main([command, "--help"])
    out = capsys.readouterr().out
    assert ("Exit codes" in out) if command == "gate" else ("index.html" in out)


# a results file is read record by record: the deep value sits in one of its records
DEEP_JSON = (
    '{"schema": "wsmode-results", "bench": {"samples": [' + "[" * 200_000 + "]" * 200_000 + "]}}"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["gate", "--baseline", "{deep}", "--current", "{deep}"],
        ["board", "--out", "{out}", "{deep}"],
    ],
)
def test_gate_and_board_refuse_deep_json_in_one_line(
    tmp_path: Path, capsys: Any, argv: list[str]
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP_JSON)
    args = [a.format(deep=deep, out=tmp_path / "board") for a in argv]
    assert cli_main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "nesting deeper than 200 levels" in err and "\n" not in err


def test_gate_refuses_deeply_nested_thresholds_in_one_line(tmp_path: Path, capsys: Any) -> None:
    toml = tmp_path / "t.toml"
    toml.write_text("a = " + "[" * 100_000 + "]" * 100_000)
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP_JSON)
    assert (
        cli_main(
            ["gate", "--baseline", str(deep), "--current", str(deep), "--thresholds", str(toml)]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "nested too deeply" in err and "\n" not in err
