"""``joulie-simulator curve``: performance and power versus cap, from the device models (a shell
over ``physics.curve``: argument parsing, table/JSON output and the optional matplotlib plot).

    curve --profile P --class K --cap-pct 60 [--util U] --json     one JSON object
    curve --profile P --class K --cap-pct 80 --cap-pct 60           a table (JSON list with --json)
    curve --profile P --class K,K2|all --sweep [--plot FILE.png]    100 % down to the lowest cap

Exit 2 with the valid names for an unknown profile or class.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from joulie_hwprofiles.schema import Profile, ProfileError, builtin_profile, builtin_profile_names
from joulie_simulator.physics.curve import CurveError, CurvePoint, kinds_for, point, sweep_pcts
from joulie_workload.kinds import KINDS

NAME = "joulie-simulator"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cu = sub.add_parser("curve", help="throughput, power and energy per work versus a power cap (the device model)")
    cu.add_argument("--profile", required=True, help="builtin profile name")
    cu.add_argument("--class", dest="kinds", required=True,
                    help=f"workload kind(s), comma-separated, or 'all': {', '.join(KINDS)}")
    cu.add_argument("--cap-pct", type=float, action="append", default=[],
                    help="cap as %% of the device's maximum limit (repeatable; below the device minimum it is clamped)")
    cu.add_argument("--sweep", action="store_true", help="every 5 %% from 100 %% down to the device's lowest cap")
    cu.add_argument("--util", type=float, default=None, help="natural draw 0..1 (default: the kind's mean)")
    cu.add_argument("--json", action="store_true", help="JSON: one object for one point, else a list")
    cu.add_argument("--plot", type=Path, help="PNG: throughput and energy per work versus cap, one line per kind")


def _fail(msg: str) -> int:
    print(f"{NAME}: {msg}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    try:
        profile = builtin_profile(args.profile)
    except ProfileError:
        return _fail(f"--profile: {args.profile!r} is not a builtin profile; valid: {', '.join(builtin_profile_names())}")
    kinds = kinds_for(profile) if args.kinds == "all" else [k.strip() for k in args.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        return _fail(f"--class: {', '.join(bad) or repr(args.kinds)} is not a workload kind; valid: {', '.join(KINDS)} (or all)")
    if not args.cap_pct and not args.sweep:
        return _fail("give --cap-pct (repeatable) or --sweep")
    if any(not 0 <= c <= 100 for c in args.cap_pct):
        return _fail(f"--cap-pct: {args.cap_pct} must lie within 0..100")
    if args.util is not None and not 0 <= args.util <= 1:
        return _fail(f"--util: {args.util} must lie within 0..1")
    try:
        rows = _rows(profile, kinds, args)
    except CurveError as e:
        return _fail(f"{e}; kinds this profile can run: {', '.join(kinds_for(profile))}")
    if args.json:
        out = [r.record() for r in rows]
        print(json.dumps(out[0] if len(out) == 1 else out, sort_keys=True))
    else:
        print(_table(rows))
    for r in rows:
        if r.clamped:
            print(f"{NAME}: {r.kind}: --cap-pct {r.cap_pct:g} is below the device's lowest cap "
                  f"{r.min_cap_pct:.1f} % ({r.cap_w:.1f} W): clamped", file=sys.stderr)
    if args.plot:
        _plot(profile, kinds, rows, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def _rows(profile: Profile, kinds: list[str], args: argparse.Namespace) -> list[CurvePoint]:
    rows: list[CurvePoint] = []
    for k in kinds:
        pcts = list(args.cap_pct) + (sweep_pcts(profile, k, args.util) if args.sweep else [])
        rows.extend(point(profile, k, pct, args.util) for pct in pcts)
    return rows


def _table(rows: list[CurvePoint]) -> str:
    head = f"{'kind':<14} {'cap %':>6} {'cap W':>7} {'clock':>6} {'thru':>6} {'power W':>8} {'uncapped W':>10} {'E/work':>7}"
    lines = [f"{rows[0].profile} ({rows[0].device.split(':', 1)[1] if rows else ''})", head]
    for r in rows:
        note = "  clamped" if r.clamped else ""
        lines.append(f"{r.kind:<14} {r.cap_pct:>6.1f} {r.cap_w:>7.1f} {r.clock_ratio:>6.3f} {r.throughput:>6.3f} "
                     f"{r.power_w:>8.1f} {r.uncapped_power_w:>10.1f} {r.energy_per_work:>7.3f}{note}")
    return "\n".join(lines)


def _plot(profile: Profile, kinds: list[str], rows: list[CurvePoint], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(11, 4.2))
    for k in kinds:
        pts = sorted((r for r in rows if r.kind == k), key=lambda r: r.cap_w)
        xs = [100.0 * r.cap_w / r.max_limit_w for r in pts]
        ax_t.plot(xs, [r.throughput for r in pts], marker=".", label=k)
        ax_e.plot(xs, [r.energy_per_work for r in pts], marker=".", label=k)
    ax_t.set(xlabel="cap, % of the maximum limit", ylabel="throughput (uncapped = 1)", title=f"{profile.name}: throughput")
    ax_e.set(xlabel="cap, % of the maximum limit", ylabel="device energy per work (uncapped = 1)", title="energy per work")
    for ax in (ax_t, ax_e):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
