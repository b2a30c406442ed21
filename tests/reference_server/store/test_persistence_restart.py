"""store=true responses survive a restart; store=false ones never touch disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from harness.transport.exchange import ws_exchange
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer

from ..conftest import ServerFactory, run, user


async def _turn(server: ReferenceServer, body: dict[str, Any]) -> Any:
    client = await WsClient.connect(server.ws_url)
    try:
        return await ws_exchange(client, body, timeout_s=10)
    finally:
        await client.close()


def _store_rows(data_dir: Path) -> str:
    with sqlite3.connect(data_dir / "responses.sqlite3") as db:
        return repr(db.execute("SELECT * FROM responses").fetchall())


def test_store_true_survives_restart_and_store_false_does_not(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    with make_server() as server:
        stored = run(_turn(server, {"model": "m", "input": "keep me", "store": True}))
        ephemeral = run(_turn(server, {"model": "m", "input": "forget me", "store": False}))
        assert stored.ok and ephemeral.ok
    assert stored.response_id in _store_rows(tmp_path / "data")
    assert ephemeral.response_id not in _store_rows(tmp_path / "data")

    with make_server() as restarted:  # same data dir, new process state
        continued = run(
            _turn(
                restarted,
                {"model": "m", "input": [user("next")], "previous_response_id": stored.response_id},
            )
        )
        assert continued.ok
        assert continued.final_response["wsmode"]["resolution"] == "hydrate"
        lost = run(
            _turn(
                restarted,
                {"model": "m", "input": [], "previous_response_id": ephemeral.response_id},
            )
        )
        assert lost.request_error is not None
        assert lost.request_error.code == "previous_response_not_found"

        async def retrieve() -> dict[str, Any]:
            async with SseClient(restarted.http_url) as http:
                return await http.retrieve(str(stored.response_id))

        assert run(retrieve())["output"] == stored.final_response["output"]


def test_http_created_id_hydrates_over_websocket(server: ReferenceServer) -> None:
    async def body() -> None:
        async with SseClient(server.http_url) as http:
            created = await http.create({"model": "m", "input": "over http", "store": True})
        follow = await _turn(
            server,
            {"model": "m", "input": [user("over ws")], "previous_response_id": created["id"]},
        )
        assert follow.ok and follow.final_response["wsmode"]["resolution"] == "hydrate"
        # the hydrated chain carries the HTTP turn's items: more tokens than the new item alone
        assert follow.final_response["usage"]["input_tokens"] > created["usage"]["input_tokens"]

    run(body())
