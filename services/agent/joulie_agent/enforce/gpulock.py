"""SM clock lock enforcement on one node's boards. NVIDIA: NVML where it is loaded
(``nvmlDeviceSetGpuLockedClocks`` / ``nvmlDeviceResetGpuLockedClocks``), else ``nvidia-smi -lgc`` /
``-rgc``, one call per distinct lock. AMD: ``amd-smi set -L sclk max MHZ`` (released by setting the
soft maximum back to the top of the board's range), read back with ``amd-smi metric --clock``; the
range from the OverDrive table's ``OD_RANGE`` in sysfs, which a lock does not change (amd-smi's
``max_clk`` is the current ceiling). The supported clocks are read once (they do not change); what
each board reports about its lock is read at every verify interval, when the intent changes and
right after a set, and a lock a board lost (a reset, a driver reload) is applied again and reported
as drift. The locks are the node-wide ``spec.gpu.clockLock`` and the per-board ``spec.gpu.clockLocks``
entries, merged by the pure ``boardlocks`` (the lower clock per board); a board the agent locked that
no lock of the spec names any more is released (and read back), and each board's result is reported.
Without a lock in the spec and none set, nothing is read or written. A shell: the plans, the drift
and the per-board results are the pure ``gpulock`` and ``boardlocks``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from joulie_agent.control import boardlocks, gpulock
from joulie_agent.control.gpulock import Ceiling
from joulie_agent.control.outcomes import BoardOutcome, LockOutcome
from joulie_agent.discovery import gpuclocks
from joulie_agent.discovery.gputools import Inventory
from joulie_agent.host import hostread
from joulie_agent.host.nvml import NVML
from joulie_agent.host.toolrun import Runner
from joulie_api.generated.nodetwin import GPUBoardClockLock, GPUClockLock
from joulie_common.clock import Clock

log = logging.getLogger(__name__)


class LockEnforcer:
    def __init__(
        self,
        run: Runner,
        nvml: NVML | None,
        clock: Clock,
        verify_interval_s: float,
        simulate_only: bool,
        sys_root: Path | None = None,
    ):
        self.run = run
        # Where the AMD boards' OverDrive tables are (<sys>/class/drm/cardN/device/pp_od_clk_voltage).
        self.sys_root = sys_root
        self.nvml = nvml
        self.clock = clock
        self.verify_interval_s = verify_interval_s
        self.simulate_only = simulate_only
        self.intent: tuple[object, ...] | None = None
        self.checked_s: float | None = None
        # Each board's supported SM clocks (read once) and its latest lock reading.
        self.ranges: dict[int, gpuclocks.ClockRange] = {}
        self.readings: dict[int, gpuclocks.LockReading] = {}
        # The ceiling each board was set to for the current intent (None: released); a later reading
        # that no longer shows it is drift, not a first application.
        self.applied: dict[int, Ceiling] = {}
        # Which lock of the spec set each of them ("clockLock", "clockLocks[N]"): a refused lock keeps
        # only the boards it set itself.
        self.sources: dict[int, str] = {}
        # Why the last clock read failed ("" when it answered): the lock is then unverified.
        self.read_failed = ""

    def reconcile(
        self, lock: GPUClockLock | None, inv: Inventory | None, entries: Sequence[GPUBoardClockLock] = ()
    ) -> LockOutcome | None:
        """Enforce the node-wide ``lock`` and the per-board ``entries`` on the boards of ``inv``, the
        lower clock per board; None when the spec has neither and nothing is left to release."""
        if lock is None and not entries:
            self.intent = None
            if not any(t is not None for t in self.applied.values()) or inv is None or self.simulate_only:
                self.applied, self.sources = {}, {}
                return None
            return self._enforce(boardlocks.MergedPlan(), inv, fresh=False)
        if inv is not None and not inv.devices and inv.warnings:
            return LockOutcome("error", f"gpu inventory failed: {'; '.join(inv.warnings)[:300]}")
        if inv is None or not inv.devices:
            return LockOutcome("blocked", "node has no GPUs answering NVML or the GPU tools")
        if inv.vendor == "amd" and inv.source != "amd-smi":
            return LockOutcome("blocked", f"an SM clock lock on AMD GPUs needs amd-smi (found {inv.source})")
        intent = boardlocks.intent_key(lock, entries)
        now = self.clock.monotonic()
        fresh = intent != self.intent or self.checked_s is None or now - self.checked_s >= self.verify_interval_s
        self.intent = intent
        if fresh:
            self._read(inv, now)
        plan = boardlocks.plan_board_locks(lock, entries, [d.index for d in inv.devices], self.ranges)
        if not plan.targets and not self._released(plan):
            if not self.ranges and self.read_failed:
                return LockOutcome("error", f"supported SM clocks unknown: {self.read_failed}")
            return LockOutcome("blocked", "; ".join(plan.refusals), boards=self._boards(plan, {}, {}, set()))
        return self._enforce(plan, inv, fresh)

    def _released(self, plan: boardlocks.MergedPlan) -> set[int]:
        """Boards this agent locked that no lock of the spec in force names now, unless kept (``_keeps``)."""
        return {
            i for i, t in self.applied.items() if t is not None and i not in plan.targets and not self._keeps(plan, i)
        }

    def _keeps(self, plan: boardlocks.MergedPlan, i: int) -> bool:
        """Whether board ``i`` keeps the lock it holds though no lock in force names it: only where the
        refused lock naming it is the one that set it (a node-wide lock changed to one the boards
        refuse: the last good one stays). A board whose lock left the spec is released even when a
        refused lock names it, or it would hold a ceiling nobody asks for any more."""
        return i in plan.blocked and plan.blocked_by.get(i) == self.sources.get(i)

    def _boards(
        self, plan: boardlocks.MergedPlan, failures: dict[int, str], drift: dict[int, str], released: set[int]
    ) -> tuple[BoardOutcome, ...]:
        facts = boardlocks.BoardFacts(
            self.readings, self.ranges, failures, self.read_failed, drift, frozenset(released), self.simulate_only
        )
        return boardlocks.board_outcomes(plan, facts)

    def _enforce(self, plan: boardlocks.MergedPlan, inv: Inventory, fresh: bool) -> LockOutcome:
        released = self._released(plan)
        drift = gpulock.drifted(plan.targets, self.applied, self.readings) if fresh else {}
        todo: dict[int, Ceiling] = {
            i: t for i, t in plan.targets.items() if i not in self.applied or self.applied[i] != t or i in drift
        }
        todo.update(dict.fromkeys(released))
        if self.simulate_only:
            label = gpulock.label(plan.targets)
            return LockOutcome(
                "none",
                f"simulate-only mode: SM clock lock {label} on {len(plan.targets)} devices not enforced",
                boards=self._boards(plan, {}, {}, set()),
            )
        drift_text = gpulock.describe_drift(drift)
        if drift:
            log.warning("gpu clock lock drift: %s", drift_text)
        failures = self._set(inv, todo, plan.floors) if todo else {}
        kept = {
            i: t for i, t in self.applied.items() if (i not in plan.targets and self._keeps(plan, i)) or i in failures
        }
        self.applied = {**{i: t for i, t in kept.items() if i not in plan.targets},
                        **{i: t for i, t in plan.targets.items() if i not in failures}}
        self.sources = {
            i: plan.sources.get(i, "") if i in plan.targets else self.sources.get(i, "") for i in self.applied
        }
        if todo:
            self._read(inv, self.clock.monotonic())  # applied only for what the boards report
        boards = self._boards(plan, failures, drift, released)
        return self._node_outcome(plan, failures, drift_text, boards, released, len(inv.devices))

    def _node_outcome(
        self,
        plan: boardlocks.MergedPlan,
        failures: dict[int, str],
        drift: str,
        boards: tuple[BoardOutcome, ...],
        released: set[int],
        devices: int,
    ) -> LockOutcome:
        """The node's line over its boards (``devices`` of them): the worst of the locks set, the releases
        and the refusals."""
        parts: list[LockOutcome] = []
        if plan.targets:
            parts.append(self._outcome(plan, {i: f for i, f in failures.items() if i in plan.targets}, drift, devices))
        if released:
            refused = any(i in plan.blocked for i in released)
            parts.append(_release_outcome([b for b in boards if b.index in released], plan.requested, refused))
        if plan.refusals:
            parts.append(LockOutcome("blocked", "; ".join(plan.refusals)))
        rank = {"error": 3, "blocked": 2, "applied": 1, "none": 0}
        result = max((p.result for p in parts), key=rank.__getitem__)
        locked = parts[0].locked_max_mhz if plan.targets else None
        return LockOutcome(result, "; ".join(p.message for p in parts), locked, drift, boards)

    def _outcome(
        self, plan: boardlocks.MergedPlan, failures: dict[int, str], drift: str, devices: int
    ) -> LockOutcome:
        label, n = gpulock.label(plan.targets), len(plan.targets)
        if failures:
            return LockOutcome(
                "error",
                f"SM clock lock {label} applied on {n - len(failures)} of {n} devices; "
                f"failed: {'; '.join(failures.values())[:400]}",
                drift=drift,
            )
        if self.read_failed:
            return LockOutcome(
                "error",
                f"SM clock lock {label} set on {n} devices, not verified: read-back failed: " f"{self.read_failed}",
                drift=drift,
            )
        held = {
            i: gpulock.holds(t, self.readings.get(i), r.max_mhz if (r := self.ranges.get(i)) else None)
            for i, t in plan.targets.items()
        }
        silent = [i for i, h in held.items() if h is None]
        lost = [i for i, h in held.items() if h is False]
        if lost or silent:
            why = (
                f"gpu {', '.join(map(str, lost))} not limited by it after the set"
                if lost
                else f"gpu {', '.join(map(str, silent))} reports no clock event reasons (unverified)"
            )
            return LockOutcome("error", f"SM clock lock {label} set on {n} devices; {why}", drift=drift)
        # lockedMaxMhz says every board of the node holds a ceiling (the lowest where they differ): with
        # entries on some boards only, the rest run free and the per-board results tell which.
        ceilings = [t for t in plan.targets.values() if t is not None]
        return LockOutcome(
            "applied",
            f"applied SM clock lock {label} ({plan.asked}) on {n} devices",
            min(ceilings) if len(ceilings) == devices else None,
            drift,
        )

    def _read(self, inv: Inventory, now: float) -> None:
        """Each board's lock reading, and its supported clocks until they are known."""
        indices = [d.index for d in inv.devices]
        failures: list[str] = []
        if inv.vendor == "amd":
            report = self._read_amd(indices)
        elif inv.source == "nvml" and self.nvml is not None:
            report = self.nvml.clock_report(indices, ranges=not self.ranges)
        else:
            res = self.run(gpuclocks.NVIDIA_CLOCKS_QUERY)
            supported: str | None = None
            if res.ok and not self.ranges:
                sup = self.run(gpuclocks.NVIDIA_SUPPORTED_QUERY)
                supported = sup.output if sup.ok else None
                if not sup.ok:
                    failures.append(sup.describe())
            report = gpuclocks.parse_nvidia_clocks(res.output if res.ok else "", supported)
            if not res.ok:
                failures.append(res.describe())
        failures.extend(report.warnings)
        self.checked_s = now
        self.ranges.update(report.ranges)
        self.readings = report.readings
        failure = "; ".join(failures)[:300]
        if failure and failure != self.read_failed:
            log.warning("gpu clock read-back failed, the SM clock lock is unverified until it answers: %s", failure)
        elif not failure and self.read_failed:
            log.warning("gpu clock read-back answers again")
        self.read_failed = failure

    def _read_amd(self, indices: list[int]) -> gpuclocks.ClockReport:
        """amd-smi's soft maxima, and each board's range from its OverDrive table until known."""
        res = self.run(gpuclocks.AMDSMI_CLOCKS)
        report = gpuclocks.parse_amdsmi_clocks(res.output) if res.ok else gpuclocks.ClockReport()
        if not res.ok:
            report.warnings.append(res.describe())
        if all(i in self.ranges for i in indices):
            return report
        # Read until every board's table answers: one just written ("s 1 MHZ" not yet committed)
        # reads as a command, not a table.
        tables = amd_od_tables(self.sys_root) if self.sys_root is not None else []
        if len(tables) != len(indices):
            # Matched by position only: with a table missing, no board is matched to the wrong one.
            return report
        for i, text in zip(sorted(indices), tables, strict=True):
            r = gpuclocks.amd_range(i, text)
            if r is not None:
                report.ranges[i] = r
        return report

    def _set(self, inv: Inventory, todo: dict[int, Ceiling], floors: dict[int, int]) -> dict[int, str]:
        """Lock (or release, ceiling None) each board, one tool call per distinct lock; {index: why not}."""
        if inv.vendor == "amd":
            return self._set_amd(todo)
        failures: dict[int, str] = {}
        for (floor, ceiling), idxs in gpulock.groups(todo, floors).items():
            if inv.source == "nvml" and self.nvml is not None:
                errs = {i: self.nvml.lock_clocks(i, floor, ceiling) for i in idxs}
            else:
                errs = self._set_tool(idxs, floor, ceiling)
            failures.update({i: f"gpu {i}: {e}" for i, e in errs.items() if e})
        return failures

    def _set_amd(self, todo: dict[int, Ceiling]) -> dict[int, str]:
        """``amd-smi set -L sclk max`` per distinct ceiling; a release sets the range's top. amd-smi
        exits 0 whatever happened: its CLK_LIMIT lines say, and the read-back after the set decides."""
        failures: dict[int, str] = {}
        by_mhz: dict[int, list[int]] = {}
        for i, ceiling in sorted(todo.items()):
            r = self.ranges.get(i)
            mhz = ceiling if ceiling is not None else (r.max_mhz if r is not None else None)
            if mhz is None:
                failures[i] = f"gpu {i}: its supported SM clocks are unknown, cannot release the lock"
                continue
            by_mhz.setdefault(mhz, []).append(i)
        for mhz, idxs in by_mhz.items():
            res = self.run(gpuclocks.amdsmi_lock_argv(idxs, mhz))
            why = res.describe() if not res.ok else gpuclocks.amdsmi_lock_failed(res.output)
            if why:
                failures.update({i: f"gpu {i}: amd-smi: {why}"[:200] for i in idxs})
        return failures

    def _set_tool(self, idxs: list[int], floor: int, ceiling: Ceiling) -> dict[int, str | None]:
        """nvidia-smi checks every selected board before it writes any: a refused batch sets none,
        so each board is then set on its own to name the one that refused (as the caps are)."""

        def argv(ids: list[int]) -> list[str]:
            return (
                gpuclocks.nvidia_unlock_argv(ids)
                if ceiling is None
                else gpuclocks.nvidia_lock_argv(ids, floor, ceiling)
            )

        res = self.run(argv(idxs))
        if res.ok:
            return dict.fromkeys(idxs)
        if len(idxs) == 1 or res.returncode == 124:
            return dict.fromkeys(idxs, res.describe())
        out: dict[int, str | None] = {}
        for i in idxs:
            one = self.run(argv([i]))
            out[i] = None if one.ok else one.describe()
        return out


def _release_outcome(boards: list[BoardOutcome], requested: bool, refused: bool = False) -> LockOutcome:
    """The node's line for the boards whose lock was released (``requested``: the spec still locks others;
    ``refused``: a lock the boards refused names some of them)."""
    bad = [b for b in boards if b.result == "error"]
    n = len(boards)
    if bad:
        return LockOutcome(
            "error",
            f"SM clock lock released on {n - len(bad)} of {n} devices; "
            f"failed: {'; '.join(f'gpu {b.index}: {b.message}' for b in bad)[:400]}",
        )
    if not requested:
        return LockOutcome("none", f"released the SM clock lock on {n} devices (no lock in spec)")
    why = "the lock that set it left the spec, the one now naming it refused" if refused else "in no lock of the spec"
    gpus = ", ".join(str(b.index) for b in boards)
    return LockOutcome("none", f"released the SM clock lock on gpu {gpus} ({why})")


def amd_od_tables(sys_root: Path) -> list[str]:
    """The OverDrive table of every AMD board, in PCI address order (the order amd-smi numbers them);
    a card without a table (a BMC's VGA) is not a board amd-smi lists."""
    found: list[tuple[str, int, str]] = []
    drm = sys_root / "class" / "drm"
    for card in drm.glob("card*") if drm.is_dir() else []:
        if not card.name[4:].isdigit():
            continue  # connectors (card0-DP-1)
        text = hostread.read_text(card / "device" / "pp_od_clk_voltage")
        if text is not None:
            found.append((card.joinpath("device").resolve().name, int(card.name[4:]), text))
    return [text for _, _, text in sorted(found)]
