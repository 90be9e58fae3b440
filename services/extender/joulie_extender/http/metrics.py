"""Prometheus metrics of the extender (reference §5.11 plus error counters).

Per-node gauges (final score, headroom, stale twin) are produced when /metrics is scraped, from
the last scores and the cache, instead of being set on the request path: at 5000 nodes, setting
15000 labelled gauges per request would cost more than the scoring itself.

`workload_class` labels are normalised to performance / standard / other, so a typo in a pod
annotation cannot create unbounded label values (the original used the raw annotation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from joulie_extender.cache.store import StateCache
from joulie_extender.rules.scoring import is_stale

KNOWN_CLASSES = frozenset({"performance", "standard"})


def class_label(workload_class: str) -> str:
    return workload_class if workload_class in KNOWN_CLASSES else "other"


class _NodeGauges(Collector):
    def __init__(
        self,
        cache: StateCache,
        last_scores: Callable[[], Mapping[tuple[str, str], int]],
        now: Callable[[], datetime],
        staleness: timedelta,
    ) -> None:
        self._cache, self._last_scores, self._now, self._staleness = cache, last_scores, now, staleness

    def collect(self) -> Iterator[Metric]:
        final = GaugeMetricFamily(
            "joulie_scheduler_final_node_score", "Last score (0..10) given to the node, by workload class",
            labels=["node", "workload_class"],
        )
        for (node, cls), score in sorted(self._last_scores().items()):
            final.add_metric([node, cls], score)
        headroom = GaugeMetricFamily(
            "joulie_scheduler_node_headroom_score", "Twin power headroom score (may be negative)", labels=["node"]
        )
        stale = GaugeMetricFamily(
            "joulie_scheduler_stale_twin_data", "1 when the node's twin is stale (missing twins are not listed)",
            labels=["node"],
        )
        now = self._now()
        for twin in sorted(self._cache.twins(), key=lambda t: t.node_name):
            if twin.headroom_score is not None:
                headroom.add_metric([twin.node_name], twin.headroom_score)
            stale.add_metric([twin.node_name], 1.0 if is_stale(twin, now, self._staleness) else 0.0)
        objects = GaugeMetricFamily("joulie_scheduler_cache_objects", "Objects in the watch cache", labels=["kind"])
        synced = GaugeMetricFamily("joulie_scheduler_cache_synced", "1 once the kind was listed", labels=["kind"])
        for kind, count in self._cache.counts().items():
            objects.add_metric([kind], count)
            synced.add_metric([kind], 1.0 if self._cache.synced.get(kind) else 0.0)
        yield from (final, headroom, stale, objects, synced)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.filter_requests = Counter(
            "joulie_scheduler_filter_requests_total", "Filter requests", ["workload_class"], registry=r
        )
        self.prioritize_requests = Counter(
            "joulie_scheduler_prioritize_requests_total", "Prioritize requests", ["workload_class"], registry=r
        )
        self.filter_duration = Histogram(
            "joulie_scheduler_filter_duration_seconds", "Filter handling time", ["workload_class"], registry=r
        )
        self.prioritize_duration = Histogram(
            "joulie_scheduler_prioritize_duration_seconds", "Prioritize handling time", ["workload_class"], registry=r
        )
        self.internal_errors = Counter(
            "joulie_scheduler_internal_errors_total",
            "Requests answered neutrally (all nodes pass, score 5) because of an internal error",
            ["endpoint"], registry=r,
        )
        self.bad_requests = Counter(
            "joulie_scheduler_bad_requests_total", "Requests refused with HTTP 400", ["endpoint"], registry=r
        )
        self.refused_requests = Counter(
            "joulie_scheduler_refused_requests_total",
            "Requests refused before parsing: busy (503), body-too-large (413), body-timeout (408), client-disconnected",
            ["endpoint", "reason"], registry=r,
        )
        self.cache_decode_errors = Counter(
            "joulie_scheduler_cache_decode_errors_total", "Objects ignored because they do not match the schema",
            ["kind"], registry=r,
        )
        self.cache_watch_restarts = Counter(
            "joulie_scheduler_cache_watch_restarts_total", "Watch failures followed by a relist", ["kind"], registry=r
        )

    def add_node_gauges(
        self,
        cache: StateCache,
        last_scores: Callable[[], Mapping[tuple[str, str], int]],
        now: Callable[[], datetime],
        staleness: timedelta,
    ) -> None:
        self.registry.register(_NodeGauges(cache, last_scores, now, staleness))
