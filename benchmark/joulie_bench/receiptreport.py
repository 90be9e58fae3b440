"""The energy receipts' figures per arm: ``receipts.csv`` (one row per finished job) and the section of
results.md (receipt against the emulator's truth: mean and worst error; the books' closure; the
counterfactual's saving and added time against what the truth and the baseline arm show)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from joulie_bench.arms import ARMS, BASELINE
from joulie_bench.receipts import ReceiptSummary
from joulie_bench.result import RunResult

RECEIPTS_HEADER = (
    "policy",
    "seed",
    "job_id",
    "namespace",
    "kind",
    "node",
    "gpus",
    "run_s",
    "gpu_j",
    "cpu_busy_j",
    "cpu_idle_j",
    "platform_j",
    "receipt_j",
    "truth_j",
    "error",
    "by_request_error",
    "saved_j",
    "saved_low_j",
    "saved_high_j",
    "added_s",
    "true_added_s",
)


def csv_rows(results: Sequence[RunResult]) -> list[list[str]]:
    out = []
    for r in results:
        for x in r.receipts:
            e = x.receipt
            out.append(
                [
                    r.policy,
                    str(r.seed),
                    x.job_id,
                    x.namespace,
                    x.kind,
                    x.node,
                    str(x.gpus),
                    f"{x.run_s:.1f}",
                    *(
                        f"{v:.1f}"
                        for v in (e.gpu_j, e.cpu_busy_j, e.cpu_idle_j, e.platform_j, e.total_j, x.truth.total_j)
                    ),
                    f"{x.error:.5f}",
                    f"{x.by_request_error:.5f}",
                    *(f"{v:.1f}" for v in (e.saved_j, e.saved_low_j, e.saved_high_j, e.added_s, x.true_added_s)),
                ]
            )
    return out


@dataclass(frozen=True)
class PairedCheck:
    """The counterfactual against the truth, over the jobs that ran on the same node under A and the arm
    (summed over seeds): the arm's caps are then the only difference in a job's hardware."""

    jobs: int
    saved_j: float
    saved_low_j: float
    saved_high_j: float
    true_saved_j: float
    """The same jobs' true energy under A minus under the arm."""
    added_s: float
    true_added_s: float
    """The same jobs' running time lost beyond what they lost under A (clock ramps, turbo)."""


def paired_check(results: Sequence[RunResult], pol: str) -> PairedCheck:
    base = {(r.seed, x.job_id): x for r in results if r.policy == BASELINE for x in r.receipts}
    pairs = [
        (x, base[(r.seed, x.job_id)])
        for r in results
        if r.policy == pol
        for x in r.receipts
        if (r.seed, x.job_id) in base and base[(r.seed, x.job_id)].node == x.node
    ]
    return PairedCheck(
        len(pairs),
        sum(x.receipt.saved_j for x, _ in pairs),
        sum(x.receipt.saved_low_j for x, _ in pairs),
        sum(x.receipt.saved_high_j for x, _ in pairs),
        sum(b.truth.total_j - x.truth.total_j for x, b in pairs),
        sum(x.receipt.added_s for x, _ in pairs),
        sum(x.true_added_s - b.true_added_s for x, b in pairs),
    )


def _merged(results: Sequence[RunResult], pol: str) -> tuple[list[float], list[float], ReceiptSummary | None]:
    rs = [r for r in results if r.policy == pol]
    errs = [abs(x.error) for r in rs for x in r.receipts]
    req = [abs(x.by_request_error) for r in rs for x in r.receipts]
    sums = [r.receipt_summary for r in rs if r.receipt_summary is not None]
    if not sums:
        return errs, req, None
    merged = ReceiptSummary(
        sum(s.jobs for s in sums),
        sum(errs) / len(errs) if errs else 0.0,
        max(errs, default=0.0),
        sum(req) / len(req) if req else 0.0,
        max(req, default=0.0),
        max(s.closure_error for s in sums),
        sum(s.unallocated_share for s in sums) / len(sums),
        sum(s.saved_j for s in sums),
        sum(s.saved_low_j for s in sums),
        sum(s.saved_high_j for s in sums),
        sum(s.added_s for s in sums),
        sum(s.true_added_s for s in sums),
    )
    return errs, req, merged


def markdown(results: Sequence[RunResult], policies: Sequence[str]) -> list[str]:
    """results.md's section: one row per arm, over all its seeds."""
    out = [
        "## Energy receipts against the emulator's truth (docs/energy-receipts.md)",
        "",
        "Per finished job: the receipt from what the controller sees (counters every 15 s, boards held, "
        "cgroup CPU time; by request: without the CPU time) against the truth. Closure: |sum(receipts) + "
        "unallocated - node meters| / node meters. The counterfactual against the truth: the jobs that ran on "
        "the same node under A and the arm; saved = the model's sum [its range], truth = the same jobs' true "
        "energy under A minus under the arm; time added = the model's, truth = the time lost beyond A's.",
        "",
        "| policy | jobs | mean / worst error | by request: mean / worst | closure | unallocated | same-node jobs "
        "| saved kWh [range] | truth kWh | time added h | truth h |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for pol in policies:
        errs, _, s = _merged(results, pol)
        if s is None or not errs:
            continue
        c = paired_check(results, pol) if pol != BASELINE else None
        check = (
            f"{c.jobs} | {c.saved_j / 3.6e6:.3f} [{c.saved_low_j / 3.6e6:.3f}, {c.saved_high_j / 3.6e6:.3f}] | "
            f"{c.true_saved_j / 3.6e6:.3f} | {c.added_s / 3600:.2f} | {c.true_added_s / 3600:.2f}"
            if c is not None
            else "- | - | - | - | -"
        )
        out.append(
            f"| {pol} {ARMS[pol].name} | {s.jobs} | {s.mean_abs_error * 100:.2f} % / "
            f"{s.worst_abs_error * 100:.2f} % | {s.by_request_mean_abs_error * 100:.2f} % / "
            f"{s.by_request_worst_abs_error * 100:.2f} % | {s.closure_error:.1e} | "
            f"{s.unallocated_share * 100:.1f} % | {check} |"
        )
    return [*out, ""]
