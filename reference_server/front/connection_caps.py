"""The connection caps (`max_connections`, `max_connections_per_key`, `max_http_connections`),
held across every process that serves the port, over the workers' shared table
(shared_counts.py).

Admission adds first and then reads the column's sum over every row, and a connection that took
the sum over the cap takes itself back out and is refused. Two workers admitting at the same
instant may then both refuse (never both admit): the cap holds exactly, at worst a connection is
refused that a lock would have let in. (A worker that dies takes the others down, workers.py, so
no row outlives its worker.)
"""

from __future__ import annotations

from collections.abc import Sequence

from reference_server.config import Limits
from reference_server.front.shared_counts import (
    FIRST_TENANT_COLUMN,
    HTTP_COLUMN,
    WEBSOCKET_COLUMN,
    SharedCounts,
    tenant_columns,
)


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
        self._tenant_column = {tenant: FIRST_TENANT_COLUMN + i for i, tenant in enumerate(tenants)}
        self._other = FIRST_TENANT_COLUMN + len(tenants) - 1  # a tenant without a column: the last

    @property
    def shared(self) -> bool:
        return self.counts.rows > 1

    def admit_websocket(self, tenant: str) -> bool:
        """Reserve one WebSocket connection for `tenant`, if the total and per-key caps allow."""
        column = self._tenant_column.get(tenant, self._other)
        self._add(WEBSOCKET_COLUMN, 1)
        self._add(column, 1)
        if (
            self.counts.total(WEBSOCKET_COLUMN) > self.limits.max_connections
            or self.counts.total(column) > self.limits.max_connections_per_key
        ):
            self.release_websocket(tenant)
            return False
        return True

    def release_websocket(self, tenant: str) -> None:
        self._add(WEBSOCKET_COLUMN, -1)
        self._add(self._tenant_column.get(tenant, self._other), -1)

    def admit_http(self) -> bool:
        self._add(HTTP_COLUMN, 1)
        if self.counts.total(HTTP_COLUMN) > self.limits.max_http_connections:
            self._add(HTTP_COLUMN, -1)
            return False
        return True

    def release_http(self) -> None:
        self._add(HTTP_COLUMN, -1)

    def _add(self, column: int, delta: int) -> None:
        self.counts.cells[self.row * self.counts.width + column] += delta
