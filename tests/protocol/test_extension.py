"""Reading the server's `wsmode` stamps: whatever a server sends, each field or None."""

from __future__ import annotations

from typing import Any

from harness.protocol.extension import EXTENSION_FIELD, ReadStamps, read_server_stamps


def test_well_formed_stamps_read_as_sent() -> None:
    sent = {
        "resolution": "hydrate",
        "api_overhead_ms": 1.25,
        "inference_ttft_ms": 40,
        "ttft_ms": 41.5,
        "ttfe_ms": 41.0,
        "stages_ms": {"parse": 0.1, "routing": 2},
        "cached_tokens": 128,
    }
    assert read_server_stamps({EXTENSION_FIELD: sent}) == ReadStamps(
        resolution="hydrate",
        api_overhead_ms=1.25,
        inference_ttft_ms=40.0,
        ttft_ms=41.5,
        ttfe_ms=41.0,
        stages_ms={"parse": 0.1, "routing": 2.0},
        cached_tokens=128,
    )


def test_a_response_without_stamps_has_none() -> None:
    assert read_server_stamps({"id": "resp_1"}) is None
    assert read_server_stamps({EXTENSION_FIELD: ["not", "an", "object"]}) is None


def test_malformed_fields_read_as_none_and_malformed_stages_are_dropped() -> None:
    sent: dict[str, Any] = {
        "resolution": 3,
        "api_overhead_ms": True,  # a bool is not a number
        "inference_ttft_ms": "40",
        "ttft_ms": None,
        "stages_ms": {"parse": 0.5, "routing": "slow", 7: 1},
        "cached_tokens": 1.5,
    }
    stamps = read_server_stamps({EXTENSION_FIELD: sent})
    assert stamps == ReadStamps(
        resolution=None,
        api_overhead_ms=None,
        inference_ttft_ms=None,
        ttft_ms=None,
        ttfe_ms=None,
        stages_ms={"parse": 0.5, "7": 1.0},
        cached_tokens=None,
    )
    assert read_server_stamps({EXTENSION_FIELD: {"stages_ms": []}}) == ReadStamps(
        None, None, None, None, None, None, None
    )
