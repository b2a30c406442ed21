"""The micro-benchmarks of wsmode's hot paths (pytest-benchmark), one module per package.

Not collected by the test command (`testpaths = ["tests"]`); `scripts/microbench` runs them,
saves a baseline and compares a change against it (bench/README.md says which tool measures
what). Each benchmark's docstring says what it stands for in a real run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from harness.protocol import wire


@pytest.fixture
def fast_codec() -> Iterator[Callable[[bool], None]]:
    """Switch strict JSON's msgspec path on or off for one benchmark; restored afterwards."""
    before = wire.FAST_CODEC is not None
    yield wire.use_fast_codec
    wire.use_fast_codec(before)
