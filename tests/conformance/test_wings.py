"""The conformance wings (harness/conformance/__init__.py) import each other one way only, the
pure verdict model at the bottom and the runner on top; the CLI module (`commands`) may import
every wing. An arrow back up fails here, as tests/test_layering.py holds the packages' floors."""

from __future__ import annotations

from tests.test_layering import EVERYWHERE, IO_AND_CLOCKS, ROOT, _arrows, _imports

PACKAGE = "harness.conformance"
# Which wings each wing may import (besides itself), lowest first.
WINGS: dict[str, frozenset[str]] = {
    "model": frozenset(),
    "targets": frozenset(),
    "certificates": frozenset({"model"}),
    "judges": frozenset({"model"}),
    "check": frozenset({"certificates"}),
    "clients": frozenset({"model", "certificates"}),
    "runner": frozenset({"model", "targets", "judges", "certificates"}),
}
ROOT_MODULES = frozenset({"commands", "killmatrix"})


def _wing(module: str) -> str:
    return module.split(".")[2]


def test_every_subpackage_is_a_wing() -> None:
    found = {p.parent.name for p in (ROOT / "harness" / "conformance").glob("*/__init__.py")}
    modules = {p.stem for p in (ROOT / "harness" / "conformance").glob("*.py")} - {"__init__"}
    assert (found, modules) == (set(WINGS), set(ROOT_MODULES))


def test_the_wings_import_only_downwards() -> None:
    wrong = []
    for module, target, _ in _arrows():
        if not (module.startswith(PACKAGE + ".") and target.startswith(PACKAGE + ".")):
            continue
        wing, target_wing = _wing(module), _wing(target)
        if wing == "commands" or wing == target_wing:
            continue
        if target_wing not in WINGS.get(wing, frozenset()):
            wrong.append(f"{module} -> {target}")
    assert sorted(wrong) == []


def test_the_model_is_pure() -> None:
    """No I/O, clock or other first-party package than the protocol core's levels and rules."""
    offenders = []
    for path in (ROOT / "harness" / "conformance" / "model").glob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            first_party = top in ("harness", "reference_server")
            allowed = name.startswith((PACKAGE + ".model", "harness.protocol")) or any(
                name.startswith(e) for e in EVERYWHERE
            )
            if top in IO_AND_CLOCKS or (first_party and not allowed):
                offenders.append(f"{path.name}: {name}")
    assert offenders == []
