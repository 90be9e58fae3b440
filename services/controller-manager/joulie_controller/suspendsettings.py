"""The power policy's settings (POWER_POLICY and the suspend/resume group of ``settings.Settings``),
kept in their own module for size; ``joulie_controller.settings`` re-exports them. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from joulie_api.names import LABEL_POOL


@dataclass(frozen=True)
class SuspendSettings:
    """The power policy (POWER_POLICY): idle nodes suspended through their BMCs, resumed for Pending Pods."""

    power_policy: str = "none"
    """POWER_POLICY: none (default: no node is ever cordoned, powered off or on), idle_suspend_v1
    (reactive: resumes only for Pending Pods) or forecast_suspend_v1 (idle_suspend_v1 plus a warm pool
    per pool sized from the demand forecast; docs/suspend-resume.md)."""
    after_s: float = 600.0
    """SUSPEND_AFTER, default 10m: how long a node has had no workload Pods (DaemonSet Pods aside)
    before it is cordoned for suspend."""
    timeout_s: float = 300.0
    """SUSPEND_TIMEOUT, default 5m: from the cordon to the BMC reading off; past it the node is failed."""
    resume_timeout_s: float = 900.0
    """RESUME_TIMEOUT, default 15m: from the power-on to the BMC reading on and the Node Ready; past it
    the node is failed, left cordoned and not retried."""
    resume_retries: int = 3
    """RESUME_RETRIES, default 3: power-ons a BMC refused (an error answer, e.g. HTTP 500) that are
    tried again before the node is failed with the BMC's reason (issue 37: one refusal used to
    leave the node resuming for the whole RESUME_TIMEOUT)."""
    resume_retry_backoff_s: float = 30.0
    """RESUME_RETRY_BACKOFF, default 30s: the wait after the first refused power-on before it is
    tried again; each further refusal doubles it (30s, 1m, 2m)."""
    min_powered: int = 1
    """SUSPEND_MIN_POWERED, default 1: powered, schedulable nodes each pool keeps (the floor)."""
    min_powered_by_pool: tuple[tuple[str, int], ...] = ()
    """SUSPEND_MIN_POWERED_BY_POOL, default empty: a floor per pool, ``gpu=0,cpu=2`` (pool=nodes,
    comma-separated); a pool not named keeps SUSPEND_MIN_POWERED. A GPU pool whose demand the warm
    pool (forecast_suspend_v1) covers may sleep whole at 0 while the CPU pool keeps its floor."""
    max_concurrent: int = 2
    """SUSPEND_MAX_CONCURRENT, default 2: nodes suspending or resuming at once, cluster-wide."""
    pool_label: str = LABEL_POOL
    """SUSPEND_POOL_LABEL, default joulie.io/pool: nodes with the same value are one pool for the
    floor; nodes without the label are the pool "default"."""
    warm_wait_target_s: float = 60.0
    """WARM_POOL_WAIT_TARGET, default 60s (forecast_suspend_v1): the wait a resume may add to a Pod. A
    pool whose boot takes longer keeps powered free capacity for the demand forecast over one boot."""
    warm_quantile_pct: float = 95.0
    """WARM_POOL_QUANTILE, default 95 (%): the share of boot windows whose arrivals the warm pool
    holds (the Poisson quantile of the forecast), so about that share of Pods add no boot wait."""
    boot_estimate_s: float = 300.0
    """RESUME_BOOT_ESTIMATE, default 5m: a pool's boot time (power-on to Ready) until the controller
    has timed one of its own resumes; then the resumes it timed."""
    forecast_half_life_s: float = 1800.0
    """FORECAST_HALF_LIFE, default 30m: the age at which an arrival weighs half in the recent rate."""
    forecast_day_s: float = 86400.0
    """FORECAST_DAY, default 24h: the period of the daily cycle the forecast looks for."""
    forecast_min_days: int = 2
    """FORECAST_MIN_DAYS, default 2: whole days of history before the daily profile is blended in."""
    suspend_rate_per_min: int = 0
    """SUSPEND_RATE, default 0 (no limit): nodes cordoned for suspend per minute, cluster-wide (Slurm's
    SuspendRate), beside SUSPEND_MAX_CONCURRENT."""
    resume_rate_per_min: int = 0
    """RESUME_RATE, default 0 (no limit): power-ons per minute, cluster-wide (Slurm's ResumeRate): many
    nodes booting at once draw their boot power together."""
    ramp_limit_w_per_sec: float = 0.0
    """POWER_RAMP_LIMIT_W_PER_S, default 0 (no limit): the boot power (W) per second the facility
    accepts being switched on; resumes are spaced so the predicted boot-power ramp stays under it, each
    power-on planned as a step of the node's TDP (power/ramp.py). A deferred resume's node says so."""
    max_cycles_per_day: int = 0
    """MAX_POWER_CYCLES_PER_DAY, default 0 (no cap): power-offs per node in any FORECAST_DAY; a node
    at the cap is not suspended (wear levelling; the longest-off node is also the first woken)."""


def retry_schedule_s(s: SuspendSettings) -> float:
    """Seconds from the first refused power-on to the last retry: RESUME_RETRY_BACKOFF doubled per retry."""
    return s.resume_retry_backoff_s * float(2**s.resume_retries - 1)


def cautions(s: SuspendSettings) -> list[str]:
    """Settings that are valid alone but defeat each other; logged at start, not refused (a cluster whose
    BMCs never refuse loses nothing by them)."""
    out: list[str] = []
    if s.power_policy != "none" and s.resume_retries > 0 and s.resume_timeout_s <= retry_schedule_s(s):
        out.append(
            f"RESUME_TIMEOUT ({s.resume_timeout_s:g}s) is not longer than the retry schedule "
            f"(RESUME_RETRY_BACKOFF {s.resume_retry_backoff_s:g}s doubled over RESUME_RETRIES {s.resume_retries}: "
            f"{retry_schedule_s(s):g}s): a node whose BMC refuses power-on is failed by the timeout before its "
            f"last retry; raise RESUME_TIMEOUT or lower the retries")
    return out
