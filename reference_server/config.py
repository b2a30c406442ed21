"""Server configuration: limits, optimizations and faults, with the defaults of docs/RELIABILITY.md.

Every limit is a field with its unit in the name, so `wsmode serve --help`, the docs and the
conformance target profile all speak the same names. The fields `wsmode serve` takes from its
command line carry their option (harness.options): the default stands on the field alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.options import (
    cli,
    nested,
    non_negative_float,
    non_negative_int,
    port_number,
    positive_float,
    positive_int,
)
from harness.protocol.cache import CachePolicy
from harness.usage import API_KEY_ENV
from reference_server.cost_profiles import PROFILE_NAMES
from reference_server.hooks.faults import ALL_FAULTS, CaseBehaviour, check_fault_names
from reference_server.runtime.logs import LOG_FORMATS, LOG_LEVELS, LogFormat

if TYPE_CHECKING:
    from reference_server.front.shared_counts import SharedCounts


def default_data_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wsmode"


@dataclass(frozen=True, slots=True)
class Optimizations:
    """The vendor's optimizations, each switchable so its worth can be measured (ablation)."""

    render_cache: bool = True  # append new items' tokens to the cached rendering
    incremental_checks: bool = True  # validate and classify only new items on a cache hit
    routing_reuse: bool = True  # reuse the cached model resolution instead of a routing hop
    async_post: bool = True  # billing and store writes after the terminal event, off the path
    connection_cache: bool = True  # the connection-scoped state cache itself

    @classmethod
    def none(cls) -> Optimizations:
        return cls(False, False, False, False, False)

    def without(self, name: str) -> Optimizations:
        if name not in self.__dataclass_fields__:
            raise ValueError(f"unknown optimization '{name}'")
        return replace(self, **{name: False})


OPTIMIZATION_NAMES = tuple(Optimizations.__dataclass_fields__)


# `wsmode serve --help`'s groups, in the order they appear
LISTEN, SIMULATION, FEATURES, CONNECTIONS, STORE, LOGS = (
    "listening",
    "simulated inference",
    "protocol features",
    "connections and limits",
    "store (store=true)",
    "logs",
)


def _limit(default: float, flag: str, help: str, kind: Any = positive_int) -> Any:
    """A limit that `wsmode serve` takes as an option."""
    return field(default=default, metadata=cli(flag, type=kind, group=CONNECTIONS, help=help))


@dataclass(frozen=True, slots=True)
class Limits:
    # WS message / HTTP body; WS breach closes 1009
    max_message_bytes: int = _limit(
        4 * 1024 * 1024,
        "--max-message-bytes",
        "largest client message accepted (close 1009 beyond)",
    )
    max_http_header_bytes: int = 16 * 1024
    http_request_deadline_s: float = 30.0  # one HTTP request's head + body, however it trickles
    max_http_connections: int = 256  # open HTTP connections; over it: 503 before reading
    send_stall_timeout_s: float = _limit(
        10.0,
        "--send-stall-timeout-s",
        "a client that reads nothing for this long is closed (1008)",
        positive_float,
    )
    handshake_timeout_s: float = 10.0
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 20.0
    close_timeout_s: float = 10.0
    # then websocket_connection_limit_reached, close 1000
    connection_lifetime_s: float = _limit(
        3600.0, "--lifetime-s", "connection lifetime limit", positive_float
    )
    max_pending_per_connection: int = _limit(
        4, "--max-pending", "creates queued behind the one in flight (per lane)", non_negative_int
    )
    # creates accepted and not yet finished on one connection (running or queued, every lane),
    # in frame bytes: the count bounds alone let one connection hold 32 lanes x 5 x 4 MiB
    max_pending_bytes_per_connection: int = _limit(
        16 * 1024 * 1024,
        "--max-pending-bytes",
        "bytes of creates running or queued on one connection, over all its lanes (one create "
        "is always taken)",
    )
    # the response caches of all of one connection's lanes together (each lane's own bound is
    # the cache policy's); over it the largest other lane gives up its oldest entries
    max_cache_bytes_per_connection: int = _limit(
        64 * 1024 * 1024,
        "--max-cache-bytes-per-connection",
        "response state kept by one connection over all its lanes, in bytes",
    )
    # a connection that held this many bytes (pending creates and cached state) at once hands
    # its memory back to the OS when it closes (runtime/memory.py; 0: never)
    memory_trim_after_bytes: int = _limit(
        8 * 1024 * 1024,
        "--memory-trim-after-bytes",
        "trim the allocator after a connection that held this many bytes closes (0: never)",
        non_negative_int,
    )
    # the server's GC policy (runtime/gc_policy.py): survivors frozen this often (0: CPython's
    # own policy), and the full sweep that takes the frozen garbage cycles this often
    gc_tenure_interval_s: float = _limit(
        1.0,
        "--gc-tenure-interval-s",
        "freeze the objects that survive the young collections this often, so no collection "
        "walks the cached connections (0: CPython's default policy)",
        non_negative_float,
    )
    gc_sweep_interval_s: float = _limit(
        600.0,
        "--gc-sweep-interval-s",
        "a full collection over the frozen objects this often, for their garbage cycles (0: never)",
        non_negative_float,
    )
    max_active_lanes: int = 16  # responses generating at once per connection (extras queue)
    max_lanes: int = 32  # distinct named lanes (stream_id) per connection
    max_pending_steers: int = field(  # beta, PROTOCOL.md §2.2
        default=8,
        metadata=cli(
            "--max-pending-steers",
            type=positive_int,
            group=FEATURES,
            help="steers queued on one response (running, or waiting for tool output)",
        ),
    )
    max_pending_steer_bytes: int = field(  # the same steers, in frame bytes (one always taken)
        default=1024 * 1024,
        metadata=cli(
            "--max-pending-steer-bytes",
            type=positive_int,
            group=FEATURES,
            help="bytes of steers queued on one response (one steer is always taken)",
        ),
    )
    max_inject_bytes: int = field(  # beta, PROTOCOL.md §2.2: committed tool outputs, in bytes
        default=16 * 1024 * 1024,
        metadata=cli(
            "--max-inject-bytes",
            type=positive_int,
            group=FEATURES,
            help="bytes of inject frames one multi-agent response commits in all "
            "(over it: response.inject.failed inject_too_large, nothing committed)",
        ),
    )
    required_input_timeout_s: float = field(
        default=600.0,
        metadata=cli(
            "--required-input-timeout-s",
            type=positive_float,
            group=FEATURES,
            help="how long a multi-agent response waits for an injected tool output before it "
            "fails",
        ),
    )
    max_connections: int = _limit(
        1024,
        "--max-connections",
        "WebSocket connections at once; more are refused with 429 before the upgrade",
    )
    max_connections_per_key: int = _limit(
        64, "--max-connections-per-key", "WebSocket connections at once per API key (429 beyond)"
    )
    # coding rollouts outgrow 128k (server README)
    context_window_tokens: int = _limit(200_000, "--context-window", "context window, in tokens")
    max_output_tokens: int = 32_000
    # SIGTERM: finish in-flight responses, then close 1001
    drain_timeout_s: float = _limit(
        10.0,
        "--drain-timeout-s",
        "on SIGTERM, how long in-flight responses may finish before sockets close 1001",
        non_negative_float,
    )
    # Each connection's socket receive buffer (SO_RCVBUF; the kernel caps it at
    # net.core.rmem_max; 0 keeps the kernel's autotuned default). Large, so that a client can
    # hand a whole request over at once: with the default (128 KiB to start) a full-history
    # request waits in the client's kernel until the server has read the first part, and under
    # load the server reads late.
    socket_receive_buffer_bytes: int = _limit(
        4 * 1024 * 1024,
        "--receive-buffer-bytes",
        "socket receive buffer per connection (0: the kernel's autotuned default)",
        non_negative_int,
    )


def _optimizations_without(names: list[str]) -> Optimizations:
    optimizations = Optimizations()
    for name in names:
        optimizations = optimizations.without(name)
    return optimizations


def _switch(flag: str, group: str, help: str, *, on: bool = False) -> Any:
    """A feature switched on by `flag` (or, `on` by default, off by it)."""
    action = "store_false" if on else "store_true"
    return field(default=on, metadata=cli(flag, action=action, group=group, help=help))


@dataclass(frozen=True, slots=True)
class ServerConfig:
    host: str = field(
        default="127.0.0.1", metadata=cli("--host", group=LISTEN, help="address to listen on")
    )
    port: int = field(
        default=8000,
        metadata=cli(
            "--port", type=port_number, group=LISTEN, help="port to listen on (0 picks a free one)"
        ),
    )
    profile: str = field(
        default="production-like",
        metadata=cli(
            "--profile",
            group=SIMULATION,
            help=f"the cost profile: one of {', '.join(PROFILE_NAMES)}, or a TOML path",
        ),
    )
    data_dir: Path = field(
        default_factory=default_data_dir,
        metadata=cli(
            "--data-dir",
            type=Path,
            group=STORE,
            shown="$XDG_CACHE_HOME/wsmode, else ~/.cache/wsmode",
            help="store directory",
        ),
    )
    api_keys: tuple[str, ...] = field(
        default=(),
        metadata=cli(
            "--api-key",
            action="append",
            metavar="KEY",
            group=LISTEN,
            help=f"require this key (repeatable; the comma-separated keys in ${API_KEY_ENV} too; "
            "none given: no key required)",
        ),
    )
    seed: int = field(
        default=0,
        metadata=cli("--seed", type=int, group=SIMULATION, help="seed of the simulated generation"),
    )
    cache: CachePolicy = field(default_factory=CachePolicy, metadata=nested(CONNECTIONS))
    limits: Limits = field(default_factory=Limits, metadata=nested())
    optimizations: Optimizations = field(
        default_factory=Optimizations,
        metadata=cli(
            "--disable",
            action="append",
            metavar="OPTIMIZATION",
            choices=OPTIMIZATION_NAMES,
            to_field=_optimizations_without,
            shown="",
            group=SIMULATION,
            help="switch an optimization off (repeatable): " + ", ".join(OPTIMIZATION_NAMES),
        ),
    )
    faults: frozenset[str] = field(
        default=frozenset(),
        metadata=cli(
            "--fault",
            action="append",
            metavar="NAME",
            to_field=check_fault_names,
            group=SIMULATION,
            help="inject a fault (repeatable); known: " + ", ".join(ALL_FAULTS),
        ),
    )
    # a client case's server behaviours (`wsmode certify-client`); the default does nothing
    case_behaviour: CaseBehaviour = field(default_factory=CaseBehaviour)
    # named lanes (stream_id), the 2026-08 extension
    lanes: bool = _switch("--lanes", FEATURES, "enable named lanes (stream_id)")
    # The 2026 beta client events (PROTOCOL.md §2.2), each off by default: a server without them
    # answers `unknown_event_type`, and refuses `multi_agent.enabled` (unsupported_parameter).
    steer: bool = _switch(
        "--steer",
        FEATURES,
        "serve the beta client event response.steer (off: unknown_event_type)",
    )
    multi_agent: bool = _switch(
        "--multi-agent",
        FEATURES,
        "serve multi_agent.enabled responses and the beta client event response.inject "
        "(off: unsupported_parameter / unknown_event_type)",
    )
    root_agent: str = "root"  # [I] the agent tag of a multi-agent response's own items
    # offer permessage-deflate (codex asks for it; the SDK does not)
    compression: bool = _switch("--compression", LISTEN, "accept permessage-deflate")
    # WebSocket mode on; off, an upgrade is answered 426 (PROTOCOL.md §1.1) and HTTP serves alone
    websocket: bool = _switch(
        "--no-websocket",
        LISTEN,
        "switch WebSocket mode off: an upgrade is answered 426 websocket_not_supported "
        "(clients such as codex fall back to HTTP at once); HTTP/SSE is served as usual",
        on=True,
    )
    # stderr log lines (runtime/logs.py); in the config so `--workers` processes log the same way
    log_level: str = field(
        default="info",
        metadata=cli(
            "--log-level", choices=LOG_LEVELS, group=LOGS, help="least severe log line shown"
        ),
    )
    log_format: LogFormat = field(
        default="text",
        metadata=cli(
            "--log-format",
            choices=LOG_FORMATS,
            group=LOGS,
            help="stderr log lines: text (key=value fields) or json (one object per line)",
        ),
    )
    store_retention_s: float = field(
        default=30 * 86400.0,
        metadata=cli(
            "--store-retention-s", type=positive_float, group=STORE, help="store=true retention"
        ),
    )
    # payload bytes; over it the oldest records go first
    store_max_bytes: int | None = field(
        default=1024**3,
        metadata=cli(
            "--store-max-bytes",
            type=non_negative_int,
            to_field=lambda n: n or None,
            group=STORE,
            help="store=true payload bound; the oldest records are evicted first (0: unbounded)",
        ),
    )
    # The emitter checks every event it builds against the protocol's grammar (its accumulator):
    # ~18% of a short turn's CPU. The tests switch it on; a serving process trusts the emitter.
    self_check: bool = False
    # `wsmode serve --workers N`: N processes on one port (front/workers.py); this one is
    # `worker_index`.
    workers: int = field(
        default=1,
        metadata=cli(
            "--workers",
            type=positive_int,
            group=LISTEN,
            help="server processes on one port (SO_REUSEPORT), sharing the store; /metrics per "
            "worker",
        ),
    )
    worker_index: int = 0
    # the workers' shared connection counts (front/connection_caps.py), made by the parent;
    # None: one process, counting for itself
    connection_counts: SharedCounts | None = field(default=None, compare=False, repr=False)

    @property
    def store_path(self) -> Path:
        return self.data_dir / "responses.sqlite3"

    def with_changes(self, **changes: object) -> ServerConfig:
        return replace(self, **changes)  # type: ignore[arg-type]
