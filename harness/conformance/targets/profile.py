"""Target profiles: what a target declares it can do, read from TOML (`suites/targets/*.toml`).

A case that needs a capability the profile does not declare is UNIMPLEMENTED, never FAIL. A
profile is strict: an unknown key is an error, so a typo never silently disables a case.

    name = "reference"                 # shown in reports; the results directory is its slug
    model = "gpt-5-mini"               # the model every request names (`--model` overrides)
    upstream = "wsmode serve 0.3"      # free text: what the target forwards to (a gateway's
                                       # upstream), shown in the report beside the target

    [target]
    ws_url = "wss://host/v1/responses" # or "embedded": start the reference server in-process
    http_url = "https://host/v1"       # optional: HTTP/SSE parity cases (embedded: derived)
    lifetime_url = ""                  # optional: an endpoint with a short declared lifetime
    ws_off_url = ""                    # optional: an endpoint with WebSocket mode switched off
    api_key = ""                       # a literal key to send as the bearer, or
    api_key_env = "OPENAI_API_KEY"     # the environment variable holding it (sending a key
                                       # claims nothing: see capabilities.auth)

    [capabilities]                     # each false unless declared
    auth = true                        # the target refuses a missing or wrong key (auth cases)
    store = true                       # store=true persistence and hydration
    reasoning = true                   # reasoning items (reasoning.effort / summary)
    lanes = true                       # stream_id lanes
    scripted_output = false            # reference server only: the `wsmode.script` field
    safety_markers = false             # reference server only: WSMODE-UNSAFE-* markers
    steer = false                      # beta: response.steer (PROTOCOL.md §2.2)
    multi_agent = false                # beta: multi_agent.enabled responses, response.inject
    compaction = true                  # POST /responses/compact (PROTOCOL.md §5.4)
    image_input = true                 # input_image parts (a text-only model refuses them)

    [limits]
    cache_depth = 1                    # responses the connection cache keeps (0: unknown)
    cache_max_bytes = 0                # declared byte bound of the connection cache (0: none)
    lifetime_s = 3600                  # connection lifetime (0: none declared)
    max_message_bytes = 0              # largest accepted client message (0: none declared)
    max_lanes = 32                     # distinct named lanes per connection (0: unknown)
    max_connections = 0                # WebSocket connections the target serves at once with
                                       # one key, refusing the next (0: none declared)

    [timeouts]
    event_s = 10                       # longest wait for any one event
    response_s = 25                    # longest one response may stream before its terminal
    case_s = 60                        # longest a case may run

    [embedded]                         # only for ws_url = "embedded"
    server_profile = "zero"            # the reference server's cost profile: a bundled name
                                       # or a TOML path (relative to this file)
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from harness.bundled import suites_dir
from harness.errors import UsageError
from harness.results.paths import portable_path

EMBEDDED = "embedded"
CAPABILITIES: Final = (
    "auth",
    "store",
    "reasoning",
    "lanes",
    "scripted_output",
    "safety_markers",
    "model_recall",  # a real language model: it can repeat what an earlier turn said
    "steer",  # beta: response.steer (PROTOCOL.md §2.2)
    "multi_agent",  # beta: multi_agent.enabled responses and response.inject (§2.2)
    "compaction",  # POST /responses/compact
    "image_input",  # input_image parts
)
# Named lanes per connection, as documented upstream (PROTOCOL.md §5.2).
DOCUMENTED_MAX_LANES: Final = 32
# Longest declared lifetime the lifetime cases will wait out.
MAX_LIFETIME_WAIT_S: Final = 60.0
# Longest one response may stream before its terminal event: a target that streams forever or
# drips a delta every few seconds is caught by this, not by the event timeout (docs/RELIABILITY.md).
DEFAULT_RESPONSE_TIMEOUT_S: Final = 25.0
# Most connections the connection-limit case opens at once (a declared limit above is not run).
MAX_CONNECTIONS_OPENED: Final = 256

_SECTIONS: Final[dict[str, dict[str, type | tuple[type, ...]]]] = {
    "target": {
        "ws_url": str,
        "http_url": str,
        "lifetime_url": str,
        "ws_off_url": str,
        "api_key": str,
        "api_key_env": str,
    },
    "capabilities": dict.fromkeys(CAPABILITIES, bool),
    "limits": {
        "cache_depth": int,
        "cache_max_bytes": int,
        "lifetime_s": (int, float),
        "max_message_bytes": int,
        "max_lanes": int,
        "max_connections": int,
    },
    "timeouts": {"event_s": (int, float), "response_s": (int, float), "case_s": (int, float)},
    "embedded": {"server_profile": str},
}
_TOP: Final[dict[str, type]] = {"name": str, "description": str, "model": str, "upstream": str}


class TargetProfileError(UsageError, ValueError):
    """A target profile that cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class TargetProfile:
    name: str = "target"
    description: str = ""
    model: str = "gpt-5-mini"
    upstream: str = ""  # free text: what a gateway forwards to
    ws_url: str = ""
    http_url: str = ""
    lifetime_url: str = ""
    ws_off_url: str = ""  # an endpoint with WebSocket mode off (its upgrade answer is judged)
    api_key: str = ""
    capabilities: frozenset[str] = frozenset()
    cache_depth: int = 1  # upstream keeps the most recent response only
    cache_max_bytes: int = 0
    lifetime_s: float = 0.0
    max_message_bytes: int = 0
    max_lanes: int = DOCUMENTED_MAX_LANES  # distinct named lanes per connection (0: unknown)
    max_connections: int = 0  # connections served at once with one key (0: none declared)
    event_timeout_s: float = 10.0
    response_timeout_s: float = DEFAULT_RESPONSE_TIMEOUT_S
    case_timeout_s: float = 60.0
    server_profile: str = "zero"  # cost profile of the embedded reference server
    source: str = "<defaults>"

    @property
    def embedded(self) -> bool:
        return self.ws_url == EMBEDDED or self.ws_url.startswith(EMBEDDED + ":")

    def has(self, capability: str) -> bool:
        return capability in self.capabilities

    def missing(self, requirement: str) -> str | None:
        """Why this target cannot run a case needing `requirement`; None when it can."""
        if requirement == "auth" and not self.has("auth"):
            return (
                "capability 'auth' not declared in the target profile (a key only sends the "
                "bearer; declare [capabilities] auth = true or pass --auth to run the auth cases)"
            )
        if requirement in CAPABILITIES:
            if self.has(requirement):
                return None
            return f"capability '{requirement}' not declared in the target profile"
        if requirement == "http":
            return None if self.http_url else "no HTTP endpoint declared (http_url)"
        if requirement == "ws_off":
            return None if self.ws_off_url else "no endpoint with WebSocket mode off (ws_off_url)"
        if requirement == "lifetime":
            if not self.lifetime_s:
                return "no connection lifetime declared (limits.lifetime_s)"
            if self.lifetime_s > MAX_LIFETIME_WAIT_S:
                return (
                    f"declared lifetime {self.lifetime_s:g} s is longer than the "
                    f"{MAX_LIFETIME_WAIT_S:g} s a case may wait: declare a short-lifetime "
                    "endpoint (target.lifetime_url with limits.lifetime_s)"
                )
            return None
        if requirement == "cache_eviction":
            return None if self.cache_depth > 0 else "cache depth declared unknown (0)"
        if requirement == "cache_lru":
            if self.cache_depth >= 2:
                return None
            return f"cache depth {self.cache_depth}: LRU order needs a declared depth >= 2"
        if requirement == "cache_bytes":
            return None if self.cache_max_bytes else "no cache byte bound declared"
        if requirement == "max_message":
            return None if self.max_message_bytes else "no max message size declared"
        if requirement == "lane_limit":
            return None if self.max_lanes else "named-lane limit declared unknown (0)"
        if requirement == "connection_limit":
            if not self.max_connections:
                return "no connection limit declared (limits.max_connections)"
            if self.max_connections > MAX_CONNECTIONS_OPENED:
                return (
                    f"declared connection limit {self.max_connections} is above the "
                    f"{MAX_CONNECTIONS_OPENED} connections a case opens"
                )
            return None
        raise ValueError(f"unknown requirement {requirement!r}")

    def with_changes(self, **changes: Any) -> TargetProfile:
        return replace(self, **changes)

    def describe(self) -> dict[str, Any]:
        """The declared configuration, as stored in report.json's `config`."""
        return {
            "profile_source": portable_path(self.source) if self.source[:1] != "<" else self.source,
            "model": self.model,
            "upstream": self.upstream,
            "capabilities": sorted(self.capabilities),
            "http": bool(self.http_url),
            "auth": self.has("auth"),
            "sends_key": bool(self.api_key),
            "cache_depth": self.cache_depth,
            "cache_max_bytes": self.cache_max_bytes,
            "lifetime_s": self.lifetime_s,
            "lifetime_url": bool(self.lifetime_url),
            "ws_off_url": bool(self.ws_off_url),
            "max_message_bytes": self.max_message_bytes,
            "max_lanes": self.max_lanes,
            "max_connections": self.max_connections,
            "event_timeout_s": self.event_timeout_s,
            "response_timeout_s": self.response_timeout_s,
            "case_timeout_s": self.case_timeout_s,
        }


def _check_type(value: Any, kinds: type | tuple[type, ...], where: str) -> None:
    kinds_tuple = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(value, bool) and bool not in kinds_tuple:
        raise TargetProfileError(f"{where}: expected {_names(kinds_tuple)}, got a boolean")
    if not isinstance(value, kinds_tuple):
        raise TargetProfileError(
            f"{where}: expected {_names(kinds_tuple)}, got {type(value).__name__}"
        )


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kinds)


def parse_profile(
    data: Mapping[str, Any], source: str = "<profile>", *, base_dir: Path | None = None
) -> TargetProfile:
    """Build a profile from parsed TOML; unknown keys and wrong types raise TargetProfileError."""
    values: dict[str, Any] = {"source": source}
    for key, value in data.items():
        where = f"{source}: {key}"
        if key in _TOP:
            _check_type(value, _TOP[key], where)
            values[key] = value
            continue
        if key not in _SECTIONS:
            raise TargetProfileError(
                f"{where}: unknown key (known: {', '.join([*_TOP, *_SECTIONS])})"
            )
        if not isinstance(value, dict):
            raise TargetProfileError(f"{where}: expected a [{key}] table")
        allowed = _SECTIONS[key]
        for sub, sub_value in value.items():
            sub_where = f"{source}: {key}.{sub}"
            if sub not in allowed:
                raise TargetProfileError(f"{sub_where}: unknown key (known: {', '.join(allowed)})")
            _check_type(sub_value, allowed[sub], sub_where)
        if key == "capabilities":
            values["capabilities"] = frozenset(c for c, on in value.items() if on)
        elif key == "target":
            env = value.get("api_key_env")
            key_value = value.get("api_key", "")
            if not key_value and env:
                key_value = os.environ.get(env, "")
            values.update(
                ws_url=value.get("ws_url", ""),
                http_url=value.get("http_url", ""),
                lifetime_url=value.get("lifetime_url", ""),
                ws_off_url=value.get("ws_off_url", ""),
                api_key=key_value,
            )
        elif key == "limits":
            for sub, sub_value in value.items():
                if sub_value < 0:
                    raise TargetProfileError(f"{source}: limits.{sub}: must be >= 0")
                values[sub] = float(sub_value) if sub == "lifetime_s" else sub_value
        elif key == "timeouts":
            for sub, sub_value in value.items():
                if sub_value <= 0:
                    raise TargetProfileError(f"{source}: timeouts.{sub}: must be > 0")
            if "event_s" in value:
                values["event_timeout_s"] = float(value["event_s"])
            if "response_s" in value:
                values["response_timeout_s"] = float(value["response_s"])
            if "case_s" in value:
                values["case_timeout_s"] = float(value["case_s"])
        elif key == "embedded" and "server_profile" in value:
            server_profile = value["server_profile"]
            if server_profile.endswith(".toml") and base_dir is not None:
                server_profile = str((base_dir / server_profile).resolve())
            values["server_profile"] = server_profile
    if not str(values.get("name", "target")).strip():
        raise TargetProfileError(f"{source}: name: must not be empty")
    return TargetProfile(**values)


def load_target_profile(path: str | Path) -> TargetProfile:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TargetProfileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TargetProfileError(f"{p}: not valid TOML: {exc}") from None
    return parse_profile(data, str(p), base_dir=p.parent)


def bundled_profiles() -> list[tuple[str, TargetProfile]]:
    """The target profiles that ship with wsmode (suites/targets/), by file stem, in name order.
    Files there that are not target profiles (the embedded server's cost profile) are left out.
    """
    found: list[tuple[str, TargetProfile]] = []
    for path in sorted((suites_dir() / "targets").glob("*.toml")):
        try:
            found.append((path.stem, load_target_profile(path)))
        except TargetProfileError:
            continue
    return found


def resolve_profile(text: str) -> Path:
    """`--target-profile`'s value as a file: a path, or a bundled profile named by its file
    stem (`example-openai`) or its `name` (`openai`)."""
    given = Path(text)
    if given.is_file() or given.suffix == ".toml" or "/" in text:
        return given
    for stem, profile in bundled_profiles():
        if text in (stem, profile.name):
            return suites_dir() / "targets" / f"{stem}.toml"
    names = ", ".join(sorted({p.name for _, p in bundled_profiles()}))
    raise TargetProfileError(
        f"--target-profile {text}: no such file, and no bundled profile of that name "
        f"(bundled: {names}; `wsmode certify --profiles` describes them)"
    )
