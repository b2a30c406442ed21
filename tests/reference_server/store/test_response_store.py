"""Persistent response store: a real SQLite file in tmp_path."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from reference_server.store.response_store import (
    DEFAULT_RETENTION_S,
    RecordTooLarge,
    ResponseStore,
    StoreClosed,
    tenant_for_api_key,
)

A = tenant_for_api_key("sk-tenant-a")
B = tenant_for_api_key("sk-tenant-b")
DAY = 86400.0


def record(i: int, text: str = "hello") -> dict[str, object]:
    return {"id": f"resp_{i}", "output": [{"type": "message", "text": text}], "n": i}


def test_put_get_roundtrip_creates_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "store.sqlite3"
    with ResponseStore(path) as store:
        store.put(A, "resp_1", record(1, "héllo \U0001f600 lone \ud800"), now_s=100.0)
        assert store.get(A, "resp_1", now_s=101.0) == record(1, "héllo \U0001f600 lone \ud800")
        assert store.get(A, "resp_2", now_s=101.0) is None
    assert path.is_file()
    raw = sqlite3.connect(path).execute("SELECT body FROM responses").fetchone()[0]
    assert raw.isascii()  # ensure_ascii


def test_acknowledged_put_survives_close_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    store = ResponseStore(path)
    store.put(A, "resp_1", record(1), now_s=0.0)
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreClosed):
        store.get(A, "resp_1", now_s=1.0)
    reopened = ResponseStore(path)
    assert reopened.get(A, "resp_1", now_s=1.0) == record(1)
    assert reopened.total_bytes > 0
    reopened.close()


def test_put_is_visible_to_another_connection_before_close(tmp_path: Path) -> None:
    """Committed before put returns: a second reader (another process, say) sees it at once."""
    path = tmp_path / "store.sqlite3"
    with ResponseStore(path) as store:
        store.put(A, "resp_1", record(1), now_s=0.0)
        other = sqlite3.connect(path)
        assert other.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 1
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        other.close()


def test_tenants_are_isolated(tmp_path: Path) -> None:
    with ResponseStore(tmp_path / "s.db") as store:
        store.put(A, "resp_1", record(1, "a"), now_s=0.0)
        store.put(B, "resp_1", record(1, "b"), now_s=0.0)
        assert store.get(A, "resp_1", now_s=1.0) == record(1, "a")
        assert store.get(B, "resp_1", now_s=1.0) == record(1, "b")
        store.put(A, "resp_only_a", record(2), now_s=0.0)
        assert store.get(B, "resp_only_a", now_s=1.0) is None
        assert store.delete(B, "resp_only_a") is False
        assert store.get(A, "resp_only_a", now_s=1.0) == record(2)


def test_raw_api_keys_are_never_stored(tmp_path: Path) -> None:
    tenant = tenant_for_api_key("sk-secret-key")
    assert "secret" not in tenant and tenant.startswith("t_") and len(tenant) == 66
    assert tenant == tenant_for_api_key("sk-secret-key")
    assert tenant != tenant_for_api_key("sk-secret-kez")
    with ResponseStore(tmp_path / "s.db") as store:
        with pytest.raises(ValueError, match="raw API key"):
            store.put("sk-secret-key", "resp_1", record(1), now_s=0.0)
        store.put(tenant, "resp_1", record(1), now_s=0.0)
    assert b"sk-secret-key" not in (tmp_path / "s.db").read_bytes()


def test_records_expire_after_retention_and_are_purged(tmp_path: Path) -> None:
    with ResponseStore(tmp_path / "s.db", retention_s=10.0) as store:
        store.put(A, "old", record(1), now_s=0.0)
        store.put(A, "new", record(2), now_s=5.0)
        assert store.get(A, "old", now_s=9.99) is not None
        assert store.get(A, "old", now_s=10.0) is None  # expired: never returned
        assert store.get(A, "new", now_s=10.0) is not None
        assert store.count() == 2 and store.count(now_s=10.0) == 1
        assert store.purge_expired(now_s=10.0) == 1
        assert store.count() == 1
        assert store.purge_expired(now_s=10.0) == 0
        store.put(A, "new", record(3), now_s=12.0)  # re-put refreshes retention
        assert store.get(A, "new", now_s=20.0) == record(3)


def test_default_retention_is_30_days(tmp_path: Path) -> None:
    assert DEFAULT_RETENTION_S == 30 * DAY
    with ResponseStore(tmp_path / "s.db") as store:
        store.put(A, "r", record(1), now_s=0.0)
        assert store.get(A, "r", now_s=30 * DAY - 1) is not None
        assert store.get(A, "r", now_s=30 * DAY) is None


def test_delete(tmp_path: Path) -> None:
    with ResponseStore(tmp_path / "s.db") as store:
        store.put(A, "r", record(1), now_s=0.0)
        before = store.total_bytes
        assert store.delete(A, "r") is True
        assert store.delete(A, "r") is False
        assert store.get(A, "r", now_s=0.0) is None
        assert store.total_bytes == 0 < before


def test_size_bound_evicts_expired_first_then_oldest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    size = len(b'{"id":"resp_0","output":[{"type":"message","text":"hello"}],"n":0}')
    per_record = size + len(A) + len("r0")
    bound = 4 * per_record
    with ResponseStore(tmp_path / "s.db", retention_s=100.0, max_bytes=bound) as store:
        store.put(A, "r0", record(0), now_s=0.0)  # will be expired at t=150
        store.put(A, "r1", record(1), now_s=60.0)
        store.put(A, "r2", record(2), now_s=70.0)
        store.put(A, "r3", record(3), now_s=80.0)
        assert store.total_bytes == bound and store.evictions == 0
        with caplog.at_level(logging.INFO, logger="reference_server.store.response_store"):
            store.put(A, "r4", record(4), now_s=150.0)
        # r0 is expired and goes first, even though r1 is not much younger
        assert store.evictions == 1
        assert [store.get(A, f"r{i}", now_s=150.0) is not None for i in range(5)] == [
            False,
            True,
            True,
            True,
            True,
        ]
        assert "evicted 1 record" in caplog.text and A not in caplog.text
        # nothing expired any more: the oldest unexpired record goes (retention traded for space)
        store.put(A, "r5", record(5), now_s=151.0)
        assert store.evictions == 2
        assert store.get(A, "r1", now_s=151.0) is None
        assert store.get(A, "r5", now_s=151.0) == record(5)
        assert store.total_bytes <= bound


def test_size_bound_never_evicts_the_record_just_written(tmp_path: Path) -> None:
    with ResponseStore(tmp_path / "s.db", max_bytes=300) as store:
        store.put(A, "small", {"x": 1}, now_s=0.0)
        store.put(A, "big", {"text": "y" * 200}, now_s=1.0)
        assert store.get(A, "big", now_s=1.0) is not None
        with pytest.raises(RecordTooLarge):
            store.put(A, "huge", {"text": "z" * 400}, now_s=2.0)
        assert store.get(A, "huge", now_s=2.0) is None
        assert store.get(A, "big", now_s=2.0) is not None


def test_enforce_max_bytes_after_reopen_with_a_smaller_bound(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with ResponseStore(path) as store:
        for i in range(10):
            store.put(A, f"r{i}", record(i), now_s=float(i))
        total = store.total_bytes
    with ResponseStore(path, max_bytes=total // 2) as store:
        assert store.total_bytes == total
        evicted = store.enforce_max_bytes(now_s=10.0)
        assert evicted == 5 and store.evictions == 5
        assert store.total_bytes <= total // 2
        assert store.get(A, "r4", now_s=10.0) is None
        assert store.get(A, "r5", now_s=10.0) is not None
        assert store.enforce_max_bytes(now_s=10.0) == 0


def test_replacing_a_record_keeps_the_byte_total_exact(tmp_path: Path) -> None:
    with ResponseStore(tmp_path / "s.db") as store:
        store.put(A, "r", {"t": "a" * 100}, now_s=0.0)
        store.put(A, "r", {"t": "b"}, now_s=1.0)
        assert store.count() == 1
        assert store.get(A, "r", now_s=1.0) == {"t": "b"}
        assert store.total_bytes == len('{"t":"b"}') + len(A) + 1


def test_concurrent_puts_from_threads_are_all_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = ResponseStore(path)
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(25):
                store.put(A, f"t{t}-{i}", record(i), now_s=float(i))
                assert store.get(A, f"t{t}-{i}", now_s=float(i)) == record(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert store.count() == 200
    store.close()
    with ResponseStore(path) as again:
        assert again.count() == 200


def test_invalid_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ResponseStore(tmp_path / "a.db", retention_s=0)
    with pytest.raises(ValueError):
        ResponseStore(tmp_path / "b.db", max_bytes=0)
    with ResponseStore(tmp_path / "c.db") as store:
        with pytest.raises(ValueError):
            store.put("", "r", {}, now_s=0.0)
        with pytest.raises(ValueError):
            store.put(A, "", {}, now_s=0.0)
        with pytest.raises(ValueError):
            store.put(A, "r", {"x": float("nan")}, now_s=0.0)
        with pytest.raises(ValueError):
            store.put(A, "r", {}, now_s=float("inf"))
        assert store.count() == 0


def test_purge_keeps_expired_ancestors_of_an_unexpired_record(tmp_path: Path) -> None:
    with ResponseStore(tmp_path / "s.sqlite3", retention_s=10 * DAY) as store:
        store.put(A, "resp_root", record(0), now_s=0.0)
        store.put(A, "resp_mid", record(1), now_s=DAY, parent_id="resp_root")
        store.put(A, "resp_leaf", record(2), now_s=20 * DAY, parent_id="resp_mid")
        store.put(A, "resp_lone", record(3), now_s=0.0)
        assert store.purge_expired(now_s=15 * DAY) == 1  # resp_lone; the chain is kept
        assert store.get(A, "resp_root", now_s=15 * DAY) is None  # expired for a plain get
        assert store.get(A, "resp_root", now_s=15 * DAY, include_expired=True) == record(0)
        assert store.purge_expired(now_s=31 * DAY) == 3  # leaf first, then up the chain
        assert store.count() == 0 and store.total_bytes == 0


def test_a_version_1_store_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE responses (tenant TEXT NOT NULL, response_id TEXT NOT NULL, "
        "stored_s REAL NOT NULL, expires_s REAL NOT NULL, size_bytes INTEGER NOT NULL, "
        "body TEXT NOT NULL, PRIMARY KEY (tenant, response_id)) WITHOUT ROWID;"
        "PRAGMA user_version=1;"
    )
    conn.execute("INSERT INTO responses VALUES (?, 'resp_old', 0, 1e12, 2, '{}')", (A,))
    conn.commit()
    conn.close()
    with ResponseStore(path) as store:
        assert store.get(A, "resp_old", now_s=1.0) == {}
        store.put(A, "resp_new", record(1), now_s=1.0, parent_id="resp_old")
        assert store.purge_expired(now_s=2e12) == 2
