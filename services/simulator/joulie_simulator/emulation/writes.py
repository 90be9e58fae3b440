"""Writes to emulated files, answered as the kernel answers them.

``apply_write(profile, state, bind, data)`` returns the new state and a :class:`WriteOutcome`:
``errno`` 0 when accepted (possibly quantised, clamped or resolved to a table entry), else the
errno a real kernel returns at once:

- ``EINVAL``: not a number where the kernel parses one (``kstrtou64``: optional ``+``, digits, one
  trailing newline), a governor or preference the driver does not list, ``enabled`` other than
  0/1, a zero time window, an amdgpu cap outside ``[power1_cap_min, power1_cap_max]``.
- ``ENODATA``: a RAPL limit the platform does not support (the captured DRAM zone answers
  "No data available").
- ``EACCES``: a RAPL limit locked by the BIOS (``intel_rapl_common`` returns -EACCES), or a
  read-only file (the shells answer this before calling here).
- ``EBUSY``: an energy_performance_preference other than ``performance`` while the governor is
  ``performance`` (intel_pstate and amd-pstate-epp refuse it with -EBUSY).

GPU SM clock locks (``lock_max_mhz`` of the board's truth): the NVIDIA lock file
(``state/nvml/gpuN/locked_clocks_mhz``, written by ``nvidia-smi -lgc/-rgc``) takes ``MIN,MAX`` or
``none``; the driver holds the ceiling at the closest clock the board supports, so a ceiling
outside the supported range is clamped into it, as nvidia-smi accepts above-range values and the
board runs at its maximum. A floor above the board's lowest clock is refused (``EINVAL``): the
emulator models the ceiling only. The amdgpu OverDrive table (``pp_od_clk_voltage``) takes the
kernel's commands: ``s 1 MHZ`` (the sclk soft maximum, ``EINVAL`` outside the OD_RANGE), ``r``
(back to the default), ``c`` (commit; the emulator commits each command at once, as two writes to one
file count as the last in files mode); ``s 0`` (the soft minimum) is refused (``EINVAL``), not modelled.

Refusals leave the state unchanged, and so does a write of the value a limit already holds (the
same state object comes back: the derived fields of a state are already derived from its limits).
Pure: no I/O.
"""

from __future__ import annotations

import errno
import math
from dataclasses import dataclass, replace

from joulie_hwprofiles.schema import Profile
from joulie_simhw.gpustate import parse_locked_clocks
from joulie_simulator.emulation.render import Bind
from joulie_simulator.physics.model import NodeState, default_epp, derive

EPP_CHOICES = ("default", "performance", "balance_performance", "balance_power", "power")


@dataclass(frozen=True)
class WriteOutcome:
    errno: int
    # accepted | quantized | clamped | resolved | rejected
    kind: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.errno == 0

    @property
    def error_type(self) -> str:
        """The lower-case errno name (``einval``), the ``error.type`` of a rejected-write event."""
        return errno.errorcode.get(self.errno, "unknown").lower() if self.errno else ""


def _reject(code: int, detail: str) -> WriteOutcome:
    return WriteOutcome(code, "rejected", detail)


def _text(data: bytes) -> str | None:
    try:
        s = data.decode("ascii")
    except UnicodeDecodeError:
        return None
    return s[:-1] if s.endswith("\n") else s


def parse_kstrtou(data: bytes, base0: bool = False) -> int | None:
    """The kernel's kstrtou64 (base 10) or kstrtoul(.., 0) (0x hex, 0 octal); None where it says EINVAL."""
    s = _text(data)
    if s is None:
        return None
    if s.startswith("+"):
        s = s[1:]
    if not s:
        return None
    try:
        if base0:
            if s[:2].lower() == "0x":
                return int(s[2:], 16) if s[2:] else None
            if len(s) > 1 and s[0] == "0":
                return int(s[1:], 8)
        if not s.isdigit():
            return None
        return int(s, 10)
    except ValueError:
        return None


def _word(data: bytes) -> str | None:
    s = _text(data)
    if s is None:
        return None
    parts = s.split()
    return parts[0] if parts else None


def apply_write(profile: Profile, state: NodeState, bind: Bind, data: bytes) -> tuple[NodeState, WriteOutcome]:
    what, i, j = bind
    if what == "zone_limit":
        return _zone_limit(profile, state, i, j, data)
    if what == "zone_window":
        v = parse_kstrtou(data)
        if v is None or v == 0:
            return state, _reject(errno.EINVAL, f"time window {data!r} is not a positive integer")
        return _set_zone(profile, state, i, windows=(j, v)), WriteOutcome(0, "accepted")
    if what == "zone_enabled":
        v = parse_kstrtou(data)
        if v not in (0, 1):
            return state, _reject(errno.EINVAL, f"enabled takes 0 or 1, got {data!r}")
        z = state.zones[i]
        zones = state.zones[:i] + (replace(z, enabled=bool(v)),) + state.zones[i + 1 :]
        return derive(profile, replace(state, zones=zones)), WriteOutcome(0, "accepted")
    if what in ("pol_min", "pol_max"):
        return _freq(profile, state, i, what == "pol_max", data)
    if what == "pol_governor":
        cf = profile.cpufreq
        assert cf is not None
        w = _word(data)
        if w not in cf.available_governors:
            return state, _reject(errno.EINVAL, f"governor {w!r} is not one of {' '.join(cf.available_governors)}")
        govs = _set(state.pol_governor, i, w)
        epps = state.pol_epp
        if epps and w == "performance":
            epps = _set(epps, i, "performance")
        elif epps and state.pol_governor[i] == "performance":
            epps = _set(epps, i, default_epp(profile) if w == "performance" else "balance_performance")
        return derive(profile, replace(state, pol_governor=govs, pol_epp=epps)), WriteOutcome(0, "accepted")
    if what == "pol_epp":
        w = _word(data)
        if w not in EPP_CHOICES:
            return state, _reject(errno.EINVAL, f"preference {w!r} is not one of {' '.join(EPP_CHOICES)}")
        if state.pol_governor[i] == "performance" and w != "performance":
            return state, _reject(errno.EBUSY, "the performance governor allows only the performance preference")
        return replace(state, pol_epp=_set(state.pol_epp, i, w)), WriteOutcome(0, "accepted")
    if what == "boost":
        v = parse_kstrtou(data)
        if v not in (0, 1):
            return state, _reject(errno.EINVAL, f"boost takes 0 or 1, got {data!r}")
        return replace(state, boost=bool(v)), WriteOutcome(0, "accepted")
    if what == "hsmp_cap":
        assert profile.hsmp is not None
        v = parse_kstrtou(data)
        if v is None:
            return state, _reject(errno.EINVAL, f"{data!r} is not a power in microwatts")
        # HSMP takes milliwatts: the microwatts below a milliwatt are dropped; above the max, the max.
        stored = min((v // 1000) * 1000, profile.hsmp.cap_max_uw)
        kind = "accepted" if stored == v else ("clamped" if v > profile.hsmp.cap_max_uw else "quantized")
        st = derive(profile, replace(state, hsmp_cap_uw=_set_int(state.hsmp_cap_uw, i, stored)))
        return st, WriteOutcome(0, kind)
    if what == "amdgpu_cap":
        g = profile.gpus
        assert g is not None
        v = parse_kstrtou(data)
        if v is None or v >= 2**32:
            return state, _reject(errno.EINVAL, f"{data!r} is not a power in microwatts")
        watts = math.floor(v / 1e6)
        if not g.min_w <= watts <= g.max_w:
            return state, _reject(errno.EINVAL, f"{watts} W is outside [{g.min_w:g}, {g.max_w:g}] W")
        return _set_gpu(state, i, float(watts)), WriteOutcome(0, "accepted" if v % 1_000_000 == 0 else "quantized")
    if what == "nvml_limit":
        v = parse_kstrtou(data)
        if v is None:
            return state, _reject(errno.EINVAL, f"{data!r} is not a power in milliwatts")
        g = profile.gpus
        assert g is not None
        kind = "clamped" if not g.min_w * 1000 <= v <= g.max_w * 1000 else "accepted"
        return _set_gpu(state, i, v / 1000), WriteOutcome(0, kind)
    if what == "nvml_lock":
        return _nvml_lock(profile, state, i, data)
    if what == "amdgpu_od":
        return _amdgpu_od(profile, state, i, data)
    return state, _reject(errno.EACCES, f"{what} is read-only")


def _set_lock(state: NodeState, i: int, lock_mhz: float | None) -> NodeState:
    g = state.gpus[i]
    if g.lock_max_mhz == lock_mhz:
        return state
    return replace(state, gpus=state.gpus[:i] + (replace(g, lock_max_mhz=lock_mhz),) + state.gpus[i + 1 :])


def _nvml_lock(profile: Profile, state: NodeState, i: int, data: bytes) -> tuple[NodeState, WriteOutcome]:
    g = profile.gpus
    assert g is not None
    text = _text(data)
    try:
        lock = parse_locked_clocks(text if text is not None else "?")
    except ValueError as err:
        return state, _reject(errno.EINVAL, str(err))
    if lock is None:
        return _set_lock(state, i, None), WriteOutcome(0, "accepted")
    lo, hi = lock
    if lo > hi:
        return state, _reject(errno.EINVAL, f"locked clocks {lo},{hi} MHz: the minimum is above the maximum")
    if lo > g.sm_clock_min_mhz:
        return state, _reject(errno.EINVAL, f"a floor of {lo} MHz above the lowest clock {g.sm_clock_min_mhz:g} MHz "
                              "is not modelled (the emulator models the ceiling only)")
    ceiling = min(max(float(hi), g.sm_clock_min_mhz), g.sm_clock_max_mhz)
    return _set_lock(state, i, ceiling), WriteOutcome(0, "clamped" if ceiling != hi else "accepted")


def _amdgpu_od(profile: Profile, state: NodeState, i: int, data: bytes) -> tuple[NodeState, WriteOutcome]:
    g = profile.gpus
    assert g is not None
    words = (_text(data) or "").split()
    if words == ["r"]:
        return _set_lock(state, i, None), WriteOutcome(0, "accepted")
    if words == ["c"]:
        return state, WriteOutcome(0, "accepted")
    if len(words) == 3 and words[:2] == ["s", "1"] and words[2].isdigit():
        mhz = int(words[2])
        if not g.sm_clock_min_mhz <= mhz <= g.sm_clock_max_mhz:
            return state, _reject(errno.EINVAL, f"sclk {mhz} MHz is outside the OD_RANGE "
                                  f"[{g.sm_clock_min_mhz:g}, {g.sm_clock_max_mhz:g}] MHz")
        return _set_lock(state, i, None if mhz == g.sm_clock_max_mhz else float(mhz)), WriteOutcome(0, "accepted")
    return state, _reject(errno.EINVAL, f"{data[:40]!r} is not an OverDrive command the emulator models "
                          "(s 1 MHZ, r, c)")


def _set(t: tuple[str, ...], i: int, v: str) -> tuple[str, ...]:
    return t[:i] + (v,) + t[i + 1 :]


def _set_gpu(state: NodeState, i: int, limit_w: float) -> NodeState:
    g = state.gpus[i]
    if g.limit_w == limit_w:
        return state
    return replace(state, gpus=state.gpus[:i] + (replace(g, limit_w=limit_w),) + state.gpus[i + 1 :])


def _set_zone(
    profile: Profile, state: NodeState, i: int, *, limits: tuple[int, int] | None = None, windows: tuple[int, int] | None = None
) -> NodeState:
    z = state.zones[i]
    if (limits is None or z.limits_uw[limits[0]] == limits[1]) and (windows is None or z.windows_us[windows[0]] == windows[1]):
        return state  # the value it had: nothing to derive again (agents rewrite unchanged caps every period)
    if limits is not None:
        lim = list(z.limits_uw)
        lim[limits[0]] = limits[1]
        z = replace(z, limits_uw=tuple(lim))
    if windows is not None:
        win = list(z.windows_us)
        win[windows[0]] = windows[1]
        z = replace(z, windows_us=tuple(win))
    return derive(profile, replace(state, zones=state.zones[:i] + (z,) + state.zones[i + 1 :]))


def _zone_limit(profile: Profile, state: NodeState, i: int, j: int, data: bytes) -> tuple[NodeState, WriteOutcome]:
    pc = profile.powercap
    assert pc is not None
    z = state.zones[i]
    spec = pc.package if z.kind == "package" else pc.dram
    assert spec is not None
    c = spec.constraints[j]
    if c.reject_writes == "enodata":
        return state, _reject(errno.ENODATA, f"{z.name} {c.name} limit is not supported")
    if c.reject_writes == "eacces":
        return state, _reject(errno.EACCES, f"{z.name} {c.name} limit is locked by the BIOS")
    v = parse_kstrtou(data)
    if v is None:
        return state, _reject(errno.EINVAL, f"{data!r} is not a power in microwatts")
    # The register holds whole power units: the kernel stores the quantised value and reads it back.
    stored = (v // pc.power_unit_uw) * pc.power_unit_uw
    kind = "quantized" if stored != v else ("clamped" if v > c.max_power_uw else "accepted")
    return _set_zone(profile, state, i, limits=(j, stored)), WriteOutcome(0, kind)


def _freq(profile: Profile, state: NodeState, i: int, is_max: bool, data: bytes) -> tuple[NodeState, WriteOutcome]:
    cf = profile.cpufreq
    assert cf is not None
    v = parse_kstrtou(data, base0=True)
    if v is None:
        return state, _reject(errno.EINVAL, f"{data!r} is not a frequency in kHz")
    eff = min(max(v, cf.min_khz), cf.max_khz)
    kind = "clamped" if eff != v else "accepted"
    if cf.available_khz:
        table = sorted(cf.available_khz)
        pick = [k for k in table if k <= eff] if is_max else [k for k in table if k >= eff]
        resolved = (pick[-1] if is_max else pick[0]) if pick else (table[0] if is_max else table[-1])
        if resolved != eff:
            eff, kind = resolved, "resolved"
    lo, hi = state.pol_min_khz[i], state.pol_max_khz[i]
    if is_max:
        hi = eff
        lo = min(lo, hi)
    else:
        lo = min(eff, hi)
        if lo != eff:
            kind = "clamped"
    if (lo, hi) == (state.pol_min_khz[i], state.pol_max_khz[i]):
        return state, WriteOutcome(0, kind)
    st = replace(state, pol_min_khz=_set_int(state.pol_min_khz, i, lo), pol_max_khz=_set_int(state.pol_max_khz, i, hi))
    return derive(profile, st), WriteOutcome(0, kind)


def _set_int(t: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    return t[:i] + (v,) + t[i + 1 :]
