"""The versioned results file: `{"schema": "wsmode-results", "schema_version": 2, ...}`.

One JSON object per run of `wsmode bench`, `wsmode load` or `wsmode certify`, always carrying
who measured what on which machine (see results/README.md for the field-by-field description and
`results_schema.json` beside this module for the same layout as a JSON Schema document).

`validate_result` is a hand-written structural check (no jsonschema dependency): the first problem
found raises `ResultsSchemaError` naming the field by its path (`bench.samples[3].ttft_ms`).
A file of an unknown `schema_version` is refused, never misread.

Version 2 changed what `ttft_ms` means (time to the first content token, not to the first output
event: `harness.protocol.timing_marks`) and added `ttfe_ms` for the old mark; a bench payload
names its definition in `bench.ttft_definition`. Version 1 files are still read: `parse_result`
labels them with the definition they used (`first-output-event`), so every reader can tell.

Kind `load` (a `wsmode load` run) carries the bench payload's layout under `load` (modes,
samples, comparisons) plus `load.throughput`; both latency kinds may carry a `workload` identity
(`harness.results.workload`), which gate and board compare.

Optional sections added within version 2 (a reader that does not know them ignores them, so
no version bump): `<kind>.slo` (goodput under `--slo`, harness.results.slo),
`<kind>.server_metrics` (the series scraped with `--server-metrics`, harness.load.server_metrics)
and the samples' `started_at_s` (epoch seconds of each turn's start).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.protocol.levels import REQUIREMENT_LEVELS
from harness.protocol.timing_marks import LEGACY_TTFT_DEFINITION, TTFT_DEFINITION
from harness.protocol.wire import (
    loads_document,
)
from harness.results.machine import harness_info, machine_info
from harness.results.reading import ResultsReadError, parse_record, read_result_document

SCHEMA_NAME = "wsmode-results"
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)  # v1: ttft_ms was the first output event (labelled when read)
TTFT_DEFINITIONS = {1: LEGACY_TTFT_DEFINITION, 2: TTFT_DEFINITION}
SCHEMA_JSON_PATH = Path(__file__).with_name("results_schema.json")

KINDS = ("bench", "load", "certify")
LATENCY_KINDS = ("bench", "load")  # kinds whose payload has modes, samples and comparisons
KNOWN_MODES = ("ws", "http", "http-chained")
VERDICTS = (
    "PASS",
    "FAIL",
    "NON-STRICT",
    "PRECONDITION",
    "INFORMATIONAL",
    "UNIMPLEMENTED",
    "ERROR",
)
SUMMARY_FIELDS = ("count", "p50", "p90", "p99", "mean")

_MODE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_METRIC_NAME = re.compile(r"^[a-z0-9_]+$")


class ResultsSchemaError(InputError, ValueError):
    """A results object or file does not follow the results schema this wsmode reads."""


# -- creating ----------------------------------------------------------------------------------
def utc_now_iso() -> str:
    """Now, as ISO 8601 UTC with millisecond precision and a `Z` suffix."""
    now = dt.datetime.now(dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def parse_time(value: str) -> dt.datetime:
    """Parse an ISO 8601 timestamp that must be in UTC (`Z` or `+00:00`)."""
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from exc
    if parsed.tzinfo is None or parsed.utcoffset() != dt.timedelta(0):
        raise ValueError(f"timestamp must be UTC (end with Z or +00:00): {value!r}")
    return parsed


def empty_payload(kind: str) -> dict[str, Any]:
    if kind == "load":
        return {**empty_payload("bench"), "time_scale": 0.0, "throughput": {}}
    if kind == "bench":
        return {
            "time_scale": 1.0,
            "ttft_definition": TTFT_DEFINITION,
            "modes": {},
            "samples": [],
            "rollouts": [],
            "comparisons": [],
        }
    if kind == "certify":
        return {"cases": [], "summary": certify_summary([])}
    raise ResultsSchemaError(f"kind: must be one of {', '.join(KINDS)}, got {kind!r}")


def new_result(
    kind: str,
    *,
    label: str,
    target: Mapping[str, Any],
    profile: str | None = None,
    config: Mapping[str, Any] | None = None,
    started_at: str | None = None,
) -> dict[str, Any]:
    """A result skeleton with harness, machine and start time filled in.

    The caller fills the `kind` payload (`result["bench"]` / `result["certify"]`) and then calls
    `finish_result`, which stamps `ended_at` (and the certify summary) and validates.
    A latency kind's writer adds `workload` (harness.results.workload).
    """
    payload = empty_payload(kind)
    if "name" not in target or "url" not in target:
        raise ResultsSchemaError("target: needs at least 'url' and 'name'")
    return {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "label": label,
        "harness": harness_info(),
        "machine": machine_info(),
        "target": {
            **target,
            "url": target["url"],
            "name": target["name"],
            "version": target.get("version"),
        },
        "profile": profile,
        "config": dict(config or {}),
        "started_at": started_at or utc_now_iso(),
        "ended_at": None,
        kind: payload,
    }


def finish_result(result: dict[str, Any], ended_at: str | None = None) -> dict[str, Any]:
    """Stamp `ended_at`, recompute the certify summary from its cases, validate; returns result."""
    result["ended_at"] = ended_at or utc_now_iso()
    if result.get("kind") == "certify" and isinstance(result.get("certify"), dict):
        result["certify"]["summary"] = certify_summary(result["certify"].get("cases", []))
    validate_result(result)
    return result


def certify_summary(cases: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """MUST/SHOULD passed and totals plus a count per verdict (all verdicts, zeros included)."""
    counts = dict.fromkeys(VERDICTS, 0)
    must_passed = must_total = should_passed = should_total = 0
    for case in cases:
        verdict, level = case.get("verdict"), case.get("level")
        if verdict in counts:
            counts[verdict] += 1
        if level == "MUST":
            must_total += 1
            must_passed += verdict == "PASS"
        elif level == "SHOULD":
            should_total += 1
            should_passed += verdict == "PASS"
    return {
        "must_passed": must_passed,
        "must_total": must_total,
        "should_passed": should_passed,
        "should_total": should_total,
        "counts": counts,
    }


# -- reading -----------------------------------------------------------------------------------
def is_client_certificate(result: Mapping[str, Any]) -> bool:
    """A certify result about a client (`wsmode certify-client`), not a server."""
    config = result.get("config")
    return (
        result.get("kind") == "certify"
        and isinstance(config, Mapping)
        and (config.get("subject") == "client")
    )


def dumps_result(result: Mapping[str, Any]) -> str:
    """Serialize (NaN/Infinity refused: they are not JSON)."""
    try:
        return json.dumps(result, indent=1, sort_keys=False, allow_nan=False) + "\n"
    except ValueError as exc:
        raise ResultsSchemaError(f"result is not JSON-serializable: {exc}") from exc


def read_json_document(text: str) -> Any:
    """A JSON document of unknown origin with its nesting bounded; ValueError when it is not one
    (the one reader of `harness.protocol.wire`, for the packages that may not import it)."""
    return loads_document(text)


def parse_result(text: str, source: str = "<result>") -> dict[str, Any]:
    """Parse and validate a results JSON text; errors name `source`."""
    try:
        obj = parse_record(text, source)  # the one strict parse of results JSON (reading.py)
    except ResultsReadError as exc:
        raise ResultsSchemaError(str(exc)) from None
    return _accepted(obj, source)


def _accepted(obj: Any, source: str) -> dict[str, Any]:
    """`obj` validated (errors name `source`), old versions labelled with their TTFT mark."""
    try:
        validate_result(obj)
    except ResultsSchemaError as exc:
        raise ResultsSchemaError(f"{source}: {exc}") from exc
    result: dict[str, Any] = obj
    if result["kind"] in LATENCY_KINDS:
        result[result["kind"]].setdefault(
            "ttft_definition", TTFT_DEFINITIONS[result["schema_version"]]
        )
    return result


def ttft_definition(result: Mapping[str, Any]) -> str:
    """Which TTFT mark a latency result's `ttft_ms` used (`timing_marks`), old files included."""
    bench = result.get(str(result.get("kind")))
    label = bench.get("ttft_definition") if isinstance(bench, Mapping) else None
    if isinstance(label, str):
        return label
    return TTFT_DEFINITIONS.get(result.get("schema_version"), TTFT_DEFINITION)  # type: ignore[arg-type]


# What gate and board never read: a certify case's wire log (95 % of a certificate's bytes).
REPORT_DROP = ("wire_log",)


def load_result(path: str | Path, *, drop: Collection[str] = ()) -> dict[str, Any]:
    """Read and validate a results file; refuses other schema versions with a clear message.

    Read in pieces (`harness.results.reading`): memory is the largest record plus what is kept;
    `drop` names fields left out of every record (`REPORT_DROP` for gate and board)."""
    p = Path(path)
    try:
        obj = read_result_document(p, drop=drop)
    except OSError as exc:
        raise ResultsSchemaError(f"{p}: cannot read: {exc}") from exc
    except ResultsReadError as exc:
        raise ResultsSchemaError(str(exc)) from None
    return _accepted(obj, str(p))


# -- validating --------------------------------------------------------------------------------
def _fail(path: str, message: str) -> ResultsSchemaError:
    return ResultsSchemaError(f"{path}: {message}")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"expected an object, got {_type_name(value)}")
    return value


def _get(obj: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise _fail(f"{path}.{key}" if path else key, "missing")
    return obj[key]


def _str(
    obj: Mapping[str, Any], key: str, path: str, *, nullable: bool = False, nonempty: bool = False
) -> str | None:
    value = _get(obj, key, path)
    where = f"{path}.{key}" if path else key
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _fail(
            where, f"expected a string{' or null' if nullable else ''}, got {_type_name(value)}"
        )
    if nonempty and not value.strip():
        raise _fail(where, "must not be empty")
    return value


def _num(
    obj: Mapping[str, Any],
    key: str,
    path: str,
    *,
    nullable: bool = False,
    minimum: float | None = None,
) -> float | None:
    value = _get(obj, key, path)
    where = f"{path}.{key}" if path else key
    if value is None and nullable:
        return None
    if not _is_number(value):
        raise _fail(
            where,
            f"expected a finite number{' or null' if nullable else ''}, got {_type_name(value)}",
        )
    if minimum is not None and value < minimum:
        raise _fail(where, f"must be >= {minimum}, got {value}")
    return float(value)


def _int(
    obj: Mapping[str, Any], key: str, path: str, *, nullable: bool = False, minimum: int | None = 0
) -> int | None:
    value = _get(obj, key, path)
    where = f"{path}.{key}" if path else key
    if value is None and nullable:
        return None
    if not _is_int(value):
        raise _fail(
            where, f"expected an integer{' or null' if nullable else ''}, got {_type_name(value)}"
        )
    if minimum is not None and value < minimum:
        raise _fail(where, f"must be >= {minimum}, got {value}")
    return int(value)


def _bool(obj: Mapping[str, Any], key: str, path: str) -> bool:
    value = _get(obj, key, path)
    if not isinstance(value, bool):
        raise _fail(f"{path}.{key}", f"expected a boolean, got {_type_name(value)}")
    return value


def _list(obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = _get(obj, key, path)
    if not isinstance(value, list):
        raise _fail(f"{path}.{key}", f"expected an array, got {_type_name(value)}")
    return value


def _time(obj: Mapping[str, Any], key: str) -> dt.datetime:
    value = _str(obj, key, "")
    assert value is not None
    try:
        return parse_time(value)
    except ValueError as exc:
        raise _fail(key, str(exc)) from exc


def _mode_name(value: Any, path: str) -> str:
    if not isinstance(value, str) or not _MODE_NAME.match(value):
        raise _fail(
            path, f"mode must be a lowercase name like {', '.join(KNOWN_MODES)}, got {value!r}"
        )
    return value


def validate_result(obj: Any) -> None:
    """Raise ResultsSchemaError naming the first field that does not follow the schema."""
    top = _obj(obj, "result")
    schema = top.get("schema")
    if schema != SCHEMA_NAME:
        raise _fail(
            "schema", f"expected {SCHEMA_NAME!r}, got {schema!r}: not a wsmode results file"
        )
    version: Any = top.get("schema_version")
    if version not in READABLE_VERSIONS or not _is_int(version):
        if _is_int(version) and version > SCHEMA_VERSION:
            hint = "it was written by a newer wsmode: upgrade wsmode to read it"
        elif _is_int(version):
            hint = "it was written by an older wsmode: re-run the benchmark to get a current file"
        else:
            hint = "the field must be an integer"
        raise _fail(
            "schema_version",
            f"version {version!r} is not supported (this wsmode reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}); {hint}",
        )
    kind = _get(top, "kind", "")
    if kind not in KINDS:
        raise _fail("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    _str(top, "label", "", nonempty=True)

    harness = _obj(_get(top, "harness", ""), "harness")
    _str(harness, "version", "harness")
    _str(harness, "commit", "harness")

    machine = _obj(_get(top, "machine", ""), "machine")
    _str(machine, "cpu_model", "machine")
    _int(machine, "cores", "machine", nullable=True, minimum=1)
    _int(machine, "memory_bytes", "machine", nullable=True)
    _str(machine, "python", "machine")
    _str(machine, "os", "machine")
    _str(machine, "hostname_hash", "machine")

    target = _obj(_get(top, "target", ""), "target")
    _str(target, "url", "target")
    _str(target, "name", "target", nonempty=True)
    _str(target, "version", "target", nullable=True)

    _str(top, "profile", "", nullable=True)
    _obj(_get(top, "config", ""), "config")
    started = _time(top, "started_at")
    ended = _time(top, "ended_at")
    if ended < started:
        raise _fail("ended_at", "is before started_at")

    for other in KINDS:
        if other != kind and other in top:
            raise _fail(other, f"a {kind} result must not carry a {other!r} payload")
    payload = _obj(_get(top, kind, ""), kind)
    _PAYLOAD_CHECKS[kind](payload)
    if kind in LATENCY_KINDS:
        _check_ttft_definition(payload, version, kind)
        if "workload" in top:
            _obj(top["workload"], "workload")
    elif "workload" in top:
        raise _fail("workload", f"a {kind} result carries no workload")


def _check_ttft_definition(bench: Mapping[str, Any], version: int, kind: str) -> None:
    """v2 names its TTFT mark; a v1 file may carry only the label a reader gave it."""
    known = (TTFT_DEFINITION, LEGACY_TTFT_DEFINITION)
    if version >= 2 or "ttft_definition" in bench:
        label = _str(bench, "ttft_definition", kind)
        if label not in known:
            raise _fail(f"{kind}.ttft_definition", f"must be one of {', '.join(known)}")


def _validate_load(load: dict[str, Any]) -> None:
    """A load payload: the bench layout, plus the throughput figures of each mode."""
    _validate_bench(load, "load")
    throughput = _obj(_get(load, "throughput", "load"), "load.throughput")
    for name, entry in throughput.items():
        path = f"load.throughput.{name}"
        _mode_name(name, path)
        entry = _obj(entry, path)
        _int(entry, "requests_ok", path)
        _int(entry, "requests_failed", path)
        _num(entry, "requests_per_s", path, minimum=0.0)


def _validate_bench(bench: dict[str, Any], where: str = "bench") -> None:
    _num(bench, "time_scale", where, minimum=0.0)
    modes = _obj(_get(bench, "modes", where), f"{where}.modes")
    for name, mode in modes.items():
        path = f"{where}.modes.{name}"
        _mode_name(name, path)
        mode = _obj(mode, path)
        histograms = _obj(_get(mode, "histograms", path), f"{path}.histograms")
        for metric, encoded in histograms.items():
            _validate_histogram(metric, encoded, f"{path}.histograms.{metric}")
        oor = _obj(mode.get("out_of_range", {}), f"{path}.out_of_range")
        for metric in oor:
            _int(oor, metric, f"{path}.out_of_range")
        summary = _obj(_get(mode, "summary", path), f"{path}.summary")
        for metric, entry in summary.items():
            entry = _obj(entry, f"{path}.summary.{metric}")
            _int(entry, "count", f"{path}.summary.{metric}")
            for field in SUMMARY_FIELDS[1:]:
                _num(entry, field, f"{path}.summary.{metric}")
        _int(mode, "failures", path)

    for i, sample in enumerate(_list(bench, "samples", where)):
        path = f"{where}.samples[{i}]"
        sample = _obj(sample, path)
        _str(sample, "rollout_id", path, nonempty=True)
        _mode_name(_get(sample, "mode", path), f"{path}.mode")
        _int(sample, "turn_index", path)
        for field in ("ttft_ms", "itl_ms", "tpot_ms", "turn_e2e_ms", "api_overhead_ms"):
            _num(sample, field, path, nullable=True)
        if "ttfe_ms" in sample:  # v2 (absent in v1 files)
            _num(sample, "ttfe_ms", path, nullable=True)
        for field in ("bytes_sent", "bytes_received", "context_tokens", "output_tokens"):
            _int(sample, field, path)
        ok = _bool(sample, "ok", path)
        error = _str(sample, "error", path, nullable=True)
        if not ok and error is None:
            raise _fail(f"{path}.error", "a failed turn (ok=false) must say why")

    for i, rollout in enumerate(_list(bench, "rollouts", where)):
        path = f"{where}.rollouts[{i}]"
        rollout = _obj(rollout, path)
        _str(rollout, "rollout_id", path, nonempty=True)
        _mode_name(_get(rollout, "mode", path), f"{path}.mode")
        for field in ("e2e_ms", "api_ms", "inference_ms", "tool_wait_ms"):
            _num(rollout, field, path, nullable=True)
        _int(rollout, "turns", path)
        _bool(rollout, "ok", path)

    for i, comp in enumerate(_list(bench, "comparisons", where)):
        path = f"{where}.comparisons[{i}]"
        comp = _obj(comp, path)
        _mode_name(_get(comp, "baseline_mode", path), f"{path}.baseline_mode")
        _mode_name(_get(comp, "mode", path), f"{path}.mode")
        _num(comp, "speedup_median", path, nullable=True)
        ci = _get(comp, "ci95", path)
        if ci is not None and not (
            isinstance(ci, list) and len(ci) == 2 and all(_is_number(x) for x in ci)
        ):
            raise _fail(f"{path}.ci95", "expected [low, high] numbers or null")
        _num(comp, "ttft_improvement_pct", path, nullable=True, minimum=None)
    if "slo" in bench:  # optional (--slo): harness.results.slo
        _validate_slo(_obj(bench["slo"], f"{where}.slo"), f"{where}.slo")
    if "server_metrics" in bench:  # optional (--server-metrics): harness.load.server_metrics
        path = f"{where}.server_metrics"
        _validate_server_metrics(_obj(bench["server_metrics"], path), path)


def _validate_server_metrics(section: dict[str, Any], where: str) -> None:
    _num(section, "interval_s", where, minimum=0.0)
    _num(section, "started_at_s", where, minimum=0.0)
    for i, source in enumerate(_list(section, "sources", where)):
        path = f"{where}.sources[{i}]"
        source = _obj(source, path)
        _str(source, "url", path, nonempty=True)
        _int(source, "scrapes", path)
        _int(source, "failed_scrapes", path)
        for j, series in enumerate(_list(source, "series", path)):
            spath = f"{path}.series[{j}]"
            series = _obj(series, spath)
            _str(series, "name", spath, nonempty=True)
            _obj(_get(series, "labels", spath), f"{spath}.labels")
            for k, point in enumerate(_list(series, "points", spath)):
                if not (
                    isinstance(point, list) and len(point) == 2 and all(map(_is_number, point))
                ):
                    raise _fail(f"{spath}.points[{k}]", "expected [t_s, value] numbers")


def _validate_slo(slo: dict[str, Any], where: str) -> None:
    for i, target in enumerate(_list(slo, "targets", where)):
        path = f"{where}.targets[{i}]"
        target = _obj(target, path)
        _str(target, "metric", path, nonempty=True)
        _num(target, "percentile", path, minimum=0.0)
        _num(target, "limit_ms", path, minimum=0.0)
    for name, entry in _obj(_get(slo, "modes", where), f"{where}.modes").items():
        path = f"{where}.modes.{name}"
        entry = _obj(entry, path)
        _int(entry, "turns", path)
        _int(entry, "turns_good", path)
        _num(entry, "turn_goodput", path, nullable=True, minimum=0.0)
        _bool(entry, "met", path)


def _validate_histogram(metric: str, encoded: Any, path: str) -> None:
    from harness.results.histograms import LatencyHistogram

    if not _METRIC_NAME.match(metric):
        raise _fail(path, "metric names are lowercase with units in the key, like 'ttft_ms'")
    if not isinstance(encoded, str):
        raise _fail(path, f"expected an encoded HdrHistogram string, got {_type_name(encoded)}")
    try:
        LatencyHistogram.decode(encoded)
    except ValueError as exc:
        raise _fail(path, str(exc)) from exc


def _validate_certify(certify: dict[str, Any]) -> None:
    seen: set[str] = set()
    cases = _list(certify, "cases", "certify")
    for i, case in enumerate(cases):
        path = f"certify.cases[{i}]"
        case = _obj(case, path)
        case_id = _str(case, "id", path, nonempty=True)
        if case_id in seen:
            raise _fail(f"{path}.id", f"duplicate case id {case_id!r}")
        seen.add(str(case_id))
        _str(case, "section", path)
        if _get(case, "level", path) not in REQUIREMENT_LEVELS:
            raise _fail(
                f"{path}.level",
                f"must be one of {', '.join(REQUIREMENT_LEVELS)}, got {case['level']!r}",
            )
        _str(case, "title", path)
        if _get(case, "verdict", path) not in VERDICTS:
            raise _fail(
                f"{path}.verdict", f"must be one of {', '.join(VERDICTS)}, got {case['verdict']!r}"
            )
        _num(case, "duration_ms", path, nullable=True, minimum=0.0)
        rule_ids = _list(case, "rule_ids", path)
        if not all(isinstance(r, str) for r in rule_ids):
            raise _fail(f"{path}.rule_ids", "expected an array of strings")
        _str(case, "detail", path)

    summary = _obj(_get(certify, "summary", "certify"), "certify.summary")
    expected = certify_summary(cases)
    for field in ("must_passed", "must_total", "should_passed", "should_total"):
        value = _int(summary, field, "certify.summary")
        if value != expected[field]:
            raise _fail(
                f"certify.summary.{field}", f"is {value} but the cases give {expected[field]}"
            )
    counts = _obj(_get(summary, "counts", "certify.summary"), "certify.summary.counts")
    for verdict in counts:
        if verdict not in VERDICTS:
            raise _fail(f"certify.summary.counts.{verdict}", "unknown verdict")
    for verdict in VERDICTS:
        n = counts.get(verdict, 0)
        if n != expected["counts"][verdict]:
            raise _fail(
                f"certify.summary.counts.{verdict}",
                f"is {n!r} but the cases give {expected['counts'][verdict]}",
            )


_PAYLOAD_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "bench": _validate_bench,
    "load": _validate_load,
    "certify": _validate_certify,
}
