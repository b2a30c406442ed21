"""Console tables of the load harness (bench, load) that fit the console.

Each column is as wide as its widest cell or title, columns are two spaces apart (so values of
any size never run into each other), numbers are right-aligned with thousands separators, and a
table wider than `width` is split into blocks of columns, each repeating the first column (the
row's name). Legends wrap to the same width.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from harness.progress import MAX_COLUMNS

GAP = "  "


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    left: bool = False  # text columns (names) are left-aligned, numbers right-aligned


def number(value: object, digits: int = 1) -> str:
    """A cell: '-' for missing, floats with `digits` decimals, both with thousands separators."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def render(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    indent: str = "",
    width: int = MAX_COLUMNS,
    rule: bool = False,
) -> list[str]:
    """The table's lines: a title row (and a rule under it with `rule`), then one per row."""
    widths = [max([len(c.title), *(len(row[i]) for row in rows)]) for i, c in enumerate(columns)]
    blocks: list[list[int]] = []
    current = [0]
    used = len(indent) + widths[0]
    for i in range(1, len(columns)):
        if used + len(GAP) + widths[i] > width and len(current) > 1:
            blocks.append(current)
            current = [0]
            used = len(indent) + widths[0]
        current.append(i)
        used += len(GAP) + widths[i]
    blocks.append(current)
    lines: list[str] = []
    for number_, block in enumerate(blocks):
        if number_:
            lines.append("")

        def line(cells: Sequence[str], block: list[int] = block) -> str:
            parts = [
                f"{cells[i]:<{widths[i]}}" if columns[i].left else f"{cells[i]:>{widths[i]}}"
                for i in block
            ]
            return (indent + GAP.join(parts)).rstrip()

        title = line([c.title for c in columns])
        lines.append(title)
        if rule:
            lines.append(indent + "-" * (len(title) - len(indent)))
        lines += [line(row) for row in rows]
    return lines


def legend(text: str, *, indent: str = "", width: int = MAX_COLUMNS) -> list[str]:
    """A legend or note, wrapped to `width`."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )
