"""Each GPU job's compute share and draw, estimated from what its GPUs show. Pure: no I/O.

The controller starts every Pod at its kind's prior (``capmodel.KIND_PRIORS``: compute share ``c``,
draw ``u``) and moves the estimate as the Pod's GPUs report, one scalar Kalman filter for each of
``c`` and ``u`` (Gaussian, clamped to [0, 1]). The observation model, in the controller's own terms:

- **Draw from power.** Under ``capmodel.GPU_MODEL`` a board running work of draw ``u`` at SM clock
  ratio ``r`` (the clock over the board's highest) draws
  ``idle + (max - idle) * u * (f + (1 - f) * r**k)`` (``f`` the share of dynamic power that does not
  follow the clock, ``k`` its exponent). Inverted: ``u = (P - idle) / ((max - idle) * (f + (1 - f) * r**k))``.
  The clock ratio is read, not assumed, so an observation under a cap or a clock lock still
  measures the work's natural draw.
- **Compute share from the activity ratios.** Work of compute share ``c`` at clock ratio ``r``
  spends ``phi_c = (c / r) / (c / r + 1 - c)`` of its busy time compute-bound and the rest waiting on
  memory (the roofline split of ``capmodel.throughput``). SMs hold warps in both (DCGM SM active ~ busy
  time), the memory interface is busy mostly in the second: ``dram / sm = phi_m * DRAM_MEMORY_BOUND +
  (1 - phi_m) * DRAM_COMPUTE_BOUND``, which gives ``phi_m``. Tensor pipes are busy only while compute-
  bound, so ``tensor / sm`` is a floor under ``phi_c`` (work that uses no tensor cores says nothing).
  Then ``c = phi_c * r / (1 - phi_c + phi_c * r)`` (``c = phi_c`` at full clock).
- **The two constants are guesses** (how busy DRAM is while memory-bound, and while compute-bound),
  so one clock ratio leaves a bias no number of samples removes: the filter averages the noise,
  and ``c_sd`` adds ``C_SYSTEMATIC_SD`` for the bias until the job has been seen at two clock ratios.
  Seen at two, the ratio of the two ``phi_m`` gives ``c`` without the first constant (``two_point_c``);
  the job's own DRAM scale is learnt from it (``phi_scale``) and corrects every later observation. A **probe** (``probe_request``) is that second ratio: asked for only while the estimate
  is uncertain and the owner's slowdown budget covers the probe at the pessimistic ``c``.

Robustness: a sample that is stale, not finite or outside its physical range is dropped, never
clamped into an update; a tick with nothing usable leaves the estimate where it was (its variance
grows by the process noise, up to the prior's); an innovation beyond ``GATE_SD`` standard deviations
is rejected once (one glitch moves nothing; the second in a row is believed: the job changed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from joulie_controller.model.capmodel import GPU_MODEL, KIND_PRIORS, DeviceModel, slowdown

DRAM_MEMORY_BOUND: Final = 0.8
"""DRAM active while memory-bound: streaming kernels reach 80-90 % of peak HBM bandwidth (the STREAM-
like ceiling of the roofline); 0.8 is the low end, so the estimate leans compute-bound (the safe side)."""
DRAM_COMPUTE_BOUND: Final = 0.1
"""DRAM active while compute-bound (operands re-read from L2/shared memory: little traffic)."""
PRIOR_C_SD: Final = 0.2
PRIOR_U_SD: Final = 0.2
"""How far a job's compute share and draw are believed to lie from its kind's mean before it is seen."""
UNKNOWN_KIND: Final = (1.0, 0.85)
"""(c, u) for a Pod naming no GPU kind: compute-bound (never capped unless seen otherwise)."""
C_OBS_SD: Final = 0.06
U_OBS_SD: Final = 0.04
"""Noise of one tick's observation of c (activity ratios) and u (power over the dynamic range)."""
C_SYSTEMATIC_SD: Final = 0.08
"""The floor under the sd of c while the job has been seen at one clock ratio only (the constants' error)."""
PHI_OBS_SD: Final = 0.03
"""Noise of one tick's memory-bound share; the two-point c's noise follows from it (``two_point_sd``)."""
REF_SMOOTHING: Final = 0.3
"""Weight of a new tick in the reference memory-bound share while the clock ratio stays put."""
PROCESS_SD: Final = 0.02
"""How far a job's c and u may drift per tick (phases change): keeps the filter able to follow."""
GATE_SD: Final = 5.0
MIN_BUSY: Final = 0.05
"""Below this SM active the ratios are mostly noise: no update of c."""
TWO_POINT_MIN_GAP: Final = 0.1
"""Clock ratios closer than this tell too little apart for the two-point c."""
MAX_AGE_S: Final = 180.0
"""A sample older than this (three 1-minute ticks) is stale."""
PROBE_SD: Final = 0.075
"""Above this sd of c a probe is worth asking for: below C_SYSTEMATIC_SD, so a job seen at one clock
ratio asks for one probe (when its budget covers it) and a calibrated one does not."""
PROBE_Z: Final = 2.0
"""The probe's slowdown is checked at c + PROBE_Z sd (the pessimistic compute share)."""


@dataclass(frozen=True)
class GpuSample:
    """One GPU of the Pod over one tick (None: the node does not export that signal)."""

    power_w: float | None = None
    clock_ratio: float | None = None
    """hw.gpu.speed / hw.gpu.speed.limit."""
    utilization: float | None = None
    sm_active: float | None = None
    tensor_active: float | None = None
    dram_active: float | None = None
    age_s: float = 0.0
    """How old the sample is when the tick reads it."""


@dataclass(frozen=True)
class JobEstimate:
    """What the controller believes about one Pod's GPU work."""

    kind: str
    c: float
    c_var: float
    """The filter's variance of c: what noise leaves (c_sd adds the systematic part)."""
    u: float
    u_var: float
    observations: int = 0
    """Ticks that moved the estimate."""
    calibrated: bool = False
    """Seen at two clock ratios: the systematic floor under the variance of c is lifted."""
    ref_clock: float | None = None
    ref_phi_m: float | None = None
    """The memory-bound time share last seen and the clock ratio it was seen at (for the two-point c)."""
    phi_scale: float = 1.0
    """The job's DRAM activity over the model's, once learnt at two clock ratios (1 until then)."""
    rejected: int = 0
    """Consecutive ticks whose innovation was gated out."""
    note: str = "prior"

    @property
    def c_sd(self) -> float:
        """The uncertainty of c: the filter's, plus the constants' error until calibrated."""
        return math.sqrt(self.c_var + (0.0 if self.calibrated else C_SYSTEMATIC_SD**2))

    @property
    def u_sd(self) -> float:
        return math.sqrt(self.u_var)


def prior_estimate(kind: str) -> JobEstimate:
    """The estimate of a Pod not yet seen: its kind's prior (an unknown kind: compute-bound)."""
    prior = KIND_PRIORS.get(kind)
    if prior is None or prior.device != "gpu":
        c, u = UNKNOWN_KIND
    else:
        c, u = prior.compute_share, prior.natural_draw
    return JobEstimate(kind, c, PRIOR_C_SD**2 - C_SYSTEMATIC_SD**2, u, PRIOR_U_SD**2)


def _ok(v: float | None, lo: float, hi: float) -> bool:
    return v is not None and math.isfinite(v) and lo <= v <= hi


def _usable(s: GpuSample, max_w: float) -> GpuSample | None:
    """The sample with every out-of-range signal set to None; None when stale."""
    if not math.isfinite(s.age_s) or s.age_s > MAX_AGE_S or s.age_s < 0:
        return None
    ratio = 1.0 + 1e-6
    return GpuSample(
        power_w=s.power_w if _ok(s.power_w, 0.0, 1.5 * max_w) else None,
        clock_ratio=s.clock_ratio if _ok(s.clock_ratio, 0.05, ratio) else None,
        utilization=s.utilization if _ok(s.utilization, 0.0, ratio) else None,
        sm_active=s.sm_active if _ok(s.sm_active, 0.0, ratio) else None,
        tensor_active=s.tensor_active if _ok(s.tensor_active, 0.0, ratio) else None,
        dram_active=s.dram_active if _ok(s.dram_active, 0.0, ratio) else None,
    )


def _mean(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def aggregate(samples: Sequence[GpuSample], max_w: float) -> GpuSample | None:
    """The Pod's GPUs as one board: each signal the mean over the GPUs that report it."""
    ok = [u for u in (_usable(s, max_w) for s in samples) if u is not None]
    if not ok:
        return None
    return GpuSample(
        power_w=_mean([s.power_w for s in ok]),
        clock_ratio=_mean([s.clock_ratio for s in ok]),
        utilization=_mean([s.utilization for s in ok]),
        sm_active=_mean([s.sm_active for s in ok]),
        tensor_active=_mean([s.tensor_active for s in ok]),
        dram_active=_mean([s.dram_active for s in ok]),
    )


def _clock_factor(r: float, m: DeviceModel) -> float:
    return m.fixed_dynamic_frac + (1.0 - m.fixed_dynamic_frac) * math.pow(r, m.clock_power_exponent)


def draw_from_power(power_w: float, clock_ratio: float, max_w: float, m: DeviceModel = GPU_MODEL) -> float:
    """u from a board's power at a clock ratio (the device model inverted), within [0, 1]."""
    idle = m.idle_frac * max_w
    u = (power_w - idle) / ((max_w - idle) * _clock_factor(clock_ratio, m))
    return min(1.0, max(0.0, u))


def memory_share(sm_active: float, dram_active: float) -> float:
    """phi_m: the share of busy time spent waiting on memory, from DRAM activity (see the module)."""
    per_sm = dram_active / sm_active
    phi_m = (per_sm - DRAM_COMPUTE_BOUND) / (DRAM_MEMORY_BOUND - DRAM_COMPUTE_BOUND)
    return min(1.0, max(0.0, phi_m))


def tensor_floor(phi_m: float, sm_active: float, tensor_active: float | None) -> float:
    """phi_m no larger than the tensor pipes allow (they run only while compute-bound). Not used in
    the two-point c: a floor that binds at one ratio and not the other would bend the ratio."""
    if tensor_active is None:
        return phi_m
    return min(phi_m, 1.0 - min(1.0, tensor_active / sm_active))


def compute_share(phi_m: float, clock_ratio: float) -> float:
    """c from the compute-bound time share ``1 - phi_m`` seen at ``clock_ratio``."""
    phi_c = 1.0 - phi_m
    r = clock_ratio
    return min(1.0, max(0.0, phi_c * r / (1.0 - phi_c + phi_c * r)))


def two_point_c(r1: float, phi_m1: float, r2: float, phi_m2: float) -> float | None:
    """c from the memory-bound shares seen at two clock ratios: with ``rho = phi_m1 / phi_m2``,
    ``rho * (c / r1 + 1 - c) = c / r2 + 1 - c``; the DRAM constant cancels. None when undetermined."""
    if phi_m2 < 0.02 or phi_m1 < 0.02 or abs(r1 - r2) < TWO_POINT_MIN_GAP:
        return None
    rho = phi_m1 / phi_m2
    den = rho / r1 - rho - 1.0 / r2 + 1.0
    if abs(den) < 1e-9:
        return None
    return min(1.0, max(0.0, (1.0 - rho) / den))


def two_point_sd(r1: float, phi_m1: float, r2: float, phi_m2: float) -> float:
    """The noise of ``two_point_c``: PHI_OBS_SD on each share, carried through rho and the denominator
    (a shallow probe, close to the first ratio, tells c only roughly)."""
    rho = phi_m1 / phi_m2
    sd_rho = rho * math.hypot(PHI_OBS_SD / phi_m1, PHI_OBS_SD / phi_m2)
    den = abs(rho / r1 - rho - 1.0 / r2 + 1.0)
    c = (1.0 - rho) / den if den > 1e-9 else 1.0
    return min(1.0, sd_rho * (1.0 + abs(c) * abs(1.0 / r1 - 1.0)) / max(den, 1e-9))


def expected_sample(c: float, u: float, clock_ratio: float, max_w: float, busy: float = 0.9,
                    tensor_use: float = 0.6, m: DeviceModel = GPU_MODEL) -> GpuSample:
    """What the observation model says a board running (c, u) at ``clock_ratio`` reports: the
    forward model the estimator inverts (tests; the benchmark's plots of estimate against truth)."""
    r = clock_ratio
    phi_c = (c / r) / (c / r + 1.0 - c) if c > 0 else 0.0
    phi_m = 1.0 - phi_c
    idle = m.idle_frac * max_w
    return GpuSample(
        power_w=idle + (max_w - idle) * u * _clock_factor(r, m),
        clock_ratio=r,
        utilization=busy,
        sm_active=busy,
        tensor_active=busy * phi_c * tensor_use,
        dram_active=busy * (phi_m * DRAM_MEMORY_BOUND + phi_c * DRAM_COMPUTE_BOUND),
    )


def _kalman(x: float, var: float, z: float, r_var: float) -> tuple[float, float]:
    k = var / (var + r_var)
    return min(1.0, max(0.0, x + k * (z - x))), (1.0 - k) * var


def _gated(x: float, var: float, z: float, r_var: float) -> bool:
    return abs(z - x) > GATE_SD * math.sqrt(var + r_var)


def _predict(est: JobEstimate) -> JobEstimate:
    """One tick passes: the variances grow by the process noise, never past the prior's."""
    q = PROCESS_SD**2
    c_max = PRIOR_C_SD**2 - (0.0 if est.calibrated else C_SYSTEMATIC_SD**2)
    return replace(est, c_var=min(c_max, est.c_var + q), u_var=min(PRIOR_U_SD**2, est.u_var + q))


def observe(est: JobEstimate, samples: Sequence[GpuSample], max_w: float, m: DeviceModel = GPU_MODEL) -> JobEstimate:
    """The estimate after one tick's samples of the Pod's GPUs (boards of maximum ``max_w`` W)."""
    est = _predict(est)
    s = aggregate(samples, max_w) if max_w > 0 else None
    if s is None or s.clock_ratio is None:
        return replace(est, note="no usable sample: estimate kept")
    r = min(1.0, s.clock_ratio)
    obs: list[tuple[str, float, float]] = []
    if s.power_w is not None:
        obs.append(("u", draw_from_power(s.power_w, r, max_w, m), U_OBS_SD**2))
    if s.sm_active is None or s.sm_active < MIN_BUSY or s.dram_active is None:
        return _update(est, obs, [])
    raw = memory_share(s.sm_active, s.dram_active)
    c2 = None
    if est.ref_clock is not None and est.ref_phi_m is not None:
        c2 = two_point_c(est.ref_clock, est.ref_phi_m, r, raw)
    ref = raw
    if est.ref_clock is not None and est.ref_phi_m is not None and abs(est.ref_clock - r) < 0.02:
        ref = est.ref_phi_m + REF_SMOOTHING * (raw - est.ref_phi_m)  # the same setting: average the noise
    if c2 is None or est.ref_clock is None or est.ref_phi_m is None:
        phi_m = tensor_floor(min(1.0, raw / est.phi_scale), s.sm_active, s.tensor_active)
        obs.append(("c", compute_share(phi_m, r), C_OBS_SD**2))
        return _update(replace(est, ref_clock=r, ref_phi_m=ref), obs, [])
    obs.append(("c", c2, two_point_sd(est.ref_clock, est.ref_phi_m, r, raw) ** 2))
    note = f"two clock ratios ({est.ref_clock:.2f}, {r:.2f})"
    # The bias the single-ratio estimate carried is now observable: its variance joins the filter's.
    c_var = est.c_var + (0.0 if est.calibrated else C_SYSTEMATIC_SD**2)
    after = _update(replace(est, c_var=c_var, ref_clock=r, ref_phi_m=ref, calibrated=True), obs, [note])
    if after.rejected:
        return replace(after, c_var=est.c_var, calibrated=est.calibrated)
    # The job's own DRAM scale, from the filtered c: later single-ratio observations agree with it.
    return replace(after, phi_scale=_scale(raw, after.c, r, est.phi_scale))


def _scale(raw_phi_m: float, c: float, r: float, old: float) -> float:
    """How much more (or less) memory-bound time the board shows than the model predicts for ``c``:
    the job's own DRAM constant relative to DRAM_MEMORY_BOUND, learnt from the two-point c."""
    predicted = (1.0 - c) / (c / r + 1.0 - c)
    if predicted < 0.02:
        return old
    return min(2.0, max(0.5, raw_phi_m / predicted))


def _update(est: JobEstimate, obs: list[tuple[str, float, float]], notes: list[str]) -> JobEstimate:
    c, c_var, u, u_var = est.c, est.c_var, est.u, est.u_var
    sys_var = 0.0 if est.calibrated else C_SYSTEMATIC_SD**2
    gated = any(_gated(c, c_var + sys_var, z, rv) if k == "c" else _gated(u, u_var, z, rv) for k, z, rv in obs)
    if gated and est.rejected < 1:
        return replace(est, rejected=est.rejected + 1, note="outlier: estimate kept")
    for key, z, r_var in obs:
        if key == "c":
            c, c_var = _kalman(c, c_var, z, r_var)
        else:
            u, u_var = _kalman(u, u_var, z, r_var)
    moved = bool(obs)
    return replace(est, c=c, c_var=c_var, u=u, u_var=u_var, observations=est.observations + int(moved), rejected=0,
                   note="; ".join(notes) or ("observed" if moved else "no signal for c or u: estimate kept"))


@dataclass(frozen=True)
class ProbeRequest:
    clock_ratio: float
    """The SM clock ratio to lock the Pod's GPUs at for one tick."""
    predicted_slowdown: float
    """At the pessimistic compute share, for the probe's tick."""
    reason: str


def probe_request(est: JobEstimate, budget: float, min_clock_ratio: float = GPU_MODEL.min_clock_ratio,
                  current_ratio: float = 1.0) -> ProbeRequest | None:
    """A second clock ratio to see the job at, when the estimate of c is uncertain (sd above
    PROBE_SD) and the owner's slowdown ``budget`` covers it at ``c + PROBE_Z sd``: the lowest ratio in
    steps of 0.05 below ``current_ratio`` whose slowdown stays within the budget, at least
    TWO_POINT_MIN_GAP below it (else it would tell nothing). None: no probe."""
    if est.calibrated or est.c_sd <= PROBE_SD or budget <= 0:
        return None
    c_hi = min(1.0, est.c + PROBE_Z * est.c_sd)
    best: tuple[float, float] | None = None
    ratio = round(current_ratio - TWO_POINT_MIN_GAP, 4)
    while ratio >= min_clock_ratio - 1e-9:
        sd = slowdown(ratio / current_ratio, c_hi)
        if sd > budget + 1e-12:
            break
        best = (ratio, sd)
        ratio = round(ratio - 0.05, 4)
    if best is None:
        return None
    return ProbeRequest(best[0], best[1], f"c {est.c:.2f} ± {est.c_sd:.2f} seen at one clock ratio only")
