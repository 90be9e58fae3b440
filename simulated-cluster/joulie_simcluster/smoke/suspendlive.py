"""``simcluster suspend-live``'s model and checks (issue 37): a node resumed ahead of a burst, and a
refused power-on retried, then given up, with the Pod bound elsewhere. Pure; the run is
``suspendliverun.py``.

What the run records is transitions, each with its time in seconds since the deploy ended: every
change of a NodeTwin's ``status.power`` (state, reason), every change of the emulator's power state
of a node (its truth: ``off``, ``booting``, ``on``) and each check Pod's creation and binding. The
checks below read only those, so each can be tested on a made-up timeline.

The settings the checks compare against (RESUME_RETRIES, RESUME_RETRY_BACKOFF, RESUME_TIMEOUT, the
reconcile interval) are read from the values files the run deployed, never assumed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from joulie_common.settingsgrammar import parse_duration

AHEAD_REASON: Final = "resumed ahead of demand (forecast)"
"""The start of a NodeTwin reason the warm pool writes when it powers a node on before any Pod waits
(``joulie_controller/power/powerstate.py`` ``_warm_ahead``)."""
REFUSED_REASON: Final = "refused power-on"
"""In the reason of each retry (``retry k of N after the BMC refused power-on: ...``) and of the failure."""
BIND_SLACK_S: Final = 6.0
"""A Pod that finds a powered node with room is bound within two of the ci timing's 3 s reconciles
(kube-scheduler's own latency included): the added wait below this is no wait a resume caused."""
POLL_SLACK_S: Final = 1.5
"""The run looks once a second: a gap between two observed transitions may be that much shorter than
the gap between the controller's own times."""


@dataclass(frozen=True)
class LiveSettings:
    """The controller settings the checks compare against, from the deployed values."""

    resume_retries: int
    retry_backoff_s: float
    resume_timeout_s: float
    reconcile_s: float
    forecast_day_s: float

    @staticmethod
    def from_env(env: Mapping[str, str], reconcile_s: float) -> LiveSettings:
        """From ``controllerManager.env`` (merged values); the controller's defaults where unset."""

        def dur(name: str, default: str) -> float:
            return parse_duration(name, str(env.get(name, default)))

        return LiveSettings(
            int(env.get("RESUME_RETRIES", "3")),
            dur("RESUME_RETRY_BACKOFF", "30s"),
            dur("RESUME_TIMEOUT", "15m"),
            reconcile_s,
            dur("FORECAST_DAY", "24h"),
        )


def controller_env(values_docs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``controllerManager.env`` of the values documents merged in order (the last wins, as helm does)."""
    env: dict[str, str] = {}
    for doc in values_docs:
        cm = (doc or {}).get("controllerManager") or {}
        env.update({str(k): str(v) for k, v in (cm.get("env") or {}).items()})
    return env


@dataclass(frozen=True)
class TwinChange:
    at_s: float
    node: str
    state: str
    reason: str


@dataclass(frozen=True)
class EmuChange:
    at_s: float
    node: str
    state: str


@dataclass
class PodSeen:
    name: str
    created_s: float
    bound_s: float | None = None
    node: str = ""

    @property
    def wait_s(self) -> float | None:
        """Creation to binding: the wait a resume adds to a Pod (plus the scheduler's own)."""
        return None if self.bound_s is None else round(self.bound_s - self.created_s, 1)


@dataclass
class Burst:
    index: int
    created_s: float
    pods: list[PodSeen] = field(default_factory=list)


@dataclass
class Observed:
    """Everything the run saw; times in seconds since the deploy ended."""

    always_on: str = ""
    twins: list[TwinChange] = field(default_factory=list)
    emulator: list[EmuChange] = field(default_factory=list)
    bursts: list[Burst] = field(default_factory=list)
    refused_node: str = ""
    other_node: str = ""
    fault_set_s: float | None = None
    refused_pod: PodSeen | None = None
    refused_drawn: int | None = None
    """Power-ons the emulated BMCs refused while the fault held (the simulator's count)."""
    error: str = ""


def state_at(changes: Sequence[TwinChange] | Sequence[EmuChange], node: str, at_s: float) -> str:
    """The node's last recorded state at ``at_s`` ("" before any)."""
    state = ""
    for c in changes:
        if c.node == node and c.at_s <= at_s:
            state = c.state
    return state


def first_refusal_target(off_since: Mapping[str, str], candidates: Iterable[str]) -> tuple[str, str]:
    """The two candidates in the order the controller tries off nodes of one profile for a Pending Pod:
    the longest off first (``status.power.since``, RFC 3339, sorts as text), then by name."""
    order = sorted(candidates, key=lambda n: (off_since.get(n, ""), n))
    if len(order) < 2:
        raise ValueError(f"need two off nodes for the refused power-on, have {order}")
    return order[0], order[1]


Check = tuple[str, bool, str]


def check_ahead(o: Observed) -> list[Check]:
    """The last burst: a node resumed by the forecast before its first Pod, on before it, and its Pods
    bound without a resume's wait; the first burst (reactive: the forecast had no day yet) for contrast."""
    if len(o.bursts) < 2:
        return [("resumed-ahead-of-burst", False, f"{len(o.bursts)} bursts ran, need at least 2")]
    first, last = o.bursts[0], o.bursts[-1]
    # The earlier bursts end half a day before: a resume since then is for this one.
    since = last.created_s - o_day_half(o)
    ahead = [
        c
        for c in o.twins
        if c.state == "resuming" and c.reason.startswith(AHEAD_REASON) and since <= c.at_s < last.created_s
    ]
    out: list[Check] = []
    if ahead:
        a = ahead[0]
        was = state_at(o.twins, a.node, a.at_s - 0.01)
        out.append(
            (
                "resumed-ahead-of-burst",
                was == "off",
                f"{a.node} resuming at +{a.at_s:.1f}s, {last.created_s - a.at_s:.1f}s before burst {last.index}'s "
                f"first Pod (+{last.created_s:.1f}s), from {was or 'unknown'}: {a.reason}",
            )
        )
        on = [e.at_s for e in o.emulator if e.node == a.node and e.state == "on" and e.at_s > a.at_s]
        out.append(
            (
                "ahead-node-on-before-burst",
                bool(on) and on[0] <= last.created_s,
                f"{a.node} on (emulator) at +{on[0]:.1f}s" if on else f"{a.node} never read on",
            )
        )
    else:
        out.append(
            (
                "resumed-ahead-of-burst",
                False,
                f"no node resuming with '{AHEAD_REASON}' in the {o_day_half(o):.0f}s before burst {last.index} "
                f"(+{last.created_s:.1f}s); resumes seen: "
                + "; ".join(f"{c.node} +{c.at_s:.1f}s {c.reason[:60]}" for c in o.twins if c.state == "resuming"),
            )
        )
    waits = [p.wait_s for p in last.pods]
    first_waits = [p.wait_s for p in first.pods]
    bound = all(w is not None for w in waits)
    worst = max((w for w in waits if w is not None), default=None)
    out.append(
        (
            "burst-pods-no-resume-wait",
            bound and worst is not None and worst <= BIND_SLACK_S,
            f"burst {last.index}: Pods' added wait {waits} s (limit {BIND_SLACK_S:g} s, a scheduling); "
            f"burst {first.index} (reactive): {first_waits} s",
        )
    )
    return out


def o_day_half(o: Observed) -> float:
    """How far before a burst a resume counts as for it: half the gap between two bursts."""
    if len(o.bursts) < 2:
        return 0.0
    return (o.bursts[-1].created_s - o.bursts[-2].created_s) / 2.0


def check_refused(o: Observed, s: LiveSettings) -> list[Check]:
    """The refused node: each refusal retried after its backoff (doubling), ``failed`` with the BMC's
    answer past RESUME_RETRIES, and the Pod bound on the other node within RESUME_TIMEOUT plus one reconcile."""
    x = o.refused_node
    mine = [c for c in o.twins if c.node == x and (o.fault_set_s is None or c.at_s >= o.fault_set_s)]
    retries = [
        c for c in mine if c.state == "resuming" and c.reason.startswith("retry ") and REFUSED_REASON in c.reason
    ]
    failed = next((c for c in mine if c.state == "failed"), None)
    out: list[Check] = []
    # The reason names each retry when it is sent (``retry k of N after the BMC refused power-on``): the
    # first power-on, then each retry a backoff after the refusal before it (doubling), then ``failed``
    # on the tick after the last refusal (no further wait: the budget is spent).
    first_on = next((c for c in mine if c.state == "resuming"), None)
    stamps = ([first_on.at_s] if first_on else []) + [c.at_s for c in retries]
    gaps = [round(b - a, 1) for a, b in itertools.pairwise(stamps)]
    wanted = [s.retry_backoff_s * 2**k for k in range(len(gaps))]
    backoff_ok = (
        len(retries) == s.resume_retries
        and len(gaps) == s.resume_retries
        and all(g + POLL_SLACK_S >= w for g, w in zip(gaps, wanted, strict=True))
    )
    out.append(
        (
            "refused-power-on-retried-with-backoff",
            backoff_ok,
            f"{x}: {len(retries)} retries seen (RESUME_RETRIES={s.resume_retries}) at "
            f"{[f'+{t:.1f}s' for t in stamps]}; gaps {gaps} s against backoff {wanted} s"
            + (f"; BMC refusals counted by the simulator: {o.refused_drawn}" if o.refused_drawn is not None else ""),
        )
    )
    count_ok = o.refused_drawn is None or o.refused_drawn == s.resume_retries + 1
    out.append(
        (
            "failed-with-bmc-reason",
            failed is not None and REFUSED_REASON in failed.reason and "500" in failed.reason and count_ok,
            f"{x} failed at +{failed.at_s:.1f}s: {failed.reason}"
            if failed
            else f"{x} never failed: states {[c.state for c in mine]}",
        )
    )
    p = o.refused_pod
    limit = s.resume_timeout_s + s.reconcile_s
    wait = p.wait_s if p else None
    out.append(
        (
            "pod-bound-elsewhere-in-time",
            p is not None and wait is not None and p.node == o.other_node and wait <= limit,
            f"Pod {p.name} bound on {p.node or 'nothing'} after {wait} s (limit RESUME_TIMEOUT + reconcile "
            f"{limit:g} s; other node {o.other_node})"
            if p
            else "no Pod created",
        )
    )
    return out


def evaluate(o: Observed, s: LiveSettings) -> list[Check]:
    return check_refused(o, s) + check_ahead(o)


def timeline(o: Observed) -> list[dict[str, Any]]:
    """Every recorded transition and Pod event in time order, for summary.json."""
    rows: list[dict[str, Any]] = [{"atS": c.at_s, "node": c.node, "twin": c.state, "reason": c.reason} for c in o.twins]
    rows += [{"atS": e.at_s, "node": e.node, "emulator": e.state} for e in o.emulator]
    pods = [p for b in o.bursts for p in b.pods] + ([o.refused_pod] if o.refused_pod else [])
    for p in pods:
        rows.append({"atS": p.created_s, "pod": p.name, "event": "created"})
        if p.bound_s is not None:
            rows.append({"atS": p.bound_s, "pod": p.name, "event": "bound", "node": p.node, "waitS": p.wait_s})
    return sorted(rows, key=lambda r: float(r["atS"]))
