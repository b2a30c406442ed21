"""Selecting cases with a -k expression judged on the cases alone.

`certify -k` (and `pytest suites --wsmode-keyword`) matches each name of the expression against
a case's id, category, level and function name: never against the target's name, the module or
the directory, which pytest's own -k also sees. The run is selected once, on the cases, before
any target is checked (runner.prepare), so an expression that matches nothing is an error up
front.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from _pytest.mark.expression import Expression

from harness.conformance.model.verdict import CaseMeta
from harness.errors import UsageError

T = TypeVar("T")


class SelectionError(UsageError, ValueError):
    """A -k expression that does not parse."""


class CaseMatcher:
    """Matches a -k name against one case: its id, category, level and function name."""

    def __init__(self, meta: CaseMeta, function_name: str) -> None:
        self.names = (meta.id, meta.category, meta.level, function_name)

    def __call__(self, name: str, /, **kwargs: str | int | bool | None) -> bool:
        needle = name.lower()
        return not kwargs and any(needle in candidate.lower() for candidate in self.names)


def compile_selection(expression: str) -> Expression:
    try:
        return Expression.compile(expression)
    except SyntaxError as exc:
        raise SelectionError(f"-k {expression!r}: {exc}") from None


def matches(compiled: Expression, meta: CaseMeta, function_name: str) -> bool:
    return bool(compiled.evaluate(CaseMatcher(meta, function_name)))


def select(
    cases: Sequence[tuple[CaseMeta, str, T]], expression: str
) -> list[tuple[CaseMeta, str, T]]:
    """The (meta, function name, anything) entries the expression selects."""
    compiled = compile_selection(expression)
    return [entry for entry in cases if matches(compiled, entry[0], entry[1])]
