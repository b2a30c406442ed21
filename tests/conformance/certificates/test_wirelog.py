"""Wire logs keep what verdicts cite: frames shortened around the cited members, delta runs
collapsed with their text, close frames logged once."""

from __future__ import annotations

import json
from typing import Any

from harness.conformance.certificates.wirelog import clip, shorten_json
from harness.conformance.certificates.wirelog_compact import (
    collapse_deltas,
    compact_entries,
    expand_entries,
)


def test_a_large_terminal_frame_keeps_usage_status_and_error_whole() -> None:
    usage = {"input_tokens": 7, "output_tokens": 5000, "total_tokens": 5007}
    text = "x" * 20_000
    frame = json.dumps(
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "status": "completed",
                "error": None,
                "usage": usage,
                "output": [{"type": "message", "content": [{"text": text}]}] * 3,
            },
        }
    )
    shown = shorten_json(frame, 4096)
    event = json.loads(shown)  # still JSON: cut between members, never inside one
    assert event["response"]["usage"] == usage and event["response"]["status"] == "completed"
    assert "error" in event["response"]
    inner = event["response"]["output"][0]["content"][0]["text"]
    assert "[19760 of 20000 characters elided]" in inner
    assert inner.startswith("x") and inner.endswith("x")


def test_clip_elides_the_middle_and_says_how_much() -> None:
    assert clip("abcdefghij", 6) == "abcd…[4 of 10 characters elided]…ij"
    assert clip("short", 6) == "short"


def delta(conn: str, text: str, t_ms: float, seq: int | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "response.output_text.delta", "delta": text}
    if seq is not None:
        event["sequence_number"] = seq
    data = json.dumps(event)
    return {"t_ms": t_ms, "conn": conn, "dir": "recv", "kind": "text", "bytes": 9, "data": data}


def test_a_delta_run_becomes_first_summary_last_with_the_text() -> None:
    created = {"t_ms": 0.0, "conn": "ws1", "dir": "recv", "kind": "text", "bytes": 1, "data": "{}"}
    run = [delta("ws1", w, float(i + 1)) for i, w in enumerate(["He", "l", "l", "o", "!"])]
    out = collapse_deltas([created, *run])
    assert [e["kind"] for e in out] == ["text", "text", "deltas", "text"]
    assert out[1] is run[0] and out[3] is run[-1]
    assert out[2]["data"].startswith("3 × response.output_text.delta collapsed")
    assert '"Hello!"' in out[2]["data"] and out[2]["bytes"] == 27
    short = [delta("ws1", "a", 1.0), delta("ws1", "b", 2.0)]
    assert collapse_deltas(short) == short  # fewer than four: kept as they are


def test_a_seq_gap_or_another_item_ends_a_run() -> None:
    gap = [
        delta("ws1", w, float(i), seq)
        for i, (w, seq) in enumerate(zip("abcdef", [3, 4, 5, 7, 8, 9], strict=True))
    ]
    assert collapse_deltas(gap) == gap, "a jump in sequence_number stays visible, frame by frame"


def test_the_compact_log_expands_to_every_received_frame() -> None:
    long_text = "word " * 200  # over LONG_FIELD_CHARS: repeated later, referenced
    sent = {"t_ms": 0.0, "conn": "ws1", "dir": "send", "kind": "text", "bytes": 5000}
    sent["data"] = json.dumps({"type": "response.create", "input": "x" * 5000})
    pieces = [long_text[i : i + 100] for i in range(0, len(long_text), 100)]
    deltas = [delta("ws1", p, float(i + 1), seq=i + 1) for i, p in enumerate(pieces)]
    done = {"type": "response.output_text.done", "text": long_text, "sequence_number": 11}
    item = {"type": "response.output_item.done", "item": {"content": [{"text": long_text}]}}
    tail = [
        {
            "t_ms": 20.0,
            "conn": "ws1",
            "dir": "recv",
            "kind": "text",
            "bytes": 1,
            "data": json.dumps(e),
        }
        for e in (done, {**item, "sequence_number": 12})
    ]
    entries = [sent, *deltas, *tail]
    compact = compact_entries(entries, collapse=True, sent_chars=512)
    assert len(compact) < len(entries) and len(json.dumps(compact)) < len(json.dumps(entries))
    assert "…[same as long string #0 of ws1" in compact[-1]["data"]
    expanded = expand_entries(compact)
    assert expanded.unjudgeable == {}
    received = [e for e in entries if e["dir"] == "recv"]
    rebuilt = [e for _, e in expanded.entries if e["dir"] == "recv"]
    assert [json.loads(e["data"]) for e in rebuilt] == [json.loads(e["data"]) for e in received]


def test_an_older_abridged_log_is_said_not_judgeable() -> None:
    row = {"t_ms": 1.0, "conn": "ws1", "dir": "recv", "kind": "deltas", "bytes": 9, "data": "3 ×"}
    assert "without its record" in expand_entries([row]).unjudgeable["ws1"]


def test_references_expanding_past_the_budget_leave_the_connection_unjudged(
    monkeypatch: Any,
) -> None:
    from harness.conformance.certificates import wirelog_compact

    long_text = "x" * 1000
    first = {"type": "response.output_text.done", "text": long_text}
    ref = "…[same as long string #0 of c1, 1000 characters]…"
    rows = [{"t_ms": 0, "conn": "c1", "dir": "recv", "kind": "text", "data": json.dumps(first)}]
    rows += [
        {
            "t_ms": 1,
            "conn": "c1",
            "dir": "recv",
            "kind": "text",
            "data": json.dumps({**first, "text": ref}),
        }
        for _ in range(50)
    ]
    assert "c1" not in wirelog_compact.expand_entries(rows).unjudgeable  # 50 kB: within budget
    monkeypatch.setattr(wirelog_compact, "MAX_EXPANDED_BYTES", 10_000)
    monkeypatch.setattr(wirelog_compact, "_OVER_BUDGET", "over budget")
    expanded = wirelog_compact.expand_entries(rows)
    assert expanded.unjudgeable["c1"] == "over budget"
