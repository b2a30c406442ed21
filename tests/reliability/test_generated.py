"""A few hundred generated bad inputs per transport (cases.py); bench/ratios/fuzz.py runs 10,000."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from .cases import Tally, http_case, ws_case

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
CI_CASES = 300


def test_generated_frames_over_websocket(thread_server: Any) -> None:
    tally = Tally()
    with thread_server() as server:

        @settings(max_examples=CI_CASES, deadline=None, database=None)
        @given(SEEDS)
        def one(seed: int) -> None:
            async def body() -> None:
                async with connect(server.ws_url, max_size=None) as ws:
                    await ws_case(ws, seed, tally)

            asyncio.run(body())

        one()
    assert tally.problems == []
    assert tally.cases >= CI_CASES and tally.errors_answered > CI_CASES // 2


def test_generated_bodies_over_http(thread_server: Any) -> None:
    tally = Tally()
    with thread_server() as server:

        @settings(
            max_examples=CI_CASES,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(SEEDS)
        def one(seed: int) -> None:
            http_case(server.http_url, seed, tally)

        one()
    assert tally.problems == []
    assert tally.cases >= CI_CASES and tally.errors_answered > CI_CASES // 2
