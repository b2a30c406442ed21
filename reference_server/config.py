"""Server configuration: limits, optimizations and faults, with the defaults of docs/RELIABILITY.md.

Every limit is a field with its unit in the name, so `wsmode serve --help`, the docs and the
conformance target profile all speak the same names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness.protocol.cache import CachePolicy
from reference_server.faults import CaseBehaviour
from reference_server.logs import LogFormat

if TYPE_CHECKING:
    from reference_server.shared_counts import SharedCounts


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


@dataclass(frozen=True, slots=True)
class Limits:
    max_message_bytes: int = 4 * 1024 * 1024  # WS message / HTTP body; WS breach closes 1009
    max_http_header_bytes: int = 16 * 1024
    http_request_deadline_s: float = 30.0  # one HTTP request's head + body, however it trickles
    max_http_connections: int = 256  # open HTTP connections; over it: 503 before reading
    send_stall_timeout_s: float = 10.0  # a client that stops reading is cut off (1008)
    handshake_timeout_s: float = 10.0
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 20.0
    close_timeout_s: float = 10.0
    connection_lifetime_s: float = 3600.0  # then websocket_connection_limit_reached, close 1000
    max_pending_per_connection: int = 4  # queued creates behind the one in flight (per lane)
    max_active_lanes: int = 16  # responses generating at once per connection (extras queue)
    max_lanes: int = 32  # distinct named lanes (stream_id) per connection
    max_pending_steers: int = 8  # steers queued on one response (beta, PROTOCOL.md §2.2)
    # a multi-agent response waiting for an injected tool output fails after this long
    required_input_timeout_s: float = 600.0
    max_connections: int = 1024
    max_connections_per_key: int = 64
    context_window_tokens: int = 200_000  # coding rollouts outgrow 128k (server README)
    max_output_tokens: int = 32_000
    drain_timeout_s: float = 10.0  # SIGTERM: finish in-flight responses, then close 1001
    # Each connection's socket receive buffer (SO_RCVBUF; the kernel caps it at
    # net.core.rmem_max; 0 keeps the kernel's autotuned default). Large, so that a client can
    # hand a whole request over at once: with the default (128 KiB to start) a full-history
    # request waits in the client's kernel until the server has read the first part, and under
    # load the server reads late.
    socket_receive_buffer_bytes: int = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    profile: str = "production-like"
    data_dir: Path = field(default_factory=default_data_dir)
    api_keys: tuple[str, ...] = ()
    seed: int = 0
    cache: CachePolicy = field(default_factory=CachePolicy)
    limits: Limits = field(default_factory=Limits)
    optimizations: Optimizations = field(default_factory=Optimizations)
    faults: frozenset[str] = frozenset()
    # a client case's server behaviours (`wsmode certify-client`); the default does nothing
    case_behaviour: CaseBehaviour = field(default_factory=CaseBehaviour)
    lanes: bool = False  # named lanes (stream_id), the 2026-08 extension
    # The 2026 beta client events (PROTOCOL.md §2.2), each off by default: a server without them
    # answers `unknown_event_type`, and refuses `multi_agent.enabled` (unsupported_parameter).
    steer: bool = False  # response.steer
    multi_agent: bool = False  # multi_agent.enabled responses and response.inject
    root_agent: str = "root"  # [I] the agent tag of a multi-agent response's own items
    compression: bool = False  # offer permessage-deflate (codex asks for it; the SDK does not)
    # WebSocket mode on; off, an upgrade is answered 426 (PROTOCOL.md §1.1) and HTTP serves alone
    websocket: bool = True
    # stderr log lines (logs.py); in the config so `--workers` processes log the same way
    log_level: str = "info"
    log_format: LogFormat = "text"
    store_retention_s: float = 30 * 86400
    store_max_bytes: int | None = 1024**3  # payload bytes; over it the oldest records go first
    # The emitter checks every event it builds against the protocol's grammar (its accumulator):
    # ~18% of a short turn's CPU. The tests switch it on; a serving process trusts the emitter.
    self_check: bool = False
    # `wsmode serve --workers N`: N processes on one port (workers.py); this one is `worker_index`.
    workers: int = 1
    worker_index: int = 0
    # the workers' shared connection counts (connection_caps.py), made by the parent; None: one
    # process, counting for itself
    connection_counts: SharedCounts | None = field(default=None, compare=False, repr=False)

    @property
    def store_path(self) -> Path:
        return self.data_dir / "responses.sqlite3"

    def with_changes(self, **changes: object) -> ServerConfig:
        return replace(self, **changes)  # type: ignore[arg-type]
