"""The load package stays below the CLI and the report package."""

from __future__ import annotations

import ast
from pathlib import Path


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_load_modules_import_neither_the_report_package_nor_a_cli_module() -> None:
    """Only the CLI layer (load/commands.py) may reach up to harness.report."""
    load_dir = Path(__file__).resolve().parents[2] / "harness" / "load"
    for path in sorted(load_dir.rglob("*.py")):
        if path.name == "commands.py":
            continue
        imported = _imported_modules(path)
        upward = {
            name
            for name in imported
            if name.startswith("harness.report")
            or name == "harness.cli"
            or name.endswith(".commands")
        }
        assert not upward, f"{path.relative_to(load_dir)} imports {sorted(upward)}"
