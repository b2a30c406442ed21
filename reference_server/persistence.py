"""store=true persistence as the server uses it: a write-behind buffer over `ResponseStore`.

Writes run in a worker thread (SQLite blocks) and, with the `async_post` optimization, after the
terminal event. A record is `stage`d before the terminal is sent and stays readable from
`pending` until `commit` lands it, so a client that continues on another connection the instant
it got `response.completed` still finds it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any

from reference_server.response_store import ResponseStore


class Persistence:
    def __init__(self, store: ResponseStore) -> None:
        self.store = store
        self._pending: dict[tuple[str, str], dict[str, Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def get(self, tenant: str, response_id: str) -> dict[str, Any] | None:
        pending = self._pending.get((tenant, response_id))
        if pending is not None:
            return pending
        return await asyncio.to_thread(self.store.get, tenant, response_id, now_s=time.time())

    def stage(self, tenant: str, response_id: str, record: dict[str, Any]) -> None:
        """Make a record readable now; `commit` makes it durable."""
        self._pending[(tenant, response_id)] = record

    async def commit(self, tenant: str, response_id: str) -> None:
        key = (tenant, response_id)
        record = self._pending.get(key)
        if record is None:
            return
        try:
            await asyncio.to_thread(self.store.put, tenant, response_id, record, now_s=time.time())
        finally:
            if self._pending.get(key) is record:
                del self._pending[key]

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run post-inference work in the background; `flush` waits for all of it."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def close(self) -> None:
        self.store.close()
