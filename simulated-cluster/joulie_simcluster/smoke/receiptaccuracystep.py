"""S18's step: two readings of the controller manager's receipt counters, each just after one of its windows
closed, ``SPAN_WINDOWS`` windows apart, and the workload runner's per-Pod truth at each node's last meter
sample those two closes counted (``/debug/pod-truth?at=``, the runner's debug address: the check reads
it, no Joulie component does); the evaluation is the pure ``receiptaccuracy``. Shell."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from joulie_simcluster.smoke import load as smokeload
from joulie_simcluster.smoke import receiptaccuracy as accuracy
from joulie_simcluster.smoke.checks import CHECKS, Assertion
from joulie_simcluster.timing import Timing

SPAN_WINDOWS: Final = 10
"""Receipt windows between the two readings (10 x 12-15 s with the ci timing). The check's own error is
the phase of the emulator's 1 s tick at each end (a meter sample's time and the runner's reading of the
same counter can stand up to a tick apart): at most 1 s of a node's power over the span, 1.7 % of 60 s
but under 0.9 % of 120 s. Measured at 60 s: closure +0.02 % in one run, +0.70 % on every Node in the
next, the same receipts."""
TRUTH_PATH: Final = "/debug/pod-truth"


class Cluster(Protocol):
    timing: Timing

    @property
    def nodes(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def env(self) -> dict[str, str]: ...

    def prom_query(self, promql: str) -> list[Mapping[str, Any]]: ...


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return str(resp.read().decode())


def next_close(metrics_url: str, after_s: float, timeout_s: float, read: Callable[[str], str] = _get) -> accuracy.Books:
    """The counters as the first window closing after ``after_s`` left them: polled until the window-end gauge
    passes ``after_s``, then read once more a moment later (a scrape may run while the close records its
    counters one after the other) and kept when it is the same close."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        books = accuracy.parse_books(read(metrics_url))
        if books.window_end_s > after_s:
            time.sleep(0.5)
            again = accuracy.parse_books(read(metrics_url))
            if again.window_end_s == books.window_end_s:
                return again
            after_s = again.window_end_s - 1e-6  # another close came at once: take that one
        time.sleep(0.5)
    raise TimeoutError(f"no receipt window closed after {after_s:.1f} within {timeout_s:.0f}s ({metrics_url})")


def truth_at(truth_url: str, at_s: float, timeout_s: float, read: Callable[[str], str] = _get) -> accuracy.TruthAt:
    """The runner's truth at ``at_s``, once its readings have passed that instant."""
    deadline = time.monotonic() + timeout_s
    url = f"{truth_url}?{urllib.parse.urlencode({'at': f'{at_s:.6f}'})}"
    while True:
        try:
            return accuracy.parse_truth(json.loads(read(url)))
        except urllib.error.HTTPError as err:  # 400: not read that far yet (its tick is 1 s)
            if err.code != 400 or time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def accuracy_step(c: Cluster) -> Assertion:
    """S18: over ``SPAN_WINDOWS`` of the controller's receipt windows."""
    env, window = c.env, c.timing.receipt_window_s
    metrics_url = f"http://{env['CONTROLLER_METRICS']}/metrics"
    workload = env.get("URL_workload", "")
    if not workload.endswith("/metrics"):
        return Assertion("S18", "fail", f"no workload runner address in the deploy ({workload!r})", CHECKS["S18"][1])
    truth_url = workload.removesuffix("/metrics") + TRUTH_PATH
    metered = {str(r["metric"].get("k8s_node_name", ""))
               for r in c.prom_query("count by (k8s_node_name) (hw_host_energy_joules_total)")}
    allocated = {str(r["metric"].get("k8s_node_name", ""))
                 for r in c.prom_query("count by (k8s_node_name) (hw_gpu_allocation_ratio)")}
    gpu_nodes = {n["metadata"]["name"] for n in c.nodes if smokeload.node_gpus(n)[1] > 0}
    first = next_close(metrics_url, accuracy.parse_books(_get(metrics_url)).window_end_s, 3 * window + 30)
    last = next_close(metrics_url, first.window_end_s + (SPAN_WINDOWS - 0.5) * window, (SPAN_WINDOWS + 2) * window + 30)
    truth_a = accuracy.compose_truth(accuracy.truth_instants(first), lambda at: truth_at(truth_url, at, 30),
                                     first.window_end_s)
    truth_b = accuracy.compose_truth(accuracy.truth_instants(last), lambda at: truth_at(truth_url, at, 30),
                                     last.window_end_s)
    return accuracy.receipt_accuracy(first, last, truth_a, truth_b, metered, gpu_nodes - allocated,
                                     smokeload.shared_nodes(c.nodes))
