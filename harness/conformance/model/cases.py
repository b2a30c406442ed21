"""Declaring conformance cases: `@case(...)` on an `async def test_...(ctx)` in `suites/`.

The decorator attaches a `CaseMeta` to the function (the pytest plugin reads it) and records it in
`CATALOG`, so tools can list every case without running pytest. No pytest import here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from harness.conformance.model.rules import rule_level
from harness.conformance.model.verdict import CaseMeta
from harness.protocol.levels import RequirementLevel

F = TypeVar("F", bound=Callable[..., Any])
ATTRIBUTE = "wsmode_case"
CATALOG: dict[str, CaseMeta] = {}
_OWNERS: dict[str, str] = {}


def section_of(case_id: str) -> str:
    """The PROTOCOL.md section a case id starts with: `3.3.order.seq` -> `3.3`."""
    numbers: list[str] = []
    for part in case_id.split("."):
        if not part.isdigit():
            break
        numbers.append(part)
    if not numbers:
        raise ValueError(f"case id {case_id!r} must start with a PROTOCOL.md section number")
    return ".".join(numbers)


def case(
    case_id: str,
    *,
    level: RequirementLevel,
    category: str,
    title: str,
    rules: Sequence[str] = (),
    requires: Sequence[str] = (),
    setups: Sequence[str] = (),
) -> Callable[[F], F]:
    """Declare a case: hierarchical id, level, category, one-line expectation, judged rules,
    needed capabilities and named setups (`model.SETUPS`)."""
    for rule_id in rules:
        rule_level(rule_id)  # unknown rule ids fail at import, not at report time
    meta = CaseMeta(
        id=case_id,
        section=section_of(case_id),
        level=level,
        category=category,
        title=title,
        rules=tuple(rules),
        requires=tuple(requires),
        setups=tuple(setups),
    )

    def decorate(function: F) -> F:
        code = getattr(function, "__code__", None)
        where = code.co_filename if code is not None else function.__module__
        owner = f"{where}:{function.__qualname__}"  # the same file imported twice is fine
        if _OWNERS.setdefault(case_id, owner) != owner:
            raise ValueError(f"duplicate case id {case_id!r} (also on {_OWNERS[case_id]})")
        CATALOG[case_id] = meta
        setattr(function, ATTRIBUTE, meta)
        return function

    return decorate


def meta_of(function: Any) -> CaseMeta | None:
    meta = getattr(function, ATTRIBUTE, None)
    return meta if isinstance(meta, CaseMeta) else None
