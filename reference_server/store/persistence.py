"""store=true persistence as the server uses it: a write-behind buffer over `ResponseStore`.

Writes run in a worker thread (SQLite blocks) and, with the `async_post` optimization, after the
terminal event. A record is `stage`d before the terminal is sent and stays readable from
`pending` until `commit` lands it, so a client that continues on another connection the instant
it got `response.completed` still finds it.

Records hold what their turn added (its input and output items) and a link to their parent when
the parent is stored too (`turn_record`); `hydrate` walks the links back to a root. Each chain's
materialised items are kept in a byte-bounded LRU (filled when a turn is staged and when a chain
is walked), so a continuation reads one record, not the whole chain.

Durability window: with `async_post` on, a `store: true` response is durable once its commit
lands, which is after its terminal event by the profile's `store_write` cost plus one SQLite
commit (`DURABILITY_WINDOW_S` bounds it; tests/reliability asserts it across SIGKILL). With
`async_post` off the commit lands before the terminal is sent: no window. A failed write is never
silent: it is logged with the response id, counted (`wsmode_store_write_failures_total`) and
retried while the record stays readable from `pending`; only a record that can never be stored
(larger than the store's bound) is dropped, with an error line.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Coroutine, Sequence
from typing import Any, Final, Protocol

from harness.protocol.cache import CachePolicy, ResponseCache
from reference_server.store.response_store import RecordTooLarge, ResponseStore

log = logging.getLogger(__name__)

DURABILITY_WINDOW_S: Final = 1.0  # terminal sent -> committed, async_post on (docstring)
MATERIALISED_MAX_BYTES: Final = 16 * 1024 * 1024  # JSON-size estimate
PURGE_INTERVAL_S: Final = 600.0
_RETRY_DELAYS_S: Final = (0.05, 0.2, 1.0, 5.0)  # then every 5 s until it lands

Items = Sequence[dict[str, Any]]


def turn_record(
    response: dict[str, Any], new_items: Items, parent_id: str | None, chain_bytes: int
) -> dict[str, Any]:
    """A stored turn: its response, the items it added, its parent's id (None: a root)."""
    return {
        "response": response,
        "items": list(new_items),
        "parent": parent_id,
        "size_bytes": chain_bytes,
    }


class Counters(Protocol):
    """Where failed writes are counted: the server's `metrics.ServerMetrics` (named by the one
    call made here, so the store never imports the server's front)."""

    def inc(self, name: str, amount: float = 1, **labels: str) -> None: ...


class Persistence:
    def __init__(self, store: ResponseStore, metrics: Counters | None = None) -> None:
        self.store = store
        self.metrics = metrics
        self._pending: dict[tuple[str, str], dict[str, Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._chains: ResponseCache[Items] = ResponseCache(
            CachePolicy(depth=1_000_000, max_bytes=MATERIALISED_MAX_BYTES)
        )
        self._last_purge_s = 0.0

    async def get(self, tenant: str, response_id: str) -> dict[str, Any] | None:
        """The stored record as written (its own items only): for retrieve."""
        pending = self._pending.get((tenant, response_id))
        if pending is not None:
            return pending
        return await asyncio.to_thread(self.store.get, tenant, response_id, now_s=time.time())

    async def hydrate(self, tenant: str, response_id: str) -> dict[str, Any] | None:
        """The record with the whole chain's items, or None if it (or an ancestor) is gone."""
        record = await self.get(tenant, response_id)
        if record is None:
            return None
        items = await asyncio.to_thread(self._chain_items, tenant, response_id, record)
        if items is None:
            return None
        self._chains.put(_chain_key(tenant, response_id), items, int(record.get("size_bytes", 0)))
        return {**record, "items": list(items)}

    def stage(
        self,
        tenant: str,
        response_id: str,
        record: dict[str, Any],
        chain_items: Items | None = None,
    ) -> None:
        """Make a record readable now; `commit` makes it durable. `chain_items`: the chain's
        items through this turn, remembered so a later hydration need not walk."""
        self._pending[(tenant, response_id)] = record
        if chain_items is not None:
            self._chains.put(_chain_key(tenant, response_id), chain_items, record["size_bytes"])

    async def commit(self, tenant: str, response_id: str) -> None:
        """Land a staged record; retried (and logged) until it lands or can never land."""
        key = (tenant, response_id)
        record = self._pending.get(key)
        if record is None:
            return
        attempt = 0
        try:
            while not await self._try_put(tenant, response_id, record, attempt):
                delay = _RETRY_DELAYS_S[min(attempt, len(_RETRY_DELAYS_S) - 1)]
                attempt += 1
                await asyncio.sleep(delay)
        finally:
            if self._pending.get(key) is record:
                del self._pending[key]
        await self._purge_if_due()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run post-inference work in the background; `flush` waits for all of it."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @property
    def materialised_bytes(self) -> int:
        return self._chains.total_bytes

    def close(self) -> None:
        self.store.close()

    # -- internals ----------------------------------------------------------------------------

    async def _try_put(
        self, tenant: str, response_id: str, record: dict[str, Any], attempt: int
    ) -> bool:
        """True when the record landed or can never land (then it is logged as lost)."""
        try:
            await asyncio.to_thread(
                self.store.put,
                tenant,
                response_id,
                record,
                now_s=time.time(),
                parent_id=record.get("parent"),
            )
            return True
        except (RecordTooLarge, ValueError, TypeError) as exc:
            self._count_failure("dropped")
            log.error("store write for %s dropped: %s", response_id, exc)
            return True
        except (sqlite3.Error, OSError) as exc:
            self._count_failure("retried")
            log.warning(
                "store write for %s failed (attempt %d, will retry): %s",
                response_id,
                attempt + 1,
                exc,
            )
            return False

    def _count_failure(self, outcome: str) -> None:
        if self.metrics is not None:  # a store used alone (tests, tools) counts nowhere
            self.metrics.inc("wsmode_store_write_failures_total", outcome=outcome)

    def _chain_items(self, tenant: str, response_id: str, record: dict[str, Any]) -> Items | None:
        """Walk parent links to a root or a materialised chain (worker thread: SQLite reads)."""
        parts: list[list[dict[str, Any]]] = []
        current: dict[str, Any] | None = record
        current_id = response_id
        while current is not None:
            cached = self._chains.peek(_chain_key(tenant, current_id))
            if cached is not None:
                parts.append(list(cached))
                break
            parts.append(list(current.get("items") or ()))
            parent_id = current.get("parent")
            if not parent_id:
                break
            current_id = parent_id
            current = self._pending.get((tenant, parent_id)) or self.store.get(
                tenant, parent_id, now_s=time.time(), include_expired=True
            )
            if current is None:
                log.warning("store chain of %s is broken at %s", response_id, parent_id)
                return None
        items: Items = tuple(item for part in reversed(parts) for item in part)
        return items

    async def _purge_if_due(self) -> None:
        now_s = time.time()
        if now_s - self._last_purge_s < PURGE_INTERVAL_S:
            return
        self._last_purge_s = now_s
        try:
            purged = await asyncio.to_thread(self.store.purge_expired, now_s)
        except sqlite3.Error as exc:
            log.warning("store purge failed: %s", exc)
            return
        if purged:
            log.info("store: purged %d expired record(s)", purged)


def _chain_key(tenant: str, response_id: str) -> str:
    return f"{tenant}\0{response_id}"
