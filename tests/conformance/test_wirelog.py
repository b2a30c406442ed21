"""Wire logs keep what verdicts cite: frames shortened around the cited members, delta runs
collapsed with their text, close frames logged once."""

from __future__ import annotations

import json
from typing import Any

from harness.conformance.wirelog import clip, collapse_deltas, keep_ends, shorten_json


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


def delta(conn: str, text: str, t_ms: float) -> dict[str, Any]:
    data = json.dumps({"type": "response.output_text.delta", "delta": text})
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


def test_keep_ends_says_how_many_rows_it_left_out() -> None:
    rows = [{"t_ms": float(i), "bytes": 1, "kind": "text"} for i in range(100)]
    kept = keep_ends(rows, 40, 10)
    assert len(kept) == 51 and kept[40]["kind"] == "elided"
    assert kept[40]["data"].startswith("50 rows elided")
