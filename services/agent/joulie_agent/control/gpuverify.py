"""Whether each GPU still enforces the cap the agent set on it. Pure.

A requested limit is not an enforced one: a board whose driver state is torn down (persistence
mode off and no client), a GPU reset or another tool puts the board back at its default while
``power.limit`` may still read the request (issue 23, defect 1). The agent therefore compares
the target with what the board *enforces* (NVML ``nvmlDeviceGetEnforcedPowerLimit``, nvidia-smi
``enforced.power.limit``; the AMD tools report only the cap in force, so that is read back) and
calls a difference drift: reported in ``controlStatus.gpu.drift`` and re-applied.

Only a board enforcing *more* than its target, or whose requested limit moved away from it,
drifts: an enforced limit below the request (a chassis power brake, a thermal limit) keeps the
board under its cap, and re-applying would not change it.
"""

from __future__ import annotations

from joulie_agent.control.gpucontrol import UNCHANGED_TOLERANCE_W
from joulie_agent.discovery.gputools import GPUDevice


def enforced_w(d: GPUDevice) -> float | None:
    """What the board enforces: the enforced limit where the source reports one, else its cap."""
    return d.enforced_w if d.enforced_w is not None else d.current_cap_w


def drifted(targets: dict[int, float], applied: dict[int, float], devices: list[GPUDevice]) -> dict[int, str]:
    """{gpu index: what drifted} for GPUs the agent had already set to their target.

    ``applied`` holds the watts each GPU was last set to (or found at) for the current intent; a
    GPU not yet set to its target is a first application, not drift.
    """
    out: dict[int, str] = {}
    by_index = {d.index: d for d in devices}
    for idx, target_w in sorted(targets.items()):
        was = applied.get(idx)
        d = by_index.get(idx)
        if was is None or d is None or abs(was - target_w) > UNCHANGED_TOLERANCE_W:
            continue
        requested = d.current_cap_w
        enforced = enforced_w(d)
        if requested is not None and abs(requested - target_w) > UNCHANGED_TOLERANCE_W:
            out[idx] = f"gpu {idx} limit {requested:.1f}W, intent {target_w:.1f}W"
        elif enforced is not None and enforced - target_w > UNCHANGED_TOLERANCE_W:
            out[idx] = f"gpu {idx} enforces {enforced:.1f}W, intent {target_w:.1f}W"
    return out


def describe(drift: dict[int, str]) -> str:
    """One line for controlStatus: the first few drifted GPUs and how many in all."""
    if not drift:
        return ""
    items = list(drift.values())
    more = f" (+{len(items) - 4} more)" if len(items) > 4 else ""
    return f"{'; '.join(items[:4])}{more}; re-applied"
