"""Persistence: records hold a turn's own items and a parent link; hydration walks the chain."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from reference_server.runtime.metrics import ServerMetrics
from reference_server.store.persistence import Persistence, turn_record
from reference_server.store.response_store import ResponseStore, tenant_for_api_key

A = tenant_for_api_key("sk-a")


def item(turn: int) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": f"turn {turn} " + "x" * 200}


async def store_chain(persistence: Persistence, turns: int, *, remember: bool) -> list[str]:
    """A chain of `turns` stored turns, each adding one item; returns the ids."""
    ids: list[str] = []
    items: tuple[dict[str, Any], ...] = ()
    for turn in range(turns):
        items = (*items, item(turn))
        record = turn_record({"id": f"resp_{turn}"}, (item(turn),), ids[-1] if ids else None, 0)
        persistence.stage(A, f"resp_{turn}", record, items if remember else None)
        await persistence.commit(A, f"resp_{turn}")
        ids.append(f"resp_{turn}")
    return ids


def test_hydration_walks_the_chain_to_its_root(tmp_path: Path) -> None:
    async def body() -> None:
        with ResponseStore(tmp_path / "s.sqlite3") as store:
            persistence = Persistence(store)
            ids = await store_chain(persistence, 30, remember=False)
            hydrated = await persistence.hydrate(A, ids[-1])
            assert hydrated is not None
            assert hydrated["items"] == [item(t) for t in range(30)]
            # the materialised chain is reused: a second hydration does not walk to the root
            assert store.delete(A, ids[0])
            again = await persistence.hydrate(A, ids[-1])
            assert again is not None and len(again["items"]) == 30
            assert await persistence.hydrate(A, "resp_missing") is None

    asyncio.run(body())


def test_bytes_per_stored_turn_do_not_grow_with_the_chain(tmp_path: Path) -> None:
    async def body() -> list[int]:
        with ResponseStore(tmp_path / "s.sqlite3") as store:
            persistence = Persistence(store)
            sizes: list[int] = []
            for turn in range(200):
                before = store.total_bytes
                await store_chain_step(persistence, turn)
                sizes.append(store.total_bytes - before)
            return sizes

    sizes = asyncio.run(body())
    assert sizes[199] <= sizes[9] * 1.2


async def store_chain_step(persistence: Persistence, turn: int) -> None:
    parent = f"resp_{turn - 1}" if turn else None
    record = turn_record({"id": f"resp_{turn:03d}"}, (item(turn),), parent, 0)
    persistence.stage(A, f"resp_{turn}", record)
    await persistence.commit(A, f"resp_{turn}")


class FlakyStore(ResponseStore):
    """A real store whose first `failures` puts fail as a full disk would."""

    failures = 2

    def put(self, *args: Any, **kwargs: Any) -> None:
        if self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError("database or disk is full")
        super().put(*args, **kwargs)


def test_a_failed_write_is_counted_retried_and_readable_meanwhile(tmp_path: Path) -> None:
    async def body() -> None:
        with FlakyStore(tmp_path / "s.sqlite3") as store:
            metrics = ServerMetrics()
            persistence = Persistence(store, metrics)
            persistence.stage(A, "resp_1", turn_record({"id": "resp_1"}, (item(0),), None, 0))
            commit = asyncio.create_task(persistence.commit(A, "resp_1"))
            await asyncio.sleep(0.01)
            assert await persistence.get(A, "resp_1") is not None  # still readable
            await commit
            landed = store.get(A, "resp_1", now_s=0.0)
            assert landed is not None and json.loads(json.dumps(landed))["parent"] is None
            assert metrics.value("wsmode_store_write_failures_total", outcome="retried") == 2

    asyncio.run(body())
