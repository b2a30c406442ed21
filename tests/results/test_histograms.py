"""LatencyHistogram and MetricSet: clamping is counted, encoding and merging are lossless."""

from __future__ import annotations

import json
import random

import pytest

from harness.results.histograms import HIGHEST_US, LatencyHistogram, MetricSet


def _values(seed: int, n: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.lognormvariate(3.0, 1.0) for _ in range(n)]


def test_empty_histogram_reads_as_zero() -> None:
    h = LatencyHistogram()
    assert h.count == 0
    assert h.percentile_ms(50) == 0.0
    assert (h.min_ms, h.max_ms, h.mean_ms) == (0.0, 0.0, 0.0)
    assert LatencyHistogram.decode(h.encode()) == h


def test_records_at_three_significant_digits() -> None:
    h = LatencyHistogram()
    for v in (1.0, 2.0, 3.0, 4.0, 123.456):
        h.record_ms(v)
    assert h.count == 5
    assert h.percentile_ms(50) == pytest.approx(3.0, rel=1e-3)
    assert h.min_ms == pytest.approx(1.0, rel=1e-3)
    assert h.max_ms == pytest.approx(123.456, rel=1e-3)
    assert h.mean_ms == pytest.approx((1 + 2 + 3 + 4 + 123.456) / 5, rel=1e-3)
    assert h.percentiles_ms([50, 100]) == {50.0: h.percentile_ms(50), 100.0: h.max_ms}


def test_out_of_range_values_are_clamped_and_counted_never_dropped() -> None:
    h = LatencyHistogram()
    h.record_ms(-3.0)
    h.record_ms(HIGHEST_US / 1000.0 * 2)  # 20 minutes
    h.record_ms(5.0)
    assert h.count == 3
    assert h.out_of_range_count == 2
    assert h.min_ms == 0.0
    assert h.max_ms == pytest.approx(HIGHEST_US / 1000.0, rel=1e-3)
    assert h.summary()["out_of_range"] == 2


def test_zero_and_sub_microsecond_values_are_measurements_not_out_of_range() -> None:
    h = LatencyHistogram()
    h.record_ms(0.0)  # two deltas read off the socket together
    h.record_ms(0.0004)  # 0.4 µs: rounds to 0
    h.record_ms(0.0007)  # 0.7 µs: rounds to 1 µs
    assert h.count == 3 and h.out_of_range_count == 0
    assert h.min_ms == 0.0 and h.max_ms == pytest.approx(0.001)


@pytest.mark.parametrize("bad", [float("nan"), "3", None, True])
def test_rejects_non_numbers(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        LatencyHistogram().record_ms(bad)  # type: ignore[arg-type]


def test_percentile_out_of_bounds_is_an_error() -> None:
    with pytest.raises(ValueError):
        LatencyHistogram().percentile_ms(101)


def test_encode_is_hdrh_base64_and_round_trips() -> None:
    h = LatencyHistogram()
    for v in _values(1, 2000):
        h.record_ms(v)
    encoded = h.encode()
    assert encoded.startswith("HISTF")  # hdrh's compressed V2 cookie, base64
    back = LatencyHistogram.decode(encoded)
    assert back == h
    assert back.percentile_ms(99) == h.percentile_ms(99)


def test_decode_refuses_garbage_and_other_layouts() -> None:
    from hdrh.histogram import HdrHistogram

    with pytest.raises(ValueError, match="not an encoded"):
        LatencyHistogram.decode("hello")
    other = HdrHistogram(1, 1000, 2)
    other.record_value(10)
    with pytest.raises(ValueError, match=r"expected 1\.\.600000000"):
        LatencyHistogram.decode(other.encode().decode())


def test_merging_encoded_worker_histograms_equals_one_histogram_of_all_values() -> None:
    values = [*_values(7, 10_000), 0.0, -1.0, 10**9]  # a zero and two clamped values
    single = LatencyHistogram()
    workers = [LatencyHistogram() for _ in range(3)]
    for i, v in enumerate(values):
        single.record_ms(v)
        workers[i % 3].record_ms(v)
    wire = [(w.encode(), w.out_of_range_count) for w in workers]

    merged = LatencyHistogram()
    for encoded, oor in wire:
        merged.merge(LatencyHistogram.decode(encoded, oor))

    assert merged == single
    assert merged.count == len(values)
    assert merged.out_of_range_count == 2
    for p in (0, 50, 90, 99, 99.9, 100):
        assert merged.percentile_ms(p) == single.percentile_ms(p)


def test_metric_set_round_trips_through_json_and_merges() -> None:
    a, b, both = MetricSet(), MetricSet(), MetricSet()
    for i, v in enumerate(_values(3, 600)):
        target = a if i % 2 else b
        target.record_ms("ttft_ms", v)
        both.record_ms("ttft_ms", v)
    a.record_ms("itl_ms", 4.0)
    both.record_ms("itl_ms", 4.0)
    b.record_ms("rollout_e2e_ms", 10**9)  # clamped
    both.record_ms("rollout_e2e_ms", 10**9)

    wire_a = json.loads(json.dumps(a.to_dict()))
    wire_b = json.loads(json.dumps(b.to_dict()))
    merged = MetricSet.from_dict(wire_a)
    merged.merge(MetricSet.from_dict(wire_b))

    assert merged == both
    assert list(merged) == ["itl_ms", "rollout_e2e_ms", "ttft_ms"]
    assert merged.out_of_range() == {"itl_ms": 0, "rollout_e2e_ms": 1, "ttft_ms": 0}
    summary = merged.summary()
    assert summary["ttft_ms"]["count"] == 600
    assert set(summary["ttft_ms"]) >= {"count", "p50", "p90", "p99", "mean"}


def test_metric_set_reads_a_results_mode_entry() -> None:
    ms = MetricSet()
    ms.record_ms("ttft_ms", 12.5)
    mode_entry = {**ms.to_dict(), "summary": ms.summary(), "failures": 0}
    assert MetricSet.from_dict(mode_entry) == ms
    assert MetricSet.decode(ms.encode()) == ms
    with pytest.raises(ValueError, match="histograms"):
        MetricSet.from_dict({})
    with pytest.raises(ValueError, match="'ttft_ms'"):
        MetricSet.decode({"ttft_ms": "###"})
    with pytest.raises(ValueError, match="unit suffix"):
        MetricSet().record_ms("TTFT ms", 1.0)


def test_fast_readers_agree_with_hdrh_own_iterators() -> None:
    h = LatencyHistogram()
    for v in _values(11, 3000):
        h.record_ms(v)
    for hist in (h, LatencyHistogram.decode(h.encode())):
        raw = hist._hist
        for p in (0, 0.1, 1, 25, 50, 90, 99, 99.9, 100):
            assert hist.percentile_ms(p) == raw.get_value_at_percentile(p) / 1000.0
        assert hist.mean_ms == pytest.approx(raw.get_mean_value() / 1000.0, rel=1e-12)
        expected = [
            (item.value_iterated_to / 1000.0, item.count_at_value_iterated_to)
            for item in raw.get_recorded_iterator()
        ]
        assert list(hist.recorded_ms()) == expected
        assert sum(c for _, c in hist.recorded_ms()) == 3000
