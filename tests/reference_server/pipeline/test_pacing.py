"""The server's bound on deltas per second (`emission.DeltaPacer`) in the decode loop."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest

from harness.protocol.emitter import ResponseEmitter
from harness.protocol.events import Event, response_object
from reference_server.cost_profiles import load_cost_profile
from reference_server.engine.emission import DeltaPacer
from reference_server.engine.engine import Engine, Seed
from reference_server.hooks.faults import EventFaults, Faults
from reference_server.pipeline import inference
from reference_server.pipeline.outbox import Outbox
from reference_server.runtime.metrics import ServerMetrics

TEXT = " x" * 60  # 60 tokens of one piece each


def _deltas(pacer: DeltaPacer | None, **profile: Any) -> tuple[list[str], list[float]]:
    """The text deltas of one scripted response at 1,000 tok/s, and when each was written."""
    engine_profile = load_cost_profile("zero").with_overrides(decode_tokens_per_s=1000.0, **profile)
    plan = Engine(engine_profile).plan(
        seed=Seed("x"), input_tokens=1, script=[{"type": "message", "text": TEXT}]
    )
    deltas: list[str] = []
    written: list[float] = []

    async def send(*events: Event) -> None:
        for event in events:
            if event["type"] == "response.output_text.delta":
                deltas.append(str(event["delta"]))
                written.append(time.perf_counter())

    async def respond() -> None:
        emitter = ResponseEmitter(response_object("resp_1", "m", created_at=1_760_000_000))
        out = Outbox(send, EventFaults(Faults()))
        await out.emit([emitter.created(), emitter.in_progress()], hold=True)
        await inference.decode(
            plan,
            emitter,
            out,
            time.perf_counter(),
            ServerMetrics(),
            max_tokens_per_delta=int(engine_profile.max_tokens_per_delta),
            pacer=pacer,
        )
        await out.flush()

    asyncio.run(asyncio.wait_for(respond(), 10))  # bounds a hang only
    return deltas, written


def test_the_interval_grows_with_the_streams_decoding() -> None:
    pacer = DeltaPacer(max_deltas_per_s=5_000)
    assert pacer.interval_s() == 0.0
    pacer.active = 1_000
    assert pacer.interval_s() == pytest.approx(0.2)  # 1,000 streams x 5 deltas/s
    assert DeltaPacer(0).interval_s() == 0.0  # no bound
    with pytest.raises(ValueError):
        DeltaPacer(-1)


def test_a_long_interval_holds_tokens_back_but_never_the_last() -> None:
    """A 30 s interval: the first delta goes when due, the rest wait for the item's last
    token's due time (60 ms later), not for the interval."""
    pacer = DeltaPacer(max_deltas_per_s=1 / 30)
    deltas, _ = _deltas(pacer)
    assert "".join(deltas) == TEXT
    assert 1 <= len(deltas) <= 2
    assert pacer.active == 0  # the stream counted itself out


def test_deltas_are_at_least_one_interval_apart_but_the_last() -> None:
    pacer = DeltaPacer(max_deltas_per_s=1 / 0.02)  # one stream: 20 ms between its deltas
    deltas, written = _deltas(pacer)
    assert "".join(deltas) == TEXT
    gaps = [b - a for a, b in itertools.pairwise(written)]
    assert all(gap >= 0.019 for gap in gaps[:-1])  # less a write's own time after its stamp
    assert len(deltas) < 60  # coalesced


def test_a_cap_on_tokens_per_delta_is_kept_and_the_pacer_left_out() -> None:
    pacer = DeltaPacer(max_deltas_per_s=1 / 30)
    deltas, _ = _deltas(pacer, max_tokens_per_delta=1.0)
    assert deltas == [" x"] * 60
    assert pacer.active == 0
