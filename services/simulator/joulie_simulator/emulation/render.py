"""A node's tree as data: every path the agent can see, who owns it, and its content.

``layout(profile, node)`` lists the entries; ``content(profile, state, bind)`` gives a bound
file's current text. Neither touches the filesystem: ``views.files`` writes them to disk and
``views.fuse`` serves them.

Owners: **R** rendered once (read-only to the agent); **S** emulator-owned, moves with the
physics (counters, current frequency, GPU state); **A** agent-writable (limits, governors),
read back with kernel write semantics (``writes.py``). Modes mirror sysfs: 0444 read-only,
0644 limits, 0400 ``energy_uj``.

Paths are relative to the node root ``<root>/<node>/``: ``sys/`` is what the agent mounts as
``/sys`` (``/host-sys``), ``proc/cpuinfo``, ``dev/nvidiactl``, ``state/`` holds the GPU state for
fakesmi (format: ``joulie_simhw.gpustate``) and the emulator's truth and ledger.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from joulie_hwprofiles.schema import Profile
from joulie_simhw.gpustate import (
    FAULTS_FILE,
    NVIDIA_DRIVER_VERSION,
    GpuDevice,
    GpuState,
    ToolsManifest,
    faults_json,
    format_locked_clocks,
    nvml_limit_file,
    nvml_locked_clocks_file,
)
from joulie_simulator.emulation.ledgertext import ledger_json
from joulie_simulator.physics import node as node_physics
from joulie_simulator.physics.model import GpuTruth, NodeState, cpu_socket, gpu_uuid, policies

# A bound file: (what, index, sub-index). The index names the zone, policy, socket or GPU.
Bind = tuple[str, int, int]

RAPL = "sys/devices/virtual/powercap/intel-rapl"
CPUFREQ = "sys/devices/system/cpu/cpufreq"
GPU_BUS0 = 0x10
FAKESMI_PATH = "/emu/lib/fakesmi"
LEDGER_FILE = "state/emulator.json"


@dataclass(frozen=True)
class Entry:
    path: str
    kind: str  # "file" | "dir" | "link"
    owner: str  # "R" | "S" | "A"
    mode: int
    content: str = ""  # R file text, or a link's target
    bind: Bind | None = None


def _governors_text(profile: Profile) -> str:
    cf = profile.cpufreq
    assert cf is not None
    # setpolicy drivers print "performance powersave" bare; table drivers end each name with a space.
    return " ".join(cf.available_governors) if cf.setpolicy else "".join(g + " " for g in cf.available_governors)


_TRANSITION_NS = {"acpi-cpufreq": 10000, "amd-pstate": 20000, "amd-pstate-epp": 0, "intel_pstate": 0, "cppc_cpufreq": 10000}


def layout(profile: Profile, node: str) -> tuple[Entry, ...]:
    """Every entry of ``node``'s tree, parents before children, in a stable order."""
    out: list[Entry] = []
    dirs: set[str] = set()

    def d(path: str) -> None:
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            if p not in dirs:
                dirs.add(p)
                out.append(Entry(p, "dir", "R", 0o755))

    def f(path: str, owner: str, mode: int, content: str = "", bind: Bind | None = None) -> None:
        d(path.rsplit("/", 1)[0])
        out.append(Entry(path, "file", owner, mode, content, bind))

    def link(path: str, target: str) -> None:
        d(path.rsplit("/", 1)[0])
        out.append(Entry(path, "link", "R", 0o777, target))

    f("proc/cpuinfo", "R", 0o444, cpuinfo(profile))
    d("sys/class/powercap")
    _powercap(profile, f, link)
    _cpufreq(profile, f, link)
    hwmon = 0
    if profile.amd_energy is not None:
        base = f"sys/devices/platform/amd_energy.0/hwmon/hwmon{hwmon}"
        f(f"{base}/name", "R", 0o444, "amd_energy\n")
        for s in range(profile.cpu.sockets):
            f(f"{base}/energy{s + 1}_input", "S", 0o444, bind=("amd_energy", s, 0))
            f(f"{base}/energy{s + 1}_label", "R", 0o444, f"Esocket{s}\n")
        link(f"sys/class/hwmon/hwmon{hwmon}", f"../../devices/platform/amd_energy.0/hwmon/hwmon{hwmon}")
        hwmon += 1
    if profile.hsmp is not None:
        for s in range(profile.cpu.sockets):
            base = f"sys/devices/platform/amd_hsmp/hwmon/hwmon{hwmon}"
            f(f"{base}/name", "R", 0o444, "amd_hsmp_hwmon\n")
            f(f"{base}/power1_input", "S", 0o444, bind=("hsmp_input", s, 0))
            f(f"{base}/power1_cap", "A", 0o644, bind=("hsmp_cap", s, 0))
            f(f"{base}/power1_cap_max", "R", 0o444, f"{profile.hsmp.cap_max_uw}\n")
            link(f"sys/class/hwmon/hwmon{hwmon}", f"../../devices/platform/amd_hsmp/hwmon/hwmon{hwmon}")
            hwmon += 1
    _pci(profile, node, f, link, hwmon)
    if profile.gpus is not None and profile.gpus.vendor == "nvidia":
        f("dev/nvidiactl", "R", 0o666, "")
        for i in range(profile.gpus.count):
            f(f"state/{nvml_limit_file(i)}", "A", 0o644, bind=("nvml_limit", i, 0))
            f(f"state/{nvml_locked_clocks_file(i)}", "A", 0o644, bind=("nvml_lock", i, 0))
    if profile.gpus is not None:
        f("state/gpus.json", "S", 0o444, bind=("gpus_json", 0, 0))
        for tool in profile.gpus.tools:
            link(f"bin/{tool.name}", FAKESMI_PATH)
    f("state/tools.json", "R", 0o444, tools_manifest(profile).to_json())
    f(f"state/{FAULTS_FILE}", "S", 0o444, bind=("faults", 0, 0))
    f(LEDGER_FILE, "S", 0o444, bind=("ledger", 0, 0))
    return tuple(out)


def tools_manifest(profile: Profile) -> ToolsManifest:
    tools = profile.gpus.tools if profile.gpus else []
    return ToolsManifest(tools={t.name: t.variant for t in tools}, requires={t.name: tuple(t.requires) for t in tools})


def _powercap(profile: Profile, f: object, link: object) -> None:
    pc = profile.powercap
    if pc is None:
        return
    assert callable(f) and callable(link)
    f(f"{RAPL}/enabled", "R", 0o644, "1\n")
    link("sys/class/powercap/intel-rapl", "../../devices/virtual/powercap/intel-rapl")
    zi = 0
    for s in range(profile.cpu.sockets):
        for spec, rel, name, depth in ((pc.package, f"intel-rapl:{s:x}", f"package-{s}", 0), (pc.dram, f"intel-rapl:{s:x}:0", "dram", 1)):
            if spec is None:
                continue
            base = f"{RAPL}/intel-rapl:{s:x}" + (f"/{rel}" if depth else "")
            writable = any(not c.reject_writes for c in spec.constraints)
            f(f"{base}/name", "R", 0o444, name + "\n")
            f(f"{base}/enabled", "A" if writable or spec.constraints else "R", 0o644, "", ("zone_enabled", zi, 0))
            f(f"{base}/energy_uj", "S", 0o400, bind=("zone_energy", zi, 0))
            f(f"{base}/max_energy_range_uj", "R", 0o444, f"{node_physics.max_energy_range_uj(spec.energy_unit_nj)}\n")
            for ci, c in enumerate(spec.constraints):
                f(f"{base}/constraint_{ci}_name", "R", 0o444, c.name + "\n")
                f(f"{base}/constraint_{ci}_power_limit_uw", "A", 0o644, bind=("zone_limit", zi, ci))
                f(f"{base}/constraint_{ci}_time_window_us", "A", 0o644, bind=("zone_window", zi, ci))
                f(f"{base}/constraint_{ci}_max_power_uw", "R", 0o444, f"{c.max_power_uw}\n")
            link(f"sys/class/powercap/{rel}", "../../" + base.removeprefix("sys/"))
            zi += 1


def _cpufreq(profile: Profile, f: object, link: object) -> None:
    cf = profile.cpufreq
    if cf is None:
        return
    assert callable(f) and callable(link)
    govs = _governors_text(profile)
    latency = _TRANSITION_NS.get(cf.driver, 10000)
    if cf.boost is not None:
        f(f"{CPUFREQ}/boost", "A", 0o644, bind=("boost", 0, 0))
    for i, pol in enumerate(policies(profile)):
        base = f"{CPUFREQ}/policy{pol.id}"
        cpus = " ".join(str(c) for c in pol.cpus) + "\n"
        f(f"{base}/scaling_driver", "R", 0o444, cf.driver + "\n")
        f(f"{base}/scaling_available_governors", "R", 0o444, govs + "\n")
        f(f"{base}/cpuinfo_min_freq", "R", 0o444, f"{cf.min_khz}\n")
        f(f"{base}/cpuinfo_max_freq", "R", 0o444, f"{cf.max_khz}\n")
        f(f"{base}/cpuinfo_transition_latency", "R", 0o444, f"{latency}\n")
        f(f"{base}/affected_cpus", "R", 0o444, cpus)
        f(f"{base}/related_cpus", "R", 0o444, cpus)
        f(f"{base}/scaling_governor", "A", 0o644, bind=("pol_governor", i, 0))
        f(f"{base}/scaling_min_freq", "A", 0o644, bind=("pol_min", i, 0))
        f(f"{base}/scaling_max_freq", "A", 0o644, bind=("pol_max", i, 0))
        f(f"{base}/scaling_cur_freq", "S", 0o444, bind=("pol_cur", i, 0))
        f(f"{base}/scaling_setspeed", "R", 0o644, "<unsupported>\n")
        if cf.available_khz:
            f(f"{base}/scaling_available_frequencies", "R", 0o444, "".join(f"{k} " for k in cf.available_khz) + "\n")
        if cf.driver == "amd-pstate-epp":
            f(f"{base}/energy_performance_preference", "A", 0o644, bind=("pol_epp", i, 0))
            f(
                f"{base}/energy_performance_available_preferences",
                "R",
                0o444,
                "default performance balance_performance balance_power power \n",
            )
        for cpu in pol.cpus:
            link(f"sys/devices/system/cpu/cpu{cpu}/cpufreq", f"../cpufreq/policy{pol.id}")


def _pci(profile: Profile, node: str, f: object, link: object, hwmon: int) -> None:
    assert callable(f) and callable(link)
    card = 0
    for i, dev in enumerate(profile.pci):
        bus = f"{0x02 + i:02x}"
        base = f"sys/devices/pci0000:{bus}/0000:{bus}:00.0"
        f(f"{base}/vendor", "R", 0o444, dev.vendor + "\n")
        f(f"{base}/device", "R", 0o444, dev.device + "\n")
        f(f"{base}/class", "R", 0o444, dev.pci_class + "\n")
        if dev.pci_class.startswith("0x03"):
            link(f"{base}/drm/card{card}/device", f"../../../0000:{bus}:00.0")
            link(f"sys/class/drm/card{card}", f"../../devices/pci0000:{bus}/0000:{bus}:00.0/drm/card{card}")
            card += 1
    g = profile.gpus
    if g is None:
        return
    for i in range(g.count):
        bus = f"{GPU_BUS0 + i:02x}"
        base = f"sys/devices/pci0000:{bus}/0000:{bus}:00.0"
        f(f"{base}/vendor", "R", 0o444, g.pci.vendor + "\n")
        f(f"{base}/device", "R", 0o444, g.pci.device + "\n")
        f(f"{base}/class", "R", 0o444, g.pci.pci_class + "\n")
        if g.vendor != "amd":
            continue
        f(f"{base}/product_name", "R", 0o444, g.product + "\n")
        f(f"{base}/vbios_version", "R", 0o444, g.vbios_version + "\n")
        # The OverDrive table: amd-smi set -L sclk max MHZ writes "s 1 MHZ" here.
        f(f"{base}/pp_od_clk_voltage", "A", 0o644, bind=("amdgpu_od", i, 0))
        link(f"{base}/drm/card{card}/device", f"../../../0000:{bus}:00.0")
        link(f"sys/class/drm/card{card}", f"../../devices/pci0000:{bus}/0000:{bus}:00.0/drm/card{card}")
        card += 1
        hw = f"{base}/hwmon/hwmon{hwmon}"
        f(f"{hw}/name", "R", 0o444, "amdgpu\n")
        f(f"{hw}/power1_cap", "A", 0o644, bind=("amdgpu_cap", i, 0))
        f(f"{hw}/power1_cap_min", "R", 0o444, f"{round(g.min_w * 1e6)}\n")
        f(f"{hw}/power1_cap_max", "R", 0o444, f"{round(g.max_w * 1e6)}\n")
        f(f"{hw}/power1_cap_default", "R", 0o444, f"{round(g.default_w * 1e6)}\n")
        f(f"{hw}/power1_input", "S", 0o444, bind=("amdgpu_input", i, 0))
        link(f"sys/class/hwmon/hwmon{hwmon}", "../../" + hw.removeprefix("sys/"))
        hwmon += 1


def amd_hwmon_dirs(profile: Profile) -> list[str]:
    """Each AMD GPU's hwmon directory relative to the sys root (what gpus.json names)."""
    g = profile.gpus
    if g is None or g.vendor != "amd":
        return []
    first = (1 if profile.amd_energy is not None else 0) + (profile.cpu.sockets if profile.hsmp is not None else 0)
    return [
        f"devices/pci0000:{GPU_BUS0 + i:02x}/0000:{GPU_BUS0 + i:02x}:00.0/hwmon/hwmon{first + i}" for i in range(g.count)
    ]


def cpuinfo(profile: Profile) -> str:
    """/proc/cpuinfo: one block per logical CPU (x86 or arm64 format)."""
    c = profile.cpu
    n = c.logical_cpus
    blocks = []
    for k in range(n):
        sock = k if c.one_socket_per_vcpu else cpu_socket(profile, k)
        core = (k % (c.sockets * c.cores_per_socket)) % c.cores_per_socket
        if profile.node.architecture == "arm64":
            blocks.append(
                f"processor\t: {k}\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\n"
                f"CPU implementer\t: {c.arm_implementer}\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: {c.arm_part}\nCPU revision\t: 1\n"
            )
            continue
        flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx lm constant_tsc rep_good nopl xtopology cpuid pni ssse3 fma cx16 sse4_1 sse4_2 x2apic popcnt aes xsave avx f16c rdrand"
        if c.hypervisor:
            flags += " hypervisor"
        siblings = 1 if c.one_socket_per_vcpu else c.cores_per_socket * c.threads_per_core
        cores = 1 if c.one_socket_per_vcpu else c.cores_per_socket
        blocks.append(
            f"processor\t: {k}\nvendor_id\t: {c.vendor_id}\ncpu family\t: {c.family}\nmodel\t\t: {c.model}\n"
            f"model name\t: {c.model_name}\nstepping\t: {c.stepping}\ncpu MHz\t\t: {c.mhz:.3f}\n"
            f"physical id\t: {sock}\nsiblings\t: {siblings}\ncore id\t\t: {0 if c.one_socket_per_vcpu else core}\n"
            f"cpu cores\t: {cores}\nflags\t\t: {flags}\n"
        )
    return "\n".join(blocks) + "\n"


def content(profile: Profile, state: NodeState, bind: Bind, extra_s: float = 0.0) -> str:
    """Text of a bound file. ``extra_s``: seconds since the last tick, so counters move at read time."""
    what, i, j = bind
    if what == "zone_energy":
        z = state.zones[i]
        s = state.sockets[z.socket]
        assert profile.powercap is not None
        spec = profile.powercap.package if z.kind == "package" else profile.powercap.dram
        assert spec is not None
        if z.kind == "package":
            joules = s.energy_j + s.power_w * extra_s
        else:
            joules = s.dram_energy_j + profile.physics.dram_w_per_socket * extra_s
        return f"{node_physics.energy_counter_uj(z.start_uj, joules, node_physics.max_energy_range_uj(spec.energy_unit_nj))}\n"
    if what == "zone_limit":
        return f"{state.zones[i].limits_uw[j]}\n"
    if what == "zone_window":
        return f"{state.zones[i].windows_us[j]}\n"
    if what == "zone_enabled":
        return "1\n" if state.zones[i].enabled else "0\n"
    if what == "pol_governor":
        return state.pol_governor[i] + "\n"
    if what == "pol_min":
        return f"{state.pol_min_khz[i]}\n"
    if what == "pol_max":
        return f"{state.pol_max_khz[i]}\n"
    if what == "pol_epp":
        return state.pol_epp[i] + "\n"
    if what == "pol_cur":
        sock = policies(profile)[i].socket
        return f"{round(state.sockets[sock].eff_khz)}\n"
    if what == "boost":
        return "1\n" if state.boost else "0\n"
    if what == "amd_energy":
        s = state.sockets[i]
        return f"{math.floor((s.energy_j + s.power_w * extra_s) * 1e6)}\n"
    if what == "hsmp_input":
        return f"{math.floor(state.sockets[i].power_w * 1000) * 1000}\n"
    if what == "hsmp_cap":
        return f"{state.hsmp_cap_uw[i]}\n"
    if what == "amdgpu_cap":
        return f"{round(state.gpus[i].limit_w * 1e6)}\n"
    if what == "amdgpu_input":
        return f"{math.floor(state.gpus[i].power_w * 1000) * 1000}\n"
    if what == "nvml_limit":
        return f"{round(state.gpus[i].limit_w * 1000)}\n"
    if what == "nvml_lock":
        return nvml_lock_text(profile, state.gpus[i].lock_max_mhz)
    if what == "amdgpu_od":
        return amdgpu_od_text(profile, state.gpus[i].lock_max_mhz)
    if what == "gpus_json":
        return gpus_json(profile, state)
    if what == "ledger":
        return ledger_json(state)
    if what == "faults":
        return faults_json(state.faults)
    raise KeyError(f"unknown binding {bind}")


def nvml_lock_text(profile: Profile, lock_mhz: float | None) -> str:
    """The NVIDIA lock file: ``MIN,MAX`` (the board's lowest clock as the floor), or ``none``."""
    g = profile.gpus
    assert g is not None
    return format_locked_clocks((round(g.sm_clock_min_mhz), round(lock_mhz)) if lock_mhz is not None else None)


def amdgpu_od_text(profile: Profile, lock_mhz: float | None) -> str:
    """``pp_od_clk_voltage`` as amdgpu prints its SCLK part: the soft minimum and maximum, then the
    range OverDrive accepts (the memory clock is not modelled)."""
    g = profile.gpus
    assert g is not None
    lo, hi = round(g.sm_clock_min_mhz), round(g.sm_clock_max_mhz)
    top = round(lock_mhz) if lock_mhz is not None else hi
    return f"OD_SCLK:\n0: {lo}Mhz\n1: {top}Mhz\nOD_RANGE:\nSCLK:     {lo}Mhz       {hi}Mhz\n"


def gpu_state(profile: Profile, state: NodeState) -> GpuState:
    return _gpu_state(profile, state, marked=False)


_MOVING = 10


def _moving(t: GpuTruth) -> tuple[Any, ...]:
    """The values of gpus.json that move with the physics or a tool's write, as written. A board's
    tools report its activity (``t.signals``, the utilisation NVML reports included) once the
    emulator has ticked; the load's utilisation and no activity before."""
    sig = t.signals
    return (
        round(t.limit_w, 3),
        round(t.enforced_w, 3),
        math.floor(t.power_w * 1000) / 1000,
        round(100 * (sig.utilization if sig is not None else t.util)),
        math.floor(t.energy_j * 1000),
        round(t.lock_max_mhz) if t.lock_max_mhz is not None else None,
        round(sig.sm_clock_mhz) if sig is not None else 0,
        round(sig.sm_active, 3) if sig is not None else None,
        round(sig.tensor_active, 3) if sig is not None else None,
        round(sig.dram_active, 3) if sig is not None else None,
    )


def _gpu_state(profile: Profile, state: NodeState, marked: bool) -> GpuState:
    """``marked``: a ``@@<position>_<k>@@`` string in place of each moving value (``_moving``)."""
    g = profile.gpus
    assert g is not None
    hwmons = amd_hwmon_dirs(profile) if g.vendor == "amd" else []
    devices = []
    for p, t in enumerate(state.gpus):
        m: tuple[Any, ...] = tuple(f"@@{p}_{k}@@" for k in range(_MOVING)) if marked else _moving(t)
        devices.append(
            GpuDevice(
                index=t.index,
                name=g.product,
                uuid=t.uuid,
                pci_bus_id=f"00000000:{GPU_BUS0 + t.index:02X}:00.0",
                min_limit_w=g.min_w,
                max_limit_w=g.max_w,
                default_limit_w=g.default_w,
                limit_w=m[0],
                enforced_limit_w=m[1],
                draw_w=m[2],
                util_pct=m[3],
                energy_mj=m[4],
                hwmon=hwmons[t.index] if hwmons else "",
                vbios_version=g.vbios_version,
                gfx_version=g.gfx_version,
                field_tokens=dict(g.field_tokens),
                sm_clock_min_mhz=round(g.sm_clock_min_mhz),
                sm_clock_max_mhz=round(g.sm_clock_max_mhz),
                locked_max_mhz=m[5],
                sm_clock_mhz=m[6],
                sm_active=m[7],
                tensor_active=m[8],
                dram_active=m[9],
            )
        )
    return GpuState(
        vendor=g.vendor,
        driver_version=NVIDIA_DRIVER_VERSION if g.vendor == "nvidia" else "",
        persistence_mode=g.persistence_mode,
        gpus=tuple(devices),
    )


# Per node, gpus.json as static text around the values that move (see gpus_json).
_GPU_TEMPLATES: dict[tuple[str, tuple[str, ...]], tuple[Profile, tuple[str, ...], tuple[tuple[int, int], ...]]] = {}
_MARK = re.compile(r'"@@(\d+)_(\d+)@@"')


def _gpu_template(profile: Profile, state: NodeState) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    key = (profile.name, tuple(t.uuid for t in state.gpus))
    hit = _GPU_TEMPLATES.get(key)
    if hit is not None and hit[0] is profile:
        return hit[1], hit[2]
    # The real serialisation with a marker in place of each moving value, split at the markers.
    parts = _MARK.split(_gpu_state(profile, state, marked=True).to_json())
    static = tuple(parts[0::3])
    order = tuple((int(a), int(b)) for a, b in zip(parts[1::3], parts[2::3], strict=True))
    _GPU_TEMPLATES[key] = (profile, static, order)
    return static, order


def _num(v: float | None) -> str:
    """A number (or None, a lock not held) as json.dumps writes it."""
    if v is None:
        return "null"
    cls = v.__class__
    if (cls is float and math.isfinite(v)) or cls is int:
        return repr(v)
    return json.dumps(v)


def gpus_json(profile: Profile, state: NodeState) -> str:
    """``gpu_state(profile, state).to_json()``, byte for byte, without building it each tick."""
    static, order = _gpu_template(profile, state)
    values = [_moving(t) for t in state.gpus]
    out = [static[0]]
    for (i, k), tail in zip(order, static[1:], strict=True):
        out.append(_num(values[i][k]))
        out.append(tail)
    return "".join(out)


def uuid_of(node: str, index: int) -> str:
    return gpu_uuid(node, index)
