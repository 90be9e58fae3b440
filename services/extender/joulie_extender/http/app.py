"""The composition root of the HTTP shell: one FastAPI app, its metrics and its endpoints (routes.py)."""

from __future__ import annotations

from fastapi import FastAPI

from joulie_common.clock import SYSTEM_CLOCK, Clock
from joulie_extender.cache.store import StateCache
from joulie_extender.http import routes
from joulie_extender.http.admission import Admission
from joulie_extender.http.metrics import Metrics
from joulie_extender.settings import Settings


def create_app(cache: StateCache, settings: Settings, *, clock: Clock = SYSTEM_CLOCK, metrics: Metrics | None = None) -> FastAPI:
    """The extender's app over `cache`: /filter, /prioritize, /healthz, /metrics; /debug/scoring,
    /docs and /openapi.json only with `settings.debug_endpoints` (they describe every node to anyone
    who can connect)."""
    debug = settings.debug_endpoints
    app = FastAPI(
        title="joulie-extender",
        description="kube-scheduler extender: filters and scores nodes from NodeTwin and NodeHardware.",
        version="v1",
        docs_url="/docs" if debug else None,
        redoc_url="/redoc" if debug else None,
        openapi_url="/openapi.json" if debug else None,
    )
    admission = Admission(settings.max_concurrent, settings.max_per_client)
    served = routes.Served(cache, settings, clock, metrics or Metrics(), admission=admission)
    # The per-node gauges are computed at scrape time from the cache and the latest scores.
    served.metrics.add_node_gauges(cache, served.last_scores.by_node_and_class, clock.now, settings.staleness)
    app.state.metrics = served.metrics
    app.state.cache = cache
    routes.add_filter(app, served)
    routes.add_prioritize(app, served)
    routes.add_healthz(app)
    routes.add_metrics(app, served.metrics)
    if debug:
        routes.add_debug_scoring(app, served)
    return app
