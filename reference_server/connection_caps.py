"""The connection caps (`max_connections`, `max_connections_per_key`, `max_http_connections`),
held across every process that serves the port.

With `wsmode serve --workers N` the kernel, not the server, picks the worker that accepts a
connection, so a count kept by each worker would let one key open N x its cap. The counts live
in one shared table instead (`SharedCounts`, a `RawArray` the parent makes and every worker
maps): a row per worker, a column per counted thing (WebSocket connections, HTTP connections,
one per API key). Each worker writes only its own row, so no lock is needed: admission adds
first and then reads the column's sum over every row, and a connection that took the sum over
the cap takes itself back out and is refused. Two workers admitting at the same instant may
then both refuse (never both admit): the cap holds exactly, at worst a connection is refused
that a lock would have let in. (A worker that dies takes the others down, workers.py, so no
row outlives its worker.)

One process (no workers) uses the same code over a private one-row table.
"""

from __future__ import annotations

import multiprocessing.context
from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass

from reference_server.auth import ANONYMOUS_TENANT
from reference_server.config import Limits
from reference_server.store.response_store import tenant_for_api_key

_WEBSOCKET = 0  # column: open WebSocket connections (reserved at the upgrade)
_HTTP = 1  # column: open HTTP connections
_FIRST_TENANT = 2  # then one column per API key, in `--api-key` order, and one for the rest


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
        width = _FIRST_TENANT + len(tenant_columns(api_keys))
        return cls(context.RawArray("q", rows * width), rows, width)

    @classmethod
    def private(cls, api_keys: Sequence[str]) -> SharedCounts:
        width = _FIRST_TENANT + len(tenant_columns(api_keys))
        return cls([0] * width, 1, width)

    def total(self, column: int) -> int:
        return sum(self.cells[row * self.width + column] for row in range(self.rows))


class ConnectionCaps:
    """One worker's view of the caps: `admit_*` reserves a place or says no; `release_*` frees
    it. Called from the worker's event loop only."""

    def __init__(
        self, limits: Limits, api_keys: Sequence[str], counts: SharedCounts | None, row: int
    ) -> None:
        self.limits = limits
        self.counts = counts if counts is not None else SharedCounts.private(api_keys)
        self.row = row if counts is not None else 0
        tenants = tenant_columns(api_keys)
        self._tenant_column = {tenant: _FIRST_TENANT + i for i, tenant in enumerate(tenants)}
        self._other = _FIRST_TENANT + len(tenants) - 1  # a tenant without a column: the last

    @property
    def shared(self) -> bool:
        return self.counts.rows > 1

    def admit_websocket(self, tenant: str) -> bool:
        """Reserve one WebSocket connection for `tenant`, if the total and per-key caps allow."""
        column = self._tenant_column.get(tenant, self._other)
        self._add(_WEBSOCKET, 1)
        self._add(column, 1)
        if (
            self.counts.total(_WEBSOCKET) > self.limits.max_connections
            or self.counts.total(column) > self.limits.max_connections_per_key
        ):
            self.release_websocket(tenant)
            return False
        return True

    def release_websocket(self, tenant: str) -> None:
        self._add(_WEBSOCKET, -1)
        self._add(self._tenant_column.get(tenant, self._other), -1)

    def admit_http(self) -> bool:
        self._add(_HTTP, 1)
        if self.counts.total(_HTTP) > self.limits.max_http_connections:
            self._add(_HTTP, -1)
            return False
        return True

    def release_http(self) -> None:
        self._add(_HTTP, -1)

    def _add(self, column: int, delta: int) -> None:
        self.counts.cells[self.row * self.counts.width + column] += delta
