"""The accumulator's delta fast path (the transport's hot path) changes nothing but speed.

Every stream, legal or mutated, is fed to the accumulator as it is and to one whose fast path
is switched off; both must end in the same state with the same violations, and raise the same
rule at the same event when they raise.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.protocol.accumulator import ResponseAccumulator, _FastDelta
from harness.protocol.emitter import ResponseEmitter
from harness.protocol.errors import RemoteProtocolError
from tests.protocol.conftest import USAGE, base_response


class FullPathOnly(ResponseAccumulator):
    def _feed_delta(self, fast: _FastDelta, event: Any) -> bool:
        return False


class CountingFastPath(ResponseAccumulator):
    taken = 0

    def _feed_delta(self, fast: _FastDelta, event: Any) -> bool:
        took = super()._feed_delta(fast, event)
        CountingFastPath.taken += took
        return took


def every_delta_kind() -> list[dict[str, Any]]:
    """A legal response with every delta type the fast path takes, two parts per message."""
    emitter = ResponseEmitter(base_response(), self_check=False)
    events = [emitter.created(), emitter.in_progress()]
    events += emitter.begin_reasoning("rs_1")
    events += [emitter.summary_delta("thi"), emitter.summary_delta("nk")]
    events += emitter.end_reasoning()
    events += emitter.begin_message("msg_1")
    events += [emitter.text_delta("Hel"), emitter.text_delta("lo")]
    events += emitter.end_message()
    events += emitter.begin_message("msg_2", refusal=True)
    events += [emitter.text_delta("No"), emitter.text_delta("pe")]
    events += emitter.end_message()
    events += emitter.begin_function_call("fc_1", "call_1", "read_file")
    events += [emitter.arguments_delta('{"path":'), emitter.arguments_delta('"a.py"}')]
    events += emitter.end_function_call()
    events.append(emitter.completed(USAGE, completed_at=1_700_000_001))
    # a reasoning item with raw reasoning text (no summary), spliced in before completion
    index = 4
    raw_text = [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {"type": "reasoning", "id": "rs_2", "summary": []},
        },
        *(
            {
                "type": "response.reasoning_text.delta",
                "output_index": index,
                "item_id": "rs_2",
                "content_index": 0,
                "delta": piece,
            }
            for piece in ("a", "b")
        ),
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": {"type": "reasoning", "id": "rs_2", "summary": []},
        },
    ]
    events[-1:-1] = raw_text
    completed = events[-1]["response"]
    completed["output"] = [*completed["output"], raw_text[-1]["item"]]
    return renumber(events)


def renumber(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for seq, event in enumerate(events):
        event["sequence_number"] = seq
    return events


def state(acc: ResponseAccumulator) -> dict[str, Any]:
    return {
        "violations": [(v.rule_id, v.message, v.sequence_number) for v in acc.violations],
        "event_count": acc.event_count,
        "phase": acc.phase,
        "unknown_types": sorted(acc.unknown_types),
        "response_id": acc.response_id,
        "terminal_type": acc.terminal_type,
        "next_seq": acc._next_seq,
        "open_item": acc._open_item,
        "items": [
            (
                i.item_type,
                i.item_id,
                i.phase,
                [(p.pieces, p.done_text) for p in i.parts],
                i.argument_pieces,
                i.done_arguments,
                i.final,
            )
            for i in acc.items
        ],
        "text": acc.output_text(),
        "calls": acc.function_calls(),
    }


def feed_all(acc: ResponseAccumulator, events: list[Any]) -> tuple[int, str, str] | None:
    """Feed every event; (index, exception, rule id or message) of the first raise, if any.

    Not only protocol errors: a crash of the full path must be the same crash on the fast one.
    """
    for index, event in enumerate(events):
        try:
            acc.feed(event)
        except RemoteProtocolError as exc:
            return index, "RemoteProtocolError", exc.rule_id
        except Exception as exc:
            return index, type(exc).__name__, str(exc)
    return None


def assert_same(events: list[Any]) -> None:
    """Both paths agree (the accumulator never changes the events it is fed)."""
    fast, full = ResponseAccumulator(), FullPathOnly()
    feed_all(fast, events)
    feed_all(full, events)
    assert state(fast) == state(full)
    raising_fast = ResponseAccumulator(raise_on=RemoteProtocolError)
    raising_full = FullPathOnly(raise_on=RemoteProtocolError)
    assert feed_all(raising_fast, events) == feed_all(raising_full, events)


def test_a_legal_stream_takes_the_fast_path_and_ends_clean() -> None:
    events = every_delta_kind()
    CountingFastPath.taken = 0
    acc = CountingFastPath()
    for event in events:
        acc.feed(event)
    deltas = sum(1 for e in events if e["type"].endswith(".delta"))
    assert acc.violations == [] and acc.done
    # every delta but the first argument delta (ADDED -> ARGUMENTS is not a loop) is fast
    assert CountingFastPath.taken == deltas - 1
    assert_same(events)


FIELDS = (
    "type",
    "sequence_number",
    "output_index",
    "item_id",
    "content_index",
    "summary_index",
    "delta",
    "logprobs",
    "response",
    "stream_id",
)
ODD_VALUES = [None, -1, 0, 1, 2, 3, 7, True, False, 1.0, "x", "msg_1", "rs_1", "fc_1", [], {}]
VALUES = st.sampled_from(ODD_VALUES)
DELTA_KINDS = [
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_text.delta",
    "response.custom_tool_call_input.delta",
]
DELTA_TYPES = st.sampled_from(DELTA_KINDS)
MUTATION = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 200)),
    st.tuples(st.just("duplicate"), st.integers(0, 200)),
    st.tuples(st.just("swap"), st.integers(0, 200)),
    st.tuples(st.just("set"), st.integers(0, 200), st.sampled_from(FIELDS), VALUES),
    st.tuples(st.just("retype"), st.integers(0, 200), DELTA_TYPES),
    st.tuples(st.just("drop"), st.integers(0, 200), st.sampled_from(FIELDS)),
    st.tuples(st.just("renumber")),
)


def mutate(events: list[dict[str, Any]], mutations: list[tuple[Any, ...]]) -> list[Any]:
    events = copy.deepcopy(events)
    for mutation in mutations:
        kind, *args = mutation
        if kind == "renumber":
            renumber(events)
            continue
        i = args[0] % len(events)
        if kind == "delete" and len(events) > 1:
            del events[i]
        elif kind == "duplicate":
            events.insert(i, copy.deepcopy(events[i]))
        elif kind == "swap" and i + 1 < len(events):
            events[i], events[i + 1] = events[i + 1], events[i]
        elif kind == "set":
            events[i][args[1]] = copy.deepcopy(args[2])
        elif kind == "retype":
            events[i]["type"] = args[1]
        elif kind == "drop":
            events[i].pop(args[1], None)
    return events


@settings(max_examples=400, deadline=None)
@given(st.lists(MUTATION, min_size=1, max_size=6))
def test_mutated_streams_get_the_same_verdicts_on_both_paths(
    mutations: list[tuple[Any, ...]],
) -> None:
    assert_same(mutate(every_delta_kind(), mutations))


def delta_positions(events: list[dict[str, Any]]) -> list[int]:
    return [i for i, e in enumerate(events) if e["type"].endswith(".delta")]


def test_every_field_of_every_delta_set_to_every_odd_value() -> None:
    base = every_delta_kind()
    for i in delta_positions(base):
        for name in FIELDS:
            for value in [*ODD_VALUES, "<missing>"]:
                events = copy.deepcopy(base)
                if value == "<missing>":
                    events[i].pop(name, None)
                else:
                    events[i][name] = value
                assert_same(events)


def test_every_event_moved_anywhere_in_sequence() -> None:
    base = every_delta_kind()
    for i in range(len(base)):
        for j in range(len(base)):
            events = copy.deepcopy(base)
            events.insert(j, events.pop(i))
            assert_same(renumber(events))


def test_an_error_event_inside_the_response_at_every_position() -> None:
    base = every_delta_kind()
    error = {"type": "error", "error": {"type": "server_error", "code": None, "message": "x"}}
    for i in range(len(base) + 1):
        events = copy.deepcopy(base)
        events.insert(i, copy.deepcopy(error))
        assert_same(renumber(events))


def test_every_delta_retyped_as_every_other_delta() -> None:
    base = every_delta_kind()
    for i in delta_positions(base):
        for kind in DELTA_KINDS:
            events = copy.deepcopy(base)
            event = events[i]
            index = event.get("content_index", event.get("summary_index", 0))
            event.update(type=kind, content_index=index, summary_index=index, logprobs=[])
            assert_same(events)


def test_non_dict_events_and_odd_types_are_left_to_the_full_path() -> None:
    events: list[Any] = every_delta_kind()
    events[5] = {**events[5], "type": ["response.output_text.delta"]}  # unhashable type
    events[6] = {**events[6], "output_index": True}  # bool is not an int here
    assert_same(events)
