"""`wsmode traces generate|validate|convert` and the HTTP client pool."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.load.replay import HttpClientPool, ReplayOptions, replay_rollout
from harness.traces.format import load_traces
from harness.traces.generator import CORPUS_SEED, derive_seed

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


def test_http_client_pool_hands_out_one_client_per_rollout_and_reuses_it(tmp_path: Path) -> None:
    async def scenario(ep) -> tuple[int, list[bool]]:  # type: ignore[no-untyped-def]
        pool = HttpClientPool()
        pool.prefill(ep.http_url, None, ReplayOptions().turn_timeout_s, 1)
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


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_load_modules_import_neither_the_report_package_nor_a_cli_module() -> None:
    """Only the CLI layer (load/commands.py) may reach up to harness.report."""
    load_dir = Path(__file__).resolve().parents[2] / "harness" / "load"
    for path in sorted(load_dir.rglob("*.py")):
        if path.name == "commands.py":
            continue
        imported = _imported_modules(path)
        upward = {
            name
            for name in imported
            if name.startswith("harness.report")
            or name == "harness.cli"
            or name.endswith(".commands")
        }
        assert not upward, f"{path.relative_to(load_dir)} imports {sorted(upward)}"
