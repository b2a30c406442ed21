"""One create's exchange as a conformance case sees it: judged by its terminal event (a broken
stream grammar is the event-order cases' business, not every case's), and the stream accumulator
that keeps every response it routed, for the findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.protocol.accumulator import ResponseAccumulator, Violation
from harness.protocol.events import reached_output_cap
from harness.protocol.stream import BetaReply, RequestError, StreamAccumulator
from harness.transport.exchange import Exchange


@dataclass
class CaseExchange(Exchange):
    """An Exchange that also keeps the raw terminal event that ended it.

    A case about continuations should not fail because the stream grammar is broken (that is
    what the event-order cases judge): the outcome, id and output come from the terminal event
    itself, as a client's `get_final_response()` would see them, even when the protocol core's
    accumulator refused the stream.
    """

    terminal: dict[str, Any] | None = None

    @property
    def terminal_type(self) -> str | None:
        if self.terminal is not None:
            return str(self.terminal.get("type"))
        return self.response.terminal_type if self.response is not None else None

    @property
    def final_response(self) -> dict[str, Any] | None:
        if self.terminal is not None:
            response = self.terminal.get("response")
            return response if isinstance(response, dict) else None
        return super().final_response

    @property
    def ok(self) -> bool:
        """Answered: completed, or cut by the max_output_tokens it was sent (`answered`)."""
        terminal = self.terminal_type
        final = self.final_response
        if terminal == "response.incomplete":
            return answered(final) and self.request.get("max_output_tokens") is not None
        return terminal == "response.completed" and final is not None

    @property
    def response_id(self) -> str | None:
        """The id response.created announced (what a streaming client keeps), else the
        terminal's: a target changing ids mid-response fails the id case, not every chain."""
        first = super().response_id
        if first is not None:
            return first
        final = self.final_response
        return str(final["id"]) if final is not None and isinstance(final.get("id"), str) else None

    def items(self) -> list[dict[str, Any]]:
        """The output items: the terminal's `output`, else what the stream finished."""
        final = self.final_response
        if final is not None and isinstance(final.get("output"), list):
            return [i for i in final["output"] if isinstance(i, dict)]
        return self.response.output_items() if self.response is not None else []

    def calls(self) -> list[dict[str, Any]]:
        return [i for i in self.items() if i.get("type") == "function_call"]


class RecordingStream(StreamAccumulator):
    """A StreamAccumulator that keeps every response it routed.

    The base class drops a response accumulator that never reached a terminal when a new
    `response.created` arrives; the conformance checker must keep its violations. Events
    arriving between a response's terminal and the next `response.created` (a second terminal,
    a late delta) are the protocol core's verdict: that response's `lifecycle.after_terminal`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[ResponseAccumulator] = []

    def feed(
        self, event: Mapping[str, Any]
    ) -> ResponseAccumulator | RequestError | BetaReply | None:
        routed = super().feed(event)
        if isinstance(routed, ResponseAccumulator) and not any(
            routed is seen for seen in self.seen
        ):
            self.seen.append(routed)
        return routed

    def every_violation(self) -> list[Violation]:
        found = list(self.violations)
        for response in self.seen:
            found.extend(response.violations)
        return found


def answered(response: Mapping[str, Any] | None) -> bool:
    """A Response that answered: status completed, or incomplete because it reached its
    max_output_tokens (a short answer cut by the cap `CaseContext.body` sets: a model that does
    not stop on its own still answered)."""
    if not isinstance(response, Mapping):
        return False
    return response.get("status") == "completed" or reached_output_cap(response)
