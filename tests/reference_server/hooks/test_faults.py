"""The typed fault switches, and the one output classification per message."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import pytest

from harness.protocol.emitter import ResponseEmitter
from harness.protocol.events import Event, response_object
from reference_server import commands
from reference_server.config import ServerConfig
from reference_server.cost_profiles import load_cost_profile
from reference_server.engine.engine import Engine, Seed
from reference_server.hooks.faults import (
    ALL_FAULTS,
    BEHAVIOUR_FAULTS,
    EVENT_FAULTS,
    EventFaults,
    Faults,
    check_fault_names,
)
from reference_server.pipeline import inference
from reference_server.pipeline.outbox import Outbox
from reference_server.runtime.metrics import ServerMetrics
from reference_server.runtime.services import Services
from reference_server.state.safety import classify_output

from ..conftest import run


@pytest.mark.parametrize("name", list(ALL_FAULTS))
def test_each_fault_name_switches_exactly_its_own_flag(name: str) -> None:
    faults = Faults.from_names([name])
    on = [field for field in Faults.__dataclass_fields__ if getattr(faults, field)]
    assert on == [name.replace("-", "_")]
    assert faults.rewrites_events == (name in EVENT_FAULTS)


def test_the_tables_split_the_faults_by_kind() -> None:
    assert EVENT_FAULTS.keys().isdisjoint(BEHAVIOUR_FAULTS)
    assert len(ALL_FAULTS) == len(Faults.__dataclass_fields__) == 35
    assert all(ALL_FAULTS.values())  # every fault says what it breaks


def test_names_that_are_no_fault_are_ignored_by_the_flags_and_refused_by_the_cli() -> None:
    assert Faults.from_names(["test-only-switch"]) == Faults()
    with pytest.raises(ValueError, match="unknown fault"):
        check_fault_names(["cache-fifo", "no-such-fault"])


def test_serve_fault_option_reaches_the_services(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    commands.add_server_options(parser)
    args = parser.parse_args(["--fault", "cache-fifo", "--fault", "flat-error"])
    config = commands.config_from_args(args).with_changes(data_dir=tmp_path, profile="zero")
    services = Services.build(config)
    try:
        faults = services.hooks.faults
        assert faults.cache_fifo and faults.flat_error
        assert not faults.shared_cache and services.shared_cache is None
    finally:
        services.persistence.close()


def test_shared_cache_fault_builds_one_cache(tmp_path: Path) -> None:
    config = ServerConfig(data_dir=tmp_path, profile="zero", faults=frozenset({"shared-cache"}))
    services = Services.build(config)
    try:
        assert services.shared_cache is not None
    finally:
        services.persistence.close()


def test_without_event_faults_events_pass_through_untouched() -> None:
    event: Event = {"type": "response.created", "sequence_number": 0}
    rewriter = EventFaults(Faults.from_names(["cache-fifo"]))
    assert not rewriter and rewriter.apply(event)[0] is event


def test_each_message_is_classified_once(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def counting(text: str) -> Any:
        seen.append(text)
        return classify_output(text)

    monkeypatch.setattr(inference, "classify_output", counting)
    script = [
        {"type": "message", "text": "first"},
        {"type": "function_call", "name": "f", "arguments": "{}"},
        {"type": "message", "text": "second"},
    ]
    plan = Engine(load_cost_profile("zero")).plan(seed=Seed("x"), input_tokens=1, script=script)
    sent: list[Event] = []

    async def send(*events: Event) -> None:
        sent.extend(events)

    emitter = ResponseEmitter(response_object("resp_1", "m", created_at=1_760_000_000))
    out = Outbox(send, EventFaults(Faults()))
    run(out.emit([emitter.created(), emitter.in_progress()]))
    decoded = run(inference.decode(plan, emitter, out, time.perf_counter(), ServerMetrics()))
    run(out.flush())
    assert decoded.status == "completed"
    assert seen == ["first", "second"]
    assert [e["type"] for e in sent].count("response.output_text.done") == 2


def _terminal(kind: str, **fields: Any) -> Event:
    response = response_object("resp_1", "m", created_at=1_760_000_000, store=False, **fields)
    return {"type": kind, "sequence_number": 5, "response": response}


def test_completed_with_incomplete_renames_only_the_incomplete_terminal() -> None:
    rewriter = EventFaults(Faults.from_names(["completed-with-incomplete"]))
    cut = _terminal("response.incomplete", status="incomplete")
    (out,) = rewriter.apply(cut)
    assert out["type"] == "response.completed" and out["response"]["status"] == "incomplete"
    done = _terminal("response.completed", status="completed")
    assert rewriter.apply(done) == [done]


def test_missing_response_fields_strips_store_completed_at_and_nulls_empty_metadata() -> None:
    rewriter = EventFaults(Faults.from_names(["missing-response-fields"]))
    (out,) = rewriter.apply(_terminal("response.completed", completed_at=1, metadata={}))
    assert "store" not in out["response"] and "completed_at" not in out["response"]
    assert out["response"]["metadata"] is None
    (tagged,) = rewriter.apply(_terminal("response.completed", metadata={"k": "v"}))
    assert tagged["response"]["metadata"] == {"k": "v"}  # given metadata still echoes
