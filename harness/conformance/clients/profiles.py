"""Client profiles: the bundled adapters (`suites/clients/*.toml`) and how to start each.

A profile names the client, its pinned version, the install step and the adapter command. The
command may use `{python}` (this interpreter), `{adapters}` (`suites/clients/adapters/`),
`{venvs}` (`$WSMODE_VENVS`, else `.venvs` in the working directory: `scripts/install-clients`
puts each Python client's pinned environment there) and `{node}` (`$WSMODE_NODE_CLIENTS`, else
`.clients/node`: the node clients' pinned `node_modules`).
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass
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


def clients_dir() -> Path:
    return suites_dir() / "clients"


def places() -> dict[str, str]:
    cwd = Path.cwd()
    return {
        "python": sys.executable,
        "adapters": str(clients_dir() / "adapters"),
        "venvs": os.environ.get("WSMODE_VENVS") or str(cwd / ".venvs"),
        "node": os.environ.get("WSMODE_NODE_CLIENTS") or str(cwd / ".clients" / "node"),
    }


def _fill(text: str) -> str:
    return text.format(**places())


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
    )


def client_from_profile(profile: ClientProfile) -> ClientUnderTest:
    """The client ready to run; `ClientProfileError` names the install step when it is missing."""
    for need in profile.needs:
        if not Path(_fill(need)).exists():
            raise ClientProfileError(
                f"client {profile.name} is not installed ({_fill(need)} is missing): "
                f"run {profile.install}"
            )
    return ClientUnderTest(
        name=profile.name,
        command=tuple(_fill(part) for part in profile.command),
        version=profile.version or None,
        env={k: _fill(v) for k, v in profile.env.items()},
        description=profile.description,
    )
