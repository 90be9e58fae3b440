"""The controller's per-job estimates against the emulator's truth, over a run (``--estimates-plot PATH``).

The controller never sees a job's compute share ``c`` or draw ``u``: it estimates them from the Pod's
GPU telemetry (``joulie_controller.api.observe``). The benchmark knows both, so after every reconcile it
records each running GPU Pod's estimate (``Memory.job_estimates``) beside the truth the engine runs
(the job's phases, share-weighted, under the run's physics variant). ``write_csv`` writes every point,
``plot`` a handful of jobs (estimate with its one-sd band, truth as a line, the kind's prior the controller
started from dotted, against minutes since the job started) and ``summary_lines`` the error at the first and the last reconcile of each job.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from joulie_bench.gputelemetry import phases_of
from joulie_controller.api import JobEstimate, prior_estimate
from joulie_simulator.api import mean_compute_share
from joulie_workload.trace import Job

HEADER = (
    "t_s",
    "job_id",
    "pod",
    "kind",
    "minutes_running",
    "true_c",
    "est_c",
    "est_c_sd",
    "true_u",
    "est_u",
    "calibrated",
    "note",
)


@dataclass(frozen=True)
class EstimatePoint:
    t_s: float
    job_id: str
    pod: str
    kind: str
    minutes_running: float
    true_c: float
    est_c: float
    est_c_sd: float
    true_u: float
    est_u: float
    calibrated: bool
    note: str

    def row(self) -> tuple[str, ...]:
        return (
            f"{self.t_s:.0f}",
            self.job_id,
            self.pod,
            self.kind,
            f"{self.minutes_running:.2f}",
            f"{self.true_c:.4f}",
            f"{self.est_c:.4f}",
            f"{self.est_c_sd:.4f}",
            f"{self.true_u:.4f}",
            f"{self.est_u:.4f}",
            str(self.calibrated).lower(),
            self.note,
        )


def true_draw(job: Job) -> float:
    phases = phases_of(job)
    total = sum(p.share for p in phases)
    return sum(p.share * p.draw for p in phases) / total if total > 0 else 0.0


@dataclass
class EstimateLog:
    """Every reconcile's estimates of the running GPU Pods, with the truth beside them."""

    points: list[EstimatePoint] = field(default_factory=list)

    def record(
        self, t_s: float, running: Sequence[tuple[Job, str, float]], estimates: Mapping[str, JobEstimate]
    ) -> None:
        """``running``: (the job as the engine runs it, its Pod key, its start time) per running GPU job."""
        for job, pod, start_s in running:
            est = estimates.get(pod)
            if est is None:
                continue
            self.points.append(
                EstimatePoint(
                    t_s,
                    job.job_id,
                    pod,
                    job.kind,
                    (t_s - start_s) / 60.0,
                    mean_compute_share(phases_of(job)),
                    est.c,
                    est.c_sd,
                    true_draw(job),
                    est.u,
                    est.calibrated,
                    est.note,
                )
            )

    def by_job(self) -> dict[str, list[EstimatePoint]]:
        out: dict[str, list[EstimatePoint]] = {}
        for p in self.points:
            out.setdefault(p.job_id, []).append(p)
        return out

    def chosen(self, n: int = 6) -> list[str]:
        """A handful of jobs to plot: the longest-observed job of each kind in turn, then the next of each."""
        per_kind: dict[str, list[tuple[int, str]]] = {}
        for job_id, pts in self.by_job().items():
            per_kind.setdefault(pts[0].kind, []).append((-len(pts), job_id))
        queues = [sorted(v) for _, v in sorted(per_kind.items())]
        out: list[str] = []
        while len(out) < n and any(queues):
            for q in queues:
                if q and len(out) < n:
                    out.append(q.pop(0)[1])
        return out


def write_csv(path: Path, log: EstimateLog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(p.row() for p in log.points)


def summary_lines(log: EstimateLog) -> list[str]:
    """Mean |estimate - truth| of c at each job's first and last reconcile, and how many were calibrated."""
    jobs = log.by_job()
    if not jobs:
        return ["no GPU job was observed"]
    first = [abs(p[0].est_c - p[0].true_c) for p in jobs.values()]
    last = [abs(p[-1].est_c - p[-1].true_c) for p in jobs.values()]
    cal = sum(1 for p in jobs.values() if p[-1].calibrated)
    inside = sum(1 for p in jobs.values() if abs(p[-1].est_c - p[-1].true_c) <= 2 * p[-1].est_c_sd)
    return [
        f"{len(jobs)} GPU jobs observed; mean |c estimate - truth| {sum(first) / len(first):.3f} at the first reconcile, "
        f"{sum(last) / len(last):.3f} at the last",
        f"{cal} of {len(jobs)} seen at two clock ratios (calibrated); truth within 2 sd of the last estimate for "
        f"{inside} of {len(jobs)}",
    ]


def plot(path: Path, log: EstimateLog, job_ids: Sequence[str], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = log.by_job()
    cols = 3
    rows = max(1, -(-len(job_ids) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False, sharey=True)
    for ax in axes.flat[len(job_ids) :]:
        ax.set_visible(False)
    for ax, job_id in zip(axes.flat, job_ids, strict=False):
        pts = jobs[job_id]
        x = [p.minutes_running for p in pts]
        c = [p.est_c for p in pts]
        sd = [p.est_c_sd for p in pts]
        ax.fill_between(
            x,
            [a - b for a, b in zip(c, sd, strict=True)],
            [a + b for a, b in zip(c, sd, strict=True)],
            alpha=0.25,
            label="estimate ± 1 sd",
        )
        ax.plot(x, c, marker=".", label="estimated c")
        ax.plot(x, [p.true_c for p in pts], color="black", linestyle="--", label="true c")
        ax.axhline(prior_estimate(pts[0].kind).c, color="grey", linestyle=":", label="kind's prior")
        ax.set_title(f"{job_id} ({pts[0].kind})", fontsize=9)
        ax.set_xlabel("minutes running")
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("compute share c")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
