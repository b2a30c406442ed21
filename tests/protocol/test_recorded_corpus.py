"""Every recorded real stream of the project's corpus through the checker (`wsmode check`'s core):
no MUST finding on any api.openai.com stream; the other servers' MUST findings are the ones
written down below (and in recorded/README.md), no more, no fewer.

The streams live beside the checkout (`tests/recorded.py`), not in it; provenance:
`tests/protocol/recorded/README.md`."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.conformance.check.offline_check import check_file
from tests.recorded import PROTOCOL_STREAMS as RECORDED
from tests.recorded import needs

FILES = sorted(p for p in RECORDED.glob("*/*") if p.name != "README.md")
pytestmark = needs(RECORDED)

# Streams from servers other than api.openai.com: (server, the MUST rules they break).
OTHER_SERVERS: dict[str, tuple[str, frozenset[str]]] = {
    "azure-code-interpreter-tool.1.chunks.txt": ("Azure OpenAI", frozenset()),
    "azure-image-generation-tool.1.chunks.txt": ("Azure OpenAI", frozenset()),
    "azure-reasoning-encrypted-content.1.chunks.txt": ("Azure OpenAI", frozenset()),
    "azure-text.1.chunks.txt": ("Azure OpenAI", frozenset()),
    "azure-tool-call.1.chunks.txt": ("Azure OpenAI", frozenset()),
    "azure-web-search-preview-tool.1.chunks.txt": ("Azure OpenAI", frozenset()),
    "lmstudio-basic.1.chunks.txt": ("LM Studio", frozenset()),
    "lmstudio-tool-call.1.chunks.txt": ("LM Studio", frozenset()),
    "lmstudio-tool-call.2.chunks.txt": ("LM Studio", frozenset()),
    # GitHub Copilot's gateway gives every event a fresh id (vercel/ai tests exactly that):
    # a client matching items by id, as openai-python's accumulator does, breaks.
    "github-copilot-id-rotation.1.chunks.txt": (
        "GitHub Copilot",
        frozenset({"response.id_stable", "item.id_match", "terminal.output_matches"}),
    ),
    # xAI leaves `error` and `instructions` out of the Response object.
    "xai-web-search-tool.1.chunks.txt": ("xAI", frozenset({"response.schema"})),
    # OpenRouter lists a reasoning item under another id than the one it streamed.
    "test_openai_responses_raw_cot_stream_openrouter.yaml": (
        "OpenRouter",
        frozenset({"terminal.output_matches"}),
    ),
}


def test_the_corpus_is_large_and_varied() -> None:
    sources = {p.parent.name for p in FILES}
    assert len(FILES) >= 30 and len(sources) >= 3
    assert set(OTHER_SERVERS) <= {p.name for p in FILES}


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_stream_gets_the_expected_verdict(path: Path) -> None:
    report = check_file(path)
    assert report.responses, "every recording holds at least one response"
    found = {
        f.rule_id
        for f in [*report.findings, *(f for r in report.responses for f in r.findings)]
        if f.level == "MUST"
    }
    _, expected = OTHER_SERVERS.get(path.name, ("api.openai.com", frozenset()))
    assert found == expected
    assert all(r.terminal is not None for r in report.responses)


def test_old_api_recording_gives_one_finding_per_cause() -> None:
    # an early-2025 stream without sequence_number: one SHOULD finding, with its count
    report = check_file(RECORDED / "pydantic-ai" / "test_openai_responses_stream.yaml")
    findings = report.responses[0].findings
    assert [(f.rule_id, f.level, f.count) for f in findings] == [
        ("event.legacy_fields", "SHOULD", 11)
    ]


def test_background_stream_created_queued_in_progress_is_one_response() -> None:
    report = check_file(RECORDED / "pydantic-ai" / "test_background_mode_streaming_vcr.yaml")
    assert [(r.verdict, r.events) for r in report.responses] == [("PASS", 17)]
