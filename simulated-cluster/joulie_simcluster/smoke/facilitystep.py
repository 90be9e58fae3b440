"""S13's step: the outdoor ambient raised 10 °C through the simulator's control (``POST
/debug/facility/ambient``), what the controller's facility poller reads from Prometheus and the
NodeTwins' cooling stress against /debug/emulate's facility truth, then the ambient put back; the
evaluation is the pure ``facility``. Shell."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

from joulie_simcluster import telemetry
from joulie_simcluster.smoke.checks import Assertion
from joulie_simcluster.smoke.facility import facility_ambient_step
from joulie_simcluster.timing import Timing


class Cluster(Protocol):
    """What the step reads of the smoke run (``smoke.run.Smoke``)."""

    timing: Timing
    progress: Callable[[str], None]

    @property
    def env(self) -> dict[str, str]: ...

    def managed_twins(self) -> dict[str, dict[str, Any]]: ...

    def prom_query(self, promql: str) -> list[Mapping[str, Any]]: ...

    def until(self, check_id: str, evaluate: Callable[[], Assertion], timeout_s: float) -> Assertion: ...

    def record(self, a: Assertion) -> Assertion: ...


def facility_truth(env: Mapping[str, str]) -> dict[str, Any] | None:
    url = f"http://{env['SIMULATOR_HTTP']}/debug/emulate"
    with urllib.request.urlopen(url, timeout=10) as resp:
        facility = json.loads(resp.read()).get("facility")
    return cast(dict[str, Any], facility) if isinstance(facility, dict) else None


def set_ambient(env: Mapping[str, str], body: dict[str, Any]) -> None:
    req = urllib.request.Request(f"http://{env['SIMULATOR_HTTP']}/debug/facility/ambient",
                                 data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()


def prometheus_facility(c: Cluster) -> dict[str, float | None]:
    """What the controller's facility poller reads (its own queries, this telemetry mode's naming)."""
    from joulie_controller.api import Settings, facility_queries, read_facility

    tmode = telemetry.mode(c.env.get("TELEMETRY", "otlp"))
    f, _ = read_facility(facility_queries(Settings.from_env(tmode.joulie_env())), c.prom_query)
    return {"ambient": f.outdoor_ambient_c, "itPower": f.it_power_w or None, "coolingPower": f.cooling_power_w}


def facility_step(c: Cluster) -> None:
    """S13: records its Assertion before the ambient is put back."""
    step_c = 10.0
    before, twins_before = facility_truth(c.env), c.managed_twins()
    c.progress(f"raising the outdoor ambient {step_c:g} °C through the simulator's control")
    set_ambient(c.env, {"offsetC": step_c})
    try:
        # The next push, the controller's facility poll (FACILITY_POLL_INTERVAL) and a reconcile.
        wait = 60 + 3 * (c.timing.otlp_interval_s + c.timing.controller_interval_s)
        c.record(c.until("S13", lambda: facility_ambient_step(
            step_c, before, facility_truth(c.env), prometheus_facility(c), twins_before, c.managed_twins()), wait))
    finally:
        set_ambient(c.env, {"clear": True})
