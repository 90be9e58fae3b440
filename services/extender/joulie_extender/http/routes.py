"""The extender's endpoints, one function each, over the pure decisions and the watch cache.

The extender must never fail a scheduling cycle: a bad request gets 400 with a message (which
an `ignorable` extender makes kube-scheduler skip), and an internal error answers neutrally
(every node passes the filter, every node scores 5), is logged and counted in
`joulie_scheduler_internal_errors_total`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import ClientDisconnect

from joulie_common.clock import Clock
from joulie_extender.bulk.decisions import failed_nodes, node_scores
from joulie_extender.cache.store import StateCache
from joulie_extender.http.admission import Admission
from joulie_extender.http.metrics import Metrics, class_label
from joulie_extender.rules.powerest import HardwareInfo
from joulie_extender.rules.scoring import NEUTRAL_SCORE, TwinView, base_score_100, is_stale
from joulie_extender.settings import Settings
from joulie_extender.wire.openapi import (
    REQUEST_BODY,
    BadRequestModel,
    ExtenderFilterResultModel,
    HostPriorityModel,
)
from joulie_extender.wire.scheduler import (
    ExtenderArgs,
    WireError,
    encode,
    filter_result,
    host_priority_list,
    parse_extender_args,
)

log = logging.getLogger(__name__)

_REFUSALS: dict[int | str, dict[str, Any]] = {
    400: {"model": BadRequestModel, "description": "Bad request body"},
    408: {"model": BadRequestModel, "description": "Body not received within EXTENDER_BODY_TIMEOUT"},
    413: {"model": BadRequestModel, "description": "Body over EXTENDER_MAX_BODY_BYTES"},
    503: {"model": BadRequestModel, "description": "Too many requests in flight (EXTENDER_MAX_CONCURRENT)"},
}


class LastScores:
    """Scores of the latest prioritize request per workload class, for the per-node gauges at scrape
    time (replaced, not merged, so nodes that left the cluster drop out)."""

    def __init__(self) -> None:
        self._by_class: dict[str, dict[str, int]] = {}

    def record(self, cls: str, scores: dict[str, int]) -> None:
        self._by_class[cls] = scores

    def by_node_and_class(self) -> dict[tuple[str, str], int]:
        return {(node, cls): score for cls, scores in list(self._by_class.items()) for node, score in scores.items()}


@dataclass(frozen=True)
class Served:
    """What the endpoints read and write: the cache, the settings, the clock, the metrics, the
    requests in flight."""

    cache: StateCache
    settings: Settings
    clock: Clock
    metrics: Metrics
    last_scores: LastScores = field(default_factory=LastScores)
    admission: Admission = field(default_factory=lambda: Admission(1, 1))


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(encode(payload), status_code=status, media_type="application/json", headers=headers)


class BodyRefused(Exception):
    """A body not read to the end: too large (413) or too slow (408)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason = status, reason


async def read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The request body, refused (BodyRefused) past `limit` bytes or `timeout_s` without reading the rest."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyRefused(413, "body-too-large",
                          f"body of {declared} bytes exceeds the limit of {limit} bytes (EXTENDER_MAX_BODY_BYTES)")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise BodyRefused(413, "body-too-large",
                                      f"body exceeds the limit of {limit} bytes (EXTENDER_MAX_BODY_BYTES)")
                chunks.append(chunk)
    except TimeoutError:
        raise BodyRefused(408, "body-timeout", f"body not received within {timeout_s:g} s "
                          f"({size} bytes came; EXTENDER_BODY_TIMEOUT)") from None
    except ClientDisconnect:  # gone before its body ended: nobody to answer, nothing to log
        raise BodyRefused(400, "client-disconnected", f"client disconnected after {size} bytes") from None
    return b"".join(chunks)


async def _parse(served: Served, request: Request, endpoint: str) -> ExtenderArgs | Response:
    settings = served.settings
    try:
        # Only a filter reply echoes the Nodes: prioritize skips keeping their raw JSON.
        body = await read_body(request, settings.max_body_bytes, settings.body_timeout_s)
        return parse_extender_args(body, keep_raw=endpoint == "filter")
    except BodyRefused as err:
        served.metrics.refused_requests.labels(endpoint, err.reason).inc()
        # The rest of the body is never read: the connection closes after the answer.
        return _json({"error": str(err)}, err.status, {"Connection": "close"})
    except WireError as err:
        served.metrics.bad_requests.labels(endpoint).inc()
        return _json({"error": f"decode error: {err}"}, 400)


async def _admitted(served: Served, request: Request, endpoint: str,
                    handle: Callable[[ExtenderArgs], Response]) -> Response:
    """`handle` the parsed request if it is admitted (http/admission.py), else 503 at once."""
    peer = request.client.host if request.client else "unknown"
    busy = served.admission.try_enter(peer)
    if busy is not None:
        served.metrics.refused_requests.labels(endpoint, "busy").inc()
        return _json({"error": f"busy: {busy}"}, 503, {"Retry-After": "1", "Connection": "close"})
    try:
        args = await _parse(served, request, endpoint)
        return args if isinstance(args, Response) else handle(args)
    finally:
        served.admission.leave(peer)


def add_filter(app: FastAPI, served: Served) -> None:
    """POST /filter: the candidates the pod may not use, with reasons; on an internal error none."""
    m, settings = served.metrics, served.settings

    @app.post(
        "/filter",
        summary="Filter nodes for a pod",
        openapi_extra=REQUEST_BODY,
        responses={200: {"model": ExtenderFilterResultModel}, **_REFUSALS},
    )
    async def filter_(request: Request) -> Response:
        return await _admitted(served, request, "filter", handle)

    def handle(args: ExtenderArgs) -> Response:
        started = time.perf_counter()
        cls = class_label(args.workload_class)
        m.filter_requests.labels(cls).inc()
        try:
            failed = failed_nodes(args, served.cache, now=served.clock.now(), staleness=settings.staleness)
        except Exception:
            log.exception("filter failed internally; letting every node pass")
            m.internal_errors.labels("filter").inc()
            failed = {}
        body = filter_result(args, failed)
        m.filter_duration.labels(cls).observe(time.perf_counter() - started)
        return _json(body)


def add_prioritize(app: FastAPI, served: Served) -> None:
    """POST /prioritize: each candidate's score 0..10; on an internal error the neutral score for all."""
    m, settings = served.metrics, served.settings

    @app.post(
        "/prioritize",
        summary="Score nodes (0..10) for a pod",
        openapi_extra=REQUEST_BODY,
        responses={200: {"model": list[HostPriorityModel]}, **_REFUSALS},
    )
    async def prioritize(request: Request) -> Response:
        return await _admitted(served, request, "prioritize", handle)

    def handle(args: ExtenderArgs) -> Response:
        started = time.perf_counter()
        cls = class_label(args.workload_class)
        m.prioritize_requests.labels(cls).inc()
        try:
            scores = node_scores(
                args, served.cache, now=served.clock.now(), staleness=settings.staleness, coeffs=settings.coefficients
            )
        except Exception:
            # A pod whose resources cannot be read lands here too: neutral beats failing the cycle.
            log.exception("prioritize failed internally; every node gets the neutral score")
            m.internal_errors.labels("prioritize").inc()
            scores = dict.fromkeys(args.candidate_names, NEUTRAL_SCORE)
        served.last_scores.record(cls, scores)
        m.prioritize_duration.labels(cls).observe(time.perf_counter() - started)
        return _json(host_priority_list(scores))


def add_healthz(app: FastAPI) -> None:
    """GET /healthz: "ok" while the process serves."""

    @app.get("/healthz", response_class=PlainTextResponse)
    async def healthz() -> str:
        return "ok"


def add_metrics(app: FastAPI, metrics: Metrics) -> None:
    """GET /metrics: the Prometheus exposition of the extender's registry."""

    @app.get("/metrics", response_class=PlainTextResponse)
    async def metrics_() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)


def _node_row(twin: TwinView, hw: HardwareInfo | None, stale: bool) -> dict[str, Any]:
    return {
        "nodeName": twin.node_name,
        "schedulableClass": twin.effective_class,
        "headroom": twin.headroom_score,
        "coolingStress": twin.cooling_stress_score,
        "measuredPowerW": twin.measured_power_w,
        "cappedPowerW": twin.capped_power_w,
        "nodeTdpW": twin.node_tdp_w,
        "powerTrendWPerMin": twin.power_trend_w_per_min,
        "lastUpdated": twin.last_updated.isoformat() if twin.last_updated else None,
        "baseScore": round(base_score_100(twin), 3),
        "cpuTotalCores": hw.cpu_total_cores if hw else 0,
        "cpuMaxWattsTotal": hw.cpu_max_watts_total if hw else 0.0,
        "gpuCount": hw.gpu_count if hw else 0,
        "gpuMaxWattsPerGPU": hw.gpu_max_watts_per_gpu if hw else 0.0,
        "hasGpu": hw.gpu_present if hw else False,
        "stale": stale,
    }


def scoring_snapshot(served: Served, now: datetime) -> dict[str, Any]:
    """What /debug/scoring shows: the model's settings, the cluster aggregates and each twin's inputs."""
    cache, settings = served.cache, served.settings
    hardware = cache.hardware_all()
    nodes = [_node_row(twin, hardware.get(twin.node_name), is_stale(twin, now, settings.staleness))
             for twin in sorted(cache.twins(), key=lambda t: t.node_name)]
    ctx = cache.cluster_context(now, settings.staleness)
    return {
        "coefficients": asdict(settings.coefficients),
        "stalenessThresholdSeconds": settings.staleness_s,
        "scoreRange": [0, 10],
        "neutralScore": NEUTRAL_SCORE,
        "cluster": {"perfPressure": ctx.perf_pressure, "clusterTrendWPerMin": ctx.cluster_trend_w_per_min},
        "cacheSynced": dict(cache.synced),
        "nodes": nodes,
    }


def add_debug_scoring(app: FastAPI, served: Served) -> None:
    """GET /debug/scoring: scoring_snapshot as JSON."""

    @app.get("/debug/scoring")
    async def debug_scoring() -> Response:
        return _json(scoring_snapshot(served, served.clock.now()))
