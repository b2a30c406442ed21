"""The import arrows of docs/ARCHITECTURE.md, held: a wrong arrow fails here.

Every import counts, also one inside a function: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Shared by every layer: the root error class, the locator of the bundled data, the one
# usage-error line (the bench and the recorder check their input below the CLI), the one
# progress line (bench, load and certify show it below the CLI) and the option declarations
# (a config dataclass's fields carry their command-line option, harness.options).
EVERYWHERE = frozenset(
    {
        "harness.errors",
        "harness.bundled",
        "harness.usage",
        "harness.progress",
        "harness.options",
    }
)

# Which packages each package may import (besides itself and EVERYWHERE), lowest floor first.
ALLOWED: dict[str, frozenset[str]] = {
    "harness.protocol": frozenset(),
    "harness.results": frozenset({"harness.protocol"}),
    "harness.transport": frozenset({"harness.protocol"}),
    "harness.traces": frozenset({"harness.protocol", "harness.transport", "harness.results"}),
    "harness.load": frozenset(
        {"harness.protocol", "harness.transport", "harness.results", "harness.traces"}
    ),
    # the embedded target runs the reference server in-process
    "harness.conformance": frozenset(
        {"harness.protocol", "harness.transport", "harness.results", "reference_server"}
    ),
    "harness.report": frozenset({"harness.results"}),
    "reference_server": frozenset({"harness.protocol", "harness.transport"}),
}

# The reference server is a peer, not a client: of the transport it takes only the server-side
# building blocks (the kernel receive stamps, the one-port front door, the SSE wire format).
SERVER_SIDE_TRANSPORT = frozenset(
    {
        "harness.transport.sockets",
        "harness.transport.frontdoor",
        "harness.transport.h11_loop",
        "harness.transport.sse_wire",
    }
)

FIRST_PARTY = ("harness", "reference_server")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "harness" and len(parts) > 1 and (ROOT / "harness" / parts[1]).is_dir():
        return f"harness.{parts[1]}"
    return module if parts[0] == "harness" else parts[0]


def _imports(path: Path) -> Iterator[str]:
    module = _module_name(path)
    package_parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            # `from harness.load import bench` imports the module harness.load.bench
            yield from (f"{name}.{alias.name}" for alias in node.names)


def _first_party(name: str) -> str | None:
    """The first-party module an import name refers to (the longest existing prefix)."""
    if name.split(".")[0] not in FIRST_PARTY:
        return None
    parts = name.split(".")
    while parts:
        candidate = ROOT.joinpath(*parts)
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return name


def _code_files() -> list[Path]:
    return sorted(p for top in FIRST_PARTY for p in (ROOT / top).rglob("*.py"))


def _arrows() -> set[tuple[str, str, str]]:
    """(importing module, imported module, imported package) for every first-party import."""
    arrows = set()
    for path in _code_files():
        module = _module_name(path)
        for name in _imports(path):
            target = _first_party(name)
            if target is not None and target != module:
                arrows.add((module, target, _package_of(target)))
    return arrows


def _is_cli(module: str) -> bool:
    return module == "harness.cli" or module.endswith(".commands")


def test_every_package_imports_only_what_its_floor_allows() -> None:
    wrong = []
    for module, target, target_package in _arrows():
        package = _package_of(module)
        if _is_cli(module) or package == target_package or target in EVERYWHERE:
            continue
        if target_package not in ALLOWED.get(package, frozenset()):
            wrong.append(f"{module} -> {target}")
        elif (
            package == "reference_server"
            and target_package == "harness.transport"
            and target not in SERVER_SIDE_TRANSPORT
        ):
            wrong.append(f"{module} -> {target} (not a server-side transport piece)")
    assert sorted(wrong) == []


def test_nothing_imports_a_cli_module() -> None:
    wrong = [f"{m} -> {t}" for m, t, _ in _arrows() if _is_cli(t) and m != "harness.cli"]
    assert sorted(wrong) == []


def test_the_package_graph_has_no_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for module, _, target_package in _arrows():
        package = _package_of(module)
        if package != target_package and not _is_cli(module):
            graph.setdefault(package, set()).add(target_package)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert sorted(p for p in graph if reaches(p, p, set())) == []


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_module_imports_itself_back() -> None:
    """No file circles: a module never reaches itself through the modules it imports (lazy and
    TYPE_CHECKING imports count too). Each circle is reported once, as its sorted modules."""
    graph: dict[str, set[str]] = {}
    for module, target, _ in _arrows():
        graph.setdefault(module, set()).add(target)
    reach = {module: _reachable(graph, module) for module in graph}

    def circle_of(module: str) -> tuple[str, ...]:  # itself included: it reaches itself
        return tuple(sorted(other for other in reach[module] if module in reach.get(other, ())))

    circles = {circle_of(module) for module in graph if module in reach[module]}
    assert sorted(circles) == []


# The one exception, on purpose: msgspec is a pure codec (no I/O, time or randomness), imported
# optionally by wire.py as the fast path of strict JSON; the stdlib path is always there.
PROTOCOL_CODECS = {"msgspec"}


def test_the_protocol_core_imports_only_the_standard_library() -> None:
    offenders = []
    for path in (ROOT / "harness" / "protocol").rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in FIRST_PARTY:
                target = _first_party(name) or name
                if _package_of(target) != "harness.protocol" and target not in EVERYWHERE:
                    offenders.append(f"{path.name}: {name}")
            elif top not in sys.stdlib_module_names and top not in {"__future__", *PROTOCOL_CODECS}:
                offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_every_code_package_is_listed_for_the_wheel() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    on_disk = {
        _module_name(p.parent / "__init__.py") for p in _code_files() if p.name == "__init__.py"
    }
    assert on_disk <= listed, sorted(on_disk - listed)


# The reference server's rooms (reference_server/README.md), top down: its outside at the root
# (the command, the declared options, the cost profiles they name, the server one embeds), the
# front (the connections behind the one port), the runtime (a turn and the server-wide objects
# it runs with), the hooks (faults, a client case's script, the observer, behind one object),
# the stages, and the mechanisms and the store below them, which import no other room. An
# arrow back up (a stage into the hooks, a mechanism into a stage) fails; the one way up is to
# the root's declarations, which the front and the runtime are built from.
SERVER_ROOMS: dict[str, frozenset[str]] = {
    "root": frozenset({"front", "runtime", "hooks", "pipeline", "state", "engine", "store"}),
    "front": frozenset({"runtime", "hooks", "pipeline", "state", "engine", "store"}),
    "runtime": frozenset({"hooks", "pipeline", "state", "engine", "store"}),
    "hooks": frozenset({"pipeline", "state", "engine", "store"}),
    "pipeline": frozenset({"state", "engine", "store"}),
    "state": frozenset(),
    "engine": frozenset(),
    "store": frozenset(),
}
SERVER_DECLARATIONS = frozenset({"reference_server.config", "reference_server.cost_profiles"})
READ_DECLARATIONS = frozenset({"front", "runtime"})

# The pure wings plan and carry state: no event loop, socket, clock, thread or process.
PURE_ROOMS = ("engine", "state")
IO_AND_CLOCKS = frozenset(
    {
        "asyncio",
        "socket",
        "selectors",
        "ssl",
        "time",
        "datetime",
        "threading",
        "multiprocessing",
        "concurrent",
        "subprocess",
        "sqlite3",
        "websockets",
        "h11",
    }
)


def _server_room(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and (ROOT / "reference_server" / parts[1] / "__init__.py").is_file():
        return parts[1]
    return "root"


def test_every_reference_server_subpackage_is_a_room() -> None:
    subpackages = {p.parent.name for p in (ROOT / "reference_server").glob("*/__init__.py")}
    assert subpackages == SERVER_ROOMS.keys() - {"root"}


def test_the_reference_server_rooms_import_only_downwards() -> None:
    wrong = []
    for module, target, _ in _arrows():
        if module.split(".")[0] != "reference_server" or target.split(".")[0] != "reference_server":
            continue
        room, target_room = _server_room(module), _server_room(target)
        if target in SERVER_DECLARATIONS and room in READ_DECLARATIONS:
            continue
        if room != target_room and target_room not in SERVER_ROOMS[room]:
            wrong.append(f"{module} -> {target}")
    assert sorted(wrong) == []


def test_the_engine_and_the_state_do_no_io_and_read_no_clock() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for room in PURE_ROOMS
        for path in (ROOT / "reference_server" / room).rglob("*.py")
        for name in _imports(path)
        if name.split(".")[0] in IO_AND_CLOCKS
    ]
    assert offenders == []
