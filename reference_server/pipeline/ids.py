"""The ids a turn mints (responses, items, calls): random from the OS, read in blocks."""

from __future__ import annotations

import os


class _EntropyPool:
    """os.urandom read 4 KiB at a time: one syscall per 256 ids, not one per id (ids are
    minted several times a turn). Emptied in a forked child, so no two processes share bytes."""

    _READ_BYTES = 4096

    def __init__(self) -> None:
        self._buffer = b""
        self._offset = 0
        os.register_at_fork(after_in_child=self.empty)

    def empty(self) -> None:
        self._buffer, self._offset = b"", 0

    def take(self, count: int) -> bytes:
        if self._offset + count > len(self._buffer):
            self._buffer, self._offset = os.urandom(self._READ_BYTES), 0
        start = self._offset
        self._offset += count
        return self._buffer[start : self._offset]


_ENTROPY = _EntropyPool()


def new_id(prefix: str) -> str:
    """`prefix_` and 32 hex digits from the OS's CSPRNG (as secrets.token_hex(16))."""
    return f"{prefix}_{_ENTROPY.take(16).hex()}"
