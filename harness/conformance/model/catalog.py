"""The case catalog of the suites as Markdown: for docs and for checks on the docs.

`case_table()` renders the cases as Markdown and `count_table()` the cases per category and
level; `python -m harness.conformance.commands catalog --write suites/README.md` refreshes both
blocks in the README (the cases from runner.suite_loader).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from harness.conformance.model.verdict import CATEGORIES, CaseMeta
from harness.protocol.levels import REQUIREMENT_LEVELS

START: Final = "<!-- cases:start -->"
END: Final = "<!-- cases:end -->"


def count_table(cases: Sequence[CaseMeta]) -> str:
    counts = Counter((c.category, c.level) for c in cases)
    lines = ["| category | MUST | SHOULD | MAY | total |", "|---|---|---|---|---|"]
    for category, title in CATEGORIES.items():
        row = [counts[(category, level)] for level in REQUIREMENT_LEVELS]
        lines.append(f"| {title} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    totals = [sum(counts[(c, level)] for c in CATEGORIES) for level in REQUIREMENT_LEVELS]
    lines.append("| **all** | " + " | ".join(map(str, totals)) + f" | {sum(totals)} |")
    return "\n".join(lines) + "\n"


def case_table(cases: Sequence[CaseMeta]) -> str:
    lines: list[str] = []
    for category, title in CATEGORIES.items():
        members = [c for c in cases if c.category == category]
        lines += [f"\n**{title}**\n", "| id | level | expectation | needs |", "|---|---|---|---|"]
        for meta in members:
            needs = ", ".join(meta.requires) or ""
            lines.append(f"| `{meta.id}` | {meta.level} | {meta.title} | {needs} |")
    return "\n".join(lines).lstrip("\n") + "\n"


def render(cases: Sequence[CaseMeta]) -> str:
    return count_table(cases) + "\n" + case_table(cases)


def write(path: Path, block: str) -> None:
    text = path.read_text(encoding="utf-8")
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{path}: no {START} ... {END} block")
    path.write_text(text[: start + len(START)] + "\n" + block + text[end:], encoding="utf-8")
