"""WebSocket-mode semantics of PROTOCOL.md §1-5, over real sockets on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from harness.protocol.cache import CachePolicy
from harness.protocol.errors import ApiError
from harness.transport.exchange import ws_exchange
from harness.transport.failures import HttpStatusError
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer
from reference_server.config import Limits

from .conftest import TOOLS, ServerFactory, run, user

TIMEOUT_S = 10.0


def with_client(
    server: ReferenceServer, body: Callable[[WsClient], Awaitable[Any]], **connect: Any
) -> Any:
    async def main() -> Any:
        client = await WsClient.connect(server.ws_url, **connect)
        try:
            return await body(client)
        finally:
            await client.close()

    return run(main())


async def request_error(client: WsClient, body: dict[str, Any]) -> ApiError:
    exchange = await ws_exchange(client, body, timeout_s=TIMEOUT_S)
    assert exchange.request_error is not None, [e.type for e in exchange.events]
    return exchange.request_error


async def completed(client: WsClient, body: dict[str, Any]) -> dict[str, Any]:
    exchange = await ws_exchange(client, body, timeout_s=TIMEOUT_S)
    assert exchange.ok, (exchange.request_error, exchange.transport_error)
    assert exchange.response is not None and exchange.response.violations == []
    assert exchange.final_response is not None
    return exchange.final_response


def test_stream_field_ignored_unknown_fields_tolerated_background_refused(
    server: ReferenceServer,
) -> None:
    async def body(client: WsClient) -> None:
        response = await completed(
            client, {"model": "m", "input": "hi", "stream": True, "client_metadata": {"a": "b"}}
        )
        assert response["status"] == "completed"
        error = await request_error(client, {"model": "m", "input": "hi", "background": True})
        assert (error.status, error.code, error.param) == (
            400,
            "unsupported_parameter",
            "background",
        )
        await completed(client, {"model": "m", "input": "still open"})

    with_client(server, body)


def test_instructions_are_not_inherited(server: ReferenceServer) -> None:
    async def body(client: WsClient) -> None:
        first = await completed(
            client, {"model": "m", "input": "hi", "instructions": "Be terse.", "store": False}
        )
        assert first["instructions"] == "Be terse."
        second = await completed(
            client,
            {
                "model": "m",
                "input": [user("more")],
                "previous_response_id": first["id"],
                "store": False,
            },
        )
        assert second["instructions"] is None

    with_client(server, body)


def test_function_call_output_must_answer_a_call_of_the_chain(server: ReferenceServer) -> None:
    async def body(client: WsClient) -> None:
        first = await completed(client, {"model": "m", "input": "hi", "store": False})
        orphan = {"type": "function_call_output", "call_id": "call_nope", "output": "x"}
        error = await request_error(
            client,
            {"model": "m", "input": [orphan], "previous_response_id": first["id"], "store": False},
        )
        assert error.param == "input[0].call_id" and "call_nope" in error.message

    with_client(server, body)


def test_failed_continuation_evicts_its_parent(server: ReferenceServer) -> None:
    async def body(client: WsClient) -> None:
        parent = await completed(client, {"model": "m", "input": "hi", "store": False})
        bad = {"type": "message", "role": "wizard", "content": "x"}
        await request_error(
            client,
            {"model": "m", "input": [bad], "previous_response_id": parent["id"], "store": False},
        )
        error = await request_error(
            client,
            {
                "model": "m",
                "input": [user("retry")],
                "previous_response_id": parent["id"],
                "store": False,
            },
        )
        assert error.code == "previous_response_not_found"

    with_client(server, body)


@pytest.mark.parametrize(
    ("refused", "code"),
    [
        ({"temperature": "hot"}, "invalid_type"),  # refused as the frame is parsed
        ({"max_output_tokens": 5}, "integer_below_min_value"),
        ({"multi_agent": {"enabled": True}}, "unsupported_parameter"),  # refused by the turn
    ],
)
def test_a_continuation_refused_at_any_point_evicts_its_parent(
    server: ReferenceServer, refused: dict[str, Any], code: str
) -> None:
    async def body(client: WsClient) -> None:
        parent = await completed(client, {"model": "m", "input": "hi", "store": False})
        continuation = {"model": "m", "input": [user("go")], "previous_response_id": parent["id"]}
        error = await request_error(client, continuation | {"store": False} | refused)
        assert error.code == code
        retry = await request_error(client, continuation | {"store": False})
        assert retry.code == "previous_response_not_found"

    with_client(server, body)


def test_only_the_most_recent_response_is_cached_by_default(server: ReferenceServer) -> None:
    async def body(client: WsClient) -> None:
        first = await completed(client, {"model": "m", "input": "one", "store": False})
        await completed(client, {"model": "m", "input": "two", "store": False})
        error = await request_error(
            client, {"model": "m", "input": [], "previous_response_id": first["id"], "store": False}
        )
        assert error.code == "previous_response_not_found"

    with_client(server, body)


def test_store_true_hydrates_an_older_id_and_another_socket(server: ReferenceServer) -> None:
    async def body(client: WsClient) -> str:
        first = await completed(client, {"model": "m", "input": "one", "store": True})
        await completed(client, {"model": "m", "input": "two", "store": True})
        hydrated = await completed(
            client, {"model": "m", "input": [], "previous_response_id": first["id"]}
        )
        assert hydrated["wsmode"]["resolution"] == "hydrate"
        return str(first["id"])

    first_id = with_client(server, body)

    async def other_socket(client: WsClient) -> None:
        again = await completed(
            client, {"model": "m", "input": [user("x")], "previous_response_id": first_id}
        )
        assert again["previous_response_id"] == first_id

    with_client(server, other_socket)
    assert server.services.metrics.value("wsmode_cache_total", outcome="hydrate") == 2


def test_store_false_id_is_unknown_on_another_socket(server: ReferenceServer) -> None:
    first = with_client(
        server, lambda c: completed(c, {"model": "m", "input": "one", "store": False})
    )

    async def other(client: WsClient) -> None:
        error = await request_error(
            client, {"model": "m", "input": [], "previous_response_id": first["id"]}
        )
        assert error.code == "previous_response_not_found"
        await completed(client, {"model": "m", "input": "socket still usable"})

    with_client(server, other)


def test_cache_depth_n_is_lru(make_server: ServerFactory) -> None:
    with make_server(cache=CachePolicy(depth=2)) as server:

        async def body(client: WsClient) -> None:
            a = await completed(client, {"model": "m", "input": "a", "store": False})
            b = await completed(client, {"model": "m", "input": "b", "store": False})
            # touching a makes b the least recently used
            a2 = await completed(
                client, {"model": "m", "input": [], "previous_response_id": a["id"], "store": False}
            )
            assert a2["wsmode"]["resolution"] == "hit"
            error = await request_error(
                client, {"model": "m", "input": [], "previous_response_id": b["id"], "store": False}
            )
            assert error.code == "previous_response_not_found"

        with_client(server, body)


def test_queued_creates_run_fifo_without_interleaving(server: ReferenceServer) -> None:
    async def body(client: WsClient) -> list[str]:
        for index in range(3):
            await client.send_json(
                {
                    "type": "response.create",
                    "model": "m",
                    "input": f"q{index}",
                    "store": False,
                    "metadata": {"index": str(index)},
                }
            )
        order: list[str] = []
        open_response: str | None = None
        while len(order) < 3:
            event = (await client.recv(TIMEOUT_S)).event
            if event["type"] == "response.created":
                assert open_response is None, "a second response started before the first ended"
                open_response = event["response"]["id"]
            if event["type"] == "response.completed":
                assert event["response"]["id"] == open_response
                order.append(event["response"]["metadata"]["index"])
                open_response = None
        return order

    assert with_client(server, body) == ["0", "1", "2"]


def test_queue_bound_gives_an_error_never_a_silent_drop(make_server: ServerFactory) -> None:
    with make_server(
        profile="spark-1000tps", limits=Limits(max_pending_per_connection=1)
    ) as server:

        async def body(client: WsClient) -> None:
            for index in range(4):
                await client.send_json(
                    {"type": "response.create", "model": "m", "input": f"q{index}"}
                )
            completions, errors = 0, []
            while completions + len(errors) < 4:
                event = (await client.recv(TIMEOUT_S)).event
                if event["type"] == "response.completed":
                    completions += 1
                elif event["type"] == "error":
                    errors.append(event)
            assert completions == 2 and len(errors) == 2
            assert all(
                e["error"]["code"] == "too_many_pending_responses" and e["status"] == 429
                for e in errors
            )

        with_client(server, body)


def test_connection_lifetime_limit(make_server: ServerFactory) -> None:
    with make_server(limits=Limits(connection_lifetime_s=0.5)) as server:

        async def body(client: WsClient) -> None:
            await completed(client, {"model": "m", "input": "quick"})
            event = (await client.recv(5)).event
            assert event["type"] == "error" and "sequence_number" not in event
            assert event["error"]["code"] == "websocket_connection_limit_reached"
            code, _ = await client.wait_closed(5)
            assert code == 1000

        with_client(server, body)


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("{not json", "invalid_json"),
        ("[1, 2]", "invalid_event"),
        ('{"type": "response.cancel"}', "unknown_event_type"),
        ("[" * 200 + "]" * 200, "invalid_json"),
        (
            '{"type": "response.create", "model": "m", "input": "x", "temperature": NaN}',
            "invalid_json",
        ),
        (
            '{"type": "response.create", "model": "m", "input": "x", "max_output_tokens": '
            + "9" * 5000
            + "}",
            "invalid_json",
        ),
        ('{"type": "response.create", "type": "response.create"}', "invalid_json"),
    ],
)
def test_bad_frames_get_a_clear_error_and_the_socket_stays_open(
    server: ReferenceServer, frame: str, code: str
) -> None:
    async def body(client: WsClient) -> None:
        await client.send_text(frame)
        event = (await client.recv(TIMEOUT_S)).event
        assert event["type"] == "error" and event["status"] == 400
        assert event["error"]["code"] == code
        message = event["error"]["message"]
        assert "Traceback" not in message and "/" not in message and "Error:" not in message
        await completed(client, {"model": "m", "input": "after the bad frame"})

    with_client(server, body)


def test_binary_frame_closes_with_1003(server: ReferenceServer) -> None:
    async def body(client: WsClient) -> None:
        await client.send_bytes(b"\x00\x01")
        event = (await client.recv(TIMEOUT_S)).event
        assert event["error"]["code"] == "unsupported_frame"
        code, _ = await client.wait_closed(TIMEOUT_S)
        assert code == 1003

    with_client(server, body)


def test_oversized_message_closes_with_1009(make_server: ServerFactory) -> None:
    with make_server(limits=Limits(max_message_bytes=64 * 1024)) as server:

        async def body(client: WsClient) -> None:
            await client.send_json(
                {"type": "response.create", "model": "m", "input": "x" * 100_000}
            )
            code, _ = await client.wait_closed(TIMEOUT_S)
            assert code == 1009

        with_client(server, body)


def test_context_length_exceeded(make_server: ServerFactory) -> None:
    with make_server(limits=Limits(context_window_tokens=50)) as server:

        async def body(client: WsClient) -> None:
            error = await request_error(client, {"model": "m", "input": "word " * 200})
            assert (error.code, error.param) == ("context_length_exceeded", "input")

        with_client(server, body)


def test_auth_is_checked_before_the_upgrade_and_keys_are_isolated(
    make_server: ServerFactory,
) -> None:
    with make_server(api_keys=("key-a", "key-b")) as server:

        async def refused() -> None:
            for key in (None, "wrong"):
                with pytest.raises(HttpStatusError) as info:
                    await WsClient.connect(server.ws_url, api_key=key)
                assert info.value.status == 401 and b"invalid_api_key" in info.value.body

        run(refused())
        stored = with_client(
            server,
            lambda c: completed(c, {"model": "m", "input": "a", "store": True}),
            api_key="key-a",
        )

        async def as_b(client: WsClient) -> None:
            error = await request_error(
                client, {"model": "m", "input": [], "previous_response_id": stored["id"]}
            )
            missing = await request_error(
                client, {"model": "m", "input": [], "previous_response_id": "resp_random"}
            )
            assert error.code == missing.code == "previous_response_not_found"
            assert error.message.replace(stored["id"], "X") == missing.message.replace(
                "resp_random", "X"
            )

        with_client(server, as_b, api_key="key-b")


def test_beta_header_is_optional(server: ReferenceServer) -> None:
    response = with_client(
        server, lambda c: completed(c, {"model": "m", "input": "hi"}), beta_header=True
    )
    assert response["status"] == "completed"


def test_disconnect_mid_stream_cancels_generation(make_server: ServerFactory) -> None:
    with make_server(profile="legacy-65tps") as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            await client.send_json(
                {
                    "type": "response.create",
                    "model": "m",
                    "input": "long",
                    "store": False,
                    "wsmode": {"script": [{"type": "message", "tokens": 2000}]},
                }
            )
            while (await client.recv(TIMEOUT_S)).type != "response.output_text.delta":
                pass
            assert server.services.metrics.in_flight == 1
            client.connection.transport.abort()
            for _ in range(100):
                if (
                    server.services.metrics.in_flight == 0
                    and server.services.metrics.connections == 0
                ):
                    break
                await asyncio.sleep(0.02)

        run(body())
        assert server.services.metrics.in_flight == 0
        assert server.services.metrics.connections == 0


def test_tool_choice_named_and_parallel_calls(server: ReferenceServer) -> None:
    async def body(client: WsClient) -> None:
        named = await completed(
            client,
            {
                "model": "m",
                "input": "go",
                "tools": TOOLS,
                "tool_choice": {"type": "function", "name": "read_file"},
            },
        )
        assert [i["type"] for i in named["output"]] == ["function_call"]
        error = await request_error(
            client,
            {
                "model": "m",
                "input": "go",
                "tools": TOOLS,
                "tool_choice": {"type": "function", "name": "nope"},
            },
        )
        assert error.param == "tool_choice"

    with_client(server, body)


def test_permessage_deflate_only_when_enabled(make_server: ServerFactory) -> None:
    from websockets.asyncio.client import connect

    async def negotiated(url: str) -> str | None:
        async with connect(url, compression="deflate") as ws:
            return ws.response.headers.get("Sec-WebSocket-Extensions")

    with make_server() as plain:
        assert run(negotiated(plain.ws_url)) is None
    with make_server(compression=True) as deflating:
        assert "permessage-deflate" in (run(negotiated(deflating.ws_url)) or "")
        response = with_client(deflating, lambda c: completed(c, {"model": "m", "input": "hi"}))
        assert response["status"] == "completed"
