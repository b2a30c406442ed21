"""`wsmode results compare`: the text within 100 columns, the HTML page, one-line errors."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from harness.cli import main as cli_main
from harness.results.store import write_result


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables = self.svgs = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tables += tag == "table"
        self.svgs += tag == "svg"


def _files(synth: Any, tmp_path: Path) -> list[str]:
    runs = [
        synth.bench(seed=1, label="a"),
        synth.bench(seed=2, label="b", scale={"ws": {"ttft_ms": 1.5}}),
        synth.bench(seed=3, label="c"),
    ]
    return [str(write_result(tmp_path / "in", r)) for r in runs]


def test_three_runs_as_text_and_html(synth: Any, tmp_path: Path, capsys: Any) -> None:
    files = _files(synth, tmp_path)
    html = tmp_path / "compare.html"
    assert cli_main(["results", "compare", *files, "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("wsmode results compare: 3 runs, each against run A")
    assert "equal work: the same workload" in out
    assert all(len(line) <= 100 for line in out.splitlines())
    ttft_b = next(line for line in out.splitlines() if line.split()[:2] == ["B", "400"])
    assert "+5" in ttft_b  # ws ttft of B: about +50 %
    assert "paired rollouts, e2e A / B:" in out and f"report: {html}" in out
    page = html.read_text()
    tables = _Tables()
    tables.feed(page)
    assert tables.tables == 2  # one per mode
    assert tables.svgs == 10  # one chart per metric and mode
    assert "ws ttft_ms p50 per run (whiskers: 95% CI)" in page


def test_bad_input_is_one_line_and_exit_2(synth: Any, tmp_path: Path, capsys: Any) -> None:
    (one,) = _files(synth, tmp_path)[:1]
    assert cli_main(["results", "compare", one]) == 2
    err = capsys.readouterr().err
    assert err == "wsmode results compare: give at least two results files to compare\n"
    missing = str(tmp_path / "nope.json")
    assert cli_main(["results", "compare", one, missing]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wsmode results compare: ") and err.count("\n") == 1
