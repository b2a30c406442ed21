"""One connection's event stream split into responses, per lane (`stream_id`).

The per-response rules live in `accumulator.ResponseAccumulator`; this module decides which
response an event belongs to (PROTOCOL.md §5.2: responses of one lane never interleave), which
errors are request-level, and what arrives between a terminal and the next create. A beta reply
(`response.steer.*`, `response.inject.*`, §2.2) answers a client event, not a create: it goes to
the response it names when that one is running or has just ended on its lane, never opens one,
and is never a stray after a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.protocol.accumulator import (
    RULES,
    ResponseAccumulator,
    Violation,
    is_flat_error,
    is_nested_error,
)
from harness.protocol.beta import beta_problems, beta_target, is_beta_event
from harness.protocol.errors import ApiError, RuleBroken
from harness.protocol.events import Event
from harness.protocol.state import Phase


def _continues(active: ResponseAccumulator, event: Mapping[str, Any]) -> bool:
    """Whether `event` belongs to the lane's running response rather than opening a new one.

    A start event (created, queued) continues a response that has not started streaming yet:
    `response.created` (status queued) -> `response.queued` -> `response.in_progress`, or
    queued -> created, is one response (PROTOCOL.md §10). Anything else continues it."""
    if event.get("type") not in ("response.created", "response.queued"):
        return True
    if active.phase not in (Phase.QUEUED, Phase.CREATED):
        return False
    response = event.get("response")
    new_id = response.get("id") if isinstance(response, dict) else None
    return active.response_id is None or new_id == active.response_id


def is_request_error(event: Mapping[str, Any], response: ResponseAccumulator | None) -> bool:
    """Whether `event` is a request-level `error`: one that comes before any event of its
    response (`response` is None or has taken none), so the request was refused and no response
    failed (PROTOCOL.md §4.1)."""
    return event.get("type") == "error" and (response is None or response.event_count == 0)


def is_unnumbered_error(event: Mapping[str, Any]) -> bool:
    """An `error` without a sequence_number. Only a running response's errors are numbered
    (PROTOCOL.md §4.1), so on a socket that carries several requests it answers another request
    (a bad frame sent mid-stream), not the running response."""
    return event.get("type") == "error" and not isinstance(event.get("sequence_number"), int)


@dataclass(slots=True)
class RequestError:
    """An `error` that belongs to no running response: the request was refused."""

    error: ApiError
    event: Event
    stream_id: str | None


@dataclass(slots=True)
class BetaReply:
    """A reply to a steer or an inject; `response` is the one it names, when it was seen."""

    event: Event
    stream_id: str | None
    response: ResponseAccumulator | None


class StreamAccumulator:
    """Splits one connection's event stream into responses, per lane (`stream_id`).

    Within a lane responses never interleave (PROTOCOL.md §5.2); a `response.created` while the
    lane's previous response is unfinished is reported as `conn.no_interleave`, and an event
    between a response's terminal and the next create as that response's
    `lifecycle.after_terminal` (it still goes on to open a new response, which it cannot).
    """

    def __init__(
        self,
        *,
        raise_on: type[RuleBroken] | None = None,
        on_response: Callable[[ResponseAccumulator], None] | None = None,
        starting_after: int | None = None,
        seen_responses: Collection[str] = (),
    ) -> None:
        self.raise_on = raise_on
        # A resumed stream (PROTOCOL.md §10): the request's `starting_after`, and the ids of
        # responses seen before (earlier streams of one recording) whose continuation this may be.
        self.starting_after = starting_after
        self.seen_responses = seen_responses
        self.on_response = on_response
        self.current: dict[str | None, ResponseAccumulator] = {}
        self.finished: list[ResponseAccumulator] = []
        self.ended: dict[str | None, ResponseAccumulator] = {}  # per lane, until the next create
        self.request_errors: list[RequestError] = []
        self.abandoned: list[ResponseAccumulator] = []  # cut off by the next response's start
        self.opened = 0  # responses opened so far (a reader may prune `finished` as it goes)
        self.violations: list[Violation] = []
        self.beta_replies: list[BetaReply] = []
        self._beta_types: set[str] = set()

    def _beta_reply(self, lane: str | None, event: Mapping[str, Any]) -> BetaReply:
        """File a beta reply with the response it names (running or just ended, any lane)."""
        event_type = str(event.get("type"))
        if event_type not in self._beta_types:
            self._beta_types.add(event_type)
            self._violate("event.beta", f"beta reply {event_type} (PROTOCOL.md §2.2)")
        target = beta_target(event)
        candidates = (*self.current.values(), *self.ended.values())
        response = next((r for r in candidates if r.response_id == target), None)
        if response is not None:
            response.feed(event)
        else:
            problems = beta_problems(event)
            if problems:
                self._violate("beta.schema", f"{event_type}: {', '.join(problems)}")
        reply = BetaReply(dict(event), lane, response)
        self.beta_replies.append(reply)
        return reply

    def feed(
        self, event: Mapping[str, Any]
    ) -> ResponseAccumulator | RequestError | BetaReply | None:
        """Route one event; returns the response it belongs to, the request error, or the beta
        reply (which neither opens nor ends a response)."""
        stream_id = event.get("stream_id")
        lane = stream_id if isinstance(stream_id, str) else None
        if is_beta_event(event):
            return self._beta_reply(lane, event)
        active = self.current.get(lane)
        event_type = event.get("type")
        self._check_after_terminal(lane, event)
        if is_request_error(event, active) or is_unnumbered_error(event):
            request_error = RequestError(ApiError.from_event(dict(event)), dict(event), lane)
            if is_flat_error(event):
                self._violate("event.flat_error", "error event with a flat {code, message}")
            elif not is_nested_error(event):
                self._violate(
                    "error.shape", "error event without a nested {type, code, message, param}"
                )
            self.request_errors.append(request_error)
            return request_error
        if active is not None and not _continues(active, event):
            self._violate(
                "conn.no_interleave", f"{event_type} before the previous response's terminal"
            )
            self.abandoned.append(active)
            active = None
        if active is None:
            active = ResponseAccumulator(raise_on=self.raise_on)
            self.opened += 1
            if self.opened == 1 and self._resumes(event):
                active.resume(event, self.starting_after)
            self.current[lane] = active
        active.feed(event)
        if active.phase is Phase.DONE:
            del self.current[lane]
            self.ended[lane] = active
            self.finished.append(active)
            if self.on_response is not None:
                self.on_response(active)
        return active

    def _resumes(self, event: Mapping[str, Any]) -> bool:
        """Whether the lane's first response continues one begun before this stream: its request
        said `starting_after`, or its first event is not a start at 0 and names a response seen
        before. Anything else that starts mid-way is judged as a start (and fails)."""
        if self.starting_after is not None:
            return True
        response = event.get("response")
        response_id = response.get("id") if isinstance(response, dict) else None
        if not isinstance(response_id, str) or response_id not in self.seen_responses:
            return False
        return event.get("sequence_number") != 0

    def _check_after_terminal(self, lane: str | None, event: Mapping[str, Any]) -> None:
        """A stray between a lane's terminal and its next create is the ended response's
        `lifecycle.after_terminal` (a request-level error is not a stray)."""
        ended = self.ended.get(lane)
        if ended is None:
            return
        if event.get("type") in ("response.created", "response.queued"):
            del self.ended[lane]
        elif not is_unnumbered_error(event):
            ended.after_terminal(event)

    def _violate(self, rule_id: str, message: str) -> None:
        self.violations.append(Violation(rule_id, message))
        if self.raise_on is not None and RULES[rule_id][0] != "INFO":
            raise self.raise_on(rule_id, message)

    def all_violations(self) -> Iterator[Violation]:
        yield from self.violations
        for response in (*self.finished, *self.abandoned, *self.current.values()):
            yield from response.violations
