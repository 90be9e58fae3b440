"""Reading a node's hardware facts from a filesystem root and its tools. Shell.

The root is `/` on a host, the daemonset's host mount, or an emulated node's tree; paths below
it are the standard Linux ones (`sys/class/powercap`, `sys/devices/system/cpu/cpufreq`,
`proc/cpuinfo`, `dev/nvidiactl`). Unreadable or garbage files become warnings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from joulie_agent.discovery import cpufreq, gpuactivity, gputools, powercap
from joulie_agent.discovery.status import HostFacts, expected_gpu_vendor
from joulie_agent.host.nvml import NVML
from joulie_agent.host.toolrun import Runner
from joulie_agent.power.powerexport import HwmonEnergy

MAX_FILE_BYTES = 4 << 20
# One read(2) of an attribute: sysfs attributes are at most a page.
ATTR_READ_BYTES = 1 << 16
POLICY_RE = re.compile(r"^policy(\d+)$")


@dataclass(frozen=True)
class HostPaths:
    """Where a node's files are. `sys_root` is `<root>/sys`, or /host-sys in a daemonset."""

    root: Path
    sys_root: Path
    # Each file of the hot paths joined once: the power export and the CPU loop read the same counter
    # and limit files of every node of a pool every few seconds, and joining a Path cost about what
    # the read did (py-spy over bench/apirequests.py, 25 nodes: 40 % of a node's export sample).
    _files: dict[tuple[str, str], Path] = field(default_factory=dict, init=False, compare=False, repr=False)

    @classmethod
    def under(cls, root: Path, sys_root: Path | None = None) -> HostPaths:
        return cls(root=root, sys_root=sys_root if sys_root is not None else root / "sys")

    @cached_property
    def powercap(self) -> Path:
        return self.sys_root / "class" / "powercap"

    @property
    def powercap_devices(self) -> Path:
        return self.sys_root / "devices" / "virtual" / "powercap"

    @cached_property
    def hwmon(self) -> Path:
        return self.sys_root / "class" / "hwmon"

    def zone_file(self, zone_id: str, name: str) -> Path:
        """``<powercap>/<zone_id>/<name>`` (``energy_uj``, ``constraint_0_power_limit_uw``)."""
        path = self._files.get((zone_id, name))
        if path is None:
            path = self._files[(zone_id, name)] = self.powercap / zone_id / name
        return path

    def counter_file(self, key: str) -> Path:
        """An energy counter's file: a powercap zone id's (``intel-rapl:0``) ``energy_uj``, or an hwmon
        file (``hwmon3/energy1_input``)."""
        path = self._files.get(("", key))
        if path is None:
            zone = powercap.ZONE_DIR_RE.match(key)
            path = self._files[("", key)] = self.zone_file(key, "energy_uj") if zone else self.hwmon / key
        return path

    @property
    def cpufreq(self) -> Path:
        return self.sys_root / "devices" / "system" / "cpu" / "cpufreq"

    @property
    def cpuinfo(self) -> Path:
        return self.root / "proc" / "cpuinfo"

    @property
    def nvidiactl(self) -> Path:
        return self.root / "dev" / "nvidiactl"


def _read_fd(path: Path, to_the_end: bool) -> bytes | None:
    """`path`'s bytes by os.read in ATTR_READ_BYTES pieces, at most MAX_FILE_BYTES; None when unreadable.
    Without `to_the_end`, a piece that comes back short is the end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks: list[bytes] = []
        total = 0
        while total < MAX_FILE_BYTES:
            chunk = os.read(fd, min(ATTR_READ_BYTES, MAX_FILE_BYTES - total))
            chunks.append(chunk)
            total += len(chunk)
            if not chunk or (len(chunk) < ATTR_READ_BYTES and not to_the_end):
                break
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: Path) -> str | None:
    """A sysfs attribute, or a small regular file; None when unreadable.

    sysfs answers an attribute (at most a page) in the first read(2), and a regular file is at its
    end when a read comes back short, so the read that would only find the end is not made. No
    open(): its fstat, isatty ioctl and lseek were three more syscalls, and its read of up to 4 MiB
    allocated that much for every attribute. Under a FUSE view each read(2) is a request the
    simulator serves (one of OPEN, READ, READ, FLUSH, RELEASE saved); the power exporter reads
    counters every few seconds for every node of a pool agent."""
    data = _read_fd(path, to_the_end=False)
    return None if data is None else data.decode("utf-8", "replace")


def read_proc_text(path: Path) -> str | None:
    """A /proc file (cpuinfo), read until a read returns nothing: its seq_file may come back short
    before the end. None when unreadable."""
    data = _read_fd(path, to_the_end=True)
    return None if data is None else data.decode("utf-8", "replace")


def zone_dirs(paths: HostPaths) -> list[Path]:
    """Zone directories, each once (class/powercap links and devices paths resolve to one: D5)."""
    found: dict[str, Path] = {}
    candidates: list[Path] = []
    if paths.powercap.is_dir():
        candidates = sorted(paths.powercap.iterdir())
    elif paths.powercap_devices.is_dir():
        for ct in sorted(paths.powercap_devices.iterdir()):
            if ct.is_dir():
                candidates += sorted(p for p in ct.iterdir())
                candidates += sorted(q for p in ct.iterdir() if p.is_dir() for q in p.iterdir())
    for p in candidates:
        if not powercap.ZONE_DIR_RE.match(p.name) or not p.is_dir():
            continue
        key = os.path.realpath(p)
        found.setdefault(key, p)
    return sorted(found.values(), key=lambda p: p.name)


def read_zone(zone_dir: Path) -> powercap.ParseResult:
    files: dict[str, str | None] = {}
    limit_is_file: dict[int, bool] = {}
    try:
        entries = list(zone_dir.iterdir())
    except OSError as err:
        return powercap.ParseResult(None, [f"powercap: {zone_dir.name}: unreadable ({err.strerror})"])
    for entry in entries:
        n = entry.name
        cm = powercap.CONSTRAINT_FILE_RE.match(n)
        if n in powercap.ZONE_FILES or cm:
            if cm and cm.group("field") == "power_limit_uw":
                limit_is_file[int(cm.group("idx"))] = entry.is_file()
            files[n] = read_text(entry) if entry.is_file() else None
    return powercap.parse_zone(zone_dir.name, files, limit_is_file)


def read_zones(paths: HostPaths) -> tuple[list[powercap.Zone], list[str]]:
    zones: list[powercap.Zone] = []
    warnings: list[str] = []
    for d in zone_dirs(paths):
        res = read_zone(d)
        warnings += res.warnings
        if res.zone is not None:
            zones.append(res.zone)
    return zones, warnings


def read_energy(paths: HostPaths, zone_ids: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    """energy_uj of the given zones (the hot path of the DVFS loop: one read per zone), and
    {``zone/energy_uj``: what it read} for those whose content is no counter (left out)."""
    out: dict[str, int] = {}
    problems: dict[str, str] = {}
    for zid in zone_ids:
        raw = read_text(paths.zone_file(zid, "energy_uj"))
        why = powercap.unusable(raw)
        if why is None:
            out[zid] = powercap.parse_int(raw) or 0
        else:
            problems[f"{zid}/energy_uj"] = why
    return out, problems


def read_uw(path: Path) -> tuple[int | None, str | None]:
    """(the integer a sysfs µW/µJ file holds, or None; why it is no reading, or None)."""
    raw = read_text(path)
    why = powercap.unusable(raw)
    return (None, why) if why is not None else (powercap.parse_int(raw), None)


def read_amd_energy(paths: HostPaths) -> list[HwmonEnergy]:
    """The `energyN_input` files of the amd_energy hwmon, with their labels (`Esocket0`, ...)."""
    out: list[HwmonEnergy] = []
    if not paths.hwmon.is_dir():
        return out
    for d in sorted(paths.hwmon.iterdir()):
        if (read_text(d / "name") or "").strip() != "amd_energy":
            continue
        for f in sorted(d.glob("energy*_input")):
            label = (read_text(d / f.name.replace("_input", "_label")) or "").strip()
            out.append(HwmonEnergy(f"{d.name}/{f.name}", label))
    return out


def read_amdgpu_power_files(paths: HostPaths) -> list[str]:
    """The amdgpu hwmons' power files (`hwmon5/power1_input`, else `power1_average`), in PCI address order."""
    found: list[tuple[str, str]] = []
    if not paths.hwmon.is_dir():
        return []
    for d in paths.hwmon.iterdir():
        if (read_text(d / "name") or "").strip() != "amdgpu":
            continue
        for f in ("power1_input", "power1_average"):
            if (d / f).exists():
                # realpath: .../0000:41:00.0/hwmon/hwmon5 -> sorts by the GPU's PCI address.
                found.append((os.path.realpath(d), f"{d.name}/{f}"))
                break
    return [key for _, key in sorted(found)]


def read_counter_uj(paths: HostPaths, key: str) -> int | None:
    """One energy counter in µJ: a powercap zone id (`intel-rapl:0`) or an hwmon file (`hwmon3/energy1_input`)."""
    v = powercap.parse_int(read_text(paths.counter_file(key)))
    return v if v is not None and v >= 0 else None


def read_policies(paths: HostPaths, known: Sequence[cpufreq.Policy] = ()) -> list[cpufreq.Policy]:
    """The node's cpufreq policies. A policy in ``known`` (the last discovery's) is not read again:
    what discovery keeps of it (driver, cpuinfo range, base frequency) only changes with a reboot,
    which restarts the agent, and a rediscovery every few minutes of up to 384 policies x 5 files
    was most of an emulated cluster's file reads. A policy that appeared is read whole."""
    if not paths.cpufreq.is_dir():
        return []
    before = {p.policy_id: p for p in known}
    seen: set[str] = set()
    out: list[cpufreq.Policy] = []
    # One directory read (the entries' types come with it) and the directory's own real path once: a
    # policy that is a directory here is itself; only a link is resolved. A realpath of each of a
    # node's 384 policies (an lstat per path component) was a quarter of a pool agent's CPU at 1000
    # Nodes, every rediscovery.
    base = os.path.realpath(paths.cpufreq)
    with os.scandir(paths.cpufreq) as entries:
        listed = sorted(entries, key=lambda e: e.name)
    for entry in listed:
        m = POLICY_RE.match(entry.name)
        if not m or not entry.is_dir():
            continue
        real = os.path.realpath(entry.path) if entry.is_symlink() else os.path.join(base, entry.name)
        if real in seen:
            continue
        seen.add(real)
        d = paths.cpufreq / entry.name
        old = before.get(d.name)
        if old is not None:
            out.append(old)
            continue

        def num(name: str, d: Path = d) -> int | None:
            v = powercap.parse_int(read_text(d / name))
            return v if v is not None and v > 0 else None

        out.append(cpufreq.Policy(
            policy_id=d.name, index=int(m.group(1)), driver=(read_text(d / "scaling_driver") or "").strip(),
            cpuinfo_min_khz=num("cpuinfo_min_freq"), cpuinfo_max_khz=num("cpuinfo_max_freq"),
            base_khz=num("base_frequency"), scaling_cur_khz=num("scaling_cur_freq"),
        ))
    return sorted(out, key=lambda p: p.index)


def gpu_inventory(expected_vendor: str, run: Runner, nvml: NVML | None,
                  defaults: bool = False, amd_names: Mapping[int, str] | None = None) -> gputools.Inventory | None:
    """The node's GPUs through NVML, nvidia-smi, amd-smi, rocm-smi (the first that answers).
    ``defaults``: also each nvidia-smi board's default limit, a query of its own that only discovery
    needs (the limit never changes; the power exporter and cap verification re-read inventories
    every few seconds and skip it). ``amd_names``: the AMD boards' product names as read before
    (``amd_inventory``)."""
    warnings: list[str] = []
    if expected_vendor in ("nvidia", ""):
        if nvml is not None:
            try:
                inv = nvml.inventory()
            except Exception as err:
                warnings.append(f"nvml: inventory failed: {err}")
            else:
                if inv.devices:
                    return inv
        res = run(gputools.NVIDIA_QUERY)
        if res.ok:
            nv = gputools.parse_nvidia_csv(res.output)
            nv.warnings = warnings + nv.warnings
            if defaults:
                _nvidia_default_limits(nv, run)
            if nv.devices or expected_vendor == "nvidia":
                return nv
        elif expected_vendor == "nvidia" or res.returncode != 127:
            warnings.append(f"gpu inventory: {res.describe()}")
    if expected_vendor in ("amd", ""):
        amd = amd_inventory(run, warnings, amd_names)
        if amd is not None:
            return amd
    if warnings:
        return gputools.Inventory(expected_vendor or "none", "none", [], warnings)
    return None


def gpu_activity(run: Runner, nvml: NVML | None) -> gpuactivity.ActivityReport:
    """Each NVIDIA board's UUID, utilisation and SM clocks (NVML, else nvidia-smi) with DCGM's SM, tensor
    and DRAM activity where ``dcgmi`` answers; an AMD node or a node without a tool reports no board."""
    return with_dcgm(nvidia_boards(run, nvml), run)


def nvidia_boards(run: Runner, nvml: NVML | None) -> gpuactivity.ActivityReport:
    """Each NVIDIA board's UUID, utilisation and SM clocks: NVML, else nvidia-smi's activity query."""
    report = gpuactivity.ActivityReport()
    if nvml is not None:
        try:
            report = nvml.activity()
        except Exception as err:
            report.warnings.append(f"nvml: activity failed: {err}")
    if not report.boards:
        res = run(gpuactivity.NVIDIA_ACTIVITY_QUERY)
        if res.ok:
            nv = gpuactivity.parse_nvidia_activity(res.output)
            report = gpuactivity.ActivityReport(nv.boards, report.warnings + nv.warnings)
        elif res.returncode != 127:
            report.warnings.append(f"gpu activity: {res.describe()}")
    return report


def with_dcgm(report: gpuactivity.ActivityReport, run: Runner) -> gpuactivity.ActivityReport:
    """``report``'s boards with DCGM's SM, tensor and DRAM activity where ``dcgmi dmon`` answers (no
    board: nothing to ask)."""
    if not report.boards:
        return report
    res = run(gpuactivity.DCGMI_DMON)
    if res.ok:
        dcgm, warnings = gpuactivity.parse_dcgmi_dmon(res.output)
        return gpuactivity.ActivityReport(gpuactivity.with_dcgm(report.boards, dcgm), report.warnings + warnings)
    if res.returncode != 127:  # no dcgmi: no activity ratios, quietly (a node without DCGM)
        return gpuactivity.ActivityReport(report.boards, [*report.warnings, f"gpu activity: {res.describe()}"])
    return report


def read_enforced(inv: gputools.Inventory, run: Runner, nvml: NVML | None) -> str:
    """Fill each NVIDIA device's enforced limit (NVML, else nvidia-smi); returns why the read-back
    failed, "" when it answered. A device that does not report one (NVMLError_NotSupported,
    ``[N/A]``) is unknown and its requested limit stands in; a query that fails or answers
    garbage leaves the cap unverified."""
    enforced: dict[int, float] = {}
    failures: list[str] = []
    if inv.source == "nvml" and nvml is not None:
        lib = nvml.lib
        for d in inv.devices:
            try:
                enforced[d.index] = lib.nvmlDeviceGetEnforcedPowerLimit(lib.nvmlDeviceGetHandleByIndex(d.index)) / 1000
            except Exception as err:
                what = f"nvml: gpu {d.index}: nvmlDeviceGetEnforcedPowerLimit: {err}"
                inv.warnings.append(what)
                # NotSupported (the board keeps no enforced limit) and an old pynvml without
                # the call are unknowns; anything else is a read-back that failed.
                if not isinstance(err, AttributeError) and type(err).__name__ != "NVMLError_NotSupported":
                    failures.append(what)
    else:
        res = run(gputools.NVIDIA_ENFORCED_QUERY)
        if res.ok:
            enforced, warnings = gputools.parse_nvidia_enforced(res.output)
            inv.warnings.extend(warnings)
            failures.extend(warnings)
        else:
            failures.append(res.describe())
    inv.devices = [replace(d, enforced_w=enforced.get(d.index)) for d in inv.devices]
    return "; ".join(failures)[:300]


def _nvidia_default_limits(inv: gputools.Inventory, run: Runner) -> None:
    """Each board's default limit (otherwise discovery takes the maximum for it: 400 W, not 310 W, on
    an H100 NVL). A tool that refuses the field leaves it unknown, quietly: the inventory itself is
    complete without it."""
    if not inv.devices:
        return
    res = run(gputools.NVIDIA_DEFAULT_QUERY)
    if not res.ok:
        return
    defaults, warnings = gputools.parse_nvidia_default(res.output)
    inv.warnings.extend(warnings)
    inv.devices = [replace(d, default_w=defaults.get(d.index, d.default_w)) for d in inv.devices]


def amd_inventory(run: Runner, warnings: list[str],
                  names: Mapping[int, str] | None = None) -> gputools.Inventory | None:
    """The AMD boards through amd-smi's limits (named by rocm-smi's product query), else legacy
    rocm-smi's, else rocm-smi's devices without limits. ``names``: the product names as read before
    (a board's model does not change while the node runs): the power export reads an AMD node's
    inventory every few seconds, and the product query was one tool start of two each time."""
    prod = None
    if names is None:
        prod = run(gputools.ROCMSMI_PRODUCT_QUERY)
        names = {d.index: d.name for d in gputools.parse_rocmsmi(prod.output).devices if d.name} if prod.ok else {}
    res = run(gputools.AMDSMI_LIMITS)
    if res.ok:
        inv = gputools.parse_amdsmi_limits(res.output)
        if inv.devices:
            gputools.merge_names(inv, names)
            inv.warnings = warnings + inv.warnings
            return inv
        warnings += inv.warnings
    elif res.returncode != 127:
        warnings.append(f"gpu inventory: {res.describe()}")
    legacy = run(gputools.ROCMSMI_LEGACY_QUERY)
    if legacy.returncode == 127:
        return None
    if not gputools.rocmsmi_rejected_flag(legacy.output):
        inv = gputools.parse_rocmsmi(legacy.output)
        if inv.devices:
            inv.warnings = warnings + inv.warnings
            return inv
    # Current rocm-smi has no cap query: devices and names only, limits unknown.
    if prod is None:
        prod = run(gputools.ROCMSMI_PRODUCT_QUERY)
    if prod.ok:
        inv = gputools.parse_rocmsmi(prod.output)
        if inv.devices:
            inv.warnings = warnings + inv.warnings + ["rocm-smi: this version reports no power cap range"]
            return inv
    warnings.append(f"gpu inventory: {legacy.describe()}")
    return None


def read_facts(paths: HostPaths, labels: dict[str, str], allocatable: dict[str, str], run: Runner,
               nvml: NVML | None, exists: Callable[[Path], bool] = os.path.lexists,
               capacity: dict[str, str] | None = None, known: HostFacts | None = None) -> HostFacts:
    """What discovery reads of the node; ``known``: the last good discovery's facts, whose cpufreq
    policies are kept rather than read again (:func:`read_policies`)."""
    facts = HostFacts(labels=labels, allocatable=allocatable, capacity=capacity or {})
    facts.cpuinfo_text = read_proc_text(paths.cpuinfo)
    facts.zones, zone_warnings = read_zones(paths)
    facts.warnings += zone_warnings
    facts.policies = read_policies(paths, known.policies if known is not None else ())
    facts.nvidiactl = exists(paths.nvidiactl)
    vendor = expected_gpu_vendor(labels, facts.nvidiactl)
    facts.gpu = gpu_inventory(vendor, run, nvml, defaults=True)
    return facts
