"""`wsmode serve`: run the reference server."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import signal
from collections.abc import Callable
from pathlib import Path

from harness.protocol.cache import CachePolicy
from harness.usage import API_KEY_ENV, env_setting, port_number, usage_error
from reference_server import logs
from reference_server.app import ReferenceServer
from reference_server.config import (
    Limits,
    Optimizations,
    ServerConfig,
    default_data_dir,
)
from reference_server.cost_profiles import PROFILE_NAMES, load_cost_profile
from reference_server.faults import ALL_FAULTS, check_fault_names
from reference_server.logs import LOG_FORMATS, LOG_LEVELS
from reference_server.workers import run_workers

SERVE = "wsmode serve"  # the command its usage errors name


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the reference WebSocket-mode server",
        description="Serve WebSocket /v1/responses and HTTP POST /v1/responses on one port.",
    )
    add_server_options(parser)
    parser.set_defaults(handler=_serve)


def add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port", type=port_number, default=8000, help="port to listen on (0 picks a free one)"
    )
    parser.add_argument(
        "--profile",
        default="production-like",
        help=f"one of {', '.join(PROFILE_NAMES)} or a TOML path",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="store directory (default: $XDG_CACHE_HOME/wsmode, else ~/.cache/wsmode)",
    )
    parser.add_argument(
        "--api-key",
        action="append",
        default=[],
        help=f"require this key (repeatable; the comma-separated keys in ${API_KEY_ENV} too; "
        "none given: no key required)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the simulated generation",
    )
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        help="server processes on one port (SO_REUSEPORT), sharing the store; /metrics per worker",
    )
    parser.add_argument("--lanes", action="store_true", help="enable named lanes (stream_id)")
    parser.add_argument(
        "--steer",
        action="store_true",
        help="serve the beta client event response.steer (off: unknown_event_type)",
    )
    parser.add_argument(
        "--multi-agent",
        action="store_true",
        help="serve multi_agent.enabled responses and the beta client event response.inject "
        "(off: unsupported_parameter / unknown_event_type)",
    )
    parser.add_argument(
        "--max-pending-steers",
        type=_positive_int,
        default=Limits().max_pending_steers,
        help="steers queued on one response (default %(default)s)",
    )
    parser.add_argument(
        "--required-input-timeout-s",
        type=float,
        default=Limits().required_input_timeout_s,
        help="how long a multi-agent response waits for an injected tool output before it "
        "fails (default %(default)s)",
    )
    parser.add_argument(
        "--compression", action="store_true", help="accept permessage-deflate (off by default)"
    )
    parser.add_argument(
        "--no-websocket",
        dest="websocket",
        action="store_false",
        help="switch WebSocket mode off: an upgrade is answered 426 websocket_not_supported "
        "(clients such as codex fall back to HTTP at once); HTTP/SSE is served as usual",
    )
    parser.add_argument(
        "--cache-depth", type=int, default=1, help="responses kept per connection (LRU)"
    )
    parser.add_argument(
        "--cache-max-bytes",
        type=int,
        default=16 * 1024 * 1024,
        help="response state kept per connection, in bytes (LRU)",
    )
    parser.add_argument(
        "--lifetime-s", type=float, default=3600.0, help="connection lifetime limit"
    )
    parser.add_argument(
        "--max-pending", type=int, default=4, help="creates queued behind the one in flight"
    )
    parser.add_argument(
        "--send-stall-timeout-s",
        type=float,
        default=10.0,
        help="a client that reads nothing for this long is closed (1008)",
    )
    parser.add_argument(
        "--drain-timeout-s",
        type=float,
        default=10.0,
        help="on SIGTERM, how long in-flight responses may finish before sockets close 1001",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=Limits().max_connections,
        help="WebSocket connections at once; more are refused with 429 before the upgrade",
    )
    parser.add_argument(
        "--max-connections-per-key",
        type=int,
        default=Limits().max_connections_per_key,
        help="WebSocket connections at once per API key (429 beyond)",
    )
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=4 * 1024 * 1024,
        help="largest client message accepted (close 1009 beyond)",
    )
    parser.add_argument("--context-window", type=int, default=200_000, help="tokens")
    parser.add_argument(
        "--receive-buffer-bytes",
        type=int,
        default=4 * 1024 * 1024,
        help="socket receive buffer per connection (0: the kernel's autotuned default)",
    )
    parser.add_argument(
        "--disable",
        action="append",
        default=[],
        metavar="OPTIMIZATION",
        choices=list(Optimizations.__dataclass_fields__),
        help="switch an optimization off (repeatable): "
        + ", ".join(Optimizations.__dataclass_fields__),
    )
    parser.add_argument(
        "--store-max-bytes",
        type=int,
        default=1024**3,
        help="store=true payload bound; the oldest records are evicted first (0: unbounded)",
    )
    parser.add_argument(
        "--store-retention-s", type=float, default=30 * 86400.0, help="store=true retention"
    )
    parser.add_argument(
        "--log-level", default="info", choices=LOG_LEVELS, help="least severe log line shown"
    )
    parser.add_argument(
        "--log-format",
        default="text",
        choices=LOG_FORMATS,
        help="stderr log lines: text (key=value fields) or json (one object per line)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help="inject a fault (repeatable); known: " + ", ".join(ALL_FAULTS),
    )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    from_env = env_setting(API_KEY_ENV) or ""
    keys = list(args.api_key) + [k.strip() for k in from_env.split(",") if k.strip()]
    optimizations = Optimizations()
    for name in args.disable:
        optimizations = optimizations.without(name)
    return ServerConfig(
        host=args.host,
        port=args.port,
        profile=args.profile,
        data_dir=args.data_dir or default_data_dir(),
        api_keys=tuple(keys),
        seed=args.seed,
        cache=CachePolicy(depth=args.cache_depth, max_bytes=args.cache_max_bytes),
        limits=Limits(
            connection_lifetime_s=args.lifetime_s,
            max_pending_per_connection=args.max_pending,
            send_stall_timeout_s=args.send_stall_timeout_s,
            drain_timeout_s=args.drain_timeout_s,
            max_message_bytes=args.max_message_bytes,
            context_window_tokens=args.context_window,
            socket_receive_buffer_bytes=args.receive_buffer_bytes,
            max_connections=args.max_connections,
            max_connections_per_key=args.max_connections_per_key,
            max_pending_steers=args.max_pending_steers,
            required_input_timeout_s=args.required_input_timeout_s,
        ),
        optimizations=optimizations,
        faults=check_fault_names(args.fault),
        lanes=args.lanes,
        steer=args.steer,
        multi_agent=args.multi_agent,
        compression=args.compression,
        websocket=args.websocket,
        store_max_bytes=args.store_max_bytes or None,
        store_retention_s=args.store_retention_s,
        workers=args.workers,
        log_level=args.log_level,
        log_format=args.log_format,
    )


def _serve(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        load_cost_profile(config.profile)  # a bad profile: one line now, not a traceback later
    except ValueError as exc:  # CostProfileError is one
        return usage_error(SERVE, str(exc))
    try:
        if config.workers > 1:
            return run_workers(config, serve_until_signalled)
        serve_until_signalled(config)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return usage_error(
                SERVE,
                f"{config.host}:{config.port} is in use (errno {exc.errno}): stop what listens "
                "there, or pick another port (--port 0 picks a free one)",
            )
        if exc.errno == errno.EACCES:
            return usage_error(
                SERVE, f"{config.host}:{config.port}: permission denied: use a port above 1023"
            )
        raise
    return 0


def serve_until_signalled(
    config: ServerConfig, on_listening: Callable[[], None] | None = None
) -> None:
    """Serve until SIGTERM/SIGINT; `on_listening` (a worker's) replaces the listening line."""
    logs.configure(config.log_level, config.log_format)
    asyncio.run(_serve_until_signalled(config, on_listening))


async def _serve_until_signalled(
    config: ServerConfig, on_listening: Callable[[], None] | None = None
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    async with ReferenceServer(config) as server:
        if on_listening is not None:
            on_listening()
        else:
            print(
                f"wsmode reference server on {server.ws_url} (HTTP {server.http_url}), "
                f"profile {config.profile}",
                flush=True,
            )
        await stop.wait()
        await server.drain()
