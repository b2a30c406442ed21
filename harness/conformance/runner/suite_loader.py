"""The suite files (`suites/test_*.py`), each imported once per process, and the cases in them.

A suite file is imported the way pytest's collection imports it: under its stem (the suites
directory is no package, so pytest's default import mode names it so) and with pytest's
assertion rewriting, so a failed `assert` in a case reads as it does under pytest. A run that
loaded the cases first (to list them, or to select them before any target is checked) is
collected from the same modules: pytest finds each in `sys.modules` and does not import it again.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Final

from _pytest.assertion.rewrite import rewrite_asserts

from harness.bundled import suites_dir
from harness.conformance.model.cases import meta_of
from harness.conformance.model.verdict import CaseMeta

SUITES_DIR: Final = suites_dir()


def load_suites(suites_dir: Path = SUITES_DIR) -> list[CaseMeta]:
    """Every case of the suites, in file order."""
    return [meta for meta, _ in load_cases(suites_dir)]


def load_cases(suites_dir: Path = SUITES_DIR) -> list[tuple[CaseMeta, str]]:
    """Each case in file order with its function's name (what `-k` also matches)."""
    found: list[tuple[CaseMeta, str]] = []
    for path in sorted(suites_dir.glob("test_*.py")):
        for name, value in vars(suite_module(path)).items():
            meta = meta_of(value)
            if meta is not None and all(meta is not m for m, _ in found):
                found.append((meta, name))
    return found


def suite_module(path: Path) -> ModuleType:
    """The suite file at `path`, imported once per process (see the module docstring)."""
    name = path.stem
    module = sys.modules.get(name)
    known = getattr(module, "__file__", None)
    if module is not None and known is not None and _same_file(known, path):
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    source = path.read_bytes()
    tree = ast.parse(source, filename=str(path))
    rewrite_asserts(tree, source, str(path))
    sys.modules[name] = module
    try:
        exec(compile(tree, str(path), "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _same_file(known: str, path: Path) -> bool:
    try:
        return os.path.samefile(known, path)
    except OSError:
        return False
