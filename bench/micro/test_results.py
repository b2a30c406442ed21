"""harness/results: HdrHistogram record and encode, what the load client does per measured gap
and per results file (and per locust worker report)."""

from __future__ import annotations

import random
from typing import Any

from harness.results.histograms import LatencyHistogram

# Latencies shaped like a bench run's: inter-token gaps around 1 ms with a long tail (lognormal,
# seeded); a run of the bundled corpus records ~100,000 of them per mode.
_RNG = random.Random(20261201)
GAPS_MS = [_RNG.lognormvariate(0.0, 1.0) for _ in range(100_000)]
RECORDS_PER_CALL = 1_000


def test_histogram_record(benchmark: Any) -> None:
    """`LatencyHistogram.record_ms` of 1,000 inter-token gaps (the time is per 1,000): the load
    client records one value per event it measures, so this is part of its per-event cost."""
    gaps = GAPS_MS[:RECORDS_PER_CALL]
    histogram = LatencyHistogram()
    benchmark.extra_info["records_per_call"] = len(gaps)

    def record() -> None:
        for gap in gaps:
            histogram.record_ms(gap)

    benchmark(record)
    assert histogram.count >= len(gaps)


def test_histogram_encode(benchmark: Any) -> None:
    """`LatencyHistogram.encode` of one mode's 100,000 inter-token gaps: the compressed blob a
    results file holds per metric and a locust worker ships to the coordinator per report."""
    histogram = LatencyHistogram()
    for gap in GAPS_MS:
        histogram.record_ms(gap)
    blob = benchmark(histogram.encode)
    assert LatencyHistogram.decode(blob) == histogram
