"""The test contract: what a fresh virtualenv needs is declared, and no test asserts time.

A package the code imports but no dependency list names works on a machine that happens to have
it and fails on a user's (PyYAML did exactly that). This reads every import of the shipped code
and of the tests, maps it to the distribution that provides it, and checks that distribution is
declared where it must be.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SHIPPED = ("harness", "reference_server", "suites")
# Modules only a `pip install "wsmode[load]"` user runs (locust's own entry point): their imports
# may come from that extra instead of the base dependencies.
EXTRA_ONLY = {"harness/load/locustfile.py": "load", "harness/load/locust_glue.py": "load"}
# The client adapters of `wsmode certify-client` run in each client's own environment, which
# scripts/install-clients builds (the openai-python one in wsmode's: its CI test holds it).
CLIENT_ADAPTERS = "suites/clients/adapters/"
LOCAL = {
    "harness",
    "reference_server",
    "suites",
    "tests",
    "bench",
    "pipeline_items",
} | {  # a bench script may import its siblings (they run with bench/ratios on the path)
    script.stem for script in (ROOT / "bench" / "ratios").glob("*.py")
}


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]).lower()


def _imports(folder: Path) -> Iterator[tuple[str, Path]]:
    """(top-level module, file) for every absolute import below `folder`."""
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in LOCAL and top[0] != "_":
                    yield top, path


def _declared(*groups: str) -> set[str]:
    """Distribution names in `dependencies` and in the named extras."""
    extras = PROJECT["optional-dependencies"]
    return {_name(d) for d in PROJECT["dependencies"]} | {
        _name(d) for group in groups for d in extras[group]
    }


def _undeclared(folders: tuple[str, ...], *extras: str) -> list[str]:
    providers = metadata.packages_distributions()
    missing = set()
    for folder in folders:
        for module, path in _imports(ROOT / folder):
            where = str(path.relative_to(ROOT))
            if where.startswith(CLIENT_ADAPTERS):
                continue
            declared = _declared(*extras, *([EXTRA_ONLY[where]] if where in EXTRA_ONLY else []))
            dists = providers.get(module)
            if not dists:
                missing.add(f"{module} (imported by {where}; not installed)")
            elif not any(_name(d) in declared for d in dists):
                missing.add(f"{module} -> {dists} (imported by {where})")
    return sorted(missing)


def test_every_package_the_shipped_code_imports_is_a_dependency() -> None:
    assert _undeclared(SHIPPED) == []


def test_every_package_the_tests_and_benchmarks_import_is_installed_by_the_test_extra() -> None:
    assert _undeclared(("tests", "bench"), "test") == []


def test_no_test_sets_a_hypothesis_deadline() -> None:
    timed = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\bdeadline=(?!None\b)\S", line)
    ]
    assert timed == [], "a Hypothesis deadline is a wall-clock assertion"
