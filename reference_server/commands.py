"""`wsmode serve`: run the reference server."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import signal
from collections.abc import Callable

from harness.options import add_options, from_args
from harness.usage import API_KEY_ENV, env_setting, usage_error
from reference_server.app import ReferenceServer
from reference_server.config import ServerConfig
from reference_server.cost_profiles import load_cost_profile
from reference_server.front.workers import run_workers
from reference_server.runtime import logs

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
    """serve's options: the fields of ServerConfig that declare one (reference_server.config)."""
    add_options(parser, ServerConfig)


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    config = from_args(ServerConfig, args)
    from_env = env_setting(API_KEY_ENV) or ""
    keys = config.api_keys + tuple(k.strip() for k in from_env.split(",") if k.strip())
    return config.with_changes(api_keys=keys)


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
