"""Writing ``wsmode-trace`` files (validated, atomic) and the JSON Schema of one line."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import cast

from harness.traces.format.loader import validate_rollout
from harness.traces.format.parse import TraceFormatError, show_value
from harness.traces.format.rollout import JSONObject, Rollout

__all__ = ["dump_rollouts", "dumps_rollouts", "trace_schema"]


# --------------------------------------------------------------------------------------------
# Writing


def _line(obj: JSONObject) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_rollouts(rollouts: Iterable[Rollout]) -> str:
    """Serialise rollouts to trace text (one JSON object per line, trailing newline)."""
    return "".join(_line(obj) + "\n" for r in rollouts for obj in r.to_lines())


def dump_rollouts(
    rollouts: Iterable[Rollout], path: str | os.PathLike[str], *, validate: bool = True
) -> int:
    """Write rollouts to ``path`` (gzip if it ends in ``.gz``) atomically; returns bytes written.

    With ``validate`` every rollout is checked first, so a written trace always loads.
    """
    items: Sequence[Rollout] = list(rollouts)
    if validate:
        ids: set[str] = set()
        for r in items:
            validate_rollout(r)
            if r.id in ids:
                raise TraceFormatError(
                    f"duplicate rollout id {show_value(r.id)}", field="rollout.id"
                )
            ids.add(r.id)
    target = Path(path)
    data = dumps_rollouts(items).encode("utf-8")
    if target.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:  # a plain open keeps the umask's permissions
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return len(data)


# --------------------------------------------------------------------------------------------
# Schema


def trace_schema() -> JSONObject:
    """The JSON Schema (draft 2020-12) of one trace line, shipped as package data."""
    text = (
        resources.files(__package__ or "harness.load")
        .joinpath("trace_schema.json")
        .read_text(encoding="utf-8")
    )
    return cast(JSONObject, json.loads(text))
