"""The server-wide objects a turn needs, built once per server from its config."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from harness.protocol.cache import ResponseCache
from reference_server.config import ServerConfig
from reference_server.cost_profiles import load_cost_profile
from reference_server.engine.cost_profile import Profile
from reference_server.engine.emission import DeltaPacer
from reference_server.engine.engine import Engine
from reference_server.hooks.server_hooks import ServerHooks
from reference_server.pipeline.admission import TurnAdmission
from reference_server.pipeline.inference import pool_passes_output_screen
from reference_server.runtime.background import BackgroundRuns
from reference_server.runtime.gc_policy import ServerGc
from reference_server.runtime.memory import MemoryReturn
from reference_server.runtime.metrics import ServerMetrics
from reference_server.state.conversation import Conversation
from reference_server.state.prefix import PrefixCache
from reference_server.store.persistence import Persistence
from reference_server.store.response_store import ResponseStore


@dataclass
class Services:
    config: ServerConfig
    profile: Profile
    engine: Engine
    persistence: Persistence
    prefix_cache: PrefixCache = field(default_factory=PrefixCache)
    metrics: ServerMetrics = field(default_factory=ServerMetrics)
    pacer: DeltaPacer = field(default_factory=DeltaPacer)  # deltas/s over all streams
    admission: TurnAdmission = field(default_factory=TurnAdmission)  # a few new turns a tick
    # the faults (the typed view of `config.faults`), a client case's script, the observer
    hooks: ServerHooks = field(default_factory=ServerHooks)
    # Only the `shared-cache` fault uses this: one cache for every connection (a bug on purpose).
    shared_cache: ResponseCache[Conversation] | None = None
    background: BackgroundRuns = field(default_factory=BackgroundRuns)  # background: true
    # trims the allocator after a connection that held many bytes closes (runtime/memory.py)
    memory_return: MemoryReturn = field(default_factory=lambda: MemoryReturn(0))
    gc_policy: ServerGc = field(default_factory=lambda: ServerGc(0, 0))  # runtime/gc_policy.py
    draining: bool = False  # SIGTERM: new creates are refused, in-flight ones finish
    # Every live connection cache, for the cache gauges (a closed connection's drops out).
    live_caches: weakref.WeakSet[ResponseCache[Conversation]] = field(
        default_factory=weakref.WeakSet
    )

    @classmethod
    def build(cls, config: ServerConfig) -> Services:
        profile = load_cost_profile(config.profile)
        store = ResponseStore(
            config.store_path,
            retention_s=config.store_retention_s,
            max_bytes=config.store_max_bytes,
        )
        hooks = ServerHooks.of(config.faults, config.case_behaviour)
        engine = Engine(profile, config.seed)
        pool_passes_output_screen()  # once per process, before any reply (pipeline/inference)
        metrics = ServerMetrics()
        services = cls(
            config,
            profile,
            engine,
            Persistence(store, metrics),
            metrics=metrics,
            pacer=DeltaPacer(profile.max_deltas_per_s),
            hooks=hooks,
            memory_return=MemoryReturn(config.limits.memory_trim_after_bytes),
            gc_policy=ServerGc(
                config.limits.gc_tenure_interval_s, config.limits.gc_sweep_interval_s
            ),
        )
        # /metrics is per worker (`serve --workers N`): each scrape says which one answered
        services.metrics.inc("wsmode_worker_info", worker=str(config.worker_index))
        if hooks.faults.shared_cache:
            services.shared_cache = ResponseCache(config.cache)
        services.register_gauges()
        return services

    def register_gauges(self) -> None:
        caches, gauges = self.live_caches, self.metrics.gauges
        gauges["wsmode_connection_cache_entries"] = lambda: sum(len(c) for c in list(caches))
        gauges["wsmode_connection_cache_bytes"] = lambda: sum(c.total_bytes for c in list(caches))
        gauges["wsmode_prefix_cache_bytes"] = lambda: self.prefix_cache.total_bytes
        # counters the prefix cache keeps itself (turns count into it, not into the metrics)
        gauges["wsmode_prefix_cache_queries_total"] = lambda: self.prefix_cache.queried_tokens
        gauges["wsmode_prefix_cache_hits_total"] = lambda: self.prefix_cache.hit_tokens
        gauges["wsmode_store_bytes"] = lambda: self.persistence.store.total_bytes
        policy = self.gc_policy
        gauges["wsmode_gc_tenure_pause_seconds"] = lambda: policy.longest_tenure_s
        gauges["wsmode_gc_sweep_pause_seconds"] = lambda: policy.longest_sweep_s
        gauges["wsmode_memory_trims_total"] = lambda: self.memory_return.trims
        gauges["wsmode_store_materialised_bytes"] = lambda: self.persistence.materialised_bytes
