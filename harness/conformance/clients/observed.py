"""What the case's server saw of the client: the wire log, and the views a verdict reads.

`ServerWatch` is the `ServerObserver` the case's reference server reports to. Each record goes
into the case's `WireLog` (from the harness's side: → sent by the harness, the server; ← received
from the client under test) and into a list the judging reads: upgrade attempts, connections,
the creates each carried, plain HTTP requests (a fallback), finished responses, closes.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.certificates.wirelog import Direction as WireDirection
from harness.conformance.certificates.wirelog import WireLog

_WIRE_DIRECTION: dict[str, WireDirection] = {"in": "recv", "out": "send", "meta": "meta"}
_TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})
_QUOTED_ID = re.compile(r"'([^']+)'")  # the API's "Previous response with id '<id>' not found."


@dataclass(frozen=True, slots=True)
class Record:
    at_ms: float  # since the case started
    conn: str
    direction: str  # in (from the client), out (to it), meta (the server's note)
    kind: str
    data: str


@dataclass(frozen=True, slots=True)
class Create:
    """A `response.create` the client sent."""

    at_ms: float
    conn: str
    body: dict[str, Any]

    @property
    def previous_response_id(self) -> str | None:
        value = self.body.get("previous_response_id")
        return value if isinstance(value, str) else None

    @property
    def stream_id(self) -> str | None:
        value = self.body.get("stream_id")
        return value if isinstance(value, str) else None

    def input_text(self) -> str:
        """Every string inside `input`, joined: what a marker search reads."""
        return " ".join(_strings(self.body.get("input")))

    def mentions(self, marker: str) -> bool:
        return marker in self.input_text()


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _lane_of(event: dict[str, Any]) -> str | None:
    lane = event.get("stream_id")
    if lane is None and isinstance(event.get("response"), dict):
        lane = event["response"].get("stream_id")
    return lane if isinstance(lane, str) else None


def output_text(response: dict[str, Any]) -> str:
    """The visible text of a Response: its messages' output_text parts, in order."""
    parts: list[str] = []
    for item in response.get("output") or []:
        if isinstance(item, dict) and item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    parts.append(str(part.get("text", "")))
    return "".join(parts)


@dataclass
class ServerWatch:
    """The observer of one case's server (`reference_server.hooks.observer.ServerObserver`)."""

    log: WireLog
    records: list[Record] = field(default_factory=list)

    def record(self, conn: str, direction: str, kind: str, data: str | bytes) -> None:
        now = time.perf_counter_ns()
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        self.records.append(Record((now - self.log.start_ns) / 1e6, conn, direction, kind, text))
        if kind == "response":  # the finished turn's Response: the frames already carry it
            return
        self.log.add(conn, _WIRE_DIRECTION.get(direction, "meta"), kind, data, at_ns=now)

    # -- views ----------------------------------------------------------------------------
    def of_kind(self, kind: str, direction: str | None = None) -> list[Record]:
        return [
            r
            for r in self.records
            if r.kind == kind and (direction is None or r.direction == direction)
        ]

    def upgrades(self) -> list[Record]:
        """Every WebSocket upgrade request, refused, dropped or accepted."""
        return self.of_kind("upgrade", "in")

    def connections(self) -> list[str]:
        """The WebSocket connections that got 101, in order."""
        return [r.conn for r in self.of_kind("open", "out")]

    def refusals(self) -> list[Record]:
        return self.of_kind("refused", "out")

    def http_requests(self) -> list[Record]:
        return self.of_kind("http", "in")

    def creates(self) -> list[Create]:
        found: list[Create] = []
        for r in self.of_kind("text", "in"):
            try:
                body = json.loads(r.data)
            except ValueError:
                continue
            if isinstance(body, dict) and body.get("type") == "response.create":
                found.append(Create(r.at_ms, r.conn, body))
        return found

    def responses(self) -> list[tuple[str, dict[str, Any]]]:
        """Finished responses (both transports) with the connection that carried them."""
        found: list[tuple[str, dict[str, Any]]] = []
        for r in self.of_kind("response"):
            response = json.loads(r.data)
            if isinstance(response, dict):
                found.append((r.conn, response))
        return found

    def response(self, response_id: str | None) -> dict[str, Any] | None:
        for _, response in self.responses():
            if response.get("id") == response_id:
                return response
        return None

    def events_out(self) -> Iterator[tuple[Record, dict[str, Any]]]:
        """Every event the server sent on a WebSocket, decoded, with its record."""
        for r in self.of_kind("text", "out"):
            try:
                event = json.loads(r.data)
            except ValueError:
                continue
            if isinstance(event, dict):
                yield r, event

    def owners(self) -> dict[str, Create]:
        """Which create each response answers: per connection and lane the oldest create not
        yet answered owns the next `response.created`; an `error` without a sequence number
        answers (refuses) the oldest one instead."""
        return self._answers()[0]

    def failure_codes(self) -> list[tuple[Create, str]]:
        """Each create the server failed or refused, with the error code it sent for it."""
        owners, refused = self._answers()
        found = list(refused)
        for _, response in self.responses():
            error = response.get("error")
            owner = owners.get(str(response.get("id")))
            if owner is not None and isinstance(error, dict) and isinstance(error.get("code"), str):
                found.append((owner, error["code"]))
        return found

    def _answers(self) -> tuple[dict[str, Create], list[tuple[Create, str]]]:
        pending: dict[tuple[str, str | None], list[Create]] = {}
        owners: dict[str, Create] = {}
        refused: list[tuple[Create, str]] = []
        creates = iter(self.creates())
        upcoming = next(creates, None)
        for record, event in self.events_out():
            while upcoming is not None and upcoming.at_ms <= record.at_ms:
                pending.setdefault((upcoming.conn, upcoming.stream_id), []).append(upcoming)
                upcoming = next(creates, None)
            lane = pending.get((record.conn, _lane_of(event)))
            if not lane:
                continue
            if event.get("type") == "response.created":
                response = event.get("response")
                if isinstance(response, dict) and isinstance(response.get("id"), str):
                    owners[response["id"]] = lane.pop(0)
            elif event.get("type") == "error" and "sequence_number" not in event:
                payload = event.get("error")
                payload = payload if isinstance(payload, dict) else event
                refused.append((lane.pop(0), str(payload.get("code"))))
        return owners, refused

    def terminal_sent(self, response_id: str) -> Record | None:
        """The record of the terminal event the server sent for `response_id`, if any."""
        for record, event in self.events_out():
            if event.get("type") in _TERMINAL:
                response = event.get("response")
                if isinstance(response, dict) and response.get("id") == response_id:
                    return record
        return None

    def created_on(self, response_id: str) -> str | None:
        """The connection whose `response.created` announced `response_id`."""
        for record, event in self.events_out():
            if event.get("type") == "response.created":
                response = event.get("response")
                if isinstance(response, dict) and response.get("id") == response_id:
                    return record.conn
        return None

    def not_found_ids(self) -> list[tuple[Record, str]]:
        """The ids the server answered `previous_response_not_found` for, with the record."""
        found: list[tuple[Record, str]] = []
        for record, event in self.events_out():
            if event.get("type") != "error":
                continue
            payload = event.get("error")
            payload = payload if isinstance(payload, dict) else event
            if payload.get("code") == "previous_response_not_found":
                match = _QUOTED_ID.search(str(payload.get("message", "")))
                if match:
                    found.append((record, match.group(1)))
        return found

    def authorized_upgrades(self) -> list[bool]:
        """Per upgrade attempt, in order: did it carry an Authorization header?"""
        return [
            any(line.lower().startswith("authorization:") for line in r.data.splitlines())
            for r in self.upgrades()
        ]

    def error_events(self) -> list[tuple[str, dict[str, Any]]]:
        """`error` events the server sent, with their connection."""
        found: list[tuple[str, dict[str, Any]]] = []
        for r in self.of_kind("text", "out"):
            if '"error"' not in r.data:
                continue
            event = json.loads(r.data)
            if isinstance(event, dict) and event.get("type") == "error":
                found.append((r.conn, event))
        return found
