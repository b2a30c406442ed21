"""Token schedule: due times, due counts, and a simulated late-waking emission loop."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_server.engine.emission import TokenSchedule

starts = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
ttfts = st.floats(min_value=0, max_value=10, allow_nan=False)
rates = st.floats(min_value=1, max_value=1e9, allow_nan=False)
totals = st.integers(min_value=0, max_value=300)


@st.composite
def schedules(draw: st.DrawFn) -> TokenSchedule:
    return TokenSchedule(draw(starts), draw(ttfts), draw(rates), draw(totals))


def test_token_i_is_due_at_start_plus_ttft_plus_i_over_rate() -> None:
    s = TokenSchedule(start_s=10.0, ttft_s=0.5, tokens_per_s=4.0, total_tokens=3)
    assert [s.next_due_s(i) for i in range(4)] == [10.5, 10.75, 11.0, None]
    assert s.first_due_s == 10.5
    assert s.end_s == 11.0
    assert [s.due_count(t) for t in (10.0, 10.49, 10.5, 10.8, 11.0, 99.0)] == [0, 0, 1, 2, 3, 3]
    assert s.pending(10.8, emitted=1) == 1
    assert s.pending(10.8, emitted=5) == 0


@settings(max_examples=200, deadline=None)
@given(schedules(), st.floats(min_value=-1e6, max_value=2e6, allow_nan=False))
def test_due_count_is_the_number_of_tokens_due(s: TokenSchedule, now: float) -> None:
    expected = sum(1 for i in range(s.total_tokens) if s.due_s(i) <= now)
    assert s.due_count(now) == expected


@settings(max_examples=200, deadline=None)
@given(schedules())
def test_each_token_is_due_exactly_at_its_due_time(s: TokenSchedule) -> None:
    for i in range(s.total_tokens):
        due = s.next_due_s(i)
        assert due is not None
        assert s.due_count(due) > i
        assert s.due_count(math.nextafter(due, -math.inf)) <= i
    assert s.next_due_s(s.total_tokens) is None


@settings(max_examples=200, deadline=None)
@given(schedules(), st.lists(st.floats(min_value=-10, max_value=1e3), max_size=30))
def test_due_count_is_monotone_and_capped(s: TokenSchedule, offsets: list[float]) -> None:
    times = sorted(s.start_s + o for o in offsets)
    counts = [s.due_count(t) for t in times]
    assert counts == sorted(counts)
    assert all(0 <= c <= s.total_tokens for c in counts)


@settings(max_examples=150, deadline=None)
@given(
    rate=st.floats(min_value=10, max_value=8000),
    total=st.integers(min_value=1, max_value=2000),
    ttft=st.floats(min_value=0, max_value=2),
    lateness=st.lists(st.floats(min_value=0, max_value=0.004), min_size=1, max_size=50),
)
def test_late_wakeups_batch_due_tokens_and_keep_the_configured_rate(
    rate: float, total: int, ttft: float, lateness: list[float]
) -> None:
    """The server loop in simulated time: sleep until the next due time, wake up late by up to
    4 ms, emit everything due. Every token goes out once, in order, never early, and the last one
    goes out no later than its due time plus the worst lateness, so the achieved rate matches."""
    s = TokenSchedule(start_s=100.0, ttft_s=ttft, tokens_per_s=rate, total_tokens=total)
    now = 100.0
    emitted = 0
    deltas: list[tuple[float, int, int]] = []  # (time, first index, count)
    wake = 0
    while (due := s.next_due_s(emitted)) is not None:
        now = max(now, due) + lateness[wake % len(lateness)]
        wake += 1
        upto = s.due_count(now)
        assert upto > emitted  # waking at or after the next due time always makes progress
        deltas.append((now, emitted, upto - emitted))
        emitted = upto
    assert emitted == total
    assert [d[1] for d in deltas] == [sum(d[2] for d in deltas[:i]) for i in range(len(deltas))]
    for t, first, count in deltas:
        assert s.due_s(first + count - 1) <= t  # nothing early
    last_emit = deltas[-1][0]
    assert last_emit <= s.end_s + max(lateness) + 1e-9
    if total > 1 and (s.end_s - s.first_due_s) > 0:
        achieved = (total - 1) / (last_emit - s.first_due_s)
        worst = (total - 1) / (s.end_s - s.first_due_s + max(lateness))
        assert achieved >= worst * (1 - 1e-9)
    assert len(deltas) <= total


def test_4000_tokens_per_second_with_1ms_wakeups_batches_4_tokens() -> None:
    s = TokenSchedule(start_s=0.0, ttft_s=0.0, tokens_per_s=4000, total_tokens=4000)
    now, emitted, sizes = 0.0, 0, []
    while (due := s.next_due_s(emitted)) is not None:
        now = max(now + 0.001, due)  # the loop cannot wake more often than every 1 ms
        upto = s.due_count(now)
        sizes.append(upto - emitted)
        emitted = upto
    assert emitted == 4000
    assert now <= s.end_s + 0.001
    assert max(sizes) <= 5 and len(sizes) <= 1001


def test_infinite_rate_and_empty_schedules() -> None:
    inf = TokenSchedule(start_s=1.0, ttft_s=0.25, tokens_per_s=math.inf, total_tokens=7)
    assert inf.due_count(1.2) == 0
    assert inf.due_count(1.25) == 7
    assert inf.end_s == 1.25
    empty = TokenSchedule(start_s=1.0, ttft_s=0.0, tokens_per_s=10, total_tokens=0)
    assert empty.due_count(1e9) == 0
    assert empty.next_due_s(0) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ttft_s": -0.1},
        {"ttft_s": math.nan},
        {"tokens_per_s": 0.0},
        {"tokens_per_s": math.nan},
        {"total_tokens": -1},
        {"total_tokens": True},
        {"start_s": math.inf},
    ],
)
def test_invalid_schedules_are_rejected(kwargs: dict[str, float]) -> None:
    args: dict[str, float] = {
        "start_s": 0.0,
        "ttft_s": 0.0,
        "tokens_per_s": 1.0,
        "total_tokens": 1,
        **kwargs,
    }
    with pytest.raises(ValueError):
        TokenSchedule(**args)  # type: ignore[arg-type]
    s = TokenSchedule(0.0, 0.0, 1.0, 1)
    with pytest.raises(ValueError):
        s.next_due_s(-1)
