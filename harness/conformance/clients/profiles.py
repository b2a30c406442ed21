"""Client profiles: the bundled adapters (`suites/clients/*.toml`) and how to start each.

A profile names the client, its pinned version, the install step and the adapter command. The
command may use `{python}` (this interpreter), `{adapters}` (`suites/clients/adapters/`),
`{venvs}` (`--venvs`, else `$WSMODE_VENVS`, else `.venvs` in the checkout: `scripts/install-clients`
puts each Python client's pinned environment there) and `{node}` (`--node-clients`, else
`$WSMODE_NODE_CLIENTS`, else `.clients/node` in the checkout: the node clients' pinned
`node_modules`). Both are resolved from the checkout, never from the working directory, as the
install script resolves them. A profile with `node_min` is checked against the `node` on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bundled import suites_dir
from harness.conformance.clients.client_runner import ClientUnderTest
from harness.errors import UsageError


class ClientProfileError(UsageError, ValueError):
    """A client profile that cannot be used (unknown name, bad TOML, missing install)."""


@dataclass(frozen=True, slots=True)
class ClientProfile:
    name: str
    version: str
    description: str
    command: tuple[str, ...]
    install: str  # how to install the pinned client (shown when it is missing)
    needs: tuple[str, ...]  # paths (with placeholders) that exist once it is installed
    env: dict[str, str]
    node_min: int | None = None  # the node major version its packages declare (engines)


@dataclass(frozen=True, slots=True)
class Places:
    """Where the installed clients are: `--venvs` / `--node-clients`, else the environment
    variables, else the checkout's folders."""

    venvs: str | None = None
    node_clients: str | None = None
    root: Path = field(default_factory=lambda: checkout_root())

    def fill(self, text: str) -> str:
        return text.format(
            python=sys.executable,
            adapters=str(clients_dir() / "adapters"),
            venvs=self.venvs or os.environ.get("WSMODE_VENVS") or str(self.root / ".venvs"),
            node=self.node_clients
            or os.environ.get("WSMODE_NODE_CLIENTS")
            or str(self.root / ".clients" / "node"),
        )


def checkout_root() -> Path:
    """The checkout wsmode runs from (where scripts/install-clients installs), else the working
    directory for a wheel install."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "pyproject.toml").is_file() else Path.cwd()


def clients_dir() -> Path:
    return suites_dir() / "clients"


def node_major() -> int | None:
    """The major version of the `node` on PATH, None when there is none."""
    node = shutil.which("node")
    if node is None:
        return None
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
        return int(done.stdout.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def profile_names() -> list[str]:
    return sorted(p.stem for p in clients_dir().glob("*.toml"))


def load_profile(name: str) -> ClientProfile:
    path = clients_dir() / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(profile_names()) or "none"
        raise ClientProfileError(f"no client profile {name!r} (bundled: {known})")
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ClientProfileError(f"{path.name}: {exc}") from exc
    command = data.get("command")
    if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
        raise ClientProfileError(f"{path.name}: 'command' must be a list of strings")
    return ClientProfile(
        name=str(data.get("name", name)),
        version=str(data.get("version", "")),
        description=str(data.get("description", "")),
        command=tuple(command),
        install=str(data.get("install", "")),
        needs=tuple(str(n) for n in data.get("needs", [])),
        env={str(k): str(v) for k, v in dict(data.get("env", {})).items()},
        node_min=int(data["node_min"]) if "node_min" in data else None,
    )


def _where_option(need: str) -> str:
    if "{node}" in need:
        return "--node-clients DIR (or WSMODE_NODE_CLIENTS)"
    return "--venvs DIR (or WSMODE_VENVS)"


def client_from_profile(
    profile: ClientProfile, places: Places | None = None, *, node: int | None = -1
) -> ClientUnderTest:
    """The client ready to run; `ClientProfileError` names the install step, and the option
    that points at an install elsewhere, when it is missing. `node`: the node major version
    (-1: ask the `node` on PATH)."""
    places = places or Places()
    for need in profile.needs:
        if not Path(places.fill(need)).exists():
            raise ClientProfileError(
                f"client {profile.name} is not installed ({places.fill(need)} is missing): "
                f"run {profile.install}, or point {_where_option(need)} at an existing install"
            )
    description = profile.description
    if profile.node_min is not None:
        major = node_major() if node == -1 else node
        if major is None:
            raise ClientProfileError(
                f"client {profile.name} runs on node >= {profile.node_min}, and no `node` is on "
                "PATH: install node (Debian: apt-get install nodejs)"
            )
        if major < profile.node_min:
            print(
                f"certify-client: node {major} is older than the {profile.node_min} that "
                f"{profile.name} {profile.version} declares; running anyway (the certificate "
                "records it)",
                file=sys.stderr,
            )
        description = f"{description}; ran on node {major}"
    return ClientUnderTest(
        name=profile.name,
        command=tuple(places.fill(part) for part in profile.command),
        version=profile.version or None,
        env={k: places.fill(v) for k, v in profile.env.items()},
        description=description,
    )
