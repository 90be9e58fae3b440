"""``simcluster chaos``: on the live, deployed cluster under its running workload, each fault of
the plan at its random moment, then a look every second until the cluster is healthy again (or
the timeout): every recorded process running, every component reporting, the caps in the emulator
equal to the controller's decisions. Results in ``runs/<UTC>-chaos/``: ``summary.json`` (section
``chaos``: the per-fault table and every injection) and ``report.md``.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from pathlib import Path

from joulie_simcluster.chaos import catalogue, inject, observe, report
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes.process import cluster_live
from joulie_simcluster.runtimes.supervision import control as supervisor
from joulie_simcluster.runtimes.supervision.backoff import policy_of
from joulie_simcluster.smoke.results import git_state


@dataclass(frozen=True)
class ChaosOptions:
    faults: list[catalogue.Fault]
    repeats: int = 2
    seed: int = 1
    max_delay_s: float = 6.0
    """The random moment: up to this many seconds after the cluster is healthy again."""
    timeout_s: float = 120.0
    """How long one injection may take to recover before it counts as not survived."""
    out: Path | None = None


def _utc() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wait_healthy(ctx: Context, rendered: RenderedSpec, timeout_s: float, caps_timeout_s: float = 30.0) -> observe.Health:
    """Until healthy; caps that differ from the decisions are waited for `caps_timeout_s` only (once
    every process runs and every component reports): a defect that leaves them wrong for good must
    not hold the whole run."""
    deadline = time.monotonic() + timeout_s
    up_since: float | None = None
    h = observe.look(ctx.state, rendered)
    while not h.healthy and time.monotonic() < deadline:
        if not (h.dead or not h.api_ready or h.not_reporting):
            up_since = up_since or time.monotonic()
            if time.monotonic() - up_since > caps_timeout_s:
                break
        time.sleep(1.0)
        h = observe.look(ctx.state, rendered)
    return h


def one(ctx: Context, rendered: RenderedSpec, step: catalogue.Step, options: ChaosOptions,
        agent_nodes: list[str], capped: list[str]) -> report.Outcome:
    """Injects one fault and follows the cluster until it is healthy or the timeout."""
    state = ctx.state
    time.sleep(step.delay_s)
    baseline = observe.look(state, rendered)
    before = dict(baseline.restarts)
    injected_at = _utc()
    hit = inject.inject(state, step, agent_nodes, capped)
    ctx.progress(f"{step.fault.name} #{step.repetition}: injected into {hit.target}")
    drift: set[str] = set()
    worst_caps, pods_failed, pods_stuck = 0, 0, 0
    if step.fault.hold_s:
        held_until = time.monotonic() + step.fault.hold_s
        while time.monotonic() < held_until:
            if hit.watch:
                hit.watch()
            h = observe.look(state, rendered)
            drift |= set(h.drift_nodes)
            worst_caps = max(worst_caps, h.caps_mismatched)
            time.sleep(1.0)
        if hit.clear:
            hit.clear()
    ended = time.monotonic()
    deadline = ended + options.timeout_s
    recover_s = None
    while True:
        if hit.watch:
            hit.watch()
        h = observe.look(state, rendered)
        drift |= set(h.drift_nodes)
        worst_caps = max(worst_caps, h.caps_mismatched)
        pods_failed, pods_stuck = max(pods_failed, h.pods_failed), max(pods_stuck, h.pods_stuck)
        if h.recovered(baseline):
            recover_s = round(time.monotonic() - ended, 1)
            break
        if time.monotonic() > deadline:
            break
        time.sleep(1.0)
    note = ""
    if hit.note:
        try:
            note = hit.note()
        except Exception as e:  # - what the fault showed is a note; failing to read it must not end the run
            note = f"note unavailable: {e}"[:300]
    delta = {n: k - before.get(n, 0) for n, k in h.restarts.items() if k > before.get(n, 0)}
    out = report.Outcome(
        fault=step.fault.name, repetition=step.repetition, target=hit.target, injected_at=injected_at,
        survived=recover_s is not None, recover_s=recover_s,
        writes_lost=max(0, h.caps_mismatched - baseline.caps_mismatched),
        writes_late=max(0, worst_caps - max(h.caps_mismatched, baseline.caps_mismatched)),
        caps_wrong_before=baseline.caps_mismatched,
        drift_detected=len(drift), restarts=sum(delta.values()),
        crashes=sum(k for n, k in delta.items() if n not in hit.killed),
        pods_failed=pods_failed, pods_stuck=pods_stuck, why="" if recover_s is not None else h.why_not(), note=note)
    ctx.progress(f"{step.fault.name} #{step.repetition}: " + (
        f"recovered in {recover_s:.1f}s" if out.survived else f"NOT recovered within {options.timeout_s:.0f}s: {out.why}")
        + (f"; restarts {delta}" if delta else "") + (f"; drift on {sorted(drift)}" if drift else "")
        + (f"; {note}" if note else ""))
    return out


def run(ctx: Context, options: ChaosOptions) -> int:
    """The whole chaos run on the live cluster; 0 when every injection survived."""
    state, progress = ctx.state, ctx.progress
    live, why = cluster_live(state)
    if not live:
        raise RuntimeFailure(f"chaos needs a live cluster ({why}); run simcluster up and deploy first")
    env = state.read_deploy_env()
    if env is None or not env.get("DEPLOYED_AT"):
        raise RuntimeFailure(f"chaos needs a deployed cluster in {state.root}; run simcluster deploy (with --trace)")
    supervisor.ensure(state, policy_of(ctx.settings.timing))
    rendered = RenderedSpec.load(state.spec)
    started = _utc()
    sha, dirty = git_state()
    out = options.out or state.runs / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-chaos"
    out.mkdir(parents=True, exist_ok=True)
    h = _wait_healthy(ctx, rendered, 180)
    if h.dead or not h.api_ready or h.not_reporting:
        raise RuntimeFailure(f"the cluster is not healthy before any fault: {h.why_not()}")
    if not h.healthy:  # judged per injection against what was wrong before it (Outcome.caps_wrong_before)
        progress(f"chaos: before any fault, {h.why_not()}")
    agent_nodes = [n for n in env.get("AGENT_NODES", "").split(",") if n]
    capped = observe.capped_nodes(state)
    steps = catalogue.plan(options.faults, options.repeats, options.seed, options.max_delay_s)
    progress(f"chaos: {len(steps)} injections ({', '.join(f.name for f in options.faults)} x{options.repeats}), "
             f"seed {options.seed}; {len(agent_nodes)} agents, caps written on {len(capped)} Nodes; results in {out}")
    outcomes = []
    for step in steps:
        # A fault not survived leaves its damage: the next one is judged against the state it left
        # (caps_wrong_before), and stops the run only when processes or components stay down.
        outcomes.append(one(ctx, rendered, step, options, agent_nodes, capped))
        if not outcomes[-1].survived:
            h = observe.look(ctx.state, rendered)
            if h.dead or not h.api_ready or h.not_reporting:
                progress(f"chaos: the cluster is still down ({h.why_not()}); stopping here")
                break
    section = report.chaos_section(outcomes, options.seed, options.repeats)
    summary = {"schema": "joulie.simcluster.chaos/v1", "spec": rendered.name, "mode": env.get("HWEMU_MODE"),
               "timing": env.get("SIMCLUSTER_TIMING"), "commit": sha, "dirty": dirty, "started": started,
               "finished": _utc(), "chaos": section}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    md = report.markdown(section, f"simcluster chaos: spec {rendered.name}, {env.get('HWEMU_MODE')} mode")
    (out / "report.md").write_text(md)
    print(md, file=progress.out, flush=True)
    progress(f"chaos: {sum(o.survived for o in outcomes)}/{len(outcomes)} injections survived; {out / 'report.md'}")
    return 0 if section["survivedAll"] and len(outcomes) == len(steps) else 1
