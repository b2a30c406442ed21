"""The target of `wsmode bench` and `wsmode load`, declared once for both (harness.options): its
URLs, key, profile, name and version, and the embedded reference server's cost profile when
there is none; and the help groups both commands show."""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.load.embedded_server import DEFAULT_PROFILE
from harness.options import option
from harness.usage import API_KEY_ENV

# the help groups of bench and load, in the order they appear
TARGET = "target (default: the embedded reference server)"
LOAD_PATTERN = "load pattern"
OUTPUT = "output"


@dataclass
class TargetOptions:
    """The server under test; none: the embedded reference server, started for the run. The
    config of each command that has a target extends this."""

    target: str | None = option(
        None,
        "--target",
        metavar="URL",
        group=TARGET,
        help="WebSocket URL of a server under test (ws://.../v1/responses)",
    )
    http_target: str | None = option(
        None,
        "--http-target",
        metavar="URL",
        group=TARGET,
        help="HTTP base URL for the http modes (http://.../v1)",
    )
    api_key: str | None = option(
        None,
        "--api-key",
        metavar="KEY",
        group=TARGET,
        shown=f"${API_KEY_ENV}, the first if several",
        help="bearer key sent to the target",
    )
    target_profile: str | None = option(
        None,
        "--target-profile",
        metavar="NAME|FILE",
        group=TARGET,
        help="a target profile, a bundled one's name (wsmode certify --profiles) or a TOML "
        "file: its URLs, key, model and name",
    )
    name: str | None = option(
        None,
        "--target-name",
        "--name",
        metavar="NAME",
        group=TARGET,
        shown="the profile's, the server's word, else host:port of the URL",
        help="the implementation's name in the results",
    )
    target_version: str | None = option(
        None,
        "--target-version",
        metavar="VERSION",
        group=TARGET,
        shown="what the server's headers offer",
        help="the implementation's version",
    )
    profile: str = option(
        DEFAULT_PROFILE,
        "--profile",
        group=TARGET,
        help="the embedded server's cost profile: a bundled name (see wsmode serve --help) "
        "or a TOML file",
    )
    profile_name: str | None = None  # the --target-profile's name, once it is applied

    @property
    def embedded(self) -> bool:
        return self.target is None and self.http_target is None


def derive_urls(target: str | None, http_target: str | None) -> tuple[str | None, str | None]:
    """Fill the missing one of (ws URL, HTTP base URL) from the other, as the SDK maps them."""
    if target and not http_target:
        base = re.sub(r"^ws", "http", target.rstrip("/"))
        http_target = base[: -len("/responses")] if base.endswith("/responses") else base
    elif http_target and not target:
        target = re.sub(r"^http", "ws", http_target.rstrip("/")) + "/responses"
    return target, http_target
