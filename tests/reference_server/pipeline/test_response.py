"""The terminal Response's `wsmode` stamps: written as `ServerStamps`, read back whole."""

from __future__ import annotations

from harness.protocol.extension import EXTENSION_FIELD, ServerStamps, read_server_stamps
from harness.transport.exchange import ws_exchange
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer

from ..conftest import run, user


def test_the_stamps_on_the_wire_are_the_typed_fields_and_read_back_whole(
    server: ReferenceServer,
) -> None:
    async def two_turns() -> list[dict[str, object]]:
        client = await WsClient.connect(server.ws_url, timeout_s=10)
        try:
            first = await ws_exchange(
                client, {"model": "m", "input": [user("hi")], "store": False}, timeout_s=10
            )
            body = {
                "model": "m",
                "input": [user("again")],
                "store": False,
                "previous_response_id": first.response_id,
            }
            second = await ws_exchange(client, body, timeout_s=10)
        finally:
            await client.close()
        assert first.final_response is not None and second.final_response is not None
        return [first.final_response, second.final_response]

    first, second = run(two_turns())
    for response, resolution in ((first, "none"), (second, "hit")):
        wire = response[EXTENSION_FIELD]
        assert isinstance(wire, dict)
        assert list(wire) == list(ServerStamps.__annotations__)  # the same keys, in order
        stamps = read_server_stamps(response)
        assert stamps is not None
        assert stamps.resolution == resolution
        assert stamps.ttft_ms is not None and stamps.ttft_ms >= 0
        assert stamps.ttfe_ms is not None and stamps.ttfe_ms <= stamps.ttft_ms
        assert stamps.api_overhead_ms is not None and stamps.inference_ttft_ms == 0.0
        assert stamps.stages_ms == wire["stages_ms"] and "routing" in stamps.stages_ms
        assert stamps.cached_tokens == wire["cached_tokens"]
