"""`wsmode board`: ranking, spreads, conformance, and what a person sees in a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli_main
from harness.report.board import build_rows, load_runs, write_board
from harness.report.svg import fmt_ms
from harness.results.schema import load_result
from harness.results.store import write_result


def _day(d: int) -> dict[str, str]:
    return {"started_at": f"2025-03-0{d}T10:00:00Z", "ended_at": f"2025-03-0{d}T10:05:00Z"}


@pytest.fixture
def results_root(synth: Any, tmp_path: Path) -> Path:
    """Four implementations: one with three runs, one distributed, one without
    conformance, one with conformance only."""
    root = tmp_path / "results"
    for day, seed in ((1, 1), (2, 2)):
        write_result(root, synth.bench(seed=seed, label=f"run{day}", **_day(day)))
    write_result(
        root,
        synth.bench(seed=3, label="run3", scale={"ws": {"ttft_ms": 1.3}}, **_day(3)),
    )
    write_result(
        root,
        synth.bench(
            target="vendor-b", seed=4, label="dist", workers=3, ttft_ms={"ws": 15.0, "http": 50.0}
        ),
    )
    write_result(
        root,
        synth.bench(target="vendor-c", seed=5, label="c", ttft_ms={"ws": 35.0, "http": 40.0}),
    )
    write_result(root, synth.certify(synth.cases))
    worse = dict(synth.cases)
    worse["3.3.order.seq-from-zero"] = ("MUST", "FAIL")
    write_result(root, synth.certify(worse, target="vendor-b", started_at="2025-03-01T08:00:00Z"))
    write_result(root, synth.certify(synth.cases, target="vendor-b", label="old",
                                     started_at="2025-02-01T08:00:00Z"))  # fmt: skip
    write_result(root, synth.certify(synth.cases, target="vendor-d"))
    return root


def test_rows_rank_by_ws_ttft_p50_with_spread_and_conformance(results_root: Path) -> None:
    rows = build_rows(load_runs([results_root]))
    assert [(r.rank, r.target) for r in rows] == [
        (1, "vendor-b"),
        (2, "reference"),
        (3, "vendor-c"),
        (None, "vendor-d"),
    ]
    ref = rows[1]
    assert ref.ttft_p50 is not None and ref.ttft_p50.runs == 3
    assert ref.ttft_p50.low < ref.ttft_p50.value < ref.ttft_p50.high
    assert ref.ttft_p50.high / ref.ttft_p50.low == pytest.approx(1.3, rel=0.1)  # the slow run
    assert ref.conformance == {
        "must_passed": 3,
        "must_total": 3,
        "should_passed": 1,
        "should_total": 2,
        "upstream": "",
    }
    # the latest certify run of vendor-b counts, not the older one
    assert rows[0].conformance is not None and rows[0].conformance["must_passed"] == 2
    assert ref.speedup is not None
    median, lo, hi = ref.speedup
    assert lo is not None and hi is not None and 1.0 < lo < median < hi
    assert rows[3].conformance is not None and rows[3].ttft_p50 is None


def test_distributed_run_ranks_like_a_single_process_run(synth: Any, tmp_path: Path) -> None:
    """Histograms merged from three workers give exactly the numbers of one process."""
    single = synth.bench(seed=9, target="x", workers=1)
    distributed = synth.bench(seed=9, target="x", workers=3)
    assert single["bench"]["samples"] == distributed["bench"]["samples"]
    paths = []
    for name, r in (("single", single), ("dist", distributed)):
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(r))
        paths.append(p)
    a, b = (build_rows(load_runs([p]))[0] for p in paths)
    assert (a.ttft_p50, a.ttft_p99, a.itl_p50, a.rollout_p50, a.speedup) == (
        b.ttft_p50,
        b.ttft_p99,
        b.itl_p50,
        b.rollout_p50,
        b.speedup,
    )


def test_board_writes_html_markdown_and_raw_copies(results_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "board"
    assert cli_main(["board", str(results_root), "--out", str(out)]) == 0
    html = (out / "index.html").read_text()
    md = (out / "leaderboard.md").read_text()
    assert html.startswith("<!doctype html>") and html.endswith("</body></html>\n")  # the shell
    assert "<script" not in html and "http://" not in html.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    first, second = md.index("| 1 | vendor-b (1.0) |"), md.index("| 2 | reference (1.0) |")
    assert first < second < md.index("| 3 | vendor-c (1.0)")
    assert "MUST 2/3 · SHOULD 1/2" in md
    copies = sorted((out / "results").glob("*.json"))
    assert len(copies) == 9
    for copy in copies:
        load_result(copy)  # each copy is a valid results file
        assert f'href="results/{copy.name}"' in html


def test_board_refuses_invalid_input(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "wsmode-results", "schema_version": 9}')
    assert cli_main(["board", str(bad), "--out", str(tmp_path / "b")]) == 2
    assert "schema_version" in capsys.readouterr().err
    assert cli_main(["board", str(tmp_path / "empty-dir"), "--out", str(tmp_path / "b")]) == 2


# -- in a real browser ----------------------------------------------------------------------------
class _TableReader(HTMLParser):
    """Visible text of each cell of table#leaderboard, and of every SVG <text>."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.header: list[str] = []
        self.svg_texts: list[str] = []
        self._in_table = self._in_cell = self._in_svg_text = False
        self._cell: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("id", "leaderboard") in attrs:
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append([])
        elif self._in_table and tag in ("td", "th"):
            self._in_cell, self._cell = True, []
        elif tag == "text":
            self._in_svg_text, self._cell = True, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_table = False
        elif self._in_cell and tag in ("td", "th"):
            self._in_cell = False
            self.rows[-1].append(" ".join("".join(self._cell).split()))
        elif tag == "text" and self._in_svg_text:
            self._in_svg_text = False
            self.svg_texts.append("".join(self._cell).strip())

    def handle_data(self, data: str) -> None:
        if self._in_cell or self._in_svg_text:
            self._cell.append(data)


def _chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        message = (
            "headless Chromium is needed to check the leaderboard as a person sees it: "
            "install Debian's package with `apt-get install -y chromium`"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return exe


def _dump_dom(exe: str, page: Path, profile: Path, window: str | None = None) -> str:
    proc = subprocess.run(
        [
            exe,
            "--headless",
            *([f"--window-size={window}"] if window else []),
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=45,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_leaderboard_in_headless_chromium(results_root: Path, tmp_path: Path) -> None:
    exe = _chromium()
    out = tmp_path / "board"
    rows = write_board([results_root], out)
    dom = _dump_dom(exe, out / "index.html", tmp_path / "chromium-profile")

    reader = _TableReader()
    reader.feed(dom)
    header, *body = reader.rows
    assert header[:11] == [
        "Rank",
        "Implementation",
        "TTFT p50",
        "TTFT p99",
        "ITL p50",
        "Turn e2e p50",
        "Rollout e2e p50",
        "WS speedup (95% CI)",
        "Failures, work",
        "Conformance",
        "Runs",
    ]
    col = {name: i for i, name in enumerate(header)}
    # ranking order, as displayed (vendor-d, certified only, has a table of its own)
    assert [(r[col["Rank"]], r[col["Implementation"]]) for r in body] == [
        ("1", "vendor-b (1.0)"),
        ("2", "reference (1.0)"),
        ("3", "vendor-c (1.0)"),
    ]
    by_name = {r[col["Implementation"]].split(" ")[0]: r for r in body}
    ref_row = next(r for r in rows if r.target == "reference")
    assert ref_row.ttft_p50 is not None and ref_row.ttft_p99 is not None
    # numbers: the merged-histogram value, then the min–max spread over the three runs
    assert by_name["reference"][col["TTFT p50"]] == (
        f"{fmt_ms(ref_row.ttft_p50.value)} ms "
        f"({fmt_ms(ref_row.ttft_p50.low)}–{fmt_ms(ref_row.ttft_p50.high)})"
    )
    assert by_name["reference"][col["Runs"]] == "3"
    vb = next(r for r in rows if r.target == "vendor-b")
    assert vb.ttft_p50 is not None
    assert by_name["vendor-b"][col["TTFT p50"]] == f"{fmt_ms(vb.ttft_p50.value)} ms"
    assert 13.0 < vb.ttft_p50.value < 17.0  # configured 15 ms median
    speedup_cell = r"\d\.\d\d× \[\d\.\d\d–\d\.\d\d\]"
    pairs = r" · (\d+) of \1 pairs equal work"  # every pair of these runs did equal work
    assert re.fullmatch(speedup_cell + pairs, by_name["vendor-b"][col["WS speedup (95% CI)"]])
    # three runs: the CI of the pooled rollouts, then the min–max of the per-run medians
    spread = r" \(\d\.\d\d–\d\.\d\d\)"
    reference_cell = by_name["reference"][col["WS speedup (95% CI)"]]
    assert re.fullmatch(speedup_cell + spread + pairs, reference_cell), reference_cell
    # the conformance score, merged from the certify results of the same target
    assert by_name["reference"][col["Conformance"]] == "MUST 3/3 · SHOULD 1/2 run"
    assert by_name["vendor-b"][col["Conformance"]] == "MUST 2/3 · SHOULD 1/2 run"
    assert by_name["vendor-c"][col["Conformance"]] == "missing: no certify run of vendor-c"
    assert 'id="certified-only"' in dom and 'data-target="vendor-d"' in dom
    # links to the raw files and the environment
    assert "run1 (env)" in by_name["reference"][col["Details"]]
    # the plots were rendered, naming every ranked target, bars in ranking order
    texts = reader.svg_texts
    assert "TTFT p50 (ws), whiskers: min–max across runs" in texts
    bar_labels = [t for t in texts if t in ("vendor-b", "reference", "vendor-c")]
    assert bar_labels[:3] == ["vendor-b", "reference", "vendor-c"]
    assert fmt_ms(vb.ttft_p50.value) in texts
    assert "TTFT distribution (ws), all runs merged" in texts
    assert dom.count("<polyline") == 3  # one CDF line per ranked target


def _as_v1(result: dict[str, Any]) -> dict[str, Any]:
    """The same result as an older wsmode wrote it: schema 1, no TTFT label, no ttfe_ms."""
    old = json.loads(json.dumps(result))
    old["schema_version"] = 1
    del old["bench"]["ttft_definition"]
    return old


def test_board_never_pools_two_ttft_definitions(synth: Any, tmp_path: Path) -> None:
    root = tmp_path / "results"
    fast_v1 = synth.bench(seed=1, label="old", ttft_ms={"ws": 5.0, "http": 9.0}, **_day(1))
    (root / "v1").mkdir(parents=True)
    (root / "v1" / "old.json").write_text(json.dumps(_as_v1(fast_v1)))
    write_result(root, synth.bench(seed=2, label="new", ttft_ms={"ws": 50.0, "http": 90.0}))
    only_v1 = _as_v1(synth.bench(target="legacy", seed=3, ttft_ms={"ws": 20.0, "http": 30.0}))
    (root / "v1" / "legacy.json").write_text(json.dumps(only_v1))
    rows = {r.target: r for r in build_rows(load_runs([root]))}
    reference = rows["reference"]
    assert reference.ttft is not None and reference.ttft_p50 is not None
    assert reference.ttft_p50.runs == 1  # the v1 run's TTFT (first output event) is left out
    assert reference.ttft_p50.value > 40 and not reference.ttft_legacy
    assert rows["legacy"].ttft_legacy
    write_board([root], tmp_path / "board")
    html = (tmp_path / "board" / "index.html").read_text()
    assert "only schema-v1 results" in html and " †" in html


def test_a_gateway_row_counts_cases_run_and_names_its_upstream(synth: Any, tmp_path: Path) -> None:
    cases = dict(synth.cases)
    cases["5.2.lanes.fifo"] = ("MUST", "UNIMPLEMENTED")  # not applicable: out of the count
    result = synth.certify(cases, target="gateway")
    result["config"]["upstream"] = "wsmode serve"
    write_result(tmp_path / "results", result)
    (row,) = build_rows(load_runs([tmp_path / "results"]))
    musts = [v for level, v in cases.values() if level == "MUST"]
    assert row.conformance is not None
    assert row.conformance["must_total"] == len(musts) - 1
    assert row.conformance["upstream"] == "wsmode serve"
    board = tmp_path / "board"
    write_board([tmp_path / "results"], board, title="t")
    assert "(upstream: wsmode serve)" in (board / "leaderboard.md").read_text(encoding="utf-8")


def test_the_board_marks_unequal_pairs_failed_rollouts_and_fewer_turns(
    synth: Any, tmp_path: Path
) -> None:
    """One ws rollout of five carries 30 % more input: named, left out of the speedup, the
    equal-pair count beside it; a failed rollout and a row on fewer turns are marked too, in
    leaderboard.md and index.html."""
    diverging = synth.bench(target="alpha", rollouts=5, turns=4, label="diverging")
    for sample in diverging["bench"]["samples"]:
        if sample["mode"] == "ws" and sample["rollout_id"] == "r004":
            sample["context_tokens"] = round(sample["context_tokens"] * 1.3)
    short = synth.bench(target="beta", rollouts=5, turns=3, label="short")
    short["bench"]["rollouts"][0]["ok"] = False
    paths = []
    for name, result in (("a", diverging), ("b", short)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(result))
        paths.append(path)
    rows = {r.target: r for r in write_board(paths, tmp_path / "board")}
    alpha, beta = rows["alpha"], rows["beta"]
    assert (alpha.work_pairs, alpha.equal_pairs) == (5, 4)
    assert alpha.unequal_pairs and alpha.unequal_pairs[0].startswith("r004")
    assert alpha.speedup_pairs == 4  # r004 left out
    assert (beta.failed_rollouts, beta.rollouts) == (1, 10)
    assert beta.fewer_turns_than == alpha.ok_turns and beta.ok_turns < alpha.ok_turns
    markdown = (tmp_path / "board" / "leaderboard.md").read_text()
    page = (tmp_path / "board" / "index.html").read_text()
    for text in (markdown, page):
        assert "4 of 5 pairs equal work" in text
        assert "1 unequal pair" in text and "r004" in text
        assert "1 of 10 rollouts failed" in text
        assert f"rests on {beta.ok_turns} ok turns, fewer than another row" in text


def test_the_board_over_records_read_without_their_wire_logs_is_the_whole_reads_board(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gate and board read results files in pieces and drop the wire logs (issue 42.1): the
    committed board's inputs and certificates render the same board as when read whole."""
    import harness.report.board as board_module

    root = Path(__file__).resolve().parents[2] / "results"
    inputs = [root / "board" / "results", root / "certify"]
    write_board(inputs, tmp_path / "pieces")
    monkeypatch.setattr(board_module, "REPORT_DROP", ())
    write_board(inputs, tmp_path / "whole")
    for name in ("leaderboard.md", "index.html"):
        assert (tmp_path / "pieces" / name).read_text() == (tmp_path / "whole" / name).read_text()
