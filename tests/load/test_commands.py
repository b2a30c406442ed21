"""`wsmode traces generate|validate|convert` and the HTTP client pool."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main as cli_main
from harness.load.replay import HttpClientPool, ReplayOptions, replay_rollout
from harness.load.traces import load_traces

from .replay_support import SMOKE, endpoint, reference_server, run, smoke_rollouts


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


def test_http_client_pool_hands_out_one_client_per_rollout_and_reuses_it(tmp_path: Path) -> None:
    async def scenario(ep) -> tuple[int, list[bool]]:  # type: ignore[no-untyped-def]
        pool = HttpClientPool()
        pool.prefill(ep.http_url, None, 120.0, 1)
        oks = []
        for rollout in smoke_rollouts():
            result = await replay_rollout(rollout, ep, ReplayOptions(mode="http"), http_pool=pool)
            oks.append(result.ok and all(t.bytes_sent > 0 for t in result.turns))
        size = pool.size
        await pool.aclose()
        return size, oks

    with reference_server(tmp_path / "d") as srv:
        size, oks = run(scenario(endpoint(srv)))
    assert size == 1 and all(oks)
