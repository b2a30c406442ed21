"""The server's hooks behind one object: off, they change nothing; each on where it acts."""

from __future__ import annotations

import time

from harness.protocol.cache import ResponseCache
from harness.protocol.errors import ApiError
from harness.protocol.events import Event
from harness.protocol.requests import parse_create
from reference_server.hooks.faults import CaseBehaviour, Faults
from reference_server.hooks.server_hooks import QUEUE_FAULT_LINGER_S, ServerHooks
from reference_server.state.conversation import Conversation

from ..conftest import run

ERROR = ApiError(400, "invalid_request_error", "invalid_value", "no")


async def _nowhere(*events: Event) -> None:
    return None


def _lane() -> ResponseCache[Conversation]:
    return ResponseCache()


def test_off_hooks_leave_the_create_its_send_and_its_events_alone() -> None:
    hooks = ServerHooks.of([], CaseBehaviour())
    request = parse_create({"model": "m", "input": "hi"}, transport="ws")
    assert hooks.script is None and hooks.observer is None and not hooks.acts_on_creates
    assert hooks.event_faults() is None and hooks.create_transport == "ws"
    assert hooks.answer(request) is request and hooks.after_response(0) is None
    hooked = hooks.on_create(request, _lane(), _nowhere, lambda: None)
    assert hooked.request is request and hooked.send is _nowhere and hooked.refusal is None
    assert "error" in hooks.error_event(ERROR, None)


def test_each_fault_reaches_the_hook_that_carries_it() -> None:
    assert ServerHooks(Faults(accept_background=True)).create_transport == "http"
    assert ServerHooks(Faults(skip_sequence_number=True)).event_faults() is not None
    flat = ServerHooks(Faults(flat_error=True)).error_event(ERROR, None)
    assert "error" not in flat and flat["code"] == "invalid_value"
    lingering = ServerHooks(Faults(drop_queued=True))
    assert lingering.acts_on_creates
    request = parse_create({"model": "m", "input": "hi"}, transport="ws")
    hooked = lingering.on_create(request, _lane(), _nowhere, lambda: None)
    started = time.perf_counter()
    run(hooked.send({"type": "response.created"}))
    assert time.perf_counter() - started >= QUEUE_FAULT_LINGER_S * 0.9


def test_a_client_case_scripts_answers_and_refuses_its_create() -> None:
    hooks = ServerHooks.of([], CaseBehaviour(reply_tokens=3, error_for_create=0))
    request = parse_create({"model": "m", "input": "hi"}, transport="ws")
    assert hooks.acts_on_creates and hooks.answer(request).script is not None
    hooked = hooks.on_create(request, _lane(), _nowhere, lambda: None)
    assert hooked.refusal is not None and hooked.refusal["type"] == "error"
    assert hooked.case_index == 0
