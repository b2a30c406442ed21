"""Results files read in pieces: the same object as a whole read, a bounded memory, clear
errors at every bound (issue 42.1)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from harness.results import reading
from harness.results.reading import ResultsReadError, read_result_document
from harness.results.schema import REPORT_DROP, ResultsSchemaError, load_result

ROOT = Path(__file__).resolve().parents[2]


def _committed_results() -> list[Path]:
    found = []
    for path in sorted((ROOT / "results").rglob("*.json")):
        with path.open("rb") as file:
            if b'"wsmode-results"' in file.read(4096):
                found.append(path)
    return found


def test_every_committed_results_file_reads_as_the_whole_read_does() -> None:
    paths = _committed_results()
    assert len(paths) >= 10  # certificates, bench runs, client certificates
    for path in paths:
        assert read_result_document(path) == json.loads(path.read_text(encoding="utf-8")), path


def test_gate_and_boards_drop_leaves_out_only_the_wire_logs() -> None:
    certificate = next(p for p in _committed_results() if "certify" in p.parts)
    whole = json.loads(certificate.read_text(encoding="utf-8"))
    kept = load_result(certificate, drop=REPORT_DROP)
    assert all("wire_log" in case for case in whole["certify"]["cases"])
    assert [{k: v for k, v in c.items() if k != "wire_log"} for c in whole["certify"]["cases"]] == (
        kept["certify"]["cases"]
    )


def _tricky(rng: random.Random, depth: int = 0) -> Any:
    """Values whose text puts quotes, escapes and brackets anywhere a chunk may cut."""
    kind = rng.randrange(6 if depth < 4 else 3)
    if kind == 0:
        return rng.choice(['a"b', "\\", "[{", "}]", 'x\\"y', "é\u2028", ""])
    if kind == 1:
        return rng.choice([0, -1.5e-7, 12345678901234567890, True, None])
    if kind == 2:
        return "".join(rng.choice('ab"\\[]{},: ') for _ in range(rng.randrange(20)))
    if kind == 3:
        return [_tricky(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f'k{i}\\"': _tricky(rng, depth + 1) for i in range(rng.randrange(4))}


@pytest.mark.parametrize("chunk_bytes", [1, 2, 7, 64])
def test_any_chunk_boundary_reads_the_same_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int
) -> None:
    monkeypatch.setattr(reading, "_CHUNK_BYTES", chunk_bytes)
    rng = random.Random(chunk_bytes)
    for n in range(40):
        document = {
            "schema": "wsmode-results",
            "bench": {"samples": [_tricky(rng) for _ in range(5)], "x": _tricky(rng)},
            "label": _tricky(rng),
        }
        path = tmp_path / f"{n}.json"
        path.write_text(json.dumps(document, indent=rng.choice([None, 1])), encoding="utf-8")
        assert read_result_document(path) == document


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"bench": {"samples": [{"a": 1}, {"a": 2', "the file ends inside"),
        ('{"a": 1} {"b": 2}', "extra data after the JSON object"),
        ('{"bench": {"samples": [NaN]}}', "NaN is not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"bench": {"samples": [{"a": 1} {"a": 2}]}}', "expected ']', found '{'"),
        ('{"a": ' + "[" * 300 + "]" * 300 + "}", "nesting deeper than 200 levels"),
        ('{"a": tru}', "not JSON"),
    ],
)
def test_broken_files_are_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ResultsReadError, match=message.replace("(", r"\(")):
        read_result_document(_write(tmp_path, text))


def test_a_record_over_the_limit_is_refused_by_name(tmp_path: Path) -> None:
    big = {"schema": "wsmode-results", "certify": {"cases": [{"id": "a"}, {"id": "x" * 5000}]}}
    path = _write(tmp_path, json.dumps(big))
    with pytest.raises(ResultsReadError, match=r"certify\.cases\[1\]: a record larger than"):
        read_result_document(path, max_record_bytes=4096)
    assert read_result_document(path, max_record_bytes=8192) == big


def test_what_is_kept_is_bounded_after_the_drop(tmp_path: Path) -> None:
    cases = [{"id": str(n), "wire_log": ["x" * 1000]} for n in range(50)]
    path = _write(tmp_path, json.dumps({"certify": {"cases": cases}}))
    with pytest.raises(ResultsReadError, match="more than 0 MiB to keep"):
        read_result_document(path, max_kept_bytes=10_000)
    kept = read_result_document(path, drop=("wire_log",), max_kept_bytes=10_000)
    assert kept == {"certify": {"cases": [{"id": str(n)} for n in range(50)]}}


def test_load_result_names_the_file_and_the_place(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"schema": "wsmode-results", "bench": {"samples": [1, Infinity]}}')
    with pytest.raises(ResultsSchemaError, match=r"r\.json: bench\.samples\[1\]: Infinity"):
        load_result(path)
