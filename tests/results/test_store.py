"""The results tree: a results file is written with the user's normal file mode."""

from __future__ import annotations

import copy
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.results.store import write_result

from .conftest import Synth


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_results_file_mode_follows_the_umask(tmp_path: Path, synth: type[Synth], mask: int) -> None:
    with umask(mask):
        path = write_result(tmp_path, synth.bench(rollouts=2, turns=2))
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left behind


def test_a_second_result_with_the_same_name_gets_its_own_file(
    tmp_path: Path, synth: type[Synth]
) -> None:
    # one result written twice: two built apart differ in the load average they record
    result = synth.bench(rollouts=2, turns=2)
    first = write_result(tmp_path, copy.deepcopy(result))
    second = write_result(tmp_path, copy.deepcopy(result))
    assert second != first and second.name.endswith("-2.json")
    assert first.read_text() == second.read_text()
