"""rich renderables for each command. No I/O besides what the caller's Console does."""

from __future__ import annotations

from datetime import datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from joulie_api.receipt import ReceiptTotal
from joulie_kubectl.model import JobRow, NodeRow, PodRow, ReceiptRow, Summary
from joulie_kubectl.powerview import PowerRow

CLASS_STYLE = {"eco": "green", "performance": "magenta", "draining": "yellow", "unknown": "dim"}
POWER_STYLE = {"on": "", "suspending": "yellow", "off": "dim", "resuming": "cyan", "failed": "bold red"}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}%"


def _w(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f} W"


def _age(ts: datetime | None, now: datetime) -> str:
    if ts is None:
        return "never"
    s = max(0, int((now - ts).total_seconds()))
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


def summary_text(s: Summary) -> Text:
    t = Text()
    t.append("CLUSTER ENERGY STATE\n", style="bold")
    classes = ", ".join(f"{n} {c}" for c, n in s.by_class.items())
    t.append(f"  Nodes: {s.nodes} total ({classes}); {s.stale} with stale twin data\n")
    t.append(f"  Power: {s.measured_w:.0f} W measured of {s.capped_w:.0f} W capped\n")
    peak = f"  |  Peak: {s.peak_cooling[1]:.0f}% ({s.peak_cooling[0]})" if s.peak_cooling else ""
    t.append(f"  Avg cooling stress: {_pct(s.avg_cooling_pct)}{peak}\n")
    t.append(f"  Avg PSU stress: {_pct(s.avg_psu_pct)}\n")
    t.append(f"  Avg power headroom: {_pct(s.avg_headroom_pct)}\n")
    t.append(f"  Running pods: {s.running_pods}")
    return t


def status_table(rows: list[NodeRow], now: datetime) -> Table:
    table = Table(show_lines=False, header_style="bold")
    for col in ("NODE", "STATE", "PROFILE", "CLASS", "POWER / CAP", "HEADROOM", "COOLING", "PSU", "CPU CAP", "GPU CAP",
                "CPU REQ", "MEM REQ", "GPU REQ", "PODS", "AGENT CPU", "AGENT GPU", "UPDATED"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        state = r.power_state + (f" {_age(r.power_since, now)}" if r.power_since is not None and r.power_state != "on"
                                 else "")
        table.add_row(
            r.node, Text(state, style=POWER_STYLE.get(r.power_state, "")), r.profile, Text(r.schedulable_class, style=CLASS_STYLE.get(r.schedulable_class, "")),
            f"{_w(r.measured_w)} / {_w(r.capped_w)}", _pct(r.headroom_pct), _pct(r.cooling_pct), _pct(r.psu_pct),
            r.cpu_cap, r.gpu_cap, _pct(r.cpu_req_pct), _pct(r.mem_req_pct), _pct(r.gpu_req_pct),
            f"{r.pods} ({r.performance_pods} perf)", r.cpu_control, r.gpu_control,
            Text(_age(r.last_updated, now) + (" STALE" if r.stale else ""), style="red" if r.stale else ""),
        )
    return table


def power_table(rows: list[PowerRow], now: datetime) -> Table:
    """Per node: its power state, since when, why (the cause its reason names), the power cycles it has
    left today and the warm pool's target where the reason states them, then the reason itself."""
    table = Table(header_style="bold")
    for col in ("NODE", "STATE", "SINCE", "WHY", "CYCLES LEFT", "WARM TARGET", "BOOTS", "REASON"):
        table.add_column(col, no_wrap=col != "REASON")
    for r in rows:
        reason = r.reason + (f" [BMC: {r.error}]" if r.error else "")
        table.add_row(r.node, Text(r.state, style=POWER_STYLE.get(r.state, "")), _age(r.since, now), r.cause,
                      "-" if r.cycles_left is None else str(r.cycles_left), r.target or "-", str(r.boots),
                      Text(reason))  # a BMC's words, never rich markup
    return table


def pods_table(pods: list[PodRow]) -> Table:
    table = Table(header_style="bold")
    for col in ("CLASS", "NAMESPACE", "POD", "NODE", "NODE CLASS", "PHASE", ""):
        table.add_column(col, no_wrap=True)
    for p in pods:
        table.add_row(
            p.workload_class, p.namespace, p.name, p.node,
            Text(p.node_class, style=CLASS_STYLE.get(p.node_class, "")), p.phase,
            Text("performance pod on a non-performance node", style="red") if p.misplaced else "",
        )
    return table


def placement_text(pods: list[PodRow]) -> Text:
    counts: dict[tuple[str, str], int] = {}
    for p in pods:
        counts[(p.workload_class, p.node_class)] = counts.get((p.workload_class, p.node_class), 0) + 1
    t = Text("PLACEMENT\n", style="bold")
    for (cls, ncls), n in sorted(counts.items()):
        t.append(f"  {cls} pods on {ncls} nodes: {n}\n")
    misplaced = sum(p.misplaced for p in pods)
    t.append(f"  performance pods on eco/draining nodes: {misplaced}", style="red" if misplaced else "")
    return t


def node_detail(row: NodeRow, pods: list[PodRow], now: datetime) -> RenderableType:
    info = Table.grid(padding=(0, 2))
    info.add_column(style="bold")
    info.add_column()
    for key, value in (
        ("Node", row.node), ("Profile (spec)", row.profile), ("Schedulable class", row.schedulable_class),
        ("Hardware", row.hardware), ("Measured power", _w(row.measured_w)), ("Capped power", _w(row.capped_w)),
        ("TDP", _w(row.tdp_w)), ("Power headroom", _pct(row.headroom_pct)), ("Cooling stress", _pct(row.cooling_pct)),
        ("PSU stress", _pct(row.psu_pct)), ("CPU cap", row.cpu_cap), ("GPU cap", row.gpu_cap),
        ("Agent CPU control", row.cpu_control), ("Agent GPU control", row.gpu_control),
        *((("GPU clock lock", row.gpu_lock), ("Agent GPU clock lock", row.gpu_lock_control))
          if row.gpu_lock != "-" or row.gpu_lock_control != "-" else ()),
        ("Requested CPU / memory / GPU", f"{_pct(row.cpu_req_pct)} / {_pct(row.mem_req_pct)} / {_pct(row.gpu_req_pct)}"),
        ("Twin updated", _age(row.last_updated, now) + (" ago (STALE)" if row.stale else " ago")),
        *row.power,
        *row.decision,
    ):
        info.add_row(key, value)
    on_node = [p for p in pods if p.node == row.node]
    return Group(info, Text(f"\nPods on {row.node}: {len(on_node)}", style="bold"), pods_table(on_node))


ENERGY_LABELS = (("gpu", "GPU"), ("cpuBusy", "CPU busy"), ("cpuIdle", "CPU idle"), ("platform", "memory+platform"))


def _wh(joules: float) -> str:
    """Energy for people: Wh below 10 kWh, kWh above."""
    wh = joules / 3600.0
    return f"{wh / 1000:.2f} kWh" if abs(wh) >= 10_000 else f"{wh:.1f} Wh"


def _saved(saved_j: float, low_j: float, high_j: float) -> str:
    return f"{_wh(saved_j)} [{_wh(low_j)} .. {_wh(high_j)}]"


def receipt_detail(row: ReceiptRow) -> RenderableType:
    """``kubectl joulie receipt POD``: the energy by device kind, and what the caps saved and cost."""
    r = row.receipt
    if r is None:
        return Text(f"{row.namespace}/{row.name}: {row.problem}", style="red")
    info = Table.grid(padding=(0, 2))
    info.add_column(style="bold")
    info.add_column()
    info.add_row("Pod", f"{row.namespace}/{row.name}")
    info.add_row("Node", r.node)
    info.add_row("State", f"{r.state} (running total)" if r.state == "running" else r.state)
    info.add_row("Held", f"{r.held_s / 3600:.2f} h")
    for key, label in ENERGY_LABELS:
        info.add_row(f"  {label}", _wh(r.energy_j.get(key, 0.0)))
    info.add_row("Energy", _wh(r.total_j))
    info.add_row("Saved by caps", _saved(r.saved_j, *r.saved_range_j))
    info.add_row("Time added by caps", f"{r.added_s:.0f} s")
    info.add_row("Method", r.method or "-")
    info.add_row("Updated", r.updated or "-")
    return info


def receipts_table(rows: list[ReceiptRow], by_ns: dict[str, ReceiptTotal], cluster: ReceiptTotal) -> Table:
    """``kubectl joulie receipts``: one row per Pod, then each namespace's total and the total."""
    table = Table(header_style="bold")
    for col in ("NAMESPACE", "POD", "STATE", "NODE", *(label.upper() for _, label in ENERGY_LABELS), "ENERGY",
                "SAVED [RANGE]", "TIME ADDED"):
        table.add_column(col, no_wrap=True)
    for row in rows:
        r = row.receipt
        if r is None:
            table.add_row(row.namespace, row.name, Text(row.problem, style="red"))
            continue
        table.add_row(row.namespace, row.name, r.state, r.node, *(_wh(r.energy_j.get(k, 0.0)) for k, _ in ENERGY_LABELS),
                      _wh(r.total_j), _saved(r.saved_j, *r.saved_range_j), f"{r.added_s:.0f} s")
    if table.rows:
        table.rows[-1].end_section = True  # a rule between the Pods and the totals
    for label, t in [*((f"{ns} (total)", t) for ns, t in by_ns.items()), ("ALL (total)", cluster)]:
        table.add_row(Text(label, style="bold"), f"{t.pods} pods", f"{t.running} running", "",
                      *(_wh(t.energy_j.get(k, 0.0)) for k, _ in ENERGY_LABELS), Text(_wh(t.total_j), style="bold"),
                      _saved(t.saved_j, t.saved_low_j, t.saved_high_j), f"{t.added_s:.0f} s")
    return table


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _realised(r: JobRow) -> str:
    """The realised slowdown, its range over the estimate's uncertainty, and the run time it covers."""
    if r.realised_slowdown_pct is None:
        return "- (no clock yet)"
    text = f"{r.realised_slowdown_pct:+.1f}%"
    if r.realised_low_pct is not None and r.realised_high_pct is not None:
        text += f" [{r.realised_low_pct:+.1f}, {r.realised_high_pct:+.1f}]"
    if r.realised_s is not None:
        text += f" over {r.realised_s:.0f} s"
    return text


def jobs_table(rows: list[JobRow]) -> Table:
    """Per GPU Pod: the lever, the estimate it was chosen from, the predicted slowdown against the budget,
    and the slowdown realised so far (from the boards' measured clock, with its range)."""
    table = Table(header_style="bold")
    for col in ("NODE", "POD", "LEVER", "NODE SETTING", "EST. COMPUTE SHARE", "EST. DRAW", "SAMPLES",
                "PREDICTED SLOWDOWN", "REALISED SLOWDOWN", "BUDGET", "BUDGET FROM"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        predicted = "-" if r.predicted_slowdown_pct is None else f"+{r.predicted_slowdown_pct:.1f}%"
        budget = "-" if r.budget_pct is None else f"{r.budget_pct:g}%"
        over = r.predicted_slowdown_pct is not None and r.budget_pct is not None and \
            r.predicted_slowdown_pct > r.budget_pct + 1e-9
        realised_over = r.realised_slowdown_pct is not None and r.budget_pct is not None and \
            r.realised_slowdown_pct > r.budget_pct + 1e-9
        table.add_row(
            r.node, r.pod, r.lever, r.setting, _share(r.compute_share), _share(r.draw),
            str(r.observations) if r.observations else "0 (kind prior)",
            Text(predicted, style="red" if over else ""),
            Text(_realised(r), style="red" if realised_over else ""), budget, r.budget_source,
        )
    return table
