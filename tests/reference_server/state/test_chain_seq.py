"""ChainSeq: views that behave as tuples, whatever order the chain and its forks grow in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_server.state.chain_seq import ChainSeq


def test_extending_the_newest_view_shares_its_store_and_leaves_older_views_as_they_were() -> None:
    root = ChainSeq([1, 2])
    child = root.extended([3])
    grandchild = child.extended([4, 5])
    assert (tuple(root), tuple(child), tuple(grandchild)) == ((1, 2), (1, 2, 3), (1, 2, 3, 4, 5))
    assert grandchild._store is root._store  # no copy along the chain


def test_a_second_child_of_one_parent_forks_a_copy() -> None:
    parent = ChainSeq([1]).extended([2])
    first = parent.extended(["a"])
    second = parent.extended(["b"])
    assert (tuple(first), tuple(second), tuple(parent)) == ((1, 2, "a"), (1, 2, "b"), (1, 2))
    assert second._store is not first._store


def test_it_reads_as_a_tuple_does() -> None:
    seq = ChainSeq([1, 2, 3]).extended([4])
    other = seq.extended([5])  # the store now holds more than `seq` sees
    assert seq == (1, 2, 3, 4) and tuple(seq) == (1, 2, 3, 4) and seq != (1, 2, 3, 4, 5)
    assert (1, 2, 3, 4) == seq  # noqa: SIM300 - the reflected comparison is the point
    assert (seq[0], seq[-1], seq[1:3], seq[2:], seq[::-1]) == (1, 4, (2, 3), (3, 4), (4, 3, 2, 1))
    assert seq.tail(2) == [3, 4] and len(seq) == 4 and list(seq) == [1, 2, 3, 4]
    assert list(reversed(seq)) == [4, 3, 2, 1]
    assert hash(seq) == hash((1, 2, 3, 4)) and len(other) == 5
    with pytest.raises(IndexError):
        seq[4]  # the store has an item there, the view does not
    assert seq.extended([]) is seq and ChainSeq.of(seq) is seq


@given(st.lists(st.tuples(st.integers(0, 20), st.lists(st.integers(), max_size=3)), max_size=40))
def test_any_order_of_extensions_matches_tuples(steps: list[tuple[int, list[int]]]) -> None:
    """Each step extends some earlier view (a fork when it is not the newest)."""
    views: list[ChainSeq[int]] = [ChainSeq()]
    tuples: list[tuple[int, ...]] = [()]
    for pick, new in steps:
        index = pick % len(views)
        views.append(views[index].extended(new))
        tuples.append(tuples[index] + tuple(new))
    assert [tuple(view) for view in views] == tuples
    assert [tuple(reversed(view)) for view in views] == [t[::-1] for t in tuples]
