"""A second opinion on a stream: the official `openai` SDK's own parser and accumulator.

Two checks, both on the installed openai-python (`pip install openai`):

* **event models**: each event whose type the SDK knows is validated against that type's model
  (`ResponsesServerEvent`, the WebSocket union: the SSE events plus `stream_id`, with the nested
  `error`). Unknown types pass (PROTOCOL.md §9). Fields the SDK marks required but recorded
  production traffic omits (`LENIENT_MISSING`) are reported as notes, not findings.
* **accumulator**: the events are built the way the SDK builds them (`construct_type`) and fed to
  `ResponseStreamState.handle_event`, the state machine behind `client.responses.stream()`. Any
  exception it raises is a finding: a real client would have crashed on this stream.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.rules import rule_level
from harness.conformance.model.verdict import Finding
from harness.protocol.accumulator import is_flat_error
from harness.protocol.beta import is_beta_event

# Required by the SDK's models, absent from recorded production streams or optional in the
# protocol reference (PROTOCOL.md §3.4: `cache_write_tokens?`; §9: recordings of the older API
# have no `sequence_number` and no `logprobs`; the protocol core reports those as
# `event.legacy_fields`, SHOULD).
LENIENT_MISSING = frozenset({"cache_write_tokens", "sequence_number", "logprobs"})


def matching_branch_errors(errors: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A union's errors, without those of the branches the value is not: pydantic reports every
    member of `item: ResponseOutputItem` (message, file search, ...), and a member whose `type`
    literal does not match is not the model the server meant. What is left names the right one."""
    wrong = {
        tuple(e.get("loc") or ())[:-1]
        for e in errors
        if e.get("type") == "literal_error" and tuple(e.get("loc") or ())[-1:] == ("type",)
    }
    return [
        e for e in errors if not any(tuple(e.get("loc") or ())[: len(w)] == w for w in wrong if w)
    ]


def in_progress_item_field(event_type: str, error: Mapping[str, Any]) -> bool:
    """A field missing from the item of `output_item.added`: an in-progress snapshot (a
    web_search_call has no `action` yet) fills it in by its `output_item.done`."""
    loc = tuple(error.get("loc") or ())
    return event_type == "response.output_item.added" and loc[:1] == ("item",)


def returned_input(event_type: str, error: Mapping[str, Any]) -> bool:
    """A field of the input a failed steer or inject returns: the client's input as sent,
    invalid on purpose when that was why it failed (PROTOCOL.md §2.2)."""
    loc = tuple(str(part) for part in error.get("loc") or ())
    if event_type == "response.inject.failed":
        return loc[:1] == ("input",)
    return event_type == "response.steer.failed" and loc[:2] == ("steer", "input")


def is_structural(error: Mapping[str, Any]) -> bool:
    """A validation error that a client would trip over: a required member absent, or a member
    of the wrong JSON kind. Values outside the SDK's enums and union tags it does not know are
    forward compatibility (new error codes, new item types: PROTOCOL.md §9): the SDK's own
    runtime parser (`construct_type`) accepts them, so they are notes, not findings."""
    kind = str(error.get("type", ""))
    loc = error.get("loc") or ()
    if kind == "missing":
        return not (loc and str(loc[-1]) in LENIENT_MISSING)
    return kind.endswith(("_type", "_parsing")) and kind != "model_attributes_type"


@dataclass
class SdkReport:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    final_text: str | None = None  # the SDK's `output_text` of a completed response
    available: bool = True


def sdk_version() -> str | None:
    try:
        import openai
    except ImportError:
        return None
    return str(openai.__version__)


@functools.cache
def _event_models(beta: bool = False) -> dict[str, Any]:
    """Event type -> the SDK's model: the WebSocket union, plus with `beta` the beta replies to
    steer and inject (`client.beta.responses.connect`, PROTOCOL.md §2.2; their own models, not
    the whole beta union, whose schema takes seconds to build; an `agent` tag is an extra field
    the WebSocket models accept)."""
    from openai.types.responses.responses_server_event import ResponsesServerEvent

    union: Any = ResponsesServerEvent
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    members = list(typing.get_args(union))
    if beta:
        from openai.types.beta.beta_response_inject_created_event import (
            BetaResponseInjectCreatedEvent,
        )
        from openai.types.beta.beta_response_inject_failed_event import (
            BetaResponseInjectFailedEvent,
        )
        from openai.types.beta.beta_response_steer_accepted_event import (
            BetaResponseSteerAcceptedEvent,
        )
        from openai.types.beta.beta_response_steer_failed_event import (
            BetaResponseSteerFailedEvent,
        )
        from openai.types.beta.beta_response_steer_pending_event import (
            BetaResponseSteerPendingEvent,
        )

        members += [
            BetaResponseSteerAcceptedEvent,
            BetaResponseSteerPendingEvent,
            BetaResponseSteerFailedEvent,
            BetaResponseInjectCreatedEvent,
            BetaResponseInjectFailedEvent,
        ]
    models: dict[str, Any] = {}
    for model in members:
        literal = model.model_fields["type"].annotation
        for value in typing.get_args(literal):
            models[str(value)] = model
    return models


def known_event_types() -> frozenset[str]:
    return frozenset(_event_models())


def _finding(rule_id: str, message: str, event: Mapping[str, Any] | None = None) -> Finding:
    seq = event.get("sequence_number") if event is not None else None
    return Finding(rule_id, rule_level(rule_id), message, seq if isinstance(seq, int) else None)


def validate_events(
    events: Sequence[Mapping[str, Any]], report: SdkReport, *, beta: bool = False
) -> None:
    from pydantic import ValidationError

    models = _event_models(beta)
    for event in events:
        event_type = str(event.get("type", ""))
        model = models.get(event_type)
        if model is None:
            report.notes.append(f"SDK does not know event type {event_type!r} (passed through)")
            continue
        if event_type == "error" and is_flat_error(event):
            # openai-node declares it (PROTOCOL.md §10); the core judges it (event.flat_error)
            report.notes.append("error: flat {code, message, param} (openai-node's form)")
            continue
        try:
            model.model_validate(dict(event))
        except ValidationError as exc:
            strict: list[str] = []
            for error in matching_branch_errors(exc.errors()):
                loc = ".".join(str(part) for part in error.get("loc", ()))
                if returned_input(event_type, error):
                    continue  # the client's own input, returned as sent
                if not is_structural(error) or in_progress_item_field(event_type, error):
                    report.notes.append(f"{event_type}: {loc}: {error.get('msg')} (tolerated)")
                    continue
                strict.append(f"{loc}: {error.get('msg')}")
            if strict:
                report.findings.append(
                    _finding(
                        "sdk.event_model",
                        f"{event_type} does not validate as {model.__name__}: "
                        + "; ".join(strict[:4]),
                        event,
                    )
                )


def strict_problems(event: Mapping[str, Any]) -> list[str]:
    """Every way one event departs from the SDK's model, none tolerated: each validation error
    (a required member absent included), then each member the model does not declare
    (`undeclared: response.wsmode`). An event type the SDK does not know is one problem."""
    from pydantic import BaseModel, ValidationError

    model = _event_models().get(str(event.get("type", "")))
    if model is None:
        return [f"the SDK has no model for {event.get('type')!r}"]
    try:
        parsed = model.model_validate(dict(event))
    except ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}"
            for e in matching_branch_errors(exc.errors())
        ]

    def undeclared(value: Any, path: str) -> list[str]:
        if isinstance(value, BaseModel):
            found = [f"undeclared: {path}{name}" for name in value.model_extra or {}]
            for name in type(value).model_fields:
                found += undeclared(getattr(value, name), f"{path}{name}.")
            return found
        if isinstance(value, list):
            return [p for i, v in enumerate(value) for p in undeclared(v, f"{path}{i}.")]
        return []

    return undeclared(parsed, "")


def accumulate(events: Sequence[Mapping[str, Any]], report: SdkReport) -> None:
    from openai import omit
    from openai._models import construct_type
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses.response_stream_event import ResponseStreamEvent

    state: ResponseStreamState[object] = ResponseStreamState(input_tools=omit, text_format=omit)
    stream_type: Any = ResponseStreamEvent
    for event in events:
        if event.get("type") == "error" or is_beta_event(event):
            continue  # the SDK surfaces these to the caller (errors, replies): no stream state
        try:
            parsed: Any = construct_type(type_=stream_type, value=dict(event))
            state.handle_event(parsed)
        except Exception as exc:
            report.findings.append(
                _finding(
                    "sdk.accumulate",
                    f"openai-python's ResponseStreamState refused {event.get('type')}: "
                    f"{type(exc).__name__}: {exc}",
                    event,
                )
            )
            return
    completed = state._completed_response
    if completed is not None:
        report.final_text = completed.output_text


def warm_up() -> None:
    """Import the SDK and build its models once, outside any case's timing."""
    if sdk_version() is None:
        return
    check_stream([{"type": "response.created", "sequence_number": 0, "response": {}}])


def check_stream(events: Sequence[Mapping[str, Any]], *, beta: bool = False) -> SdkReport:
    """Both checks over the events of one response; request-level `error` events (a refused
    create) and replies to steers and injects are validated as models and skipped by the
    accumulator. `beta`: validate against the beta union (`BetaResponsesServerEvent`)."""
    try:
        import openai  # noqa: F401
    except ImportError:
        return SdkReport(available=False, notes=["openai-python is not installed"])
    report = SdkReport()
    validate_events(events, report, beta=beta)
    accumulate(events, report)
    return report
