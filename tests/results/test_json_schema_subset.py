"""The JSON Schema subset validator (harness.results.json_schema_subset) fails what it must."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from harness.results.json_schema_subset import SchemaKeywordError, SchemaViolation, Validator
from harness.results.llmd_report import llmd_report, report_schema


@pytest.fixture
def report(synth: Any) -> dict[str, Any]:
    return llmd_report(synth.bench(rollouts=6, turns=3), "ws")


def _violation(report: dict[str, Any]) -> str:
    with pytest.raises(SchemaViolation) as caught:
        Validator(report_schema()).validate(report)
    return str(caught.value)


def test_a_valid_report_passes_and_each_kind_of_break_is_named(report: dict[str, Any]) -> None:
    Validator(report_schema()).validate(report)
    broken = copy.deepcopy(report)
    del broken["run"]["uid"]
    assert "$.run: missing required 'uid'" in _violation(broken)
    broken = copy.deepcopy(report)
    broken["results"]["request_performance"]["aggregate"]["requests"]["total"] = "18"
    assert "requests.total: expected integer, got str" in _violation(broken)
    broken = copy.deepcopy(report)
    broken["results"]["speed"] = 1
    assert "$.results: unexpected property 'speed'" in _violation(broken)
    broken = copy.deepcopy(report)
    broken["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"][
        "units"
    ] = "msec"
    assert "'msec' is not one of" in _violation(broken)
    broken = copy.deepcopy(report)
    broken["run"]["time"]["start"] = "yesterday"
    assert "not an ISO 8601 date-time" in _violation(broken)
    broken = copy.deepcopy(report)
    broken["scenario"]["stack"][0]["standardized"]["kind"] = "inference_engine"
    assert "matches none of oneOf" in _violation(broken)  # an engine needs its accelerator
    broken = copy.deepcopy(report)
    broken["results"]["session_performance"]["sessions"]["failed"] = -1
    assert "under the minimum 0" in _violation(broken)


def test_integers_follow_the_draft_and_booleans_are_no_numbers() -> None:
    v = Validator({"type": "integer"})
    assert v.errors(3.0, v.schema) == [] and v.errors(True, v.schema) != []
    assert v.errors(3.5, v.schema) != []


def test_a_keyword_it_does_not_know_is_an_error_not_a_pass() -> None:
    v = Validator({"type": "string", "pattern": "^a"})
    with pytest.raises(SchemaKeywordError, match="'pattern'"):
        v.validate("b")
