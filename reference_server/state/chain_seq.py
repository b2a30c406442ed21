"""An immutable sequence a continuation extends in O(new items), not O(history).

A conversation's items, rendered chunks and prefix keys grow by a few entries a turn, and every
turn's cache entry keeps its own view of them. As tuples, each turn copied the whole history
(`parent + new`): O(n) per turn, so a long rollout paid O(n^2) in all. A `ChainSeq` is a view
(`store`, `length`) of one append-only list shared along the chain: extending the newest view
appends in place; extending an older one (a fork: a second child of the same parent) first
copies its prefix, so views never see each other's tails. Only one event loop touches a chain.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class ChainSeq(Sequence[T], Generic[T]):
    __slots__ = ("_length", "_store")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._store: list[T] = list(items)
        self._length = len(self._store)

    @classmethod
    def of(cls, items: Sequence[T]) -> ChainSeq[T]:
        """`items` as a ChainSeq (itself when it already is one)."""
        return items if isinstance(items, ChainSeq) else cls(items)

    def extended(self, new: Iterable[T]) -> ChainSeq[T]:
        """This sequence followed by `new`; `self` is unchanged."""
        added = list(new)
        if not added:
            return self
        store = self._store
        if len(store) != self._length:  # someone extended this view already: fork a copy
            store = store[: self._length]
        store.extend(added)
        view: ChainSeq[T] = ChainSeq.__new__(ChainSeq)
        view._store, view._length = store, len(store)
        return view

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self._store[i] for i in range(self._length)[index])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("ChainSeq index out of range")
        return self._store[index]

    def __iter__(self) -> Iterator[T]:
        return islice(self._store, self._length)

    def __reversed__(self) -> Iterator[T]:  # the prefix cache walks keys newest first
        return islice(reversed(self._store), len(self._store) - self._length, None)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._length and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ChainSeq({list(self)!r})"

    def tail(self, start: int) -> list[T]:
        """The items from `start` on (O(len - start): the usual question is "what is new")."""
        return self._store[start : self._length]
