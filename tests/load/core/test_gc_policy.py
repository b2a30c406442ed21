"""The load client's GC policy: applied inside, restored after, nestable, cycles still freed."""

from __future__ import annotations

import gc
import weakref

from harness.load.core.gc_policy import MIDDLE_AFTER, YOUNG_OBJECTS, load_gc


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_policy_applies_inside_and_restores_after() -> None:
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    with load_gc():
        assert gc.get_threshold() == (YOUNG_OBJECTS, MIDDLE_AFTER, before[2])
        assert gc.get_freeze_count() > frozen_before  # what was loaded is out of reach
        with load_gc():  # nested: no second freeze, no early restore
            assert gc.get_threshold() == (YOUNG_OBJECTS, MIDDLE_AFTER, before[2])
        assert gc.get_threshold() == (YOUNG_OBJECTS, MIDDLE_AFTER, before[2])
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen_before


def test_policy_restores_after_an_exception() -> None:
    before = gc.get_threshold()
    try:
        with load_gc():
            raise RuntimeError("a failed run")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before


def test_garbage_cycles_are_still_collected_without_an_explicit_collect() -> None:
    with load_gc():
        a, b = Node(), Node()
        a.other, b.other = b, a
        ref = weakref.ref(a)
        del a, b
        assert ref() is not None  # a cycle: only the collector frees it
        keep = [[] for _ in range(3 * YOUNG_OBJECTS)]  # allocations past the young threshold
        assert ref() is None
        del keep
