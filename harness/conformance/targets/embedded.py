"""The embedded target: the reference server started in-process, configured from the profile.

What the profile declares is what the server is started with (API key, cache depth and byte
bound, message size limit, named lanes and their limit), so the reference profile's declarations
are true by construction. A declared short lifetime gets its own second instance
(`lifetime_url = "embedded"`), because a short-lived main server would cut every other case's
connections; `ws_off_url = "embedded"` a third, with WebSocket mode switched off. A lifetime
declared without a `lifetime_url` is the main server's own (a target whose lifetime is
configured short for the whole run, as a vLLM or gateway profile declares it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from harness.conformance.targets.plan import LiveTarget, PlannedTarget
from harness.conformance.targets.profile import DOCUMENTED_MAX_LANES, EMBEDDED, TargetProfile
from harness.protocol.cache import CachePolicy

if TYPE_CHECKING:
    from reference_server.config import Limits

DEFAULT_CACHE_BYTES = 16 * 1024 * 1024
DEFAULT_MESSAGE_BYTES = 4 * 1024 * 1024


def _version() -> str:
    try:
        return "wsmode-reference " + importlib.metadata.version("wsmode")
    except importlib.metadata.PackageNotFoundError:
        return "wsmode-reference"


@contextlib.contextmanager
def embedded_target(planned: PlannedTarget) -> Iterator[LiveTarget]:
    from reference_server.app import running_in_thread
    from reference_server.config import ServerConfig
    from reference_server.hooks.faults import check_fault_names

    profile = planned.profile
    data_dir = Path(tempfile.mkdtemp(prefix="wsmode-certify-"))
    config = ServerConfig(
        host="127.0.0.1",
        port=0,
        profile=profile.server_profile,
        data_dir=data_dir / "main",
        api_keys=(profile.api_key,) if profile.api_key else (),
        cache=CachePolicy(
            depth=max(profile.cache_depth, 1),
            max_bytes=profile.cache_max_bytes or DEFAULT_CACHE_BYTES,
        ),
        limits=embedded_limits(profile),
        faults=check_fault_names(planned.faults),
        lanes=profile.has("lanes"),  # named lanes (stream_id), limited to the declared count
        steer=profile.has("steer"),  # the beta client events (PROTOCOL.md §2.2)
        multi_agent=profile.has("multi_agent"),
    )
    try:
        with contextlib.ExitStack() as stack:
            main = stack.enter_context(running_in_thread(config))
            lifetime_url: str | None = None
            if profile.lifetime_s and profile.lifetime_url == EMBEDDED:
                short = config.with_changes(
                    data_dir=data_dir / "lifetime",
                    limits=dataclasses.replace(
                        config.limits, connection_lifetime_s=profile.lifetime_s
                    ),
                )
                lifetime_url = stack.enter_context(running_in_thread(short)).ws_url
            ws_off_url: str | None = None
            if profile.ws_off_url == EMBEDDED:  # a third instance, WebSocket mode off
                off = config.with_changes(data_dir=data_dir / "ws-off", websocket=False)
                ws_off_url = stack.enter_context(running_in_thread(off)).ws_url
            if profile.lifetime_s and not profile.lifetime_url:
                lifetime_url = main.ws_url
            http_url = main.http_url if profile.http_url else None
            live_profile = profile.with_changes(
                ws_url=main.ws_url,
                http_url=http_url or "",
                lifetime_url=lifetime_url or "",
                ws_off_url=ws_off_url or "",
            )
            yield LiveTarget(
                name=planned.name,
                ws_url=main.ws_url,
                http_url=http_url,
                lifetime_url=lifetime_url,
                api_key=profile.api_key or None,
                profile=live_profile,
                faults=planned.faults,
                version=_version(),
                ws_off_url=ws_off_url,
            )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def embedded_limits(profile: TargetProfile) -> Limits:
    """The embedded server's limits: what the profile declares (defaults otherwise). A declared
    connection limit is the per-key one (every case uses one key); a lifetime declared without
    its own endpoint is the main server's."""
    from reference_server.config import Limits

    limits = Limits(
        max_message_bytes=profile.max_message_bytes or DEFAULT_MESSAGE_BYTES,
        max_lanes=profile.max_lanes or DOCUMENTED_MAX_LANES,
    )
    if profile.max_connections:
        limits = dataclasses.replace(limits, max_connections_per_key=profile.max_connections)
    if profile.lifetime_s and not profile.lifetime_url:
        limits = dataclasses.replace(limits, connection_lifetime_s=profile.lifetime_s)
    return limits


def remote_target(planned: PlannedTarget) -> LiveTarget:
    profile = planned.profile
    lifetime_url = profile.lifetime_url or (profile.ws_url if profile.lifetime_s else "")
    return LiveTarget(
        name=planned.name,
        ws_url=planned.spec.url,
        http_url=profile.http_url or None,
        lifetime_url=lifetime_url or None,
        api_key=profile.api_key or None,
        profile=profile,
        faults=(),
        version=None,
        ws_off_url=profile.ws_off_url or None,
    )
