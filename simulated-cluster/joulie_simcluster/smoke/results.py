"""What a smoke run leaves behind and how it is measured: the run directory's copies of the cluster
(k8s/ objects, logs/, env files, effective values), summary.json and the OTLP lines, the
``runs/latest`` link, smoke.log beside stdout, the peak memory of everything the run started; and
the frame every run (smoke, scenario) shares: its wall-clock deadline and the cluster's release."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TextIO, cast

from joulie_common.procstatus import rss_kib
from joulie_simcluster.deploy.processes import stop_deployed
from joulie_simcluster.progress import Progress
from joulie_simcluster.runtimes import kube, process
from joulie_simcluster.runtimes.registry import recorded_runtime
from joulie_simcluster.smoke.checks import Assertion
from joulie_simcluster.smoke.summary import otlp_logs_line, otlp_metrics_line
from joulie_simcluster.state import StateDir


class Deadline:
    """A run's wall-clock limit: when it passes, the main thread gets a KeyboardInterrupt wherever it
    waits, and `fired` tells that timeout from a user's Ctrl-C."""

    def __init__(self, timeout_s: float) -> None:
        self.fired = threading.Event()
        self._timer = threading.Timer(timeout_s, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired.set()
        os.kill(os.getpid(), signal.SIGINT)

    def start(self) -> Deadline:
        self._timer.start()
        return self

    def cancel(self) -> None:
        self._timer.cancel()


def release_cluster(state: StateDir, keep: bool, progress: Progress) -> None:
    """After a run: stop what it deployed and the cluster (runs/ kept), unless SIMCLUSTER_KEEP asks to keep it."""
    if keep:
        progress(f"kept the cluster (SIMCLUSTER_KEEP=1): export KUBECONFIG={state.kubeconfig}")
        return
    recorded_runtime(state.read_cluster_env()).release(state, progress, stop_deployed)


class Tee(io.TextIOBase):
    """stdout and smoke.log at once."""

    def __init__(self, *outs: TextIO) -> None:
        self.outs = outs

    def write(self, text: str) -> int:
        for o in self.outs:
            o.write(text)
        return len(text)

    def flush(self) -> None:
        for o in self.outs:
            o.flush()


class MemorySampler(threading.Thread):
    """Peak resident memory of everything the run started (each process leads its own session)."""

    def __init__(self, state: StateDir, period_s: float = 2.0) -> None:
        super().__init__(daemon=True)
        self.state, self.period_s = state, period_s
        self.peak_kib = 0
        self.stopped = threading.Event()

    def sessions(self) -> set[int]:
        out: set[int] = set()
        for env in (self.state.read_cluster_env() or {}, self.state.read_deploy_env() or {}):
            out |= {int(v) for k, v in env.items() if k.endswith("_PID") or k.startswith("PID_") if v.isdigit()}
        return out

    def sample(self) -> int:
        sids, total = self.sessions(), 0
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[3]) in sids:  # field 6 of stat: session id
                    total += rss_kib(int(proc.name))
        return total

    def run(self) -> None:
        while not self.stopped.wait(self.period_s):
            with contextlib.suppress(Exception):
                self.peak_kib = max(self.peak_kib, self.sample())


def git_state() -> tuple[str, bool]:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                    text=True, check=True).stdout.strip())
        return sha, dirty
    except (OSError, subprocess.CalledProcessError):
        return "", False


@dataclass(frozen=True)
class RunRecord:
    """One run of a whole-cluster command (suspend, suspend-live, tenants, daemonset): its directory under
    runs/, what it ran on, and its output to the terminal and to <dir>/<name>.log at once."""

    started: dt.datetime
    sha: str
    dirty: bool
    dir: Path
    out: Tee
    progress: Progress
    log: IO[str]

    def stamp(self) -> dict[str, Any]:
        """The fields every such summary.json starts with: the commit and when it ran."""
        return {"commit": self.sha, "dirty": self.dirty, "started": self.started.isoformat(),
                "finished": dt.datetime.now(dt.UTC).isoformat()}

    def close(self) -> None:
        self.out.flush()
        self.log.close()

    def finish(self, summary: Mapping[str, Any], results: Sequence[tuple[str, bool, str]], teardown: Callable[[], None],
               *, width: int, noun: str = "checks", notes: Sequence[str] = (), detail: str = "") -> int:
        """summary.json written before the tear-down (so a tear-down that hangs or fails loses no
        result), then one PASS/FAIL line per check and the verdict; the exit code, 0 when
        ``summary["status"]`` is ``pass``."""
        passed = summary.get("status") == "pass"
        path = self.dir / "summary.json"
        path.write_text(json.dumps(summary, indent=1))
        teardown()
        print("", file=self.out)
        for name, ok, text in results:
            print(f"{'PASS' if ok else 'FAIL'}  {name:<{width}} {text}", file=self.out)
        for line in notes:
            print(f"\n{line}", file=self.out)
        print(f"\n{'PASSED' if passed else 'FAILED'}: {sum(ok for _, ok, _ in results)}/{len(results)} {noun}{detail}; "
              f"{path}", file=self.out)
        self.close()
        return 0 if passed else 1


def tear_down(state: StateDir, keep: bool, progress: Progress) -> None:
    """The deployed components stopped and the process runtime's cluster brought down, unless `keep`."""
    if not keep:
        stop_deployed(state, progress)
        process.down(state, keep=True, progress=progress)


def open_run(runs: Path, name: str) -> RunRecord:
    """runs/<UTC>-<name>/ made, its log opened beside the terminal."""
    started = dt.datetime.now(dt.UTC)
    sha, dirty = git_state()
    run_dir = runs / f"{started:%Y%m%dT%H%M%SZ}-{name}"
    run_dir.mkdir(parents=True)
    log = (run_dir / f"{name}.log").open("w")
    out = Tee(sys.stdout, log)
    return RunRecord(started, sha, dirty, run_dir, out, Progress(out=cast(TextIO, out)), log)


def collect(state: StateDir, run: Path, truth: Callable[[], dict[str, Any]] | None) -> None:
    """k8s/ objects, logs/, the env files and the effective values into the run directory; `truth`:
    the emulator's, when a deploy got that far."""
    (run / "k8s").mkdir(parents=True, exist_ok=True)
    paths = {"nodes": "/api/v1/nodes", "pods": "/api/v1/pods", "events": "/api/v1/events",
             "nodehardwares": kube.NODEHARDWARES, "nodetwins": kube.NODETWINS}
    for name, path in paths.items():
        with contextlib.suppress(Exception):
            code, body = kube.api_get(state.kubeconfig, path, timeout_s=10)
            if code == 200:
                (run / "k8s" / f"{name}.json").write_text(json.dumps(json.loads(body), indent=1))
    if truth is not None:
        with contextlib.suppress(Exception):
            (run / "k8s" / "emulate.json").write_text(json.dumps(truth(), indent=1))
    if state.logs.is_dir():
        shutil.copytree(state.logs, run / "logs", dirs_exist_ok=True)
    for f in ("cluster.env", "deploy.env", "spec.yaml"):
        if (state.root / f).is_file():
            shutil.copy2(state.root / f, run / f)
    eff = state.values / "values.effective.yaml"
    if eff.is_file():
        shutil.copy2(eff, run / "values.effective.yaml")


def write_results(state: StateDir, run: Path, summary: Mapping[str, Any], assertions: Sequence[Assertion], spec: str,
                  mode: str, finished: dt.datetime) -> None:
    """summary.json and the OTLP lines into `run`, and ``runs/latest`` pointed at it."""
    (run / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (run / "otlp").mkdir(exist_ok=True)
    (run / "otlp" / "harness.logs.jsonl").write_text(otlp_logs_line(assertions, spec, mode, finished) + "\n")
    (run / "otlp" / "harness.metrics.jsonl").write_text(otlp_metrics_line(assertions, spec, mode, finished) + "\n")
    latest = state.runs / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(run.name)
