"""The table of connection counts the workers share (`SharedCounts`).

With `wsmode serve --workers N` the kernel, not the server, picks the worker that accepts a
connection, so a count kept by each worker would let one key open N x its cap. The counts live
in one shared table instead (a `RawArray` the parent makes and every worker maps): a row per
worker, a column per counted thing (WebSocket connections, HTTP connections, one per API key).
Each worker writes only its own row, so no lock is needed (connection_caps.py says how admission
reads it). One process (no workers) uses the same code over a private one-row table.
"""

from __future__ import annotations

import multiprocessing.context
from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass

from reference_server.front.auth import ANONYMOUS_TENANT
from reference_server.store.response_store import tenant_for_api_key

WEBSOCKET_COLUMN = 0  # column: open WebSocket connections (reserved at the upgrade)
HTTP_COLUMN = 1  # column: open HTTP connections
FIRST_TENANT_COLUMN = 2  # then one column per API key, in `--api-key` order, and one for the rest


def tenant_columns(api_keys: Sequence[str]) -> tuple[str, ...]:
    """The tenants with a column of their own: each key's, then the anonymous tenant (no keys)."""
    return (*dict.fromkeys(tenant_for_api_key(key) for key in api_keys if key), ANONYMOUS_TENANT)


@dataclass(frozen=True)
class SharedCounts:
    """The table shared by the workers: `rows` rows of `width` signed 64-bit counts."""

    cells: MutableSequence[int]
    rows: int
    width: int

    @classmethod
    def create(
        cls, context: multiprocessing.context.BaseContext, rows: int, api_keys: Sequence[str]
    ) -> SharedCounts:
        """A zeroed table in shared memory; it reaches a spawned worker as a Process argument
        (or inside its config), which is how multiprocessing shares it."""
        width = FIRST_TENANT_COLUMN + len(tenant_columns(api_keys))
        return cls(context.RawArray("q", rows * width), rows, width)

    @classmethod
    def private(cls, api_keys: Sequence[str]) -> SharedCounts:
        width = FIRST_TENANT_COLUMN + len(tenant_columns(api_keys))
        return cls([0] * width, 1, width)

    def total(self, column: int) -> int:
        return sum(self.cells[row * self.width + column] for row in range(self.rows))
