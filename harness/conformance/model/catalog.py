"""Every case of the suites, without running pytest: for docs and for checks on the docs.

`load_suites()` imports `suites/test_*.py` (which fills `cases.CATALOG`), `case_table()` renders
the list as Markdown and `count_table()` the cases per category and level; `python -m
harness.conformance.commands catalog --write suites/README.md` refreshes both blocks in the
README.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from harness.bundled import suites_dir
from harness.conformance.model.verdict import CATEGORIES, CaseMeta
from harness.protocol.levels import REQUIREMENT_LEVELS

SUITES_DIR: Final = suites_dir()
START: Final = "<!-- cases:start -->"
END: Final = "<!-- cases:end -->"


def load_suites(suites_dir: Path = SUITES_DIR) -> list[CaseMeta]:
    """Import each suite module (once) and return its cases in file order."""
    return [meta for meta, _ in load_cases(suites_dir)]


def load_cases(suites_dir: Path = SUITES_DIR) -> list[tuple[CaseMeta, str]]:
    """Each case in file order with its function's name (what `-k` also matches)."""
    found: list[tuple[CaseMeta, str]] = []
    for path in sorted(suites_dir.glob("test_*.py")):
        name = f"wsmode_suites.{path.stem}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        for name, value in vars(module).items():
            meta = getattr(value, "wsmode_case", None)
            if isinstance(meta, CaseMeta) and all(meta is not m for m, _ in found):
                found.append((meta, name))
    return found


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
