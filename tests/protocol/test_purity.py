"""The protocol core is sans-I/O: it imports nothing that does I/O, time or randomness."""

from __future__ import annotations

import ast
from pathlib import Path

import harness.protocol

FORBIDDEN = {
    "asyncio",
    "socket",
    "time",
    "random",
    "websockets",
    "httpx",
    "h11",
    "threading",
    "os",
    "sqlite3",
}
# Not forbidden: msgspec, the optional fast JSON codec of wire.py. It parses and serializes
# values in memory and nothing else (tests/test_layering.py names it as the one non-stdlib import).


def test_protocol_imports_only_pure_modules() -> None:
    package = Path(harness.protocol.__file__).parent
    offenders = []
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []
