"""Persistent store for ``store=true`` responses: one SQLite file, WAL mode.

Records are keyed by ``(tenant, response_id)``. A tenant is an opaque string that the server
derives from the API key with :func:`tenant_for_api_key` (a SHA-256 digest); raw keys are never
stored, and a tenant that looks like one (``sk-...``) is refused. One tenant's ids are invisible
to another: every query is scoped by tenant.

Durability: :meth:`ResponseStore.put` commits (``synchronous=FULL``) before it returns, so an
acknowledged put survives a crash or restart. Times are passed in (``now_s``), never read here.

Chains: a record may name its parent (``parent_id``, the response it continued); the server
stores only what each turn added and walks the links to hydrate (``persistence.py``), so the
disk cost of a turn does not grow with the chain. An unexpired record keeps its ancestors:
:meth:`ResponseStore.get` with ``include_expired=True`` still reads them, and
:meth:`ResponseStore.purge_expired` deletes an expired record only once nothing links to it.

Retention: a record expires ``retention_s`` after its last put (default 30 days, as upstream);
expired records are never returned by a plain get and are deleted by
:meth:`ResponseStore.purge_expired` (the server runs it periodically).

Size bound (``max_bytes``, off by default): the total payload size (JSON text + key bytes, not
the file size; SQLite reuses freed pages, so the file stays near that plus overhead) is kept at
or below the bound after every put by evicting expired records first, oldest first, and then the
oldest unexpired ones. **The bound trades retention for space**: with it on, an old unexpired
record can be evicted before its retention ends (the record just written never is; a single
record larger than the bound is refused with :class:`RecordTooLarge`). Evictions are counted in
:attr:`ResponseStore.evictions`, returned by :meth:`ResponseStore.enforce_max_bytes` and logged.

Threading: one connection (``check_same_thread=False``) guarded by a lock, so the server may call
any method from worker threads (``asyncio.to_thread``). The running byte total assumes this
object is the only writer of the file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from harness.errors import ServerError

__all__ = [
    "DEFAULT_RETENTION_S",
    "RecordTooLarge",
    "ResponseStore",
    "StoreClosed",
    "tenant_for_api_key",
]

log = logging.getLogger(__name__)

DEFAULT_RETENTION_S: Final = 30 * 86400.0
_SCHEMA_VERSION: Final = 2

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS responses (
    tenant      TEXT    NOT NULL,
    response_id TEXT    NOT NULL,
    stored_s    REAL    NOT NULL,
    expires_s   REAL    NOT NULL,
    size_bytes  INTEGER NOT NULL,
    body        TEXT    NOT NULL,
    parent_id   TEXT,
    PRIMARY KEY (tenant, response_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS responses_by_expiry ON responses (expires_s);
CREATE INDEX IF NOT EXISTS responses_by_age ON responses (stored_s);
"""
_PARENT_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS responses_by_parent ON responses (tenant, parent_id) "
    "WHERE parent_id IS NOT NULL"
)
# Expired records nothing links to: purging repeats until none is left (a chain goes leaf-first).
_PURGE_LEAVES: Final = (
    "DELETE FROM responses WHERE expires_s <= ? AND NOT EXISTS ("
    "SELECT 1 FROM responses AS child WHERE child.tenant = responses.tenant "
    "AND child.parent_id = responses.response_id) RETURNING size_bytes"
)


class StoreClosed(ServerError, RuntimeError):
    """The store was used after :meth:`ResponseStore.close`."""


class RecordTooLarge(ServerError, ValueError):
    """A single record is larger than the store's ``max_bytes``; it was not stored."""


def tenant_for_api_key(api_key: str, *, namespace: str = "wsmode") -> str:
    """The opaque tenant id for an API key: ``t_`` + SHA-256 hex (the key is not recoverable)."""
    digest = hashlib.sha256(f"{namespace}\0{api_key}".encode("utf-8", "surrogatepass"))
    return "t_" + digest.hexdigest()


class ResponseStore:
    """Responses persisted per tenant in one SQLite file (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        *,
        retention_s: float = DEFAULT_RETENTION_S,
        max_bytes: int | None = None,
    ) -> None:
        if not (retention_s > 0 and math.isfinite(retention_s)):
            raise ValueError(f"retention_s must be positive and finite, got {retention_s!r}")
        if max_bytes is not None and max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
        self.path = Path(path)
        self.retention_s = float(retention_s)
        self.max_bytes = max_bytes
        self.evictions = 0
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=10.0
        )
        try:
            # Switching to WAL takes a lock SQLite does not wait for; a WAL file stays WAL, so
            # only a new file is switched (front/workers.py creates it before the workers start).
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA busy_timeout=10000")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, 1, _SCHEMA_VERSION):
                raise RuntimeError(
                    f"{self.path}: store schema version {version} is not supported "
                    f"(expected {_SCHEMA_VERSION})"
                )
            conn.executescript(_SCHEMA)
            if version == 1:  # v1 had no parent links: every record is a root
                conn.execute("ALTER TABLE responses ADD COLUMN parent_id TEXT")
            conn.execute(_PARENT_INDEX)
            conn.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
            total = conn.execute("SELECT COALESCE(SUM(size_bytes), 0) FROM responses").fetchone()
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn
        self._total_bytes = int(total[0])

    # -- context manager ----------------------------------------------------------------------

    def __enter__(self) -> ResponseStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- API ----------------------------------------------------------------------------------

    @property
    def total_bytes(self) -> int:
        """Payload bytes currently stored (expired-but-unpurged records included)."""
        with self._lock:
            return self._total_bytes

    def put(
        self,
        tenant: str,
        response_id: str,
        record: Mapping[str, Any],
        *,
        now_s: float,
        parent_id: str | None = None,
    ) -> None:
        """Store (or replace) a record; committed to disk before this returns."""
        _check_key(tenant, response_id)
        if not math.isfinite(now_s):
            raise ValueError(f"now_s must be finite, got {now_s!r}")
        if not isinstance(record, Mapping):
            raise TypeError("record must be a mapping")
        body = json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
        size = len(body) + len(tenant.encode()) + len(response_id.encode())
        if self.max_bytes is not None and size > self.max_bytes:
            raise RecordTooLarge(
                f"record {response_id!r} is {size} bytes; the store's max_bytes is {self.max_bytes}"
            )
        with self._lock:
            with _transaction(self._connection()) as conn:
                old = conn.execute(
                    "SELECT size_bytes FROM responses WHERE tenant = ? AND response_id = ?",
                    (tenant, response_id),
                ).fetchone()
                conn.execute(
                    "INSERT OR REPLACE INTO responses "
                    "(tenant, response_id, stored_s, expires_s, size_bytes, body, parent_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (tenant, response_id, now_s, now_s + self.retention_s, size, body, parent_id),
                )
            self._total_bytes += size - (int(old[0]) if old else 0)
            if self.max_bytes is not None and self._total_bytes > self.max_bytes:
                try:
                    self._evict(now_s, keep=(tenant, response_id))
                except sqlite3.Error:
                    # The put is committed and stays acknowledged; the next put retries.
                    log.warning("response store: eviction failed", exc_info=True)

    def get(
        self, tenant: str, response_id: str, *, now_s: float, include_expired: bool = False
    ) -> dict[str, Any] | None:
        """The record, or None if absent, expired or owned by another tenant.

        ``include_expired`` reads an expired record not yet purged: hydration walking to an
        ancestor that an unexpired descendant keeps alive."""
        _check_key(tenant, response_id)
        if include_expired:
            now_s = -math.inf
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT body FROM responses "
                    "WHERE tenant = ? AND response_id = ? AND expires_s > ?",
                    (tenant, response_id, now_s),
                )
                .fetchone()
            )
        if row is None:
            return None
        value = json.loads(row[0])
        if not isinstance(value, dict):  # pragma: no cover - put only stores mappings
            return None
        return value

    def delete(self, tenant: str, response_id: str) -> bool:
        """Remove a record; True if one was removed."""
        _check_key(tenant, response_id)
        with self._lock:
            with _transaction(self._connection()) as conn:
                row = conn.execute(
                    "DELETE FROM responses WHERE tenant = ? AND response_id = ? "
                    "RETURNING size_bytes",
                    (tenant, response_id),
                ).fetchone()
            if row is None:
                return False
            self._total_bytes -= int(row[0])
            return True

    def purge_expired(self, now_s: float) -> int:
        """Delete every expired record no record links to; returns how many were deleted."""
        deleted = 0
        with self._lock:
            while True:
                with _transaction(self._connection()) as conn:
                    rows = conn.execute(_PURGE_LEAVES, (now_s,)).fetchall()
                self._total_bytes -= sum(int(r[0]) for r in rows)
                deleted += len(rows)
                if not rows:
                    return deleted

    def enforce_max_bytes(self, now_s: float) -> int:
        """Evict until the store fits ``max_bytes``; returns how many records were evicted."""
        with self._lock:
            self._connection()
            if self.max_bytes is None or self._total_bytes <= self.max_bytes:
                return 0
            return self._evict(now_s, keep=None)

    def count(self, *, now_s: float | None = None) -> int:
        """Records stored (only unexpired ones when ``now_s`` is given)."""
        with self._lock:
            conn = self._connection()
            if now_s is None:
                row = conn.execute("SELECT COUNT(*) FROM responses").fetchone()
            else:
                row = conn.execute(
                    "SELECT COUNT(*) FROM responses WHERE expires_s > ?", (now_s,)
                ).fetchone()
            return int(row[0])

    def close(self) -> None:
        """Checkpoint and close; further use raises :class:`StoreClosed`. Idempotent."""
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()

    # -- internals ----------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreClosed("the response store is closed")
        return self._conn

    def _evict(self, now_s: float, *, keep: tuple[str, str] | None) -> int:
        """Evict (lock held): expired oldest-first, then oldest overall; never ``keep``."""
        assert self.max_bytes is not None
        excess = self._total_bytes - self.max_bytes
        victims: list[tuple[str, str]] = []
        freed = 0
        with _transaction(self._connection()) as conn:
            # Both scans walk an index in order and stop as soon as enough bytes are freed.
            scans = (
                "SELECT tenant, response_id, size_bytes FROM responses "
                "WHERE expires_s <= ? ORDER BY expires_s",
                "SELECT tenant, response_id, size_bytes FROM responses "
                "WHERE expires_s > ? ORDER BY stored_s",
            )
            for sql in scans:
                cursor = conn.execute(sql, (now_s,))
                for tenant, response_id, size in cursor:
                    if freed >= excess:
                        break
                    if (tenant, response_id) == keep:
                        continue
                    victims.append((tenant, response_id))
                    freed += int(size)
                cursor.close()
                if freed >= excess:
                    break
            conn.executemany("DELETE FROM responses WHERE tenant = ? AND response_id = ?", victims)
        self._total_bytes -= freed
        self.evictions += len(victims)
        if victims:
            log.info(
                "response store: evicted %d record(s) (%d bytes) to stay within max_bytes=%d",
                len(victims),
                freed,
                self.max_bytes,
            )
        return len(victims)


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error (autocommit connection)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _check_key(tenant: str, response_id: str) -> None:
    if not isinstance(tenant, str) or not tenant:
        raise ValueError("tenant must be a non-empty string")
    if tenant.startswith(("sk-", "sk_")) or tenant.lower().startswith("bearer "):
        raise ValueError("tenant looks like a raw API key; pass tenant_for_api_key(key) instead")
    if not isinstance(response_id, str) or not response_id:
        raise ValueError("response_id must be a non-empty string")
