"""Same work or no comparison: fresh prompts per run and mode against a prefix cache, and a
target that drops context flagged (console, results, board) with its speedup unranked."""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli_main
from harness.load.bench.bench_config import BenchConfig
from harness.load.bench.bench_run import run_bench
from harness.report.board import build_rows, load_runs
from harness.results.schema import load_result
from reference_server.app import ReferenceServer
from tests.load.replay_support import SMOKE, reference_server
from tests.load.standard_server import Behaviour, StandardServer


@pytest.fixture(scope="module")
def prefix_cached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    """One reference server (its engine keeps a prefix cache, and reports cached tokens)."""
    with reference_server(tmp_path_factory.mktemp("ref")) as server:
        yield server


def _load(server: ReferenceServer, out: Path, modes: str, *extra: str) -> dict[str, Any]:
    argv = ["load", "--target", server.ws_url, "--modes", modes, "--out", str(out)]
    argv += ["--requests", "6", "--concurrency", "2", "--processes", "1", "--label", modes]
    argv += ["--input-tokens", "24", "--output-tokens", "16", *extra]
    assert cli_main(argv) == 0
    (path,) = (out / "load").rglob(f"*{modes.replace(',', '-')}*.json")
    return load_result(path)


def _uncached_per_request(result: dict[str, Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for sample in result["load"]["samples"]:
        out.setdefault(sample["mode"], []).append(sample["uncached_tokens"])
    return out


def test_two_load_runs_in_either_mode_order_do_the_same_work(
    prefix_cached: ReferenceServer, tmp_path: Path, capsys: Any
) -> None:
    first = _load(prefix_cached, tmp_path / "a", "ws,http")
    second = _load(prefix_cached, tmp_path / "b", "http,ws")
    a, b = _uncached_per_request(first), _uncached_per_request(second)
    # every request's prefill is its whole prompt, whichever mode ran first, in either run
    assert a["ws"] == a["http"] == b["ws"] == b["http"] and len(a["ws"]) == 6
    assert set(a["ws"]) == {first["load"]["samples"][0]["input_tokens"]}
    for result in (first, second):
        seeds = {m: c["seed"] for m, c in result["config"]["modes"].items()}
        assert seeds["ws"] != seeds["http"]  # each mode its own prompts, recorded
        for tokens in result["load"]["tokens"].values():
            assert tokens["cached_share"] == 0.0 and tokens["session_cache_hit_median"] == 0.0
    assert first["config"]["run_seed"] != second["config"]["run_seed"]
    assert "cached share 0%" in capsys.readouterr().out
    # the control: the cache is there, and an explicitly shared prefix finds it (a prompt over
    # the API's 1,024-token cache minimum: the later --input-tokens wins)
    shared = _load(
        prefix_cached, tmp_path / "c", "ws", "--prefix-share", "1", "--input-tokens", "2048"
    )
    assert shared["workload"]["shape"]["prefix_share"] == 1.0
    assert shared["load"]["tokens"]["ws"]["cached_share"] > 0.5


def test_load_turns_over_http_resend_the_growing_conversation(tmp_path: Path, capsys: Any) -> None:
    """`load --turns 3`: each http turn resends every earlier message and answer (asserted from
    what the target received), so ws and http do the same work turn by turn."""
    argv = ["load", "--turns", "3", "--requests", "6", "--concurrency", "1", "--processes", "1"]
    argv += ["--input-tokens", "40", "--model", "m"]
    with StandardServer() as server:
        target = ["--target", server.ws_url, "--http-target", server.http_url]
        assert cli_main([*argv, *target, "--modes", "http", "--out", str(tmp_path / "h")]) == 0
        received = server.record.requests[-6:]  # after the pre-run check's probe
    assert [len(body["input"]) for body in received] == [1, 3, 5, 1, 3, 5]
    for earlier, later in itertools.pairwise(received):
        if len(later["input"]) > 1:  # the same conversation: its history, then one new message
            assert later["input"][: len(earlier["input"])] == earlier["input"]
            assert later["input"][len(earlier["input"])]["role"] == "assistant"
            assert "previous_response_id" not in later and later["store"] is False
    with StandardServer() as server:
        target = ["--target", server.ws_url, "--http-target", server.http_url]
        out = tmp_path / "both"
        assert cli_main([*argv, *target, "--modes", "ws,http", "--out", str(out)]) == 0
    (path,) = out.rglob("*.json")
    result = load_result(path)
    assert result["load"]["unequal_work"] == []
    by_turn: dict[str, dict[int, set[int]]] = {}
    for sample in result["load"]["samples"]:
        turns = by_turn.setdefault(sample["mode"], {})
        turns.setdefault(sample["turn_index"], set()).add(sample["input_tokens"])
    assert by_turn["ws"] == by_turn["http"] and len(by_turn["ws"]) == 3
    ws = by_turn["ws"]
    assert max(ws[0]) < min(ws[1]) and max(ws[1]) < min(ws[2])  # the conversation grows
    console = " ".join(capsys.readouterr().out.split())  # the console wraps at 100 columns
    assert "in tok/turn" in console
    assert "input tokens by turn (median of ok requests): ws " in console


def test_load_flags_a_target_whose_ws_continuations_drop_the_context(tmp_path: Path) -> None:
    argv = ["load", "--modes", "ws,http-chained", "--turns", "3", "--requests", "9"]
    argv += ["--concurrency", "1", "--processes", "1", "--input-tokens", "40"]
    flags = {}
    for drops in (False, True):
        with StandardServer(Behaviour(drop_ws_context=drops)) as server:
            out = tmp_path / str(drops)
            target = ["--target", server.ws_url, "--http-target", server.http_url]
            assert cli_main([*argv, *target, "--out", str(out), "--model", "m"]) == 0
        (path,) = out.rglob("*.json")
        flags[drops] = load_result(path)["load"]["unequal_work"]
    assert flags[False] == []
    (flag,) = flags[True]
    assert (flag["baseline_mode"], flag["mode"]) == ("http-chained", "ws")
    assert flag["input_tokens_ratio_median"] < 0.8


def test_bench_flags_unequal_work_and_the_board_does_not_rank_its_speedup(
    tmp_path: Path,
) -> None:
    with StandardServer(Behaviour(drop_ws_context=True)) as server:
        config = BenchConfig(
            target=server.ws_url,
            http_target=server.http_url,
            traces=str(SMOKE),
            per_kind=None,
            max_turns=3,
            modes=("ws", "http"),
            repeats=2,
            send_script=False,
            model="m",
            out=str(tmp_path / "results"),
            label="drops",
            html=False,
            quiet=True,
        )
        out, err = io.StringIO(), io.StringIO()
        assert run_bench(config, out=out, err=err) == 0
    console = out.getvalue()
    assert "UNEQUAL WORK" in console and "unequal work" in console
    (path,) = (tmp_path / "results").rglob("*.json")
    result = load_result(path)
    (comparison,) = result["bench"]["comparisons"]
    assert comparison["unequal_work"]["mode"] == "ws"
    (row,) = build_rows(load_runs([path]))
    assert row.unequal_work and row.speedup is None


def test_bench_variants_against_one_target_never_share_a_cached_prefix(
    prefix_cached: ReferenceServer, tmp_path: Path
) -> None:
    config = BenchConfig(
        target=prefix_cached.ws_url,
        http_target=prefix_cached.http_url,
        traces=str(SMOKE),
        per_kind=None,
        max_turns=2,
        modes=("ws", "http"),
        send_script=False,
        # uncapped: the simulated engine's own calls would be cut by caps from the recorded
        # lengths, ending the rollouts at turn 0 (docs/OUTPUT-CAPS.md)
        output_cap_scale=None,
        out=str(tmp_path),
        html=False,
    )
    assert run_bench(config, out=io.StringIO(), err=io.StringIO()) == 0
    (path,) = tmp_path.rglob("*.json")
    samples = load_result(path)["bench"]["samples"]
    uncached: dict[tuple[str, int], dict[str, int]] = {}
    for s in samples:
        uncached.setdefault((s["rollout_id"], s["turn_index"]), {})[s["mode"]] = s[
            "uncached_tokens"
        ]
    assert len(uncached) == 6  # 3 rollouts x 2 turns, each in both modes
    # the same prefill in both modes, turn by turn, whichever replayed a rollout first
    assert all(by_mode["ws"] == by_mode["http"] for by_mode in uncached.values())
    cold = [by_mode["ws"] for (_, turn), by_mode in uncached.items() if turn == 0]
    assert sum(1 for tokens in cold if tokens > 0) >= 2  # cold but the warm-up's rollout
    assert any(s["cached_tokens"] for s in samples if s["turn_index"] == 1)  # the cache works
