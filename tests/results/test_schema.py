"""Results schema: what is written reads back, what is wrong is named, other versions refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.results import machine
from harness.results.schema import (
    SCHEMA_JSON_PATH,
    ResultsSchemaError,
    dumps_result,
    finish_result,
    load_result,
    new_result,
    parse_time,
    ttft_definition,
    validate_result,
)
from harness.results.store import list_results, result_path, slug, write_result


def test_new_result_fills_harness_machine_and_times(tmp_path: Path) -> None:
    r = new_result(
        "bench",
        label="nightly",
        target={"url": "ws://127.0.0.1:8000", "name": "reference"},
        profile="legacy-65tps",
        config={"concurrency": 4},
    )
    assert r["schema"] == "wsmode-results" and r["schema_version"] == 2
    assert r["bench"]["ttft_definition"] == "first-content-token"
    assert r["harness"]["version"] == "0.1.0"
    commit = r["harness"]["commit"]
    assert commit == "unknown" or (len(commit) == 40 and int(commit, 16) >= 0)
    assert set(r["machine"]) == {
        "cpu_model",
        "cores",
        "memory_bytes",
        "python",
        "os",
        "hostname_hash",
        "load_average",
    }
    assert r["target"] == {"url": "ws://127.0.0.1:8000", "name": "reference", "version": None}
    assert r["bench"] == {
        "time_scale": 1.0,
        "ttft_definition": "first-content-token",
        "modes": {},
        "samples": [],
        "rollouts": [],
        "comparisons": [],
    }
    with pytest.raises(ResultsSchemaError, match="ended_at"):
        validate_result(r)  # not finished yet
    finish_result(r)
    assert parse_time(r["ended_at"]) >= parse_time(r["started_at"])


def test_machine_info_reads_proc_files(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Test CPU @ 3.00GHz\n")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16384 kB\nMemFree: 1 kB\n")
    info = machine.machine_info(cpuinfo, meminfo)
    assert info["cpu_model"] == "Test CPU @ 3.00GHz"
    assert info["memory_bytes"] == 16384 * 1024
    assert len(info["hostname_hash"]) == 16
    assert machine.hostname_hash("a") != machine.hostname_hash("b")
    assert machine.memory_bytes(tmp_path / "missing") is None
    assert machine.harness_commit(tmp_path) == "unknown"  # not a checkout


def test_synthetic_results_validate_and_round_trip(synth: Any, tmp_path: Path) -> None:
    bench = synth.bench(rollouts=5, turns=3, failures=2)
    assert bench["bench"]["modes"]["ws"]["failures"] == 2
    certify = synth.certify(synth.cases)
    assert certify["certify"]["summary"]["must_passed"] == 3
    assert certify["certify"]["summary"]["should_total"] == 2
    for r in (bench, certify):
        path = tmp_path / f"{r['kind']}.json"
        path.write_text(dumps_result(r))
        assert load_result(path) == r


def _broken(result: dict[str, Any], mutate: Any) -> dict[str, Any]:
    r = copy.deepcopy(result)
    mutate(r)
    return r


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("machine"), r"^machine: missing"),
        (lambda r: r["target"].update(name=""), r"^target\.name: must not be empty"),
        (lambda r: r.update(kind="soak"), r"^kind: must be one of bench, load, certify"),
        (lambda r: r.update(started_at="2025-03-01 10:00"), r"^started_at: timestamp must be UTC"),
        (lambda r: r.update(ended_at="2025-02-01T00:00:00Z"), r"^ended_at: is before started_at"),
        (lambda r: r["bench"]["samples"][2].update(ttft_ms="12"), r"samples\[2\]\.ttft_ms"),
        (lambda r: r["bench"]["samples"][0].update(ok=False), r"samples\[0\]\.error: a failed"),
        (lambda r: r["bench"]["rollouts"][1].pop("turns"), r"rollouts\[1\]\.turns: missing"),
        (lambda r: r["bench"]["modes"]["ws"]["histograms"].update(ttft_ms="x"), r"not an encod"),
        (lambda r: r["bench"]["modes"].update(WS={}), r"bench\.modes\.WS: mode must be"),
        (lambda r: r["bench"]["comparisons"][0].update(ci95=[1]), r"comparisons\[0\]\.ci95"),
        (lambda r: r.update(certify={}), r"^certify: a bench result must not"),
        (lambda r: r["bench"]["samples"][0].update(turn_index=True), r"turn_index: expected an"),
    ],
)
def test_validation_names_the_field(synth: Any, mutate: Any, message: str) -> None:
    bench = synth.bench(rollouts=3, turns=3)
    with pytest.raises(ResultsSchemaError, match=message):
        validate_result(_broken(bench, mutate))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r["certify"]["cases"][1].update(level="MUSTN'T"), r"cases\[1\]\.level"),
        (lambda r: r["certify"]["cases"][1].update(verdict="OK"), r"cases\[1\]\.verdict"),
        (lambda r: r["certify"]["cases"][1].update(id="3.1.connect.accept"), "duplicate case"),
        (lambda r: r["certify"]["summary"].update(must_passed=3 + 1), "the cases give 3"),
        (lambda r: r["certify"]["cases"][0].update(verdict="FAIL"), "must_passed: is 3 but"),
    ],
)
def test_certify_validation(synth: Any, mutate: Any, message: str) -> None:
    certify = synth.certify(synth.cases)
    with pytest.raises(ResultsSchemaError, match=message):
        validate_result(_broken(certify, mutate))


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (3, "written by a newer wsmode"),
        (0, "written by an older wsmode"),
        ("1", "must be an integer"),
    ],
)
def test_other_schema_versions_are_refused_not_misread(
    synth: Any, tmp_path: Path, version: object, message: str
) -> None:
    r = synth.certify(synth.cases)
    r["schema_version"] = version
    path = tmp_path / "old.json"
    path.write_text(json.dumps(r))
    with pytest.raises(ResultsSchemaError, match=f"schema_version: version .* {message}"):
        load_result(path)


def test_load_refuses_non_results_and_nan(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}')
    with pytest.raises(ResultsSchemaError, match="not a wsmode results file"):
        load_result(p)
    p.write_text('{"schema": NaN}')
    with pytest.raises(ResultsSchemaError, match="NaN is not valid JSON"):
        load_result(p)
    with pytest.raises(ResultsSchemaError, match="cannot read"):
        load_result(tmp_path / "missing.json")


def test_json_schema_document_matches_the_validator(synth: Any) -> None:
    doc = json.loads(SCHEMA_JSON_PATH.read_text())
    assert doc["properties"]["schema_version"]["enum"] == [1, 2]
    bench = synth.bench(rollouts=2, turns=2)
    cert = synth.certify(synth.cases)
    assert set(doc["required"]) <= set(bench) and set(doc["required"]) <= set(cert)
    sample_required = doc["$defs"]["bench"]["properties"]["samples"]["items"]["required"]
    assert set(sample_required) == set(bench["bench"]["samples"][0])
    case_required = doc["$defs"]["certify"]["properties"]["cases"]["items"]["required"]
    assert set(case_required) == set(cert["certify"]["cases"][0])


def test_store_paths_are_safe_and_never_overwrite(synth: Any, tmp_path: Path) -> None:
    assert slug("../../etc/passwd") == "etc-passwd"
    assert slug("  ") == "unnamed"
    assert (
        result_path(tmp_path, "bench", "Vendor X/Prod", "2025-03-01T10:00:00.5Z", "nightly #3")
        == tmp_path / "bench" / "vendor-x-prod" / "20250301T100000Z-nightly-3.json"
    )
    r = synth.bench(rollouts=2, turns=2, target="Vendor X")
    first = write_result(tmp_path, r)
    second = write_result(tmp_path, r)
    assert first != second and second.name.endswith("-run-2.json")
    assert load_result(first) == load_result(second) == r
    cert = synth.certify(synth.cases)
    write_result(tmp_path, cert)
    (tmp_path / "bench" / "junk.json").write_text("{}")
    (tmp_path / "README.md").write_text("not a result")

    infos = list_results(tmp_path)
    good = [i for i in infos if i.error is None]
    assert [(i.kind, i.target) for i in good] == [
        ("certify", "reference"),
        ("bench", "Vendor X"),
        ("bench", "Vendor X"),
    ]
    bad = [i for i in infos if i.error is not None]
    assert len(bad) == 1 and "junk.json" in str(bad[0].path)
    assert list_results(tmp_path / "nowhere") == []


def test_write_refuses_an_invalid_result(synth: Any, tmp_path: Path) -> None:
    r = synth.certify(synth.cases)
    r["label"] = ""
    with pytest.raises(ResultsSchemaError, match="label"):
        write_result(tmp_path, r)
    assert not any(tmp_path.rglob("*.json"))


def test_a_version_1_file_is_read_and_labelled_with_its_ttft_definition(
    synth: Any, tmp_path: Path
) -> None:
    old = json.loads(dumps_result(synth.bench(rollouts=1, turns=2)))
    old["schema_version"] = 1
    del old["bench"]["ttft_definition"]
    for sample in old["bench"]["samples"]:
        sample.pop("ttfe_ms", None)
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(old))
    loaded = load_result(path)
    assert loaded["bench"]["ttft_definition"] == "first-output-event"
    assert ttft_definition(loaded) == "first-output-event"
    assert ttft_definition(synth.bench(rollouts=1, turns=1)) == "first-content-token"


def test_a_version_2_bench_file_must_name_a_known_ttft_definition(synth: Any) -> None:
    result = synth.bench(rollouts=1, turns=1)
    del result["bench"]["ttft_definition"]
    with pytest.raises(ResultsSchemaError, match=r"bench\.ttft_definition: missing"):
        validate_result(result)
    result["bench"]["ttft_definition"] = "first-byte"
    with pytest.raises(ResultsSchemaError, match=r"bench\.ttft_definition: must be one of"):
        validate_result(result)
