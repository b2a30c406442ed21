"""Judging FIFO order from what every server must send (PROTOCOL.md §5.2).

A queue case sends N creates back to back and must tell whether they ran in order. The order
tag it sets (`metadata.wsmode_order`, plus a distinct `instructions` line) is echoed by the
reference server, but a gateway may omit `metadata` from its events: a tag is therefore only
corroboration. What every server sends is `response.created` (with the response id) when a
response starts and a terminal event carrying that id when it ends; on one socket or lane the
responses run in the order of the creates, so FIFO reads as:

* each response ends before the next one starts (its terminal arrives before the next
  `response.created`);
* the terminals carry the ids of the `response.created` events, in the same order;
* where a response echoes its tag (metadata or instructions), the tags are in send order.

Pure: events in, findings (rule id, message) and notes out.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.protocol.events import TERMINAL_TYPES

ORDER_KEY = "wsmode_order"
_INSTRUCTIONS = re.compile(r"^wsmode order (\S+):")


def order_fields(tag: str) -> dict[str, Any]:
    """The create fields that tag one queued request: metadata and a distinct instruction."""
    return {
        "metadata": {ORDER_KEY: tag},
        "instructions": f"wsmode order {tag}: answer in one short sentence.",
    }


def echoed_tag(response: Mapping[str, Any]) -> str | None:
    """The order tag a Response object echoes (metadata, else instructions), if any."""
    metadata = response.get("metadata")
    if isinstance(metadata, dict) and metadata.get(ORDER_KEY) is not None:
        return str(metadata[ORDER_KEY])
    instructions = response.get("instructions")
    if isinstance(instructions, str):
        match = _INSTRUCTIONS.match(instructions)
        if match:
            return match.group(1)
    return None


@dataclass
class Served:
    """One response of the queue as it arrived: where it started and ended, its id and tag."""

    started_at: int
    response_id: str | None
    tag: str | None
    ended_at: int | None = None
    ended_id: str | None = None


@dataclass
class FifoVerdict:
    findings: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    served: list[Served] = field(default_factory=list)


def _response(event: Mapping[str, Any]) -> Mapping[str, Any]:
    response = event.get("response")
    return response if isinstance(response, dict) else {}


def _id(event: Mapping[str, Any]) -> str | None:
    value = _response(event).get("id")
    return value if isinstance(value, str) else None


def collect(events: Sequence[tuple[int, Mapping[str, Any]]]) -> list[Served]:
    """The responses in the order their `response.created` arrived (position, event)."""
    served: list[Served] = []
    for position, event in events:
        kind = event.get("type")
        if kind == "response.created":
            served.append(Served(position, _id(event), echoed_tag(_response(event))))
        elif kind in TERMINAL_TYPES:
            open_ = next((s for s in served if s.ended_at is None), None)
            if open_ is None:
                continue  # a stray terminal: the stream rules judge it
            open_.ended_at, open_.ended_id = position, _id(event)
            open_.tag = open_.tag or echoed_tag(_response(event))
    return served


def judge_fifo(
    events: Sequence[tuple[int, Mapping[str, Any]]],
    sent_tags: Sequence[str],
    *,
    rule_id: str,
    where: str = "the socket",
) -> FifoVerdict:
    """FIFO of the responses in `events` against the creates' tags in send order."""
    verdict = FifoVerdict(served=collect(events))
    served = verdict.served
    for earlier, later in itertools.pairwise(served):
        if earlier.ended_at is None or later.started_at < earlier.ended_at:
            verdict.findings.append(
                (
                    rule_id,
                    f"{where}: response {later.response_id} started (event {later.started_at}) "
                    f"before {earlier.response_id} ended"
                    + (f" (event {earlier.ended_at})" if earlier.ended_at is not None else ""),
                )
            )
            break
    for n, response in enumerate(served, start=1):
        if response.ended_at is not None and response.ended_id != response.response_id:
            verdict.findings.append(
                (
                    rule_id,
                    f"{where}: the terminal event of response {n} carries id "
                    f"{response.ended_id}, but response.created announced {response.response_id}",
                )
            )
    tags = [s.tag for s in served]
    known = [t for t in tags if t is not None]
    expected = [t for t in sent_tags if t in known]
    if known != expected:
        verdict.findings.append(
            (rule_id, f"{where}: responses answered the creates in order {known}, not {expected}")
        )
    if len(known) < len(served):
        verdict.notes.append(
            f"{where}: {len(served) - len(known)} of {len(served)} responses echo neither "
            "metadata nor instructions; their order is judged from response.created and ids"
        )
    return verdict
