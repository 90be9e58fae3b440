"""``joulie-simulator curve``: performance and power versus cap and SM clock lock, from the device
models (a shell over ``physics.curve``: argument parsing, table/JSON output and the optional
matplotlib plot, ``commands.curveplot``).

    curve --profile P --class K --cap-pct 60 [--util U] --json        one JSON object
    curve --profile P --class K --cap-pct 80 --cap-pct 60              a table (JSON list with --json)
    curve --profile P --class K --clock-pct 60 [--cap-pct 80]          a clock lock, alone or with a cap
    curve --profile P --class K --clock-mhz 1200                       the lock in MHz (the board's SM clock)
    curve --profile P --class K,K2|all --sweep [--plot FILE.png]       100 % down to the lowest cap
    curve --profile P --class K --sweep-clock [--cap-pct 80] [--plot]  100 % down to the lowest supported clock

A lock below the board's lowest supported clock is clamped to it (and said), one above its maximum
refused. Exit 2 with the valid names for an unknown profile or class.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

from joulie_hwprofiles.schema import Profile, ProfileError, builtin_profile, builtin_profile_names
from joulie_simulator.physics.curve import CurveError, CurvePoint, kinds_for, point, sweep_clock_pcts, sweep_pcts
from joulie_workload.kinds import KINDS

NAME = "joulie-simulator"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cu = sub.add_parser("curve", help="throughput, power and energy per work versus a power cap and a clock lock (the device model)")
    cu.add_argument("--profile", required=True, help="builtin profile name")
    cu.add_argument("--class", dest="kinds", required=True,
                    help=f"workload kind(s), comma-separated, or 'all': {', '.join(KINDS)}")
    cu.add_argument("--cap-pct", type=float, action="append", default=[],
                    help="cap as %% of the device's maximum limit (repeatable; below the device minimum it is clamped)")
    lock = cu.add_mutually_exclusive_group()
    lock.add_argument("--clock-pct", type=float, action="append", default=[],
                      help="GPU SM clock lock as %% of the board's maximum SM clock (repeatable)")
    lock.add_argument("--clock-mhz", type=float, action="append", default=[],
                      help="GPU SM clock lock in MHz (repeatable; within the board's supported clocks)")
    cu.add_argument("--sweep", action="store_true", help="every 5 %% from 100 %% down to the device's lowest cap")
    cu.add_argument("--sweep-clock", action="store_true",
                    help="every 5 %% of the maximum SM clock down to the board's lowest supported clock")
    cu.add_argument("--util", type=float, default=None, help="natural draw 0..1 (default: the kind's mean; one-phase kinds)")
    cu.add_argument("--json", action="store_true", help="JSON: one object for one point, else a list")
    cu.add_argument("--plot", type=Path, help="PNG: throughput and energy per work versus cap (or clock), the cited points beside")


def _fail(msg: str) -> int:
    print(f"{NAME}: {msg}", file=sys.stderr)
    return 2


def _check(profile: Profile, args: argparse.Namespace) -> str | None:
    """Why the arguments cannot be answered, or None."""
    if not (args.cap_pct or args.sweep or args.clock_pct or args.clock_mhz or args.sweep_clock):
        return "give --cap-pct (repeatable), --clock-pct/--clock-mhz, --sweep or --sweep-clock"
    if args.sweep and args.sweep_clock:
        return "--sweep and --sweep-clock: sweep one at a time (the other setting fixed with --cap-pct or --clock-pct)"
    if any(not 0 <= c <= 100 for c in args.cap_pct):
        return f"--cap-pct: {args.cap_pct} must lie within 0..100"
    if any(not 0 < c <= 100 for c in args.clock_pct):
        return f"--clock-pct: {args.clock_pct} must lie within 0 (excluded)..100"
    top = profile.gpus.sm_clock_max_mhz if profile.gpus is not None else None
    if args.clock_mhz and top is None:
        return f"--clock-mhz: profile {profile.name!r} has no GPUs"
    if top is not None and any(not 0 < m <= top for m in args.clock_mhz):
        return f"--clock-mhz: {args.clock_mhz} must lie within 0 (excluded)..{top:g} MHz, the board's maximum SM clock"
    if args.util is not None and not 0 <= args.util <= 1:
        return f"--util: {args.util} must lie within 0..1"
    return None


def run(args: argparse.Namespace) -> int:
    try:
        profile = builtin_profile(args.profile)
    except ProfileError:
        return _fail(f"--profile: {args.profile!r} is not a builtin profile; valid: {', '.join(builtin_profile_names())}")
    kinds = kinds_for(profile) if args.kinds == "all" else [k.strip() for k in args.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        return _fail(f"--class: {', '.join(bad) or repr(args.kinds)} is not a workload kind; valid: {', '.join(KINDS)} (or all)")
    why = _check(profile, args)
    if why:
        return _fail(why)
    try:
        rows = _rows(profile, kinds, args)
    except CurveError as e:
        return _fail(f"{e}; kinds this profile can run: {', '.join(kinds_for(profile))}")
    if args.json:
        out = [r.record() for r in rows]
        print(json.dumps(out[0] if len(out) == 1 else out, sort_keys=True))
    else:
        print(_table(rows))
    _say_clamped(rows)
    if args.plot:
        from joulie_simulator.commands.curveplot import plot

        plot(profile, kinds, rows, args.plot, "clock" if args.sweep_clock else "cap")
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def _clock_pcts(profile: Profile, args: argparse.Namespace) -> list[float | None]:
    top = profile.gpus.sm_clock_max_mhz if profile.gpus is not None else 1.0
    given = list(args.clock_pct) + [100.0 * m / top for m in args.clock_mhz]
    pcts: list[float | None] = [*given, *(sweep_clock_pcts(profile) if args.sweep_clock else [])]
    return pcts or [None]


def _rows(profile: Profile, kinds: list[str], args: argparse.Namespace) -> list[CurvePoint]:
    rows: list[CurvePoint] = []
    clocks = _clock_pcts(profile, args)
    for k in kinds:
        caps = list(args.cap_pct) + (sweep_pcts(profile, k, args.util) if args.sweep else [])
        for cap, clock in itertools.product(caps or [100.0], clocks):
            rows.append(point(profile, k, cap, args.util, clock))
    return rows


def _say_clamped(rows: list[CurvePoint]) -> None:
    for r in rows:
        if r.clamped:
            print(f"{NAME}: {r.kind}: --cap-pct {r.cap_pct:g} is below the device's lowest cap "
                  f"{r.min_cap_pct:.1f} % ({r.cap_w:.1f} W): clamped", file=sys.stderr)
        if r.lock_clamped:
            print(f"{NAME}: {r.kind}: clock lock {r.clock_pct:g} % is below the board's lowest supported clock "
                  f"({r.lock_mhz:g} MHz): clamped", file=sys.stderr)


def _table(rows: list[CurvePoint]) -> str:
    head = (f"{'kind':<22} {'cap %':>6} {'cap W':>7} {'lock MHz':>8} {'clock':>6} {'thru':>6} {'power W':>8} "
            f"{'uncapped W':>10} {'E/work':>7}")
    lines = [f"{rows[0].profile} ({rows[0].device.split(':', 1)[1] if rows else ''})", head]
    for r in rows:
        note = ("  clamped" if r.clamped else "") + ("  lock clamped" if r.lock_clamped else "")
        lock = f"{r.lock_mhz:>8.0f}" if r.lock_mhz is not None else f"{'-':>8}"
        lines.append(f"{r.kind:<22} {r.cap_pct:>6.1f} {r.cap_w:>7.1f} {lock} {r.clock_ratio:>6.3f} {r.throughput:>6.3f} "
                     f"{r.power_w:>8.1f} {r.uncapped_power_w:>10.1f} {r.energy_per_work:>7.3f}{note}")
    return "\n".join(lines)
