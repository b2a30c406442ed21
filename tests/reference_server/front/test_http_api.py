"""The HTTP side of the port: SSE framing, JSON, errors, health and metrics."""

from __future__ import annotations

import json

import httpx

from reference_server.app import ReferenceServer

from ..conftest import ServerFactory


def test_sse_framing_has_event_and_data_lines_and_no_done(server: ReferenceServer) -> None:
    with httpx.Client(base_url=server.http_url, timeout=10) as http:
        reply = http.post("/responses", json={"model": "m", "input": "hi", "stream": True})
    assert reply.status_code == 200 and reply.headers["content-type"].startswith(
        "text/event-stream"
    )
    blocks = [b for b in reply.text.split("\n\n") if b]
    for block in blocks:
        event_line, data_line = block.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        assert json.loads(data_line[6:])["type"] == event_line[7:]
    assert "[DONE]" not in reply.text
    assert json.loads(blocks[-1].split("\n")[1][6:])["type"] == "response.completed"


def test_errors_before_the_stream_are_http_errors(server: ReferenceServer) -> None:
    with httpx.Client(base_url=server.http_url, timeout=10) as http:
        missing = http.post(
            "/responses",
            json={"model": "m", "input": [], "previous_response_id": "resp_x", "stream": True},
        )
        garbage = http.post(
            "/responses", content=b"{oops", headers={"content-type": "application/json"}
        )
        not_found = http.get("/responses/resp_unknown")
        wrong_path = http.get("/nothing-here")
    assert (
        missing.status_code == 400
        and missing.json()["error"]["code"] == "previous_response_not_found"
    )
    assert garbage.status_code == 400 and garbage.json()["error"]["code"] == "invalid_json"
    assert not_found.status_code == 404 and not_found.json()["error"]["param"] == "response_id"
    assert wrong_path.status_code == 404


def test_auth_body_limit_health_and_metrics(make_server: ServerFactory) -> None:
    from reference_server.config import Limits

    with make_server(api_keys=("secret",), limits=Limits(max_message_bytes=10_000)) as server:
        base = f"http://127.0.0.1:{server.port}"
        with httpx.Client(base_url=base, timeout=10) as http:
            assert http.get("/healthz").json() == {"status": "ok"}
            denied = http.post("/v1/responses", json={"model": "m", "input": "hi"})
            assert denied.status_code == 401 and denied.json()["error"]["code"] == "invalid_api_key"
            headers = {"Authorization": "Bearer secret"}
            big = http.post(
                "/v1/responses", json={"model": "m", "input": "x" * 20_000}, headers=headers
            )
            assert big.status_code == 413
            ok = http.post("/v1/responses", json={"model": "m", "input": "hi"}, headers=headers)
            assert ok.status_code == 200 and ok.json()["status"] == "completed"
            metrics = http.get("/metrics").text
    assert 'wsmode_responses_total{status="completed",transport="http"} 1' in metrics
    assert (
        "wsmode_request_errors_total" in metrics and "# TYPE wsmode_cache_total counter" in metrics
    )
    assert "secret" not in metrics
