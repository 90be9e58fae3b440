"""The power policy: which idle nodes to suspend through their BMCs and which to resume (issue 20).

Pure: the tick's nodes, Pods, BMC readings and each node's previous power status go in; the power
actions for the shell (or the benchmark) to carry out and each node's new status come out. Under
POWER_POLICY=none nothing is decided. docs/suspend-resume.md says what an operator sees.

A node goes on -> suspending -> off -> resuming -> on:
- on -> suspending: no workload Pod (DaemonSet Pods do not count) for SUSPEND_AFTER, a BMC that
  reads on, not excluded (joulie.io/suspend-exclude=true), its pool above the floor and fewer than
  SUSPEND_MAX_CONCURRENT nodes changing state: action "cordon" (cordon + taint joulie.io/suspended).
- suspending, on a later tick (a Pod bound while the cordon was written shows up by then) and still
  empty: action "off" (spec.power.state off). A Pod that arrived before that: "uncordon", back on.
- suspending -> off when the BMC reads off; SUSPEND_TIMEOUT from the cordon -> failed.
- off -> resuming: Pending Pods that fit no powered node but fit this one (as cluster-autoscaler
  simulates a scale-up), or its pool under the floor: action "on". Only Pods the scheduler marked
  unschedulable (PodScheduled=False, reason Unschedulable) whose schedulerName is one of
  SCHEDULER_NAMES count, as cluster-autoscaler does: a bogus schedulerName used to hold a node on.
- resuming -> on when the BMC reads on and the Node is Ready: "uncordon". A power-on the BMC refused
  is tried again after RESUME_RETRY_BACKOFF (doubling), up to RESUME_RETRIES, then failed with the
  BMC's answer (refusal.py). RESUME_TIMEOUT -> failed.
- failed stays failed (cordoned, never retried) until an operator removes the taint and uncordons.

A node back on is powered for the Pending Pods and the floor on the tick it comes back, though its
uncordon is carried out only after the tick (it used to count as unpowered, and one Pod woke two
nodes). spec.power.state is the policy's own record of what it asked the BMC: a value that does not
fit the node's power state (written by hand) is set back and said in the log (docs/suspend-resume.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Final

from joulie_api.names import (
    POWER_FAILED,
    POWER_OFF,
    POWER_ON,
    POWER_RESUMING,
    POWER_SUSPENDING,
    TAINT_SUSPENDED,
)
from joulie_controller.model.fit import Room, fits, room_of
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.power.powertick import (
    DEFAULT_POOL,
    Tick,
    bmc_reads,
    duration_text,
    excluded,
    floor_of,
    floor_setting,
    pod_name,
    pool_of,
    powered_by_pool,
    powered_schedulable,
    tainted,
)
from joulie_controller.power.powertypes import (
    BmcReading,
    BmcState,
    DesiredPower,
    PowerAction,
    PowerDecision,
    PowerInput,
    PowerNode,
    PowerState,
    PowerStatus,
)
from joulie_controller.power.refusal import SETTLED, Refusal, budget_spent, retry_due
from joulie_controller.power.warmpool import ANY_POOL, draws_on, free_by_pool, rate_left, shifted
from joulie_controller.settings import Settings

__all__ = ["DEFAULT_POOL", "BmcReading", "BmcState", "DesiredPower", "PowerAction", "PowerDecision", "PowerInput",
           "PowerNode", "PowerState", "PowerStatus", "duration_text", "excluded", "floor_of", "pool_of", "tainted"]
# The policy's values (powertypes.py) and shared rules (powertick.py), re-exported at their old address.

POLICY_NONE: Final = "none"
POLICY_FORECAST: Final = "forecast_suspend_v1"
_FINISHED: Final = frozenset({"Succeeded", "Failed"})
_CHANGING: Final = frozenset({POWER_SUSPENDING, POWER_RESUMING})
_IGNORE: Final = frozenset({TAINT_SUSPENDED})


def decide(inp: PowerInput, s: Settings) -> PowerDecision:
    if s.suspend.power_policy == POLICY_NONE:
        return PowerDecision([], {}, {}, {}, [])
    nodes = sorted(inp.nodes, key=lambda n: n.info.name)
    bound: dict[str, list[PodInfo]] = defaultdict(list)
    for pod in inp.pods:
        if pod.node_name and pod.phase not in _FINISHED:
            bound[pod.node_name].append(pod)
    workload = {n.info.name: [p for p in bound[n.info.name] if not p.daemonset] for n in nodes}
    # A Pending DaemonSet Pod is bound to its node by a matchFields affinity and wakes nothing; nor
    # does one the scheduler has not given up on, or one for a scheduler we do not serve (issue 36).
    pending = sorted((p for p in inp.pods if not p.node_name and p.phase == "Pending" and not p.deleting
                      and not p.daemonset and p.unschedulable and p.scheduler_name in s.scheduler_names),
                     key=pod_name)
    tick = Tick(inp, s.suspend.ramp_limit_w_per_sec)
    for n in nodes:
        if n.status.since is None:  # first seen by the policy
            tick.status[n.info.name] = replace(n.status, since=inp.now)

    _own_desired(tick, nodes)
    _progress(tick, nodes, workload, inp.bmc, s)
    budget = s.suspend.max_concurrent - sum(st.state in _CHANGING for st in tick.status.values())
    resumes = min(budget, rate_left(s.suspend.resume_rate_per_min, inp.recent.get("on", 0)))
    busy_powered, left = _resume_for_pending(tick, nodes, bound, pending, inp.bmc, resumes)
    left = _restore_floor(tick, nodes, inp.bmc, left, s)
    free = _warm_free(tick, nodes, bound, pending, s) if inp.warm else {}
    left = _warm_ahead(tick, nodes, bound, inp, free, left, s)
    suspends = min(budget - (resumes - left), rate_left(s.suspend.suspend_rate_per_min, inp.recent.get("cordon", 0)))
    _power_off_cordoned(tick, nodes, workload, inp.bmc)
    idle_since = _suspend_idle(tick, nodes, workload, busy_powered, inp, suspends, s, free)

    for n in nodes:  # the BMC's error of this tick, whatever the state; a refusal only while it applies
        reading, st = inp.bmc.get(n.info.name), tick.status[n.info.name]
        problem = None if reading is None else (reading.error if st.state in SETTLED else reading.problem())
        tick.status[n.info.name] = replace(st, error=problem[:1024] if problem else None)
    return PowerDecision(tick.actions, tick.status, tick.desired, idle_since, tick.notes)


def _own_desired(tick: Tick, nodes: Sequence[PowerNode]) -> None:
    """spec.power.state is what the policy asked the BMC; one that does not fit the power state was
    written by someone else and is set back (an off on a running node used to be kept: the node was
    later cordoned, never powered off, and failed with a reason that blamed the BMC)."""
    for n in nodes:
        name, state = n.info.name, tick.status[n.info.name].state
        owned: DesiredPower | None = POWER_ON if state in (POWER_ON, POWER_RESUMING) else (
            POWER_OFF if state == POWER_OFF else None)  # suspending and failed: either is the policy's
        if owned is not None and tick.desired[name] != owned:
            tick.notes.append(f"node {name}: spec.power.state {tick.desired[name]} written outside the "
                              f"controller (power is {state}); the controller owns it: set to {owned}")
            tick.desired[name] = owned


def _progress(tick: Tick, nodes: Sequence[PowerNode], workload: Mapping[str, list[PodInfo]],
              bmc: Mapping[str, BmcReading], s: Settings) -> None:
    """Transitions already under way: suspends and resumes that completed, timed out or were overtaken."""
    for n in nodes:
        name = n.info.name
        st = tick.status[name]
        reading = bmc.get(name)
        problem = None if reading is None else reading.problem()
        bmc_text = "no BMC reading" if reading is None else f"the BMC reads {reading.state}" + (
            f" ({problem})" if problem else "")
        if st.state == POWER_SUSPENDING:
            if workload[name] and tick.desired[name] == POWER_ON:
                tick.move(name, POWER_ON, f"Pod {pod_name(workload[name][0])} arrived before the power-off",
                          "uncordon")
            elif reading is not None and reading.state == POWER_OFF:
                tick.desired[name] = POWER_OFF
                tick.move(name, POWER_OFF, st.reason, None)
            elif tick.elapsed_s(name) > s.suspend.timeout_s:
                tick.move(name, POWER_FAILED, f"not off within SUSPEND_TIMEOUT "
                          f"({duration_text(s.suspend.timeout_s)}): {bmc_text}; left cordoned", "fail")
        elif st.state == POWER_RESUMING:
            if reading is not None and reading.state == POWER_ON and n.info.ready:
                tick.move(name, POWER_ON, f"resumed in {duration_text(tick.elapsed_s(name))}: {st.reason}",
                          "uncordon", boots=1)
            elif tick.elapsed_s(name) > s.suspend.resume_timeout_s:  # caps the retries too
                ready = "Ready" if n.info.ready else "not Ready"
                tick.move(name, POWER_FAILED, f"not back within RESUME_TIMEOUT "
                          f"({duration_text(s.suspend.resume_timeout_s)}): "
                          f"{bmc_text}, Node {ready}; left cordoned, not retried", "fail")
            elif reading is not None and reading.refused is not None and reading.refused.action == POWER_ON \
                    and reading.state not in (POWER_ON, "powering-on"):
                _refused_power_on(tick, name, reading.refused, s)
        elif st.state == POWER_ON and tainted(n.info):
            # Resumed or taken back, but the uncordon did not reach the API server: again.
            tick.actions.append(PowerAction(name, "uncordon", "on, still tainted joulie.io/suspended"))
        elif st.state == POWER_OFF and reading is not None and reading.state in ("on", "powering-on"):
            tick.desired[name] = POWER_ON
            tick.move(name, POWER_RESUMING, "the BMC reports on (powered on outside Joulie)", None)
        elif st.state == POWER_FAILED and not tainted(n.info) and not n.info.unschedulable:
            tick.desired[name] = POWER_ON
            tick.move(name, POWER_ON, "cleared by an operator (taint joulie.io/suspended removed, uncordoned)", None)


def _refused_power_on(tick: Tick, name: str, refusal: Refusal, s: Settings) -> None:
    """Retry a power-on the BMC refused once its backoff has passed; past RESUME_RETRIES, fail the
    node with the BMC's answer (Pending Pods then go to the next candidate on this same tick)."""
    if budget_spent(refusal, s.suspend):
        tick.move(name, POWER_FAILED, f"the BMC refused power-on {refusal.count} times (RESUME_RETRIES="
                  f"{s.suspend.resume_retries}): {refusal.reason}; left cordoned", "fail")
    elif retry_due(refusal, tick.now, s.suspend):
        tick.retry_on(name, refusal, s.suspend.resume_retries)


def _power_off_cordoned(tick: Tick, nodes: Sequence[PowerNode], workload: Mapping[str, list[PodInfo]],
                        bmc: Mapping[str, BmcReading]) -> None:
    """Nodes cordoned on an earlier tick and still empty (a Pod bound while the cordon was written
    would show by now), not taken back for a Pending Pod: power off through the BMC. Only a node
    the cluster shows cordoned and tainted: a cordon that did not reach the API server is retried."""
    for n in nodes:
        name = n.info.name
        st = tick.status[name]
        reading = bmc.get(name)
        if st.state != POWER_SUSPENDING or tick.desired[name] != POWER_ON or tick.elapsed_s(name) <= 0:
            continue
        if not (tainted(n.info) and n.info.unschedulable):
            tick.actions.append(PowerAction(name, "cordon", st.reason))
            tick.notes.append(f"node {name}: not cordoned and tainted yet; cordon again")
        elif not workload[name] and reading is not None and reading.state == POWER_ON:
            tick.desired[name] = POWER_OFF
            tick.actions.append(PowerAction(name, "off", st.reason))
            tick.notes.append(f"node {name}: power off through the BMC: {st.reason}")


def _shape(pod: PodInfo) -> tuple[object, ...]:
    """What decides where a Pod fits (fit.py), as a key."""
    return (pod.cpu_request, pod.memory_request_bytes, pod.gpu_request, tuple(sorted(pod.node_selector.items())),
            pod.required_terms, pod.tolerations)


def _resume_for_pending(tick: Tick, nodes: Sequence[PowerNode], bound: Mapping[str, list[PodInfo]],
                        pending: Sequence[PodInfo], bmc: Mapping[str, BmcReading],
                        budget: int) -> tuple[set[str], int]:
    """Wake the fewest nodes the Pending Pods need. Returns the powered nodes a Pending Pod is
    expected to land on (not to be suspended under it) and the budget left."""
    info = {n.info.name: n.info for n in nodes}
    busy, unsatisfied = _place_without_resume(tick, nodes, bound, pending, info)
    if not unsatisfied:
        return busy, budget
    first_pod, budget = _wake_for(tick, _resume_candidates(tick, nodes, bmc), bound, unsatisfied, info, budget)
    for name, pod in first_pod.items():
        if tick.status[name].state == POWER_SUSPENDING:
            tick.move(name, POWER_ON, f"Pending Pod {pod_name(pod)} fits it and no powered node", "uncordon")
        else:
            tick.move(name, POWER_RESUMING, f"Pending Pod {pod_name(pod)} fits no powered node", "on")
        tick.desired[name] = POWER_ON
    return busy, budget


def _place_without_resume(tick: Tick, nodes: Sequence[PowerNode], bound: Mapping[str, list[PodInfo]],
                          pending: Sequence[PodInfo], info: Mapping[str, NodeInfo]) -> tuple[set[str], list[PodInfo]]:
    """Where the Pending Pods can go without a resume (powered schedulable nodes, and nodes already
    resuming): the nodes they land on, and the Pods that fit none of them."""
    room: dict[str, Room] = {}
    for n in nodes:
        if powered_schedulable(tick, n) or tick.status[n.info.name].state == POWER_RESUMING:
            room[n.info.name] = room_of(n.info, bound[n.info.name])
    ignore = _IGNORE
    busy: set[str] = set()
    unsatisfied: list[PodInfo] = []
    # Room only shrinks within a tick: a Pod shaped like one that fitted nowhere fits nowhere either
    # (keeps a long queue against a full cluster from costing Pods x nodes checks).
    no_room: set[tuple[object, ...]] = set()
    for pod in pending:
        shape = _shape(pod)
        if shape in no_room:
            unsatisfied.append(pod)
            continue
        # The policy's own taint is ignored: a node resuming or back on loses it when it is uncordoned.
        spot = next((name for name, r in room.items() if fits(pod, info[name], r, ignore) is None), None)
        if spot is None:
            unsatisfied.append(pod)
            no_room.add(shape)
        else:
            room[spot] = room[spot].minus(pod)
            busy.add(spot)
    return busy, unsatisfied


def _resume_candidates(tick: Tick, nodes: Sequence[PowerNode], bmc: Mapping[str, BmcReading]) -> list[PowerNode]:
    """Nodes a resume can use: cordoned for suspend but not yet told to power off (an uncordon takes
    them back, no boot), then off nodes whose BMC reads off, the lowest idle power first."""

    def candidate_order(n: PowerNode) -> tuple[int, float, datetime, str]:  # the longest off first: wear levelling
        st = tick.status[n.info.name]
        return (0 if st.state == POWER_SUSPENDING else 1, n.rank_w, st.since or tick.now, n.info.name)

    return sorted(
        (n for n in nodes
         if (tick.status[n.info.name].state == POWER_SUSPENDING and tick.desired[n.info.name] == POWER_ON)
         or (tick.status[n.info.name].state == POWER_OFF and bmc_reads(bmc, n.info.name, POWER_OFF))),
        key=candidate_order)


def _wake_for(tick: Tick, candidates: Sequence[PowerNode], bound: Mapping[str, list[PodInfo]],
              unsatisfied: Sequence[PodInfo], info: Mapping[str, NodeInfo],
              budget: int) -> tuple[dict[str, PodInfo], int]:
    """The candidates to wake for the Pods no powered node takes, each with the first Pod that wakes
    it, within SUSPEND_MAX_CONCURRENT (``budget``); returns them and the budget left."""
    ignore = frozenset({TAINT_SUSPENDED})
    woken: dict[str, Room] = {}
    first_pod: dict[str, PodInfo] = {}
    nowhere: set[tuple[object, ...]] = set()
    waiting: list[str] = []
    for pod in unsatisfied:
        shape = _shape(pod)
        if shape in nowhere:
            continue
        spot = next((name for name, r in woken.items() if fits(pod, info[name], r, ignore) is None), None)
        if spot is None:
            for n in candidates:
                name = n.info.name
                if name in woken:
                    continue
                is_off = tick.status[name].state == POWER_OFF
                r = room_of(n.info, bound[name])
                if fits(pod, n.info, r, ignore) is not None:
                    continue
                if is_off and (budget <= 0 or not tick.ramp_allows(n, "Pending Pods")):
                    waiting.append(pod_name(pod))
                    break
                if is_off:
                    budget -= 1
                    tick.ramp_take(n)
                woken[name], first_pod[name], spot = r, pod, name
                break
        if spot is None:
            nowhere.add(shape)
        else:
            woken[spot] = woken[spot].minus(pod)
    if waiting:
        tick.notes.append(f"{len(waiting)} Pending Pods (first {waiting[0]}) would fit an off node; waiting: "
                          f"SUSPEND_MAX_CONCURRENT nodes already change state, RESUME_RATE reached, or "
                          f"POWER_RAMP_LIMIT_W_PER_S (rate limit)")
    return first_pod, budget


def _restore_floor(tick: Tick, nodes: Sequence[PowerNode], bmc: Mapping[str, BmcReading], budget: int,
                   s: Settings) -> int:
    """A pool under its floor (a failed or manually cordoned node) gets off nodes back."""
    powered = powered_by_pool(tick, nodes, s)
    for n in sorted(nodes, key=lambda n: (n.rank_w, n.info.name)):
        name, pool = n.info.name, pool_of(n.info, s)
        reading = bmc.get(name)
        if budget <= 0 or powered[pool] >= floor_of(pool, s):
            continue
        if tick.status[name].state == POWER_OFF and reading is not None and reading.state == POWER_OFF:
            if not tick.ramp_allows(n, f"the floor of pool {pool}"):
                break  # smallest boot step first: a larger one fits no better (and is not marked deferred)
            tick.ramp_take(n)
            tick.move(name, POWER_RESUMING, f"pool {pool} has {powered[pool]} powered nodes, under "
                      f"its floor {floor_of(pool, s)} ({floor_setting(pool, s)})", "on")
            tick.desired[name] = POWER_ON
            powered[pool] += 1
            budget -= 1
    return budget


def _warm_free(tick: Tick, nodes: Sequence[PowerNode], bound: Mapping[str, list[PodInfo]],
               pending: Sequence[PodInfo], s: Settings) -> dict[str, Room]:
    """Each pool's powered (or resuming) free capacity, after the Pending Pods take theirs."""
    info = {n.info.name: n.info for n in nodes}
    rooms = {n.info.name: room_of(n.info, bound[n.info.name]) for n in nodes
             if powered_schedulable(tick, n) or tick.status[n.info.name].state == POWER_RESUMING}
    for pod in pending:
        spot = next((k for k, r in rooms.items() if fits(pod, info[k], r, _IGNORE) is None), None)
        if spot is not None:
            rooms[spot] = rooms[spot].minus(pod)
    return free_by_pool(rooms, {k: pool_of(info[k], s) for k in rooms}, {n.info.name for n in nodes
                                                                          if tick.serves_any(n)})



def _warm_ahead(tick: Tick, nodes: Sequence[PowerNode], bound: Mapping[str, list[PodInfo]], inp: PowerInput,
                free: dict[str, Room], budget: int, s: Settings) -> int:
    """forecast_suspend_v1: a warm-pool need (warmpool.py) that free capacity falls short of gets off
    nodes back ahead of the demand, within SUSPEND_MAX_CONCURRENT: a pool's own for GPUs, the longest
    off first (wear levelling); any pool's for cores, the lowest TDP first, then the longest off."""
    for need in sorted(inp.warm.values(), key=lambda w: w.pool != ANY_POOL):
        order = sorted((n for n in nodes if draws_on(need.pool, pool_of(n.info, s))
                        and (need.pool != ANY_POOL or tick.serves_any(n))), key=lambda n: (
            n.rank_w if need.pool == ANY_POOL else 0.0, tick.status[n.info.name].since or inp.now, n.info.name))
        for n in order:
            name, pool = n.info.name, pool_of(n.info, s)
            if budget <= 0 or not need.short_of(free.get(need.pool, Room(0.0, 0.0, 0))):
                break
            if tick.status[name].state == POWER_OFF and bmc_reads(inp.bmc, name, POWER_OFF) and not excluded(n.info):
                if not tick.ramp_allows(n, "the warm pool"):
                    continue
                tick.ramp_take(n)
                tick.move(name, POWER_RESUMING, f"resumed ahead of demand (forecast): {need.text()}", "on")
                tick.desired[name] = POWER_ON
                free.update(shifted(free, pool, room_of(n.info, bound[name]), 1.0, tick.serves_any(n)))
                budget -= 1
    return budget


def _kept_on(tick: Tick, n: PowerNode, inp: PowerInput, free: dict[str, Room], workload: list[PodInfo],
             s: Settings) -> str | None:
    """Why an idle node due for suspend stays on: a warm-pool need it serves, or its power cycles today."""
    pool, cap = pool_of(n.info, s), s.suspend.max_cycles_per_day
    without = shifted(free, pool, room_of(n.info, workload), -1.0, tick.serves_any(n)) if inp.warm else free
    for need in (inp.warm.get(pool), inp.warm.get(ANY_POOL)):
        if need is not None and not need.empty and need.short_of(without.get(need.pool, Room(0.0, 0.0, 0))):
            return f"kept warm (forecast): {need.target_text()}"
    if cap and inp.cycles.get(n.info.name, 0) >= cap:
        return f"kept on: MAX_POWER_CYCLES_PER_DAY={cap} power-offs today (0 cycles left)"
    return None


def _suspend_idle(tick: Tick, nodes: Sequence[PowerNode], workload: Mapping[str, list[PodInfo]], busy: set[str],
                  inp: PowerInput, budget: int, s: Settings, free: dict[str, Room]) -> dict[str, datetime]:
    idle_since: dict[str, datetime] = {}
    for n in nodes:
        name = n.info.name
        if (tick.status[name].state == POWER_ON and not workload[name] and not n.info.unschedulable
                and not tainted(n.info) and n.info.ready):
            idle_since[name] = inp.idle_since.get(name, inp.now)
    due = [n for n in nodes
           if n.info.name in idle_since and n.info.name not in busy and not excluded(n.info)
           and (inp.now - idle_since[n.info.name]).total_seconds() >= s.suspend.after_s
           and bmc_reads(inp.bmc, n.info.name, POWER_ON) and not inp.bmc[n.info.name].problem()]
    # The longest idle first, then the hungriest.
    due.sort(key=lambda n: (idle_since[n.info.name], -n.rank_w, n.info.name))
    powered = powered_by_pool(tick, nodes, s)
    for n in due:
        name, pool = n.info.name, pool_of(n.info, s)
        if powered[pool] - 1 < floor_of(pool, s):
            floor = f"kept on: the floor of pool {pool}, {floor_of(pool, s)} powered ({floor_setting(pool, s)})"
            tick.status[name] = replace(tick.status[name], reason=floor[:1024])
            continue
        kept = _kept_on(tick, n, inp, free, workload[name], s)
        if kept is not None:
            tick.status[name] = replace(tick.status[name], reason=kept[:1024])
            continue
        if budget <= 0:
            why = (f"suspend deferred: SUSPEND_MAX_CONCURRENT={s.suspend.max_concurrent} nodes already change "
                   f"state, or SUSPEND_RATE={s.suspend.suspend_rate_per_min}/min reached (rate limit)")
            tick.status[name] = replace(tick.status[name], reason=why)
            tick.notes.append(f"node {name}: idle, {why}")
            break
        idle_s = (inp.now - idle_since[name]).total_seconds()
        cap = s.suspend.max_cycles_per_day
        cycles = f"; {cap - inp.cycles.get(name, 0) - 1} power cycles left today" if cap else ""
        tick.move(name, POWER_SUSPENDING, f"no workload Pods for {duration_text(idle_s)} "
                  f"(SUSPEND_AFTER {duration_text(s.suspend.after_s)}){cycles}", "cordon")
        del idle_since[name]
        powered[pool] -= 1
        if free:
            free.update(shifted(free, pool, room_of(n.info, workload[name]), -1.0, tick.serves_any(n)))
        budget -= 1
    return idle_since
