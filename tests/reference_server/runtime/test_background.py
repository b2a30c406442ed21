"""Background responses over HTTP (PROTOCOL.md §5.5), over real sockets: queued at once, polled,
streamed, resumed after a sequence number, cancelled; refused without store and over WS."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import openai

from reference_server.app import ReferenceServer

from ..conftest import ServerFactory

BODY: dict[str, Any] = {"model": "m", "input": "Tell me about tides.", "background": True}


def sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def poll_until_done(http: httpx.Client, response_id: str) -> dict[str, Any]:
    for _ in range(200):
        response: dict[str, Any] = http.get(f"/responses/{response_id}").json()
        if response["status"] not in ("queued", "in_progress"):
            return response
        time.sleep(0.05)
    raise AssertionError("the background response never ended")


def test_queued_then_polled_to_completion(server: ReferenceServer) -> None:
    with httpx.Client(base_url=server.http_url, timeout=10) as http:
        created = http.post("/responses", json=BODY).json()
        assert (created["status"], created["background"]) == ("queued", True)
        done = poll_until_done(http, created["id"])
    assert done["status"] == "completed" and done["background"] is True and done["output"]


def test_streamed_then_resumed_after_a_sequence_number(server: ReferenceServer) -> None:
    with httpx.Client(base_url=server.http_url, timeout=10) as http:
        streamed = sse_events(http.post("/responses", json=BODY | {"stream": True}).text)
        response_id = streamed[0]["response"]["id"]
        resumed = sse_events(
            http.get(f"/responses/{response_id}?stream=true&starting_after=3").text
        )
    types = [e["type"] for e in streamed]
    assert types[:3] == ["response.created", "response.queued", "response.in_progress"]
    assert streamed[0]["response"]["status"] == "queued" and types[-1] == "response.completed"
    assert [e["sequence_number"] for e in streamed] == list(range(len(streamed)))
    assert resumed == streamed[4:]


def test_cancel_stops_a_running_response(make_server: ServerFactory, tmp_path: Path) -> None:
    slow = tmp_path / "slow.toml"
    slow.write_text('name = "slow"\ndecode_tokens_per_s = 20.0\n', encoding="utf-8")
    with make_server(profile=str(slow)) as server:
        client = openai.OpenAI(api_key="sk-local", base_url=server.http_url, max_retries=0)
        created = client.responses.create(
            model="m", input="Write a long essay.", background=True, max_output_tokens=4000
        )
        assert created.status == "queued" and created.background
        cancelled = client.responses.cancel(created.id)
        retrieved = client.responses.retrieve(created.id)
    assert cancelled.status == "cancelled" and retrieved.status == "cancelled"


def test_refused_without_store_and_stream_only_for_background(server: ReferenceServer) -> None:
    with httpx.Client(base_url=server.http_url, timeout=10) as http:
        no_store = http.post("/responses", json=BODY | {"store": False})
        plain = http.post("/responses", json={"model": "m", "input": "hi"}).json()
        not_background = http.get(f"/responses/{plain['id']}?stream=true")
        cancel_plain = http.post(f"/responses/{plain['id']}/cancel")
    assert no_store.status_code == 400 and no_store.json()["error"]["param"] == "store"
    assert not_background.status_code == 400
    assert cancel_plain.status_code == 400
