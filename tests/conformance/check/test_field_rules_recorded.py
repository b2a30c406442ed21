"""The field rules (issue 41) over real traffic: every recording in ../shared/recorded/ and the
committed certificates' wire logs. No finding on api.openai.com traffic (a rule that fails the
real service is wrong, not the recording); the third-party findings are exactly the ones below,
written up in results/THIRD-PARTY.md (the recordings' own deviations: tests/protocol/recorded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.conformance.certificates.wirelog_compact import expand_entries
from harness.conformance.check.offline_check import RECORDED_SUFFIXES, check_file
from harness.protocol.field_rules import FIELD_RULES
from harness.protocol.request_rules import judge_recorded
from tests.recorded import RECORDED, needs

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ("streams-set1", "set3/streams", "project-corpus/protocol-recorded")
# the targets' certificates (a client certificate's wire log is the server's side of it)
CERTIFICATES = sorted((ROOT / "results" / "certify").glob("*/*/report.json"))

# Recordings of servers other than api.openai.com that break a field rule: file -> rules.
THIRD_PARTY: dict[str, frozenset[str]] = {
    # OpenRouter lists its reasoning item under another id than the one it streamed
    "thirdparty-openrouter-gpt-oss-20b.jsonl": frozenset({"output.own_items"}),
    "test_openai_responses_raw_cot_stream_openrouter.yaml": frozenset({"output.own_items"}),
    # GitHub Copilot's gateway gives every event a fresh id: the listed items are new ones
    "github-copilot-id-rotation.1.chunks.txt": frozenset({"output.own_items"}),
}


def recordings() -> list[Path]:
    found: list[Path] = []
    for source in SOURCES:
        folder = RECORDED / source
        found += sorted(
            p
            for p in folder.rglob("*")
            if p.is_file() and p.suffix in RECORDED_SUFFIXES and p.name != "MANIFEST.json"
        )
    return found


def field_findings(path: Path) -> set[str]:
    report = check_file(path)
    every = [*report.findings, *(f for r in report.responses for f in r.findings)]
    return {f.rule_id for f in every if f.rule_id in FIELD_RULES}


@needs(RECORDED)
def test_the_recordings_are_many_and_the_third_party_ones_are_among_them() -> None:
    paths = recordings()
    assert len(paths) >= 200
    assert set(THIRD_PARTY) <= {p.name for p in paths}


@needs(RECORDED)
@pytest.mark.parametrize("source", SOURCES)
def test_field_rules_find_nothing_on_openai_and_only_the_known_elsewhere(source: str) -> None:
    checked = 0
    for path in recordings():
        if not str(path).startswith(str(RECORDED / source)):
            continue
        checked += 1
        assert field_findings(path) == THIRD_PARTY.get(path.name, frozenset()), path
    assert checked > 0


def connections(report: Path) -> dict[str, list[tuple[str, object]]]:
    """Every judgeable connection of a certificate's wire logs: (direction, decoded frame)."""
    document = json.loads(report.read_text(encoding="utf-8"))
    found: dict[str, list[tuple[str, object]]] = {}
    for case in document["certify"]["cases"]:
        if not isinstance(case.get("wire_log"), list):
            continue
        expanded = expand_entries(case["wire_log"])
        for _, entry in expanded.entries:
            conn = f"{case['id']} {entry.get('conn')}"
            if entry.get("conn") in expanded.unjudgeable or entry.get("kind") != "text":
                continue
            try:
                frame: object = json.loads(str(entry.get("data", "")))
            except ValueError:
                frame = None
            found.setdefault(conn, []).append((str(entry.get("dir")), frame))
    return found


# The certificate wire logs' request-rule findings: (target, case) -> rules.
WIRE_LOG_FINDINGS: dict[tuple[str, str], frozenset[str]] = {
    # LiteLLM echoes the upstream's id on a continuation hydrated on a new connection
    ("litellm-proxy", "5.1.store-true.other-connection"): frozenset(
        {"response.previous_response_id"}
    ),
    ("litellm-proxy", "5.1.store-true.after-reconnect"): frozenset(
        {"response.previous_response_id"}
    ),
    ("litellm-proxy", "2.1.function-call.after-reconnect"): frozenset(
        {"response.previous_response_id"}
    ),
}


@pytest.mark.parametrize("report", CERTIFICATES, ids=lambda p: p.parts[-3])
def test_the_certificates_wire_logs_give_exactly_the_written_findings(report: Path) -> None:
    target = json.loads(report.read_text(encoding="utf-8"))["target"]["name"]
    expected = {k: set(v) for k, v in WIRE_LOG_FINDINGS.items() if k[0] == target}
    # `wsmode check` applies them all (the request rules to the pairs it finds)
    assert field_findings(report) == set().union(*expected.values())
    found: dict[tuple[str, str], set[str]] = {}
    exchanges = 0
    for conn, frames in connections(report).items():
        exchanges += sum(1 for direction, _ in frames if direction == "send")
        for violation in judge_recorded(frames):
            found.setdefault((target, conn.split()[0]), set()).add(violation.rule_id)
    assert found == expected
    assert exchanges > 0


def test_there_are_committed_certificates_to_judge() -> None:
    assert {p.parts[-3] for p in CERTIFICATES} >= {"litellm-proxy", "agentic-api"}


def test_wsmode_check_pairs_a_wire_logs_creates_with_the_events_answering_them(
    tmp_path: Path,
) -> None:
    from tests.protocol.conftest import full_stream

    def entry(direction: str, frame: dict[str, object]) -> dict[str, object]:
        data = json.dumps(frame)
        return {"t_ms": 0, "conn": "ws", "dir": direction, "kind": "text", "data": data}

    events = full_stream("resp_2")
    for event in events:
        if "response" in event:
            event["response"]["previous_response_id"] = "resp_1"  # the last response, say
    fresh_chain = {"type": "response.create", "model": "m", "input": "hi"}
    entries = [entry("send", fresh_chain), *(entry("recv", e) for e in events)]
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"cases": [{"id": "c1", "wire_log": entries}]}))
    report = check_file(path)
    assert [f.rule_id for f in report.findings] == ["response.previous_response_id"]
    assert report.must_findings == 1
    # the same stream answering a continuation of resp_1 is clean
    continuation = {**fresh_chain, "previous_response_id": "resp_1"}
    entries[0] = entry("send", continuation)
    path.write_text(json.dumps({"cases": [{"id": "c1", "wire_log": entries}]}))
    assert check_file(path).findings == []
