"""The terminal Response's `wsmode` stamps: written as `ServerStamps`, read back whole. Ids:
random from the OS, read in blocks, never shared by a forked child."""

from __future__ import annotations

import os
import re

import pytest

from harness.protocol.extension import EXTENSION_FIELD, ServerStamps, read_server_stamps
from harness.transport.exchange import ws_exchange
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer
from reference_server.pipeline.response import new_id

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


def test_ids_are_prefixed_hex_and_unique_across_several_blocks() -> None:
    ids = [new_id("resp") for _ in range(1_000)]  # 16 bytes each: ~4 reads of 4 KiB
    assert all(re.fullmatch(r"resp_[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_reuse_the_parents_buffered_bytes() -> None:
    new_id("resp")  # the parent now holds a partly used block
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave at once
        os.write(write_end, new_id("resp").encode())
        os._exit(0)
    os.close(write_end)
    child_id = os.read(read_end, 64).decode()
    os.waitpid(pid, 0)
    os.close(read_end)
    assert child_id.startswith("resp_") and child_id != new_id("resp")
