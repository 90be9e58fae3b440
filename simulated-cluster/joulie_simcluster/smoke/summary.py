"""The run result a smoke run writes: ``summary.json`` (schema ``joulie.simcluster.summary/v1``) and
the harness's own OTLP JSON lines (seed "Run results"). Pure: dicts in, dicts and lines out.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from joulie_simcluster.smoke.checks import Assertion

SCHEMA = "joulie.simcluster.summary/v1"
SEMCONV_SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"
SUITE = "simcluster-smoke"
RunStatus = Literal["success", "failure", "timed_out", "aborted"]


def run_dir_name(now: dt.datetime, spec: str, mode: str, sha: str, dirty: bool) -> str:
    """``<UTC>-<spec>-<mode>-<sha12>[-dirty]``."""
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{spec}-{mode}-{sha[:12] or 'nogit'}{'-dirty' if dirty else ''}"


def run_status(assertions: Sequence[Assertion], timed_out: bool, aborted: str | None) -> RunStatus:
    if aborted:
        return "aborted"
    if timed_out:
        return "timed_out"
    return "failure" if any(a.status == "fail" for a in assertions) else "success"


@dataclass(frozen=True)
class RunRecord:
    """What a smoke run found and how it ran: everything ``summary.json`` says."""

    assertions: Sequence[Assertion]
    status: RunStatus
    spec: str
    mode: str
    """The hwemu mode (fuse or files)."""
    scope: str
    """SIMCLUSTER_POWER_SCOPE."""
    timing: Mapping[str, str]
    """The timing's settings by name, and the telemetry mode."""
    commit: str
    dirty: bool
    images: Mapping[str, str]
    """component -> the tag of the binary it ran."""
    started: dt.datetime
    finished: dt.datetime
    resources: Mapping[str, Any]
    """peakRssMiB, agents, nodes."""
    runtime: str
    """The runtime the run brought up (its SIMCLUSTER_RUNTIME name: process, kubelet, ...)."""
    warnings: Sequence[str] = ()
    known_defects: Sequence[str] = ()
    aborted: str | None = None


def build_summary(run: RunRecord) -> dict[str, Any]:
    failures = [f"{a.id} {a.name}: {a.observed}" for a in run.assertions if a.status == "fail"]
    if run.aborted:
        failures.insert(0, f"aborted: {run.aborted}")
    return {
        "schema": SCHEMA,
        "test.suite.name": SUITE,
        "test.suite.run.status": run.status,
        "exitCode": 0 if run.status == "success" else 1,
        "failures": failures,
        "warnings": list(run.warnings),
        "knownDefects": list(run.known_defects),
        "assertions": [a.as_json() for a in run.assertions],
        "spec": run.spec,
        "mode": run.mode,
        "scope": run.scope,
        "timing": dict(run.timing),
        "git": {"commit": run.commit, "dirty": run.dirty},
        "images": dict(run.images),
        "runtime": run.runtime,
        "startedAt": run.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "finishedAt": run.finished.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wallSeconds": round((run.finished - run.started).total_seconds(), 1),
        "resources": dict(run.resources),
        "semconvSchemaUrl": SEMCONV_SCHEMA_URL,
    }


def _attr(key: str, value: object) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _resource(spec: str, mode: str) -> dict[str, Any]:
    return {"attributes": [_attr("service.name", "simcluster"), _attr("joulie.scenario", spec),
                           _attr("joulie.sim.hwemu", mode)]}


def otlp_logs_line(assertions: Sequence[Assertion], spec: str, mode: str, at: dt.datetime) -> str:
    """One ExportLogsServiceRequest (OTLP JSON) with a joulie.scenario.assertion.evaluated record per check."""
    ts = str(int(at.timestamp() * 1e9))
    records = [
        {
            "timeUnixNano": ts,
            "severityText": "INFO" if a.status != "fail" else "ERROR",
            "eventName": "joulie.scenario.assertion.evaluated",
            "body": {"stringValue": f"{a.id} {a.name}: {a.status}"},
            "attributes": [_attr("test.case.name", f"{a.id} {a.name}"), _attr("test.case.result.status", a.status),
                           _attr("joulie.assertion.observed", a.observed), _attr("joulie.assertion.expected", a.expected)],
        }
        for a in assertions
    ]
    body = {"resourceLogs": [{"resource": _resource(spec, mode), "schemaUrl": SEMCONV_SCHEMA_URL,
                              "scopeLogs": [{"scope": {"name": "simcluster"}, "logRecords": records}]}]}
    return json.dumps(body, separators=(",", ":"))


def otlp_metrics_line(assertions: Sequence[Assertion], spec: str, mode: str, at: dt.datetime) -> str:
    """One ExportMetricsServiceRequest (OTLP JSON): gauge joulie.scenario.assertion.value, a point per check
    that has a number (1/0 pass for the others)."""
    ts = str(int(at.timestamp() * 1e9))
    points = [
        {"timeUnixNano": ts, "asDouble": a.value if a.value is not None else (1.0 if a.status == "pass" else 0.0),
         "attributes": [_attr("test.case.name", f"{a.id} {a.name}"), _attr("test.case.result.status", a.status)]}
        for a in assertions
    ]
    body = {"resourceMetrics": [{"resource": _resource(spec, mode), "schemaUrl": SEMCONV_SCHEMA_URL,
                                 "scopeMetrics": [{"scope": {"name": "simcluster"}, "metrics": [
                                     {"name": "joulie.scenario.assertion.value", "unit": "1", "gauge": {"dataPoints": points}}]}]}]}
    return json.dumps(body, separators=(",", ":"))


def checks_table(assertions: Sequence[Assertion]) -> str:
    """The table the smoke ends with."""
    lines = [f"{'check':<42} {'status':<7} observed"]
    for a in assertions:
        obs = a.observed if len(a.observed) <= 110 else a.observed[:107] + "…"
        lines.append(f"{a.id + ' ' + a.name:<42} {a.status.upper():<7} {obs}")
    return "\n".join(lines)
