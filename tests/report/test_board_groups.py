"""`wsmode board` on unlike runs: workloads never pooled, one server's aliases merged, failed
runs marked, too few pairs shown without an interval, and the table within 1,280 px."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.report.board import build_rows, load_runs, write_board
from harness.report.board_rows import build_board
from harness.results.store import write_result
from tests.report.test_board import _chromium, _dump_dom

URL = "ws://127.0.0.1:8000/v1/responses"


def as_load(bench: dict[str, Any]) -> dict[str, Any]:
    """The same measurements as a `wsmode load` results file."""
    load = copy.deepcopy(bench)
    load["kind"] = "load"
    load["load"] = load.pop("bench")
    load["load"]["throughput"] = {}
    load["load"]["comparisons"] = []
    load["config"] = {"command": "load", "modes": {m: {"concurrency": 8} for m in ("ws",)}}
    return load


def _named(result: dict[str, Any], name: str, url: str = URL) -> dict[str, Any]:
    result["target"] = {"url": url, "name": name, "version": None}
    return result


def test_board_never_pools_a_load_and_a_bench_run(synth: Any, tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_result(root, synth.bench(seed=1, ttft_ms={"ws": 100.0, "http": 300.0}))
    write_result(root, as_load(synth.bench(seed=2, ttft_ms={"ws": 10.0, "http": 30.0})))
    old_style = synth.bench(seed=3, label="old-load", ttft_ms={"ws": 10.0, "http": 30.0})
    old_style["config"] = {"command": "load", "modes": {"ws": {"concurrency": 8}}}
    write_result(root, old_style)  # written as kind bench before load had a kind of its own
    board = build_board(load_runs([root]))
    kinds = sorted((g.kind, len(g.runs)) for g in board.groups)
    assert kinds == [("bench", 1), ("load", 2)]
    bench = next(g for g in board.groups if g.kind == "bench")
    (row,) = bench.rows
    assert row.ttft_p50 is not None and 80 < row.ttft_p50.value < 120  # the bench alone
    write_board([root], tmp_path / "board")
    md = (tmp_path / "board" / "leaderboard.md").read_text()
    assert md.count("| 1 | reference") == 2  # ranked in each table, never in one


def test_board_merges_one_servers_aliases_and_marks_a_failed_run(
    synth: Any, tmp_path: Path
) -> None:
    root = tmp_path / "results"
    aliases = (  # as load, bench and a hand-typed URL named one server
        ("127.0.0.1:8000", URL),
        ("127.0.0.1-8000-v1-responses", URL),
        ("localhost:8000", "ws://localhost:8000/responses"),
    )
    for day, (name, url) in enumerate(aliases, start=1):
        run = _named(synth.bench(seed=day, label=f"r{day}"), name, url)
        run["started_at"] = f"2025-03-0{day}T10:00:00Z"
        run["ended_at"] = f"2025-03-0{day}T11:00:00Z"
        write_result(root, run)
    failed = _named(synth.bench(seed=7, label="dead"), "127.0.0.1:8000")
    for sample in failed["bench"]["samples"]:
        sample.update(ok=False, error="transport: connection refused", ttft_ms=None)
    write_result(root, failed)
    certificate = synth.certify(synth.cases, target="localhost:8000")
    certificate["target"]["url"] = "ws://localhost:8000/v1/responses"
    write_result(root, certificate)
    (row,) = build_rows(load_runs([root]))
    assert row.target == "127.0.0.1:8000"
    assert len(row.bench_runs) == 3 and [r.result["label"] for r in row.failed_runs] == ["dead"]
    assert row.ttft_p50 is not None and row.ttft_p50.runs == 3  # the failed run is no data
    assert row.conformance is not None  # the certificate of the same server, joined
    write_board([root], tmp_path / "board")
    md = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "| 3 (+1 failed) |" in md and "(failed)](results/" in md
    assert "run dead failed (no ok turn (first error: transport: connection refused))" in md


def test_too_few_pairs_give_no_interval_and_another_version_no_certificate(
    synth: Any, tmp_path: Path
) -> None:
    root = tmp_path / "results"
    write_result(root, synth.bench(seed=1, rollouts=2))
    certificate = synth.certify(synth.cases)
    certificate["target"]["version"] = "server: wsmode-reference/0.9"
    write_result(root, certificate)
    (row,) = build_rows(load_runs([root]))
    assert row.speedup is not None and row.speedup[1:] == (None, None)
    assert row.conformance is None
    assert row.conformance_missing == "the certificate is of version 0.9, the runs of 1.0"
    write_board([root], tmp_path / "board")
    md = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "(2 pairs: no interval)" in md and "missing: the certificate is of version 0.9" in md


_MEASURE = """<script>
for (const t of document.querySelectorAll('table.board')) {
  t.setAttribute('data-overflow', String(t.scrollWidth - t.parentElement.clientWidth));
}
document.body.setAttribute('data-page-overflow',
  String(document.documentElement.scrollWidth - window.innerWidth));
</script></body>"""


def test_the_board_fits_a_1280_px_window(synth: Any, tmp_path: Path) -> None:
    exe = _chromium()
    root = tmp_path / "results"
    long_name = "gateway-with-a-rather-long-implementation-name.internal"
    for seed, name in enumerate(("reference", long_name, "vendor-b"), start=1):
        for repeat in range(2):
            run = _named(synth.bench(seed=10 * seed + repeat, label=f"repeat{repeat}"), name)
            run["target"]["version"] = "x-litellm-version: 1.110.2"
            write_result(root, run)
        certificate = synth.certify(synth.cases, target=name)
        certificate["config"]["upstream"] = "wsmode serve (reference server, profile zero)"
        write_result(root, certificate)
    out = tmp_path / "board"
    write_board([root], out)
    page = out / "measured.html"
    page.write_text((out / "index.html").read_text().replace("</body>", _MEASURE))
    dom = _dump_dom(exe, page, tmp_path / "profile", window="1280,900")
    overflow = [int(v) for v in _attributes(dom, "data-overflow")]
    assert overflow and all(v <= 0 for v in overflow), overflow
    (page_overflow,) = (int(v) for v in _attributes(dom, "data-page-overflow"))
    assert page_overflow <= 0  # no horizontal scrolling (a vertical scrollbar makes it < 0)


def _attributes(dom: str, name: str) -> list[str]:
    import re

    return re.findall(rf'{name}="(-?\d+)"', dom)


@pytest.fixture(autouse=True)
def _no_stray_profile(tmp_path: Path) -> Any:
    yield
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)


def test_board_json_copies_stay_valid(synth: Any, tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_result(root, as_load(synth.bench(seed=2)))
    write_board([root], tmp_path / "board")
    (copy_path,) = (tmp_path / "board" / "results").glob("load-*.json")
    assert json.loads(copy_path.read_text())["kind"] == "load"


def test_a_file_with_comparisons_only_shows_their_interval_from_enough_pairs(
    synth: Any, tmp_path: Path
) -> None:
    for pairs in (40, 3):
        result = synth.bench(seed=1, label=f"p{pairs}")
        result["bench"]["rollouts"] = []  # no paired rollouts: the comparison is all there is
        result["bench"]["comparisons"][0]["pairs"] = pairs
        path = tmp_path / f"p{pairs}.json"
        path.write_text(json.dumps(result))
        (row,) = build_rows(load_runs([path]))
        assert row.speedup is not None and row.speedup_pairs == pairs
        assert (row.speedup[1] is not None) is (pairs >= 5)


def test_capped_and_uncapped_runs_are_tables_of_their_own(synth: Any, tmp_path: Path) -> None:
    paths = []
    for name, scale in (("capped", 1.0), ("uncapped", None)):
        result = synth.bench(target=name, rollouts=5)
        result["config"] = {**result["config"], "send_script": False, "output_cap_scale": scale}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(result))
        paths.append(path)
    board = build_board(load_runs(paths))
    assert len(board.groups) == 2
    descriptions = sorted(g.description for g in board.groups)
    assert any("no output cap" in d for d in descriptions)
    assert any("output cap x1 of the recorded length" in d for d in descriptions)
