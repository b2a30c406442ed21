"""The exception tree drawn in `harness/errors.py` is the tree the code has.

The subclasses are found in the source: every class of `harness/` and `reference_server/` whose
bases lead to `WsmodeError`, by name. Importing every module instead would import
`harness.load.locustfile`, and locust patches the whole process with gevent when imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import harness.errors

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "reference_server")


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):  # errors.WsmodeError
        return node.attr
    return None


def _classes() -> list[tuple[str, set[str]]]:
    """(name, base names) of every class defined in the project's code."""
    classes: list[tuple[str, set[str]]] = []
    for path in sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {name for base in node.bases if (name := _base_name(base)) is not None}
                classes.append((node.name, bases))
    return classes


def _wsmode_errors() -> set[str]:
    """The names of every WsmodeError subclass defined in the project's code."""
    classes = _classes()
    found = {"WsmodeError"}
    while True:
        more = {name for name, bases in classes if bases & found} - found
        if not more:
            return found - {"WsmodeError"}
        found |= more


def _drawing() -> str:
    doc = harness.errors.__doc__ or ""
    start = doc.index("    WsmodeError\n")
    return doc[start : doc.index("\n\n", start)]


def test_the_walk_finds_the_errors_of_every_floor() -> None:
    errors = _wsmode_errors()
    assert {"ProtocolError", "FrameTooLarge", "UnknownToolChoice", "UnreadableInput"} <= errors


def test_every_wsmode_error_is_in_the_drawing() -> None:
    drawing = _drawing()
    missing = sorted(name for name in _wsmode_errors() if not re.search(rf"\b{name}\b", drawing))
    assert missing == [], "add these to the tree in harness/errors.py"


def test_every_class_in_the_drawing_exists() -> None:
    drawn = set(re.findall(r"\b[A-Z][a-z]+(?:[A-Z][a-z]*)+\b", _drawing())) - {"WsmodeError"}
    assert sorted(drawn - _wsmode_errors()) == []


def test_every_error_belongs_to_one_family() -> None:
    """Only the families subclass the root directly; each is drawn at the top of the tree."""
    families = {family.__name__ for family in harness.errors.FAMILIES}
    direct = {name for name, bases in _classes() if "WsmodeError" in bases}
    assert direct == families
    drawing = _drawing()
    assert all(f"├── {name} " in drawing or f"└── {name} " in drawing for name in families)


def test_unreadable_input_is_a_wsmode_error() -> None:
    from harness.conformance.check.offline_check import UnreadableInput

    assert issubclass(UnreadableInput, harness.errors.WsmodeError)
