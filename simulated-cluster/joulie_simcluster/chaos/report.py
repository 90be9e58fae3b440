"""Pure: the chaos run's results, per injection and per fault, as summary.json's ``chaos`` section
and as a Markdown report."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Outcome:
    """One injection and what followed it."""

    fault: str
    repetition: int
    target: str
    injected_at: str
    """UTC, ISO 8601."""
    survived: bool
    """Healthy again (every process running, every component reporting, caps = decisions) within the timeout."""
    recover_s: float | None
    """Seconds from the end of the fault (a one-off: its injection) to healthy; None when never."""
    writes_lost: int
    """Caps in the emulator ≠ NodeTwin.spec at the end of the window: decisions that never reached the device."""
    writes_late: int
    """Caps that differed from the decisions during the window, repaired before its end."""
    drift_detected: int
    """Nodes whose controlStatus reported drift during the window."""
    restarts: int
    """Restarts the supervisor made during the window."""
    crashes: int
    """Restarts of processes this fault did not kill (collateral crashes; goal 0)."""
    pods_failed: int
    pods_stuck: int
    why: str = ""
    """What was still wrong at the end, when it did not survive."""
    caps_wrong_before: int = 0
    """Caps already ≠ the decisions before this injection (left by an earlier fault)."""
    note: str = ""
    """What the fault showed beyond the table (a probe Pod's binding, the twins' power source, timeouts logged)."""


def per_fault(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """One row per fault: injections, survived, writes lost and late, drift, restarts, crashes,
    Pods failed and stuck (worst seen), time to recover (median and max of the survived)."""
    rows = []
    for fault in dict.fromkeys(o.fault for o in outcomes):
        mine = [o for o in outcomes if o.fault == fault]
        times = [o.recover_s for o in mine if o.recover_s is not None]
        rows.append({
            "fault": fault, "injected": len(mine), "survived": sum(o.survived for o in mine),
            "writesLost": sum(o.writes_lost for o in mine), "writesLate": sum(o.writes_late for o in mine),
            "driftDetected": sum(o.drift_detected for o in mine), "restarts": sum(o.restarts for o in mine),
            "crashes": sum(o.crashes for o in mine), "podsFailed": max(o.pods_failed for o in mine),
            "podsStuck": max(o.pods_stuck for o in mine),
            "recoverMedianS": round(statistics.median(times), 1) if times else None,
            "recoverMaxS": round(max(times), 1) if times else None,
        })
    return rows


def chaos_section(outcomes: Sequence[Outcome], seed: int, repeats: int) -> dict[str, Any]:
    return {"seed": seed, "repeats": repeats, "table": per_fault(outcomes),
            "injections": [asdict(o) for o in outcomes],
            "survivedAll": all(o.survived for o in outcomes)}


COLUMNS = (("fault", "fault"), ("injected", "injected"), ("survived", "survived"), ("writesLost", "writes lost"),
           ("writesLate", "writes late"), ("driftDetected", "drift detected"), ("restarts", "restarts"),
           ("crashes", "crashes"), ("podsFailed", "Pods failed"), ("podsStuck", "Pods stuck"),
           ("recoverMedianS", "recover median s"), ("recoverMaxS", "recover max s"))


def markdown(section: dict[str, Any], title: str) -> str:
    head = "| " + " | ".join(h for _, h in COLUMNS) + " |"
    lines = [f"# {title}", "", f"Seed {section['seed']}, each fault {section['repeats']}x at random moments.", "",
             head, "|" + "---|" * len(COLUMNS)]
    for row in section["table"]:
        lines.append("| " + " | ".join("-" if row[k] is None else str(row[k]) for k, _ in COLUMNS) + " |")
    failed = [i for i in section["injections"] if not i["survived"]]
    lines += ["", "Columns: *writes lost*: caps in the emulator that differ from NodeTwin.spec at the end of the "
              "window (goal 0); *writes late*: caps that differed during the window and were repaired (caps "
              "already wrong before an injection, left by an earlier one, count for neither); "
              "*crashes*: restarts of processes the fault did not kill (goal 0); *recover*: seconds from the end "
              "of the fault until every process runs, every component reports and the caps equal the decisions.",
              ""]
    if failed:
        lines.append("## Not survived")
        lines.append("")
        lines += [f"- {i['fault']} #{i['repetition']} on {i['target']} at {i['injected_at']}: {i['why']}" for i in failed]
    else:
        lines.append("Every injection survived.")
    notes = [i for i in section["injections"] if i.get("note")]
    if notes:
        lines += ["", "## What the faults showed", ""]
        lines += [f"- {i['fault']} #{i['repetition']} on {i['target']}: {i['note']}" for i in notes]
    return "\n".join(lines) + "\n"
