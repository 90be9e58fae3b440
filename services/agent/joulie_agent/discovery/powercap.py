"""Powercap (RAPL) zones: parsing, classification, cap ranges, energy deltas. Pure: no I/O.

The kernel's powercap tree has one directory per zone (`intel-rapl:0`, `intel-rapl:0:0`,
`intel-rapl-mmio:0`, `intel-rapl:1` named `psys`, ...). Values are µW, µJ and µs; the unit is in
every name here and conversion to watts happens only in the functions that say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ZONE_DIR_RE = re.compile(r"^(?P<ctype>[a-z0-9]+(?:-[a-z0-9]+)*):(?P<idx>[0-9a-f]+)(?::(?P<sub>[0-9a-f]+))?$")
PACKAGE_NAME_RE = re.compile(r"^package-(?P<pkg>\d+)(?:-die-(?P<die>\d+))?$")
CONSTRAINT_FILE_RE = re.compile(
    r"^constraint_(?P<idx>[0-9]+)_(?P<field>name|power_limit_uw|max_power_uw|min_power_uw|time_window_us)$"
)
ZONE_FILES = ("name", "enabled", "energy_uj", "max_energy_range_uj")
RAPL_CONTROL_TYPE = "intel-rapl"
LONG_TERM = "long_term"


@dataclass(frozen=True)
class Constraint:
    index: int
    name: str = ""
    power_limit_uw: int | None = None
    max_power_uw: int | None = None
    min_power_uw: int | None = None
    time_window_us: int | None = None
    # The limit file exists as a regular file (a write may still be refused by the kernel).
    limit_is_file: bool = True


@dataclass(frozen=True)
class Zone:
    """One powercap zone as read from its directory."""

    zone_id: str  # directory basename, e.g. intel-rapl:0:1
    control_type: str  # intel-rapl, intel-rapl-mmio, ...
    depth: int  # 1 for top-level zones, 2 for sub-zones
    name: str
    enabled: bool | None = None
    energy_uj: int | None = None
    max_energy_range_uj: int | None = None
    constraints: tuple[Constraint, ...] = ()

    @property
    def package_index(self) -> int | None:
        m = PACKAGE_NAME_RE.match(self.name)
        return int(m.group("pkg")) if m else None

    @property
    def die_index(self) -> int | None:
        m = PACKAGE_NAME_RE.match(self.name)
        return int(m.group("die")) if m and m.group("die") is not None else None

    @property
    def is_package(self) -> bool:
        """A package (or package die) zone of the MSR interface: what a per-socket cap writes.

        intel-rapl-mmio's `package-0` is the same package reached through MMIO, and psys is the
        whole platform; neither is a socket (the original counted both, defect D11).
        """
        return self.control_type == RAPL_CONTROL_TYPE and self.depth == 1 and self.package_index is not None

    def long_term(self) -> Constraint | None:
        """The PL1 constraint: the one named long_term, else constraint 0."""
        for c in self.constraints:
            if c.name == LONG_TERM:
                return c
        for c in self.constraints:
            if c.index == 0:
                return c
        return None


@dataclass
class ParseResult:
    zone: Zone | None
    warnings: list[str] = field(default_factory=list)


def parse_int(text: str | None) -> int | None:
    """A decimal sysfs integer, or None for missing/garbage content."""
    if text is None:
        return None
    s = text.strip()
    # At most 20 digits (sysfs integers are 64-bit): a longer run is garbage, and past 4300 digits
    # int() raises with an interpreter hint (found by parsers_fuzz_test, issue 23).
    if not re.fullmatch(r"[+-]?[0-9]{1,20}", s):
        return None
    return int(s)


def unusable(raw: str | None) -> str | None:
    """Why a sysfs integer file's content is no reading (what it read, bounded), or None when it is one."""
    if raw is None:
        return "is unreadable"
    val = parse_int(raw)
    if val is None:
        return f"reads {raw.strip()[:40]!r}, not an integer"
    if val < 0:
        return f"reads {val}, a negative value"
    return None


def parse_zone(zone_id: str, files: dict[str, str | None], limit_is_file: dict[int, bool] | None = None) -> ParseResult:
    """Build a Zone from the contents of its files (None = unreadable). Garbage becomes warnings."""
    m = ZONE_DIR_RE.match(zone_id)
    if not m:
        return ParseResult(None, [f"powercap: {zone_id}: not a zone directory name"])
    warnings: list[str] = []
    name = (files.get("name") or "").strip()
    if not name:
        return ParseResult(None, [f"powercap: {zone_id}/name: missing or empty; zone ignored"])

    def num(fname: str) -> int | None:
        raw = files.get(fname)
        val = parse_int(raw)
        if raw is not None and raw.strip() and val is None:
            warnings.append(f"powercap: {zone_id}/{fname}: {raw.strip()[:40]!r} is not an integer")
        if val is not None and val < 0:
            warnings.append(f"powercap: {zone_id}/{fname}: negative value {val}")
            return None
        return val

    enabled_raw = num("enabled")
    constraints: dict[int, dict[str, str | None]] = {}
    for fname, content in files.items():
        cm = CONSTRAINT_FILE_RE.match(fname)
        if cm:
            constraints.setdefault(int(cm.group("idx")), {})[cm.group("field")] = content
    parsed: list[Constraint] = []
    for idx in sorted(constraints):
        vals = constraints[idx]
        is_file = (limit_is_file or {}).get(idx, True)
        parsed.append(
            Constraint(
                index=idx,
                name=(vals.get("name") or "").strip(),
                power_limit_uw=num(f"constraint_{idx}_power_limit_uw") if is_file else None,
                max_power_uw=num(f"constraint_{idx}_max_power_uw"),
                min_power_uw=num(f"constraint_{idx}_min_power_uw"),
                time_window_us=num(f"constraint_{idx}_time_window_us"),
                limit_is_file=is_file,
            )
        )
    zone = Zone(
        zone_id=zone_id,
        control_type=m.group("ctype"),
        depth=2 if m.group("sub") is not None else 1,
        name=name,
        enabled=None if enabled_raw is None else enabled_raw != 0,
        energy_uj=num("energy_uj"),
        max_energy_range_uj=num("max_energy_range_uj"),
        constraints=tuple(parsed),
    )
    return ParseResult(zone, warnings)


def package_zones(zones: list[Zone]) -> list[Zone]:
    """Zones a per-socket package cap is written to, sorted by (package, die)."""
    pkgs = [z for z in zones if z.is_package]
    return sorted(pkgs, key=lambda z: (z.package_index or 0, z.die_index or 0, z.zone_id))


def dies_per_package(zones: list[Zone]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for z in package_zones(zones):
        pkg = z.package_index or 0
        counts[pkg] = counts.get(pkg, 0) + 1
    return counts


def socket_cap_range_w(zones: list[Zone]) -> tuple[float, float] | None:
    """(min, max) settable PL1 per socket in watts, or None when no package zone states a max.

    A socket split into die zones has the sum of its dies' maxima. RAPL has no
    constraint_*_min_power_uw on Intel, so the minimum is 0 unless the kernel states one.
    """
    per_pkg_max_uw: dict[int, int] = {}
    per_pkg_min_uw: dict[int, int] = {}
    for z in package_zones(zones):
        c = z.long_term()
        if c is None or not c.max_power_uw:
            continue
        pkg = z.package_index or 0
        per_pkg_max_uw[pkg] = per_pkg_max_uw.get(pkg, 0) + c.max_power_uw
        if c.min_power_uw:
            per_pkg_min_uw[pkg] = per_pkg_min_uw.get(pkg, 0) + c.min_power_uw
    if not per_pkg_max_uw:
        return None
    max_w = min(per_pkg_max_uw.values()) / 1e6
    min_w = max(per_pkg_min_uw.values()) / 1e6 if per_pkg_min_uw else 0.0
    return (min_w, max_w)


def energy_delta_uj(prev_uj: int, cur_uj: int, max_range_uj: int | None) -> int | None:
    """Energy between two readings of one counter, correcting one wrap at max_energy_range_uj.

    None when the counter went backwards and no range is known (a reset, not a wrap).
    """
    delta = cur_uj - prev_uj
    if delta >= 0:
        return delta
    if max_range_uj and max_range_uj > 0:
        return delta + max_range_uj
    return None


def energy_zones(zones: list[Zone]) -> list[Zone]:
    """Zones whose energy adds up to CPU package power: packages only (psys would double count)."""
    return [z for z in package_zones(zones) if z.energy_uj is not None]
