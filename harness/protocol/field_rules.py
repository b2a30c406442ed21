"""Rules about the values of a response's fields (issue 41), with stable ids: usage against what
streamed, the terminal's output list, the timestamps, the `previous_response_id` echo and each
lane's `stream_id`. Sources and levels: docs/PROTOCOL.md §3.5.

Two kinds, both sans-I/O:

- **Response rules** need nothing but the response's own events: `terminal_problems` judges a
  terminal Response against what the stream streamed. `ResponseAccumulator` calls it at every
  terminal, so `wsmode check`, certify and the load client apply them all.
- **Request rules** need the create that asked for the response: `request_problems` judges one
  exchange's events against its request (the echo, the lane, the wall clock at the caller's
  `now_s`; the protocol core has no clock). The exchange readers of certify and of the load client
  (`harness.protocol.request_rules.judge_exchange`) call it once per answered create.

Each check returns `(rule_id, message)` pairs; the caller turns them into `Violation`s. This
module imports only the levels, so `stream_rules` can register its table without a circle.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

from harness.protocol.levels import StreamRuleLevel

FIELD_RULES: Final[dict[str, tuple[StreamRuleLevel, str]]] = {
    "usage.output_streamed": (
        "MUST",
        "a response that streamed output (text, refusal, arguments, reasoning) reports "
        "output_tokens >= 1: no text is zero tokens",
    ),
    "usage.output_cap": (
        "MUST",
        "a response cut by its cap (incomplete, reason max_output_tokens) reports output_tokens "
        "<= its max_output_tokens (the cap includes reasoning tokens)",
    ),
    "usage.details_bounded": (
        "MUST",
        "a usage detail never exceeds the total it breaks down (reasoning_tokens <= output_tokens)",
    ),
    "output.own_items": (
        "SHOULD",
        "the terminal's output lists only items this response announced (a continuation's "
        "output never relists its parent's items)",
    ),
    "time.unix_seconds": (
        "MUST",
        "created_at and completed_at are unix timestamps in seconds (not milliseconds): "
        "numbers between 2015-01-01 and 2100-01-01",
    ),
    "time.order": ("SHOULD", "completed_at is not before created_at"),
    "time.wall_clock": (
        "SHOULD",
        "a live response's created_at is within the last 65 minutes (a connection lives at most "
        "60, plus 5 of clock skew) and at most 5 minutes ahead of the client's clock",
    ),
    "response.previous_response_id": (
        "MUST",
        "the Response echoes the request's previous_response_id (null for a new chain), never "
        "another response's id",
    ),
    "lane.stream_id": (
        "MUST",
        "every event answering a create with stream_id carries that stream_id",
    ),
    "lane.default_stream_id": (
        "MUST",
        "events answering a default-lane create (no stream_id) carry no stream_id",
    ),
}

# The plausible span of a unix time in seconds, for recordings of any age: milliseconds of the
# same era are ~1.7e12, microseconds ~1.7e15, so a unit mistake can never fall inside.
UNIX_SECONDS_MIN: Final = 1_420_070_400  # 2015-01-01T00:00:00Z, before the API existed
UNIX_SECONDS_MAX: Final = 4_102_444_800  # 2100-01-01T00:00:00Z
# A live response against the client's clock: a WebSocket connection lasts at most 60 minutes
# (PROTOCOL.md §5.3), so a response created on it is at most that old; 5 minutes of skew either way.
WALL_CLOCK_PAST_S: Final = 65 * 60
WALL_CLOCK_AHEAD_S: Final = 5 * 60
_TIMESTAMPS: Final = ("created_at", "completed_at")

Problem = tuple[str, str]  # (rule id, message)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- response rules -------------------------------------------------------------------------------
def terminal_problems(
    response: Mapping[str, Any],
    *,
    streamed_output: bool,
    announced_ids: Collection[str | None],
) -> list[Problem]:
    """What a terminal (completed or incomplete) Response's fields break, given whether any
    output content streamed and the ids of the items the stream announced."""
    problems = usage_problems(response, streamed_output=streamed_output)
    problems += own_items_problems(response, announced_ids)
    problems += timestamp_problems(response)
    return problems


def usage_problems(response: Mapping[str, Any], *, streamed_output: bool) -> list[Problem]:
    usage = response.get("usage")
    if not isinstance(usage, Mapping):
        return []  # usage.present reports it
    output = _count(usage.get("output_tokens"))
    if output is None:
        return []
    problems: list[Problem] = []
    if streamed_output and output == 0:
        problems.append(("usage.output_streamed", "output streamed, yet usage.output_tokens is 0"))
    cap = _count(response.get("max_output_tokens"))
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    if (
        response.get("status") == "incomplete"
        and reason == "max_output_tokens"
        and cap is not None
        and output > cap
    ):
        problems.append(
            (
                "usage.output_cap",
                f"cut by max_output_tokens {cap}, yet usage.output_tokens is {output}",
            )
        )
    output_details = usage.get("output_tokens_details")
    reasoning = (
        _count(output_details.get("reasoning_tokens"))
        if isinstance(output_details, Mapping)
        else None
    )
    if reasoning is not None and reasoning > output:
        problems.append(
            (
                "usage.details_bounded",
                f"output_tokens_details.reasoning_tokens {reasoning} > output_tokens {output}",
            )
        )
    return problems


def own_items_problems(
    response: Mapping[str, Any], announced_ids: Collection[str | None]
) -> list[Problem]:
    listed = response.get("output")
    if not isinstance(listed, list):
        return []
    foreign = [
        item.get("id")
        for item in listed
        if isinstance(item, Mapping)
        and isinstance(item.get("id"), str)
        and item.get("id") not in announced_ids
    ]
    if not foreign:
        return []
    return [
        (
            "output.own_items",
            f"output lists {len(foreign)} item(s) this response never announced: {foreign[:3]}",
        )
    ]


def timestamp_problems(response: Mapping[str, Any]) -> list[Problem]:
    """The unit and order of created_at / completed_at; absent or null ones are not judged
    (recordings of the older API have no completed_at)."""
    problems: list[Problem] = []
    stamps: dict[str, float] = {}
    for name in _TIMESTAMPS:
        value = response.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            problems.append(("time.unix_seconds", f"{name} is {value!r}, not a number"))
            continue
        if not UNIX_SECONDS_MIN <= value < UNIX_SECONDS_MAX:
            problems.append(
                ("time.unix_seconds", f"{name} {value!r} is not unix seconds ({_unit_hint(value)})")
            )
            continue
        stamps[name] = float(value)
    created, completed = stamps.get("created_at"), stamps.get("completed_at")
    if created is not None and completed is not None and completed < created:
        problems.append(("time.order", f"completed_at {completed:g} < created_at {created:g}"))
    return problems


def _unit_hint(value: float) -> str:
    if UNIX_SECONDS_MIN * 1000 <= value < UNIX_SECONDS_MAX * 1000:
        return "milliseconds?"
    if UNIX_SECONDS_MIN * 1_000_000 <= value < UNIX_SECONDS_MAX * 1_000_000:
        return "microseconds?"
    return "outside 2015-2100"


# -- request rules --------------------------------------------------------------------------------
def request_problems(
    request: Mapping[str, Any],
    events: Iterable[Mapping[str, Any]],
    *,
    now_s: float | None = None,
    response_id: str | None = None,
) -> list[Problem]:
    """One exchange's events (what a create's reader collected up to its terminal or its
    request error) judged against the create: the lane of every event, the echo of every
    Response, and (with `now_s`, the client's unix time at the end) the wall clock. With
    `response_id`, a Response of another id among them (a stray second terminal of the previous
    response) is not this create's and is left out."""
    wanted_lane = request.get("stream_id")
    lane = wanted_lane if isinstance(wanted_lane, str) else None
    wanted_parent = request.get("previous_response_id")
    parent = wanted_parent if isinstance(wanted_parent, str) else None
    wrong_lane: list[str] = []
    wrong_echo: list[str] = []
    final: Mapping[str, Any] | None = None
    for event in events:  # on every event of every exchange the load client reads: kept lean
        response = event.get("response")
        if response is not None:
            if not isinstance(response, Mapping):
                response = None
            elif response_id is not None and response.get("id") not in (None, response_id):
                continue  # another response's (a stray)
        tag = event.get("stream_id")
        if tag != lane:
            event_type = event.get("type")
            # keepalives and other non-protocol frames say nothing about the lane
            if isinstance(event_type, str) and (
                event_type.startswith("response.") or event_type == "error"
            ):
                wrong_lane.append(f"{event_type} with {tag!r}")
        if response is not None:
            final = response
            if "previous_response_id" in response:
                echoed = response["previous_response_id"]
                if echoed != parent:
                    wrong_echo.append(f"{event.get('type')} echoes {echoed!r}")
    problems: list[Problem] = []
    if wrong_lane:
        rule = "lane.stream_id" if lane is not None else "lane.default_stream_id"
        want = repr(lane) if lane is not None else "none"
        problems.append(
            (rule, f"stream_id {want} asked; {len(wrong_lane)} event(s) differ: {wrong_lane[:3]}")
        )
    if wrong_echo:
        problems.append(
            (
                "response.previous_response_id",
                f"the request named {parent!r}; {', '.join(wrong_echo[:2])}",
            )
        )
    if final is not None and now_s is not None:
        problems += wall_clock_problems(final, now_s)
    return problems


def wall_clock_problems(response: Mapping[str, Any], now_s: float) -> list[Problem]:
    """A live Response's created_at against the client's clock (`now_s`, unix seconds); a
    value that is no unix seconds at all is `time.unix_seconds`' business."""
    created = response.get("created_at")
    if isinstance(created, bool) or not isinstance(created, int | float):
        return []
    if not UNIX_SECONDS_MIN <= created < UNIX_SECONDS_MAX:
        return []
    if now_s - WALL_CLOCK_PAST_S <= created <= now_s + WALL_CLOCK_AHEAD_S:
        return []
    return [
        (
            "time.wall_clock",
            f"created_at {created:g} is {created - now_s:+.0f} s from the client's clock",
        )
    ]


def lane_consistency_problems(events: Iterable[Mapping[str, Any]]) -> list[Problem]:
    """Interleaved lanes without the requests: every lifecycle event of one response (the
    events that name it by `response.id`) carries the stream_id its first event carried."""
    first: dict[str, Any] = {}
    wrong: list[str] = []
    for event in events:
        response = event.get("response")
        response_id = response.get("id") if isinstance(response, Mapping) else None
        if not isinstance(response_id, str):
            continue
        tag = event.get("stream_id")
        if response_id not in first:
            first[response_id] = tag
        elif tag != first[response_id]:
            wrong.append(f"{event.get('type')} of {response_id} with {tag!r}")
    if not wrong:
        return []
    return [("lane.stream_id", f"a response's events change lane: {wrong[:3]}")]
