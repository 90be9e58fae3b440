"""The HTTP shell: FastAPI routes over the pure decisions and the watch cache.

The extender must never fail a scheduling cycle: a bad request gets 400 with a message (which
an `ignorable` extender makes kube-scheduler skip), and an internal error answers neutrally
(every node passes the filter, every node scores 5), is logged and counted in
`joulie_scheduler_internal_errors_total`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from joulie_common.clock import SYSTEM_CLOCK, Clock
from joulie_extender.cache import StateCache
from joulie_extender.decisions import failed_nodes, node_scores
from joulie_extender.metrics import Metrics, class_label
from joulie_extender.scoring import NEUTRAL_SCORE, base_score_100, is_stale
from joulie_extender.settings import Settings
from joulie_extender.wire import (
    BadRequestModel,
    ExtenderArgs,
    ExtenderFilterResultModel,
    HostPriorityModel,
    WireError,
    encode,
    filter_result,
    host_priority_list,
    parse_extender_args,
)

log = logging.getLogger(__name__)

# Written by hand: the request is parsed by wire.parse_extender_args (case-insensitive keys),
# not by a pydantic model, so the schema documents the canonical spelling.
EXTENDER_ARGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "ExtenderArgs",
    "description": "kube-scheduler extender v1 ExtenderArgs. Keys are matched case-insensitively.",
    "required": ["Pod"],
    "properties": {
        "Pod": {"type": "object", "description": "v1.Pod"},
        "Nodes": {
            "description": "v1.NodeList, sent when nodeCacheCapable is false",
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "items": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["metadata"],
                                "properties": {
                                    "metadata": {
                                        "type": "object",
                                        "required": ["name"],
                                        "properties": {"name": {"type": "string", "minLength": 1}},
                                    }
                                },
                            },
                        }
                    },
                },
                {"type": "null"},
            ],
        },
        "NodeNames": {
            "description": "node names, sent when nodeCacheCapable is true",
            "anyOf": [{"type": "array", "items": {"type": "string", "minLength": 1}}, {"type": "null"}],
        },
    },
}

_REQUEST_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": EXTENDER_ARGS_SCHEMA}}}}


def _json(payload: Any, status: int = 200) -> Response:
    return Response(encode(payload), status_code=status, media_type="application/json")


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused (WireError) past `limit` bytes without reading the rest."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise WireError(f"body of {declared} bytes exceeds the limit of {limit} bytes (EXTENDER_MAX_BODY_BYTES)")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise WireError(f"body exceeds the limit of {limit} bytes (EXTENDER_MAX_BODY_BYTES)")
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(cache: StateCache, settings: Settings, *, clock: Clock = SYSTEM_CLOCK, metrics: Metrics | None = None) -> FastAPI:
    app = FastAPI(
        title="joulie-extender",
        description="kube-scheduler extender: filters and scores nodes from NodeTwin and NodeHardware.",
        version="v1",
    )
    m = metrics or Metrics()
    # Scores of the latest prioritize request per workload class, for the per-node gauges at scrape
    # time (replaced, not merged, so nodes that left the cluster drop out).
    last_scores: dict[str, dict[str, int]] = {}

    def latest_scores() -> dict[tuple[str, str], int]:
        return {(node, cls): score for cls, scores in list(last_scores.items()) for node, score in scores.items()}

    m.add_node_gauges(cache, latest_scores, clock.now, settings.staleness)
    app.state.metrics = m
    app.state.cache = cache

    async def parse(request: Request, endpoint: str) -> ExtenderArgs | Response:
        try:
            # Only a filter reply echoes the Nodes: prioritize skips keeping their raw JSON.
            return parse_extender_args(await read_body(request, settings.max_body_bytes), keep_raw=endpoint == "filter")
        except WireError as err:
            m.bad_requests.labels(endpoint).inc()
            return _json({"error": f"decode error: {err}"}, 400)

    responses: dict[int | str, dict[str, Any]] = {400: {"model": BadRequestModel, "description": "Bad request body"}}

    @app.post(
        "/filter",
        summary="Filter nodes for a pod",
        openapi_extra=_REQUEST_BODY,
        responses={200: {"model": ExtenderFilterResultModel}, **responses},
    )
    async def filter_(request: Request) -> Response:
        args = await parse(request, "filter")
        if isinstance(args, Response):
            return args
        started = time.perf_counter()
        cls = class_label(args.workload_class)
        m.filter_requests.labels(cls).inc()
        try:
            failed = failed_nodes(args, cache, now=clock.now(), staleness=settings.staleness)
        except Exception:
            log.exception("filter failed internally; letting every node pass")
            m.internal_errors.labels("filter").inc()
            failed = {}
        body = filter_result(args, failed)
        m.filter_duration.labels(cls).observe(time.perf_counter() - started)
        return _json(body)

    @app.post(
        "/prioritize",
        summary="Score nodes (0..10) for a pod",
        openapi_extra=_REQUEST_BODY,
        responses={200: {"model": list[HostPriorityModel]}, **responses},
    )
    async def prioritize(request: Request) -> Response:
        args = await parse(request, "prioritize")
        if isinstance(args, Response):
            return args
        started = time.perf_counter()
        cls = class_label(args.workload_class)
        m.prioritize_requests.labels(cls).inc()
        try:
            scores = node_scores(
                args, cache, now=clock.now(), staleness=settings.staleness, coeffs=settings.coefficients
            )
        except Exception:
            # A pod whose resources cannot be read lands here too: neutral beats failing the cycle.
            log.exception("prioritize failed internally; every node gets the neutral score")
            m.internal_errors.labels("prioritize").inc()
            scores = dict.fromkeys(args.candidate_names, NEUTRAL_SCORE)
        last_scores[cls] = scores
        m.prioritize_duration.labels(cls).observe(time.perf_counter() - started)
        return _json(host_priority_list(scores))

    @app.get("/healthz", response_class=PlainTextResponse)
    async def healthz() -> str:
        return "ok"

    @app.get("/metrics", response_class=PlainTextResponse)
    async def metrics_() -> Response:
        return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/debug/scoring")
    async def debug_scoring() -> Response:
        now = clock.now()
        hardware = cache.hardware_all()
        nodes = []
        for twin in sorted(cache.twins(), key=lambda t: t.node_name):
            hw = hardware.get(twin.node_name)
            nodes.append({
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
                "stale": is_stale(twin, now, settings.staleness),
            })
        ctx = cache.cluster_context(now, settings.staleness)
        return _json({
            "coefficients": asdict(settings.coefficients),
            "stalenessThresholdSeconds": settings.staleness_s,
            "scoreRange": [0, 10],
            "neutralScore": NEUTRAL_SCORE,
            "cluster": {"perfPressure": ctx.perf_pressure, "clusterTrendWPerMin": ctx.cluster_trend_w_per_min},
            "cacheSynced": dict(cache.synced),
            "nodes": nodes,
        })

    return app
