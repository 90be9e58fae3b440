"""A scenario's conditions (``wait.until``, ``assert``) evaluated on one look at the cluster, and the
timeline's row built from the same look. Pure: an :class:`Observation` in, an :class:`Outcome` or a
row out; ``observe.py`` reads the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joulie_simcluster.scenario.schema import Condition, Range
from joulie_simcluster.smoke import checks


@dataclass(frozen=True)
class Observation:
    """What one look saw; a part the condition does not need may be left empty."""

    agents: Sequence[str] = ()
    managed: Sequence[str] = ()
    twins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """NodeTwin by Node name."""
    hardware: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    truth: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """``/debug/emulate``'s nodes by name."""
    facility: Mapping[str, Any] | None = None
    prometheus_power_w: float | None = None
    jobs: Mapping[str, float] = field(default_factory=dict)
    """The workload runner's counts: submitted, running, pending, completed."""
    health: tuple[bool, str] | None = None
    """(healthy, why not) from the chaos health look."""
    tick_cost: Mapping[str, Any] | None = None
    """``/debug/emulate``'s ``tickCost`` (the simulator's last ticks), when it serves one."""


@dataclass(frozen=True)
class Outcome:
    ok: bool
    observed: str
    expected: str
    value: float | None = None


def field_at(obj: Mapping[str, Any], dotted: str) -> Any:
    node: Any = obj
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _num(v: Any) -> float | str | None:
    if isinstance(v, bool) or v is None:
        return None if v is None else str(v).lower()
    if isinstance(v, (int, float)):
        return float(v)
    return str(v)


def _show(v: float | str | None) -> str:
    return "missing" if v is None else (f"{v:.4g}" if isinstance(v, float) else repr(v))


def truth_power_w(truth: Mapping[str, Mapping[str, Any]]) -> float:
    return sum(float((t.get("host") or {}).get("powerW") or 0.0) for t in truth.values())


def twins_power_w(twins: Mapping[str, Mapping[str, Any]]) -> float:
    return sum(float(field_at(t, "status.powerMeasurement.measuredNodePowerW") or 0.0) for t in twins.values())


def cap_sums_w(truth: Mapping[str, Mapping[str, Any]]) -> tuple[float, float]:
    """(CPU package caps, GPU caps) in the emulated files, summed over the Nodes, W."""
    cpu = gpu = 0.0
    for t in truth.values():
        caps = t.get("caps") or {}
        pkgs = [c for c in (caps.get("cpuPackageW") or []) if c is not None] or list(caps.get("hsmpW") or [])
        cpu += sum(float(c) for c in pkgs)
        gpu += sum(float(g.get("capW") or 0.0) for g in t.get("gpus") or [])
    return cpu, gpu


def _nodes(spec: str | list[str], o: Observation) -> list[str]:
    if spec == "agents":
        return list(o.agents)
    if spec == "managed":
        return list(o.managed)
    return list(spec)


def _range(r: Range, value: float | str | None, what: str, value_name: str = "") -> Outcome:
    v = value if isinstance(value, float) else None
    return Outcome(r.holds(value), f"{value_name or what} {_show(value)}", f"{what} {r.describe()}", v)


def evaluate(cond: Condition, o: Observation) -> Outcome:
    """Whether `cond` holds on `o`, what was seen and what was expected."""
    if cond.twin is not None:
        t = cond.twin
        nodes = _nodes(t.nodes, o)
        values = {n: _num(field_at(o.twins[n], t.field)) if n in o.twins else None for n in nodes}
        good = [n for n, v in values.items() if t.holds(v)]
        ok = bool(nodes) and (len(good) == len(nodes) if t.match == "all" else bool(good))
        shown = ", ".join(f"{n} {_show(v)}" for n, v in list(values.items())[:8]) + (
            f", … {len(values) - 8} more" if len(values) > 8 else "")
        bad = [n for n in nodes if n not in good]
        seen = f"{t.field}: {shown or 'no Node chosen'}" + (f"; not met on {', '.join(bad[:8])}" if bad and not ok else "")
        return Outcome(ok, seen, f"NodeTwin {t.field} {t.describe()} on {t.match} of {len(nodes)} Nodes ({t.nodes})",
                       float(len(good)))
    if cond.cluster_power is not None:
        p = cond.cluster_power
        value = {"prometheus": o.prometheus_power_w, "truth": truth_power_w(o.truth) if o.truth else None,
                 "twins": twins_power_w(o.twins) if o.twins else None}[p.source]
        r = Range(min=p.min_w, max=p.max_w)
        return Outcome(r.holds(value), f"cluster power ({p.source}) {_show(value)} W",
                       f"cluster power ({p.source}) {r.describe()} W", value)
    if cond.caps_applied is not None:
        twins = {n: tw for n, tw in o.twins.items() if n in set(o.agents)}
        a = checks.caps_match("S04", twins, o.hardware, o.truth, cond.caps_applied.pct_of_max)
        return Outcome(a.status == "pass", a.observed, a.expected, a.value)
    if cond.jobs is not None:
        j = cond.jobs
        value = o.jobs.get(j.state)
        return _range(j, value, f"jobs {j.state}")
    if cond.facility is not None:
        f = cond.facility
        if o.facility is None:
            return Outcome(False, "no facility in /debug/emulate (simulator run with --no-facility?)",
                           f"facility {f.field} {f.describe()}")
        return _range(f, _num(o.facility.get(f.field)), f"facility {f.field}")
    if cond.twin_error is not None:
        return twin_error(o, cond.twin_error.max_pct)
    if cond.tick_cost is not None:
        c = cond.tick_cost
        expected = (f"tick {c.clock} median ≤ {c.median_ms:g} ms"
                    + (f", max ≤ {c.max_ms:g} ms" if c.max_ms is not None else ""))
        if not o.tick_cost:
            return Outcome(False, "no tickCost in /debug/emulate (an older simulator?)", expected)
        w = o.tick_cost.get("wallMs") or {}
        cpu = o.tick_cost.get("cpuMs") or {}
        judged = cpu if c.clock == "cpu" else w
        median, worst = float(judged.get("median", 0.0)), float(judged.get("max", 0.0))
        ok = median <= c.median_ms and (c.max_ms is None or worst <= c.max_ms)
        wall_median = float(w.get("median", 0.0))
        seen = (f"over the last {o.tick_cost.get('window')} ticks: wall median {wall_median:g} ms, p99 {w.get('p99')} "
                f"ms, max {float(w.get('max', 0.0)):g} ms; cpu median {cpu.get('median')} ms, max {cpu.get('max')} ms")
        parts = o.tick_cost.get("cpuMsByPart")
        if isinstance(parts, Mapping) and parts:
            seen += "; cpu median by part: " + ", ".join(f"{k} {v} ms" for k, v in parts.items())
        spike = o.tick_cost.get("worstCpuTick")
        if isinstance(spike, Mapping):  # where the worst tick since the start went (the collector's share inside)
            wp = spike.get("cpuMsByPart")
            seen += (f"; worst cpu tick #{spike.get('tick')}: {spike.get('cpuMs')} ms"
                     + (" (" + ", ".join(f"{k} {v} ms" for k, v in wp.items()) if isinstance(wp, Mapping) and wp else " (")
                     + f"{', ' if isinstance(wp, Mapping) and wp else ''}gc {spike.get('gcMs')} ms)")
        return Outcome(ok, seen, expected, median)
    if cond.healthy is not None:
        ok, why = o.health or (False, "not looked at")
        return Outcome(ok, why, "every process running, API ready, every component reporting, caps = decisions")
    raise AssertionError("validated: one condition is set")


def twin_error(o: Observation, max_pct: float) -> Outcome:
    """Per managed Node: |NodeTwin measured power - the emulator's host power| / truth (S06's
    measure); holds when every measurable Node is within ``max_pct`` (or 1 W). Value: the worst %."""
    skipped = checks.unmeasurable_nodes(o.managed, o.hardware)
    errors: dict[str, float] = {}
    signed: list[float] = []  # measured - truth, %: an offset shared by every Node shows here
    failures: list[str] = []
    for node in o.managed:
        if node in skipped:
            continue
        pm = field_at(o.twins.get(node) or {}, "status.powerMeasurement.measuredNodePowerW")
        t = o.truth.get(node)
        if pm is None or t is None:
            failures.append(f"{node}: {'no measured power' if pm is None else 'not in the truth'}")
            continue
        true_w = checks.true_power(t)
        rel, _ = checks.measurement_error(float(pm), true_w)
        errors[node] = rel * 100
        if true_w:
            signed.append((float(pm) - true_w) / true_w * 100)
        if abs(float(pm) - true_w) > max(1.0, max_pct / 100 * true_w):
            failures.append(f"{node}: measured {float(pm):.1f} W, truth {true_w:.1f} W ({rel * 100:.2f} %)")
    ranked = sorted(errors.values())
    median = ranked[len(ranked) // 2] if ranked else None
    worst = ranked[-1] if ranked else None
    bias = sorted(signed)[len(signed) // 2] if signed else None
    seen = (f"{len(errors)} Nodes measured, |error| median {_show(median)} %, max {_show(worst)} %, "
            f"signed median {_show(bias)} % (measured - truth); {len(skipped)} unmeasurable skipped")
    if failures:
        seen += f"; {len(failures)} off: " + "; ".join(failures[:6]) + (" …" if len(failures) > 6 else "")
    return Outcome(bool(errors) and not failures, seen, f"|measured - truth| ≤ max({max_pct:g} %, 1 W) on every managed Node",
                   worst)


TIMELINE_FIELDS = ("t_s", "step", "truth_power_w", "prometheus_power_w", "twins_power_w", "cpu_cap_w", "gpu_cap_w",
                   "cpu_cap_pct_mean", "gpu_cap_pct_mean", "eco_nodes", "jobs_running", "jobs_pending", "jobs_completed",
                   "ambient_c", "pue")
"""The columns of timeline.csv: the powers in W (summed over the Nodes), the caps in the files in W
(summed) and as NodeTwin.spec's mean % of max over the agent Nodes that have one, the jobs, the facility."""


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def timeline_row(t_s: float, step: str, o: Observation) -> dict[str, float | str | None]:
    cpu_w, gpu_w = cap_sums_w(o.truth) if o.truth else (None, None)
    agent_twins = [o.twins[n] for n in o.agents if n in o.twins]
    cpu_pct = [float(v) for v in (field_at(t, "spec.cpu.packagePowerCapPctOfMax") for t in agent_twins) if v is not None]
    gpu_pct = [float(v) for v in (field_at(t, "spec.gpu.powerCap.capPctOfMax") for t in agent_twins) if v is not None]
    fac = o.facility or {}
    return {
        "t_s": round(t_s, 1), "step": step,
        "truth_power_w": truth_power_w(o.truth) if o.truth else None,
        "prometheus_power_w": o.prometheus_power_w,
        "twins_power_w": twins_power_w(o.twins) if o.twins else None,
        "cpu_cap_w": cpu_w, "gpu_cap_w": gpu_w,
        "cpu_cap_pct_mean": _mean(cpu_pct), "gpu_cap_pct_mean": _mean(gpu_pct),
        "eco_nodes": float(sum(1 for t in o.twins.values() if field_at(t, "spec.profile") == "eco")) if o.twins else None,
        "jobs_running": o.jobs.get("running"), "jobs_pending": o.jobs.get("pending"),
        "jobs_completed": o.jobs.get("completed"),
        "ambient_c": _num(fac.get("ambientC")) if fac else None, "pue": _num(fac.get("pue")) if fac else None,
    }
