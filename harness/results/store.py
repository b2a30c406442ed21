"""The results tree: `results/<kind>/<target>/<timestamp>-<label>.json`, written, never edited."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.results.schema import (
    ResultsSchemaError,
    dumps_result,
    load_result,
    parse_time,
    validate_result,
)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_UNSAFE = re.compile(r"[^a-z0-9._-]+")


def slug(text: str, fallback: str = "unnamed", max_len: int = 60) -> str:
    """A file-name-safe lowercase slug: [a-z0-9._-], no leading dots, never empty."""
    out = _UNSAFE.sub("-", text.strip().lower()).strip("-.")
    out = re.sub(r"-{2,}", "-", out)[:max_len].strip("-.")
    return out or fallback


def timestamp_slug(started_at: str) -> str:
    """`2025-01-31T12:00:05.123Z` → `20250131T120005Z` (sorts by time)."""
    try:
        when = parse_time(started_at)
    except ValueError as exc:
        raise ResultsSchemaError(f"started_at: {exc}") from exc
    return when.strftime("%Y%m%dT%H%M%SZ")


def result_path(root: str | Path, kind: str, target_name: str, started_at: str, label: str) -> Path:
    return (
        Path(root)
        / slug(kind)
        / slug(target_name)
        / f"{timestamp_slug(started_at)}-{slug(label)}.json"
    )


def write_result(root: str | Path, result: dict[str, Any]) -> Path:
    """Validate, then write atomically under `root`; never overwrites (adds `-2`, `-3`, ...)."""
    validate_result(result)
    path = result_path(
        root, result["kind"], result["target"]["name"], result["started_at"], result["label"]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    text = dumps_result(result)
    fd, tmp = _new_temp_file(path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        candidate, n = path, 1
        while True:
            try:
                os.link(tmp, candidate)  # fails if the name exists: no silent overwrite
                break
            except FileExistsError:
                n += 1
                candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
            except OSError:  # a file system without hard links: exclusive create instead
                try:
                    with open(candidate, "x", encoding="utf-8") as f:
                        f.write(text)
                    break
                except FileExistsError:
                    n += 1
                    candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    finally:
        os.unlink(tmp)
    return candidate


def _new_temp_file(directory: Path) -> tuple[int, str]:
    """A new, exclusively created temp file in `directory`, opened for writing.

    Created with 0o666 so the kernel applies the umask, as for any file the user writes (and the
    HTML report beside it); `tempfile.mkstemp` would make it 0o600, and the link keeps the mode.
    """
    while True:
        tmp = str(directory / f".tmp-{secrets.token_hex(8)}.json")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


@dataclasses.dataclass(frozen=True)
class ResultInfo:
    """One file of the results tree; `error` is set (and the rest may be empty) if unreadable."""

    path: Path
    kind: str = ""
    target: str = ""
    label: str = ""
    started_at: str = ""
    error: str | None = None
    run: str = ""  # what made it: certify, bench, load (a bench file of `wsmode load`)
    outcome: str = ""  # PASS / FAIL with the MUST count, or ok / failures of a measuring run


def run_kind(result: Mapping[str, Any]) -> str:
    """The command that wrote a results file: certify, bench or load."""
    command = result.get("config", {}).get("command")
    return str(command) if command else str(result["kind"])


def outcome_of(result: Mapping[str, Any]) -> str:
    """In a few words, how the run went: `PASS MUST 67/67`, `FAIL MUST 60/67 (partial)`,
    `ok` or `3 failed` (rollouts of a bench, requests of a load)."""
    if result["kind"] == "certify":
        certify = result["certify"]
        cases = certify["cases"]
        must = [c for c in cases if c["level"] == "MUST" and c["verdict"] != "UNIMPLEMENTED"]
        passed = sum(1 for c in must if c["verdict"] == "PASS")
        failed = any(c["verdict"] in ("FAIL", "ERROR") for c in must)
        partial = " (partial)" if certify.get("partial") else ""
        return f"{'FAIL' if failed else 'PASS'} MUST {passed}/{len(must)}{partial}"
    section = result.get(result["kind"]) or result.get("bench") or {}
    modes = section.get("modes", {}) if isinstance(section, Mapping) else {}
    failures = sum(int(entry.get("failures", 0)) for entry in modes.values())
    return "ok" if not failures else f"{failures:,} failed"


def list_results(root: str | Path) -> list[ResultInfo]:
    """Every `*.json` under `root` (README and dot files skipped), oldest first."""
    base = Path(root)
    infos: list[ResultInfo] = []
    if not base.is_dir():
        return infos
    for path in sorted(base.rglob("*.json")):
        if any(part.startswith(".") for part in path.relative_to(base).parts):
            continue
        try:
            result = load_result(path)
        except ResultsSchemaError as exc:
            infos.append(ResultInfo(path=path, error=str(exc)))
            continue
        infos.append(
            ResultInfo(
                path=path,
                kind=result["kind"],
                target=result["target"]["name"],
                label=result["label"],
                started_at=result["started_at"],
                run=run_kind(result),
                outcome=outcome_of(result),
            )
        )
    infos.sort(key=_sort_key)
    return infos


def _sort_key(info: ResultInfo) -> tuple[bool, dt.datetime, str]:
    if info.error is not None:
        return (True, _EPOCH, str(info.path))
    return (False, parse_time(info.started_at), str(info.path))
