"""Reports and results carry no absolute path of the machine that wrote them: a results file
travels (CI artifacts, a leaderboard's copies), and where someone's checkout or working directory
was is nobody's business. Every command that writes files runs here in an empty working
directory, given absolute paths, and no file it writes contains that directory or the checkout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.cli import main
from harness.results.paths import portable_path
from tests.load.replay_support import SMOKE
from tests.load.standard_server import StandardServer

ROOT = Path(__file__).resolve().parents[1]


def run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_no_report_or_results_file_holds_the_working_directory(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"  # absolute, as a user may give it
    assert run(["certify", "-k", "1.handshake.upgrade", "--results", str(results)]) == 0
    with StandardServer() as server:
        bench = ["bench", "--target", server.ws_url, "--modes", "ws", "--traces", str(SMOKE)]
        bench += ["--max-rollouts", "1", "--max-turns", "1", "--out", str(results)]
        assert run(bench) == 0
        load = ["load", "--target", server.ws_url, "--requests", "2", "--processes", "1"]
        assert run([*load, "--out", str(results), "--output-tokens", "16"]) == 0
    (first, *_) = sorted(results.glob("bench/*/*.json"))
    gate = ["gate", "--baseline", str(first), "--current", str(first)]
    assert run([*gate, "--markdown", str(tmp_path / "gate.md")]) in (0, 1)
    assert run(["board", str(results), "--out", str(tmp_path / "board")]) == 0
    capsys.readouterr()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    kinds = {p.suffix for p in written}
    assert {".json", ".html", ".md", ".xml"} <= kinds, kinds
    for path in written:
        text = path.read_text(encoding="utf-8", errors="replace")
        for machine in (str(tmp_path), str(ROOT)):
            assert machine not in text, f"{path.relative_to(tmp_path)} holds {machine}"


def test_portable_paths(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    assert portable_path(SMOKE) == "traces/smoke.jsonl"  # a bundled file: its place in the bundle
    assert portable_path(ROOT / "suites" / "targets" / "reference.toml") == (
        "suites/targets/reference.toml"
    )
    assert portable_path(tmp_path / "mine" / "t.jsonl") == "mine/t.jsonl"  # under the cwd
    assert portable_path("/elsewhere/else/t.jsonl") == "t.jsonl"  # elsewhere: the name
    assert portable_path("rel/t.jsonl") == "rel/t.jsonl"  # relative: as given
    assert portable_path(tmp_path / "r" / "b" / "x.json", root=tmp_path / "r") == "b/x.json"
