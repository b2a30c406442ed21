"""`wsmode traces stats`: its options (declared once, harness.options) and how the corpora they
name are read: trace files, or recordings converted on the way (``--from``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.options import option
from harness.traces.format import Rollout, TraceFormatError, load_traces

STATS = "wsmode traces stats"  # the command its usage errors name
_REFERENCE = "reference"


@dataclass(frozen=True)
class StatsConfig:
    """What `wsmode traces stats` reads and how it reports."""

    paths: tuple[str, ...] = option(
        (), "paths", nargs="+", metavar="PATH", to_field=tuple, help="the corpus: files or dirs"
    )
    source: str | None = option(
        None,
        "--from",
        dest="source",
        metavar="SOURCE",
        help="convert the corpus's PATHs first, as `wsmode traces convert --from SOURCE` does",
    )
    reference: tuple[str, ...] = option(
        (),
        "--reference",
        group=_REFERENCE,
        action="append",
        metavar="PATH",
        help="a reference corpus to compare with (repeatable): trace files or directories",
    )
    reference_source: str | None = option(
        None,
        "--reference-from",
        group=_REFERENCE,
        dest="reference_source",
        metavar="SOURCE",
        help="convert the reference's PATHs first (e.g. tracelab for TraceLab round rows)",
    )
    as_json: bool = option(
        False, "--json", dest="as_json", action="store_true", help="print one JSON object"
    )


def read_corpus(paths: Sequence[str], source: str | None) -> list[Rollout]:
    """The rollouts of trace ``paths``, or of recordings of ``source`` converted in memory.

    Raises :class:`TraceFormatError` for a bad path, file or source name."""
    if source is None:
        return [r for path in paths for r in load_traces(path)]
    from harness.traces.converters.sources import SOURCES, convert_inputs

    if source not in SOURCES:
        raise TraceFormatError(f"unknown source {source!r}: expected one of {', '.join(SOURCES)}")
    return convert_inputs(source, [Path(p) for p in paths])
