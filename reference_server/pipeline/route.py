"""The route stage: which canonical model and serving pool answer a request.

With `routing_reuse` a continuation reuses the route carried in its parent's cache entry
instead of paying the routing hop (`state/route.py`) again.
"""

from __future__ import annotations

import time

from reference_server.pipeline.stages import StageLog
from reference_server.state.route import Route, resolve_route


def route_request(
    model: str, tenant: str, parent_route: Route | None, *, reuse: bool, stages: StageLog
) -> Route:
    """The parent's route when it may be reused and names the same model, else a routing hop."""
    started = time.perf_counter()
    if reuse and parent_route is not None and parent_route.requested_model == model:
        stages.took("routing", started)
        return parent_route
    route = resolve_route(model, tenant)
    stages.charge("routing", 1)
    stages.took("routing", started)
    return route
