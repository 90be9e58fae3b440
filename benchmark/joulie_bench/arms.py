"""The benchmark's arms (the ``--policies`` ids): one table, ``ARMS``, and what each row means for the
controller's settings (``settings_for``) and in words (``describe_settings``).

A no Joulie (no controller, no caps written; GPUs at the boards' power-on limit; Pods without
power-profile affinity, since no node carries the label), B ``static_partition``, C
``queue_aware_v1``, D ``cluster_power_budget``, E ``work_aware_v1`` (caps from the work on each node,
soft placement, the budget on measured power), E0 (E without the power budget: the work-aware caps
alone, so E's slowdowns split into the work-aware choice's and the budget's), and A-placement: E's labels and placement with no cap
ever written, so E's change against A splits into placement and caps. S and ES are A-placement and E
plus the controller's power policy (``idle_suspend_v1``): idle nodes cordoned and powered off,
powered on for Pending Pods that fit no powered node; each pair isolates what suspending adds. SF and
ESF are S and ES under ``forecast_suspend_v1``: a warm pool per hardware pool sized from the
controller's demand forecast, nodes resumed ahead of the demand, and a floor of 0 in every pool. Their
scheduler packs (kube-scheduler's NodeResourcesFit MostAllocated, the scoring cluster-autoscaler's
scale-down is run with): spreading keeps every node a little busy and none ever idle.

A new arm is one row of ``ARMS``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from joulie_bench.nodes import BenchNode
from joulie_controller.api import CapSettings, PolicySettings, ReconcileSettings, Settings, SuspendSettings

Placement = Literal["none", "hard", "soft"]


@dataclass(frozen=True)
class Arm:
    id: str
    name: str
    """What the tables and plots call it."""
    controller_policy: str
    """POLICY_TYPE of the controller; empty: no controller runs (no labels, no caps, no extender)."""
    power_policy: str
    """POWER_POLICY: none, idle_suspend_v1 or forecast_suspend_v1 (nodes suspended through the emulated BMC)."""
    placement: Placement
    """The Pods' class constraints: none (no power-profile affinity), hard (performance and eco Pods
    both pinned to their profile) or soft (only performance Pods pinned; the extender steers the rest)."""
    writes_caps: bool
    """Whether the agent writes the controller's caps (False: the decisions are never enforced)."""
    packs: bool
    """The scheduler scores MostAllocated (packs) instead of LeastAllocated (spreads)."""
    summary: str
    """The settings in words, ``describe_settings``'s template: {static}, {queue}, {common}, {budget},
    {work_aware}, {work_aware_no_budget} and {suspend} are the settings' own figures."""
    budget: bool = True
    """Whether CLUSTER_POWER_BUDGET_W is set (``budget_frac`` x the nodes' TDP sum); False: 0, no budget."""

    @property
    def controller(self) -> bool:
        return bool(self.controller_policy)


ARMS: Final[Mapping[str, Arm]] = {a.id: a for a in (
    # id, name, POLICY_TYPE, POWER_POLICY, placement, writes caps, packs, summary
    Arm("A", "no Joulie (uncapped)", "", "none", "none", False, False,
        "no controller; no caps written; Pods without power-profile affinity"),
    Arm("B", "static partition", "static_partition", "none", "hard", True, False, "{static}; {common}"),
    Arm("C", "queue-aware", "queue_aware_v1", "none", "hard", True, False, "{queue}; {common}"),
    Arm("D", "power budget", "cluster_power_budget", "none", "hard", True, False, "{budget}, {queue}; {common}"),
    Arm("E", "work-aware", "work_aware_v1", "none", "soft", True, False, "{work_aware}"),
    Arm("E0", "work-aware, no budget", "work_aware_v1", "none", "soft", True, False, "{work_aware_no_budget}",
        budget=False),
    Arm("A-placement", "A + E's placement", "work_aware_v1", "none", "soft", False, False,
        "E's controller and placement, no cap written ({work_aware})"),
    Arm("S", "suspend idle nodes", "work_aware_v1", "idle_suspend_v1", "soft", False, True,
        "A-placement (no cap written) + {suspend}"),
    Arm("ES", "work-aware + suspend", "work_aware_v1", "idle_suspend_v1", "soft", True, True,
        "E's caps and placement + {suspend}"),
    Arm("SF", "suspend, forecast warm pool", "work_aware_v1", "forecast_suspend_v1", "soft", False, True,
        "A-placement (no cap written) + {forecast}"),
    Arm("ESF", "work-aware + suspend, forecast warm pool", "work_aware_v1", "forecast_suspend_v1", "soft", True, True,
        "E's caps and placement + {forecast}"),
)}
"""Every arm, by id, in the order the help and the errors list them."""

BASELINE: Final = "A"
"""The arm every other is paired against (paired.csv, power.csv); always run."""
SWEEP_ARM: Final = "ES"
"""The arm ``--suspend-sweep`` runs again at each SUSPEND_AFTER."""
SLOWDOWN_BUDGET_PCT: Final = 3.0
"""τ: the slowdown the work-aware arms accept per job (WORK_AWARE_SLOWDOWN_BUDGET_PCT); ``taushare`` counts the
jobs past it."""
FORECAST_POLICY: Final = "forecast_suspend_v1"
"""POWER_POLICY of the forecast arms (SF, ESF): the reactive policy plus a warm pool per pool (issue 37)."""
SUSPEND_AFTER_S: Final = 600.0
"""SUSPEND_AFTER in the suspend arms unless ``run(suspend_after_s=...)`` says otherwise: the chart's default."""


def settings_for(policy: str, nodes: Sequence[BenchNode], budget_frac: float, reconcile_s: float = 60.0,
                 suspend_after_s: float = SUSPEND_AFTER_S, forecast_day_s: float = 86400.0) -> Settings:
    """The controller's settings in arm ``policy`` (A's too, though no controller runs there).
    ``forecast_day_s``: FORECAST_DAY, the trace's daily period (an operator sets the site's 24 h)."""
    arm = ARMS[policy]
    forecast = arm.power_policy == FORECAST_POLICY
    return Settings(
        reconcile=ReconcileSettings(interval_s=reconcile_s),
        policy=PolicySettings(
            type=arm.controller_policy or "static_partition",
            static_hp_frac=0.4,
            queue_hp_base_frac=0.2,
            queue_hp_min=1,
            queue_perf_per_hp_node=2,
            # E: the budget binds only on measured power; B and C ignore it; E0 runs without one (0: none).
            power_budget_w=budget_frac * sum(n.tdp_w for n in nodes) if arm.budget else 0.0,
            slowdown_budget_pct=SLOWDOWN_BUDGET_PCT,
        ),
        caps=CapSettings(cpu_eco_pct=60.0, gpu_eco_pct=60.0),
        # The forecast arms let every pool sleep to 0 (the warm pool holds what the demand needs).
        suspend=SuspendSettings(power_policy=arm.power_policy, after_s=suspend_after_s,
                                min_powered=0 if forecast else 1, forecast_day_s=forecast_day_s),
        # The bench's jobs are the operator's own: their class and kind count (TRUSTED_NAMESPACES=*).
        trusted_namespaces=("*",),
    )


def describe_settings(policy: str, nodes: Sequence[BenchNode], budget_frac: float) -> str:
    """``<id>: <the arm's summary>`` with the settings' figures filled in."""
    s = settings_for(policy, nodes, budget_frac)
    p, sus = s.policy, s.suspend
    queue = (f"QUEUE_HP_BASE_FRAC={p.queue_hp_base_frac:g}, QUEUE_HP_MIN={p.queue_hp_min}, "
             f"QUEUE_PERF_PER_HP_NODE={p.queue_perf_per_hp_node}")
    figures = {
        "static": f"STATIC_HP_FRAC={p.static_hp_frac:g}",
        "queue": queue,
        "common": (f"eco caps CPU {s.caps.cpu_eco_pct:g} % / GPU {s.caps.gpu_eco_pct:g} % of max, reconcile every "
                   f"{s.reconcile.interval_s:g} s"),
        "budget": (f"CLUSTER_POWER_BUDGET_W={p.power_budget_w:.0f} ({budget_frac:g} x TDP sum), "
                   f"CLUSTER_BUDGET_MIN_CAP_PCT={p.budget_min_cap_pct:g}"),
        "work_aware": (f"WORK_AWARE_SLOWDOWN_BUDGET_PCT={p.slowdown_budget_pct:g}, CLUSTER_POWER_BUDGET_W="
                       f"{p.power_budget_w:.0f} on measured power (+ trend over {p.forecast_horizon_s:g} s), {queue}; "
                       f"only performance Pods have a hard affinity"),
        "work_aware_no_budget": (f"WORK_AWARE_SLOWDOWN_BUDGET_PCT={p.slowdown_budget_pct:g}, no power budget "
                                 f"(CLUSTER_POWER_BUDGET_W=0), {queue}; only performance Pods have a hard affinity"),
        "suspend": (f"POWER_POLICY=idle_suspend_v1, SUSPEND_AFTER={sus.after_s:g} s, SUSPEND_MIN_POWERED="
                    f"{sus.min_powered} per pool (one pool per hardware profile), SUSPEND_MAX_CONCURRENT="
                    f"{sus.max_concurrent}, boot and standby from each profile; scheduler MostAllocated"),
        "forecast": (f"POWER_POLICY={FORECAST_POLICY}, SUSPEND_AFTER={sus.after_s:g} s, SUSPEND_MIN_POWERED=0, "
                     f"WARM_POOL_WAIT_TARGET={sus.warm_wait_target_s:g} s, WARM_POOL_QUANTILE="
                     f"{sus.warm_quantile_pct:g} %, FORECAST_HALF_LIFE={sus.forecast_half_life_s:g} s, boot timed by "
                     f"the controller (RESUME_BOOT_ESTIMATE={sus.boot_estimate_s:g} s before), "
                     f"SUSPEND_MAX_CONCURRENT={sus.max_concurrent}; scheduler MostAllocated"),
    }
    return f"{policy}: {ARMS[policy].summary.format(**figures)}"
