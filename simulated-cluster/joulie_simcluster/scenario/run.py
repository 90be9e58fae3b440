"""``simcluster scenario FILE``: the scenario's steps, in order, on the live simulated cluster.

The cluster comes up (or is reused) and is deployed exactly as the smoke does it (``process.up``,
``deploy``), with the scenario's values, its simulator values (``simulator.set``, merged last over
SIMCLUSTER_SIM_EXTRA_VALUES) and its first load. Then each step:

- ``load``: the workload runner's Pods are deleted and the runner restarts on the new trace;
- ``policy``: the controller manager restarts with the changed settings (as ``reload`` after a
  changed install; every replica);
- ``ambient``: ``POST /debug/facility/ambient`` on the simulator (as smoke S13);
- ``fault``: ``simcluster chaos``'s injection (``faults.py``), a held fault cleared by a timer;
- ``wait``: seconds, or until a condition holds (a timeout aborts the run: later steps assume it);
- ``assert``: a condition, once or until ``withinS``: one assertion in summary.json per assert step.

Meanwhile a sampler reads power, caps, jobs and the facility every ``sampleIntervalS`` into
``timeline.csv``, drawn as ``timeline.png``. Results go to ``runs/<UTC>-<scenario>-<mode>-<sha12>/``
with the smoke's layout and ``summary.json`` schema (plus a ``scenario`` section: each step's time
and outcome). Progress goes to stderr and ``scenario.log``. Down afterwards unless SIMCLUSTER_KEEP=1.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as dt
import json
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

import yaml
from kubernetes.client.exceptions import ApiException

from joulie_simcluster import livebench
from joulie_simcluster.chaos.observe import capped_nodes
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy.processes import recorded_deploy_pids
from joulie_simcluster.deploy.reload import restart_process
from joulie_simcluster.deploy.start import DeployOptions, deploy
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.progress import Progress
from joulie_simcluster.runtimes import kube, process
from joulie_simcluster.runtimes.runtime import PROCESS
from joulie_simcluster.scenario import faults
from joulie_simcluster.scenario.conditions import TIMELINE_FIELDS, Outcome, evaluate, timeline_row
from joulie_simcluster.scenario.observe import TIMELINE_NEEDS, Looker, needs
from joulie_simcluster.scenario.plot import plot_timeline
from joulie_simcluster.scenario.schema import Condition, Scenario, Step, resolve
from joulie_simcluster.smoke import load as smokeload
from joulie_simcluster.smoke.checks import Assertion
from joulie_simcluster.smoke.results import (
    Deadline,
    MemorySampler,
    Tee,
    collect,
    git_state,
    release_cluster,
    write_results,
)
from joulie_simcluster.smoke.summary import RunRecord, build_summary, checks_table, run_dir_name, run_status
from joulie_simcluster.state import StateDir
from joulie_workload.pods import LABEL_PART_OF, PART_OF
from joulie_workload.trace import Job, TraceError, load_trace, write_trace

SUITE = "simcluster-scenario"


@dataclass(frozen=True)
class ScenarioAssertion(Assertion):
    """An assert step's result: the smoke's Assertion, named by the step rather than the smoke's table."""

    step: str = ""

    @property
    def name(self) -> str:
        return self.step


@dataclass(frozen=True)
class ScenarioOptions:
    file: Path
    scenario: Scenario
    values_files: list[Path]
    """In helm's order (the chart's values.yaml first)."""
    daemonset_for: Callable[[list[Path]], dict[str, Any]]
    crd_dir: Path


@dataclass
class StepRecord:
    index: int
    name: str
    action: str
    at_s: float = 0.0
    """Seconds since the first step began."""
    seconds: float = 0.0
    outcome: str = "not reached"

    def as_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "action": self.action, "atS": round(self.at_s, 1),
                "seconds": round(self.seconds, 1), "outcome": self.outcome}


class Timeline(threading.Thread):
    """Samples the cluster every `period_s` into rows (timeline.csv); a part that cannot be read (a
    component down during a fault step) leaves its columns empty in that row."""

    def __init__(self, looker: Looker, period_s: float, t0: float) -> None:
        super().__init__(daemon=True)
        self.looker, self.period_s, self.t0 = looker, period_s, t0
        self.step = "deploy"
        self.rows: list[dict[str, Any]] = []
        self.partial = 0
        self.stopped = threading.Event()

    def sample(self) -> None:
        now = time.monotonic() - self.t0
        o, failed = self.looker.look_partial(TIMELINE_NEEDS)
        self.partial += bool(failed)
        self.rows.append(timeline_row(now, self.step, o))

    def run(self) -> None:
        while not self.stopped.is_set():
            with contextlib.suppress(Exception):
                self.sample()
            self.stopped.wait(self.period_s)


class Runner:
    def __init__(self, ctx: Context, rendered: RenderedSpec, options: ScenarioOptions) -> None:
        self.ctx, self.state, self.rendered, self.options = ctx, ctx.state, rendered, options
        self.scenario = options.scenario
        self.progress = ctx.progress
        self.looker = Looker(ctx, rendered)
        self.assertions: list[ScenarioAssertion] = []
        self.records = [StepRecord(i, self.scenario.step_name(i), s.action) for i, s in enumerate(self.scenario.steps)]
        self.held: list[faults.Held] = []
        self.t0 = time.monotonic()

    # --- conditions -----------------------------------------------------------------------------

    def check(self, cond: Condition) -> Outcome:
        try:
            return evaluate(cond, self.looker.look(needs(cond)))
        except (OSError, KeyError, TypeError, ValueError, RuntimeFailure, ApiException) as e:
            return Outcome(False, f"reading the cluster failed: {type(e).__name__}: {e}", "the cluster readable")

    def until(self, cond: Condition, timeout_s: float) -> Outcome:
        deadline = time.monotonic() + timeout_s
        while True:
            out = self.check(cond)
            if out.ok or time.monotonic() >= deadline:
                return out
            time.sleep(1.0)

    # --- the actions ----------------------------------------------------------------------------

    def run_steps(self, timeline: Timeline) -> None:
        """Every step in order; a wait that times out or a step that fails aborts (RuntimeFailure),
        leaving the assert steps not reached recorded as failed."""
        self.t0 = timeline.t0
        for rec, step in zip(self.records, self.scenario.steps, strict=True):
            timeline.step = rec.name
            rec.at_s = time.monotonic() - self.t0
            self.progress(f"step {rec.index} {rec.name!r} ({rec.action}) …")
            try:
                rec.outcome = self.one(rec, step)
            except RuntimeFailure as e:
                rec.outcome = f"failed: {e}"
                raise RuntimeFailure(f"step {rec.index} {rec.name!r}: {e}") from e
            finally:
                rec.seconds = time.monotonic() - self.t0 - rec.at_s
            self.progress(f"step {rec.index} {rec.name!r}: {rec.outcome} ({rec.seconds:.1f}s)")

    def one(self, rec: StepRecord, step: Step) -> str:
        if step.load is not None:
            return self.load(step.load.smoke is not None, step.load.trace)
        if step.policy is not None:
            return self.policy(step)
        if step.ambient is not None:
            return self.ambient(step.ambient.body())
        if step.fault is not None:
            agents = self.looker.agents()
            target, held = faults.inject_fault(self.state, step.fault, agents, capped_nodes(self.state), self.progress)
            if held is not None:
                self.held.append(held)
                return f"{step.fault.kind} injected into {target}, cleared after its hold"
            return f"{step.fault.kind} injected into {target}"
        if step.wait is not None:
            if step.wait.seconds is not None:
                time.sleep(step.wait.seconds)
                return f"waited {step.wait.seconds:g}s"
            assert step.wait.until is not None
            out = self.until(step.wait.until, step.wait.timeout_s)
            if not out.ok:
                raise RuntimeFailure(f"not met after {step.wait.timeout_s:g}s: {out.observed} (expected {out.expected})")
            return f"met: {out.observed}"
        if step.assert_ is not None:
            out = self.until(step.assert_, step.assert_.within_s)
            a = ScenarioAssertion(f"A{len(self.assertions) + 1:02d}", "pass" if out.ok else "fail", out.observed,
                                  out.expected, out.value, step=rec.name)
            self.assertions.append(a)
            self.progress(f"{a.id} {a.name}: {a.status.upper()} — {a.observed}")
            return a.status
        raise AssertionError("validated: one action")

    def load(self, smoke: bool, trace: str | None) -> str:
        path = smokeload.trace_path(self.state.root)
        if smoke:
            jobs = smokeload.smoke_jobs(self.rendered.nodes)
        else:
            assert trace is not None
            try:
                jobs = load_trace(resolve(self.options.file, trace))
            except TraceError as e:
                raise RuntimeFailure(f"load.trace: {e}") from None
        old: list[Job] = []
        with contextlib.suppress(TraceError, OSError):
            old = load_trace(path)
        write_trace(path, jobs)
        core = kube.core_api(self.state.kubeconfig)
        for ns in sorted({j.namespace for j in [*old, *jobs]}):
            core.delete_collection_namespaced_pod(ns, label_selector=f"{LABEL_PART_OF}={PART_OF}", grace_period_seconds=0)
        restart_process(self.state, "workload")
        return f"workload runner restarted on {len(jobs)} jobs ({'the smoke load' if smoke else trace})"

    def policy(self, step: Step) -> str:
        p = step.policy
        assert p is not None
        env: dict[str, str] = {}
        if p.benchmark is not None:
            env.update(livebench.controller_env(p.benchmark, livebench.bench_nodes(self.rendered), p.budget_frac))
        env.update(p.env)
        denv = self.state.read_deploy_env() or {}
        names = [n for n, _ in recorded_deploy_pids(denv) if denv.get(f"COMPONENT_{n}") == "controller-manager"]
        if not names:
            raise RuntimeFailure("no controller manager deployed")
        for n in names:
            restart_process(self.state, n, env_update=env)
        return f"{', '.join(names)} restarted with " + " ".join(f"{k}={v}" for k, v in sorted(env.items()))

    def ambient(self, body: dict[str, Any]) -> str:
        url = f"http://{(self.state.read_deploy_env() or {})['SIMULATOR_HTTP']}/debug/facility/ambient"
        req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                answer = json.loads(resp.read())
        except OSError as e:
            raise RuntimeFailure(f"POST {url} {body}: {e}") from e
        return f"ambient control {answer.get('control')}; outdoor ambient now {answer.get('ambientC', '?')} °C"

    def not_reached(self, why: str) -> None:
        """Each assert step not reached: a failed assertion saying why (one per assert step, always)."""
        done = {a.step for a in self.assertions}
        for i in self.scenario.asserts:
            name = self.scenario.step_name(i)
            if name not in done:
                self.assertions.append(ScenarioAssertion(f"A{self.scenario.asserts.index(i) + 1:02d}", "fail",
                                                         f"not reached: {why}", "the step to run", step=name))
        self.assertions.sort(key=lambda a: a.id)


def write_timeline(run: Path, rows: list[dict[str, Any]]) -> None:
    with (run / "timeline.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(TIMELINE_FIELDS))
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else (f"{r[k]:.3f}" if isinstance(r[k], float) else r[k]))
                        for k in TIMELINE_FIELDS})


@dataclass
class _Outcome:
    """How the scenario's run went, for its results."""

    runner: Runner
    timeline: Timeline | None
    aborted: str | None
    timed_out: bool
    images: dict[str, str]
    peak_kib: int


def run_scenario(ctx: Context, options: ScenarioOptions) -> int:
    """The whole scenario; returns its exit code (summary.json's exitCode)."""
    rendered = RenderedSpec.load(resolve(options.file, options.scenario.spec))
    started = dt.datetime.now(dt.UTC)
    sha, dirty = git_state()
    run = _run_dir(ctx.state, options.scenario, ctx.settings.hwemu, started, sha, dirty)
    log = (run / "scenario.log").open("w")
    out = Tee(sys.stderr, log)
    ctx = _scenario_context(ctx, options, run, Progress(out=cast(TextIO, out)))
    ctx.progress(f"simcluster scenario {options.scenario.name} ({options.file}): spec {rendered.name}, "
                 f"{len(options.scenario.steps)} steps, hwemu {ctx.settings.hwemu}, timing {ctx.settings.timing.name}; "
                 f"results in {run}")
    outcome = _execute(ctx, rendered, options)
    summary = _write_run(ctx, rendered, options, run, outcome, (started, sha, dirty))
    release_cluster(ctx.state, ctx.settings.keep, ctx.progress)
    _print_verdict(out, outcome.runner.assertions, summary, run)
    out.flush()
    log.close()
    return int(summary["exitCode"])


def _run_dir(state: StateDir, scenario: Scenario, hwemu: str, started: dt.datetime, sha: str, dirty: bool) -> Path:
    state.runs.mkdir(parents=True, exist_ok=True)
    run = state.runs / run_dir_name(started, scenario.name, hwemu, sha, dirty)
    run.mkdir(parents=True)
    return run


def _scenario_context(ctx: Context, options: ScenarioOptions, run: Path, progress: Progress) -> Context:
    """The run's context: progress to the run's log too, the scenario's simulator values (kept in the
    run directory) merged last over SIMCLUSTER_SIM_EXTRA_VALUES."""
    settings, scenario = ctx.settings, options.scenario
    (run / "scenario.yaml").write_bytes(options.file.read_bytes())
    extra = settings.sim_extra_values
    if scenario.simulator.set:
        (run / "simulator-values.yaml").write_text(yaml.safe_dump(scenario.simulator.set, sort_keys=True))
        extra = (*extra, run / "simulator-values.yaml")
    return Context(dataclasses.replace(settings, sim_extra_values=extra), ctx.state, progress)


def _execute(ctx: Context, rendered: RenderedSpec, options: ScenarioOptions) -> _Outcome:
    """Up, deploy and the steps under the scenario's deadline, sampled all along; an interruption, a
    timeout or a failure ends the steps (every assert step not reached fails, saying why)."""
    scenario, state, progress = options.scenario, ctx.state, ctx.progress
    sampler = MemorySampler(state)
    sampler.start()
    runner: Runner | None = None
    timeline: Timeline | None = None
    aborted: str | None = None
    timed_out = False
    images: dict[str, str] = {}
    deadline = Deadline(scenario.timeout_s).start()
    try:
        process.up(ctx, rendered, crd_dir=options.crd_dir, telemetry_mode=ctx.settings.telemetry)
        w = scenario.workload
        deploy(ctx, rendered, DeployOptions(options.values_files, options.daemonset_for(options.values_files),
                                            trace=resolve(options.file, w.trace) if w.trace else None))
        images = {k.removeprefix("TAG_"): v for k, v in (state.read_deploy_env() or {}).items() if k.startswith("TAG_")}
        runner = Runner(ctx, rendered, options)
        timeline = Timeline(runner.looker, scenario.sample_interval_s, time.monotonic())
        timeline.start()
        runner.run_steps(timeline)
    except KeyboardInterrupt:
        if deadline.fired.is_set():
            timed_out = True
            progress(f"timed out after {scenario.timeout_s:.0f}s (the scenario's timeoutS)")
        else:
            aborted = "interrupted"
            progress("interrupted; stopping the cluster")
    except (RuntimeFailure, ApiException, OSError) as e:
        aborted = str(e)
        progress(f"aborted: {e}")
    finally:
        deadline.cancel()
        sampler.stopped.set()
        with contextlib.suppress(Exception):
            sampler.peak_kib = max(sampler.peak_kib, sampler.sample())
        if timeline is not None:
            timeline.stopped.set()
            timeline.join(timeout=30)
        if runner is not None:
            with contextlib.suppress(Exception):
                faults.clear_pending(runner.held)
    if runner is None:
        runner = Runner(ctx, rendered, options)
    if aborted or timed_out:
        runner.not_reached(aborted or f"timed out after {scenario.timeout_s:.0f}s")
    return _Outcome(runner, timeline, aborted, timed_out, images, sampler.peak_kib)


def _write_run(ctx: Context, rendered: RenderedSpec, options: ScenarioOptions, run: Path, outcome: _Outcome,
               provenance: tuple[dt.datetime, str, bool]) -> dict[str, Any]:
    """timeline.csv and .png, the cluster's copies, summary.json (with the scenario's section) and the
    run's results; returns the summary. `provenance`: when the run started, the commit, dirty or not."""
    scenario, settings, state, runner = options.scenario, ctx.settings, ctx.state, outcome.runner
    started, sha, dirty = provenance
    finished = dt.datetime.now(dt.UTC)
    assertions = runner.assertions
    status = run_status(assertions, outcome.timed_out, outcome.aborted)
    rows, warnings = _write_timeline_and_plot(
        run, outcome, f"scenario {scenario.name} on {rendered.name} ({settings.timing.name} timing)")
    truth = Looker(ctx, rendered).emulate if state.read_deploy_env() else None
    collect(state, run, truth)
    with contextlib.suppress(FileNotFoundError):
        (run / "values.simulator.effective.yaml").write_bytes((state.values / "values.simulator.effective.yaml").read_bytes())
    summary = build_summary(RunRecord(
        assertions=assertions, status=status, spec=rendered.name, mode=settings.hwemu, scope=settings.power_scope,
        timing={**settings.timing.as_env(), "SIMCLUSTER_TELEMETRY": settings.telemetry}, commit=sha, dirty=dirty,
        images=outcome.images, started=started, finished=finished, warnings=warnings,
        resources={"peakRssMiB": round(outcome.peak_kib / 1024, 1), "agents": len(runner.looker.agents()),
                   "nodes": len(rendered.nodes)},
        runtime=PROCESS, aborted=outcome.aborted,  # a scenario always runs on the process runtime (process.up)
    ))
    summary["test.suite.name"] = f"{SUITE}/{scenario.name}"
    summary["scenario"] = {"name": scenario.name, "file": str(options.file), "description": scenario.description,
                           "steps": [r.as_json() for r in runner.records], "timeline": "timeline.csv",
                           "timelineSamples": len(rows), "plot": "timeline.png"}
    write_results(state, run, summary, assertions, scenario.name, settings.hwemu, finished)
    return summary


def _write_timeline_and_plot(run: Path, outcome: _Outcome, title: str) -> tuple[list[dict[str, Any]], list[str]]:
    """timeline.csv and timeline.png; returns the rows and the warnings (a partly read sample, a plot
    that failed: it must not lose the run's results)."""
    timeline = outcome.timeline
    rows = timeline.rows if timeline is not None else []
    write_timeline(run, rows)
    warnings = []
    if timeline is not None and timeline.partial:
        warnings.append(f"{timeline.partial} of {len(rows)} timeline samples read the cluster only in part")
    try:
        steps = [(r.at_s, r.name) for r in outcome.runner.records if r.outcome != "not reached"]
        plot_timeline(rows, steps, title, run / "timeline.png")
    except Exception as e:  # - a plot that fails must not lose the run's results
        warnings.append(f"timeline.png not drawn: {type(e).__name__}: {e}")
    return rows, warnings


def _print_verdict(out: Tee, assertions: list[ScenarioAssertion], summary: dict[str, Any], run: Path) -> None:
    status = summary["test.suite.run.status"]  # run_status's verdict, as summary.json records it
    print("", file=out)
    print(checks_table(assertions), file=out)
    print(f"\n{status.upper()}: {sum(a.status == 'pass' for a in assertions)}/{len(assertions)} assertions passed "
          f"in {summary['wallSeconds']:.0f}s, peak memory {summary['resources']['peakRssMiB']:.0f} MiB; "
          f"{run / 'summary.json'}", file=out)
