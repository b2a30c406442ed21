"""The columns of a bench comparison: each variant is a mode, against a server, with driver
options; and the embedded servers the variants need (one per set of switched-off optimizations).

`ws-nocache` (WS with the server's connection cache off, on its own server) splits the speedup
into input size, transport and server-side cache savings; `--ablation` adds one ws variant per
optimization switched off in turn.

Each variant replays as its own tenant (its own API key on the embedded server): the server's
prefix (KV) cache is per tenant, so no mode pre-warms the prompt cache for another. Without this
the mode that happens to replay a rollout first pays all the cold prefill (~1 s per rollout).
A target of the user's has one key for every variant: there each variant's instructions start
with a line of its own, fresh per run (`cache_salt`), so no variant's prompt prefix is another's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from harness.load.bench.bench_config import EXACT_SAMPLING, NOCACHE_VARIANT, BenchConfig
from harness.load.core.modes import Mode
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.embedded_server import EmbeddedServer

OPTIMIZATION_FLAGS = ("render_cache", "incremental_checks", "routing_reuse", "async_post")
MAIN_SERVER = "main"  # every optimization on: serves the plain modes
MODE_DESCRIPTIONS: Mapping[str, str] = {
    "ws": "WebSocket, previous_response_id + new items, store=false (connection cache)",
    "http": "HTTP SSE, stateless: full history every turn, store=false",
    "http-chained": "HTTP SSE, previous_response_id + new items, store=true (hydration)",
}


@dataclass(frozen=True, slots=True)
class Variant:
    """One column of the comparison: a mode, against a server, with driver options."""

    name: str
    endpoint: Endpoint
    options: ReplayOptions
    description: str = ""
    disabled: tuple[str, ...] = ()

    @property
    def mode(self) -> Mode:
        return self.options.mode


def ablation_name(flag: str) -> str:
    return "ws-no-" + flag.replace("_", "-")


def tenant_key(variant_name: str, seed: int) -> str:
    """The API key a variant replays with on the embedded servers: its own tenant."""
    return f"wsmode-bench-{seed}-{variant_name}"


def ablated_servers(config: BenchConfig) -> dict[str, tuple[str, ...]]:
    """The servers the run needs, by key, with the optimizations each has switched off: the main
    server, one for ws-nocache and, for --ablation, one per flag. Each ablation variant is named
    like its server."""
    wanted: dict[str, tuple[str, ...]] = {MAIN_SERVER: ()}
    if config.with_nocache:
        wanted[NOCACHE_VARIANT] = ("connection_cache",)
    if config.ablation:
        for flag in OPTIMIZATION_FLAGS:
            wanted[ablation_name(flag)] = (flag,)
    return wanted


def cache_salt(config: BenchConfig, variant_name: str, external: bool) -> str | None:
    """The instructions line that keeps a variant's prompts out of every other variant's (and
    run's) prefix cache on a target the bench cannot give tenants: a few tokens more per turn,
    the same in every mode (so the work stays equal). None on the embedded servers (tenants)."""
    if not external or config.cache_salt is None:
        return None
    return f"[wsmode bench {config.cache_salt} {variant_name}]"


def base_options(config: BenchConfig) -> ReplayOptions:
    """The driver options every variant shares; each variant sets its mode."""
    return ReplayOptions(
        time_scale=config.time_scale,
        send_script=config.effective_send_script,
        model=config.model,
        prewarm=config.prewarm,
        max_turns=config.max_turns,
        turn_timeout_s=config.turn_timeout_s,
        event_timeout_s=config.event_timeout_s,
        seed=None,
        output_cap_scale=config.output_cap_scale,
        temperature=0.0 if config.sampling == EXACT_SAMPLING else None,
        sampling_seed=config.sampling_seed,
    )


def build_variants(
    config: BenchConfig, servers: Mapping[str, EmbeddedServer] | None
) -> list[Variant]:
    """The variants of this run; with the embedded servers, each variant is its own tenant."""
    base = base_options(config)

    def endpoint(server_key: str, name: str) -> Endpoint:
        if servers is None:
            return Endpoint(config.target, config.http_target, config.api_key)
        server = servers[server_key]
        return Endpoint(server.ws_url, server.http_url, tenant_key(name, config.seed))

    variants = [
        Variant(
            mode,
            endpoint(MAIN_SERVER, mode),
            replace(base, mode=mode, cache_salt=cache_salt(config, mode, servers is None)),
            MODE_DESCRIPTIONS[mode],
        )
        for mode in config.modes
    ]
    if config.with_nocache:
        # without the connection cache a continuation resolves only from the store: store=true
        nocache = replace(base, mode="ws", store=True)
        description = "WebSocket, connection_cache off, store=true (hydrates every turn)"
        nocache_endpoint = endpoint(NOCACHE_VARIANT, NOCACHE_VARIANT)
        variants.append(
            Variant(NOCACHE_VARIANT, nocache_endpoint, nocache, description, ("connection_cache",))
        )
    if config.ablation:
        for flag in OPTIMIZATION_FLAGS:
            name = ablation_name(flag)
            ws = replace(base, mode="ws")
            variants.append(
                Variant(name, endpoint(name, name), ws, f"WebSocket with {flag} off", (flag,))
            )
    return variants


@contextlib.contextmanager
def embedded_servers(config: BenchConfig) -> Iterator[dict[str, EmbeddedServer]]:
    """The main server (every optimization on), one for ws-nocache (connection cache off) and,
    for --ablation, one per switched-off flag; each knows every variant's tenant key."""
    wanted = ablated_servers(config)
    names = [*config.modes, *(n for n in wanted if n != MAIN_SERVER)]
    keys = tuple(tenant_key(n, config.seed) for n in names)
    servers: dict[str, EmbeddedServer] = {}
    try:
        for key, disabled in wanted.items():  # side by side: each spends seconds importing
            servers[key] = EmbeddedServer(
                profile=config.profile,
                disable=disabled,
                api_keys=keys,
                # multi-agent rollouts (trace version 2) need it; no cost to the others
                extra_args=("--multi-agent",),
            )
            servers[key].launch()
        for server in servers.values():
            server.wait_listening()
        yield servers
    finally:
        for server in servers.values():
            server.stop()
