"""The hardware profile schema and its loader.

A profile is YAML data describing one kind of node: its Kubernetes Node (labels, taints,
capacity), its CPUs, powercap zones, cpufreq, HSMP, GPUs and the physics constants that turn load
into power. Every section carries ``source:``, the provenance of its numbers:

``published:<id>`` | ``corpus:<id>`` | ``derived:<formula>`` | ``assumed:<reason>``

where ``<id>`` names an entry of the profile's ``sources`` map (a datasheet, kernel document or
hardware capture). ``extends: <profile>`` deep-merges another profile (maps merge, lists and
values replace). Unknown keys are refused. A bad profile raises :class:`ProfileError`, naming the
file, the field and why.

Units are in field names: ``_w`` watts, ``_uw`` microwatts, ``_us`` microseconds, ``_khz``,
``_nj`` nanojoules, ``_ki`` kibibytes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from joulie_common.merge import deep_merge
from joulie_common.yamlload import YamlError, load_yaml

SCHEMA_VERSION = 1
_SOURCE = re.compile(r"^(published|corpus|derived|assumed):(\S.*)$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class ProfileError(ValueError):
    """An invalid profile; the message is ``<file>: <field>: <why>``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class _Sourced(_Strict):
    source: str

    @field_validator("source")
    @classmethod
    def _source_grammar(cls, v: str) -> str:
        if not _SOURCE.match(v):
            raise ValueError(f"{v!r} is not published:<id>, corpus:<id>, derived:<formula> or assumed:<reason>")
        return v


class Taint(_Strict):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeSpec(_Sourced):
    architecture: Literal["amd64", "arm64"] = "amd64"
    # Whether Node Feature Discovery runs on this kind of node (its feature.node.kubernetes.io/* labels).
    nfd: bool = True
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    cpu: int = Field(gt=0, description="logical CPUs in capacity")
    memory_ki: int = Field(gt=0)
    pods: int = 110
    reserved_cpu_m: int = Field(default=0, ge=0)
    reserved_memory_ki: int = Field(default=0, ge=0)


class PciDevice(_Strict):
    pci_class: str = Field(pattern=r"^0x[0-9a-f]{6}$")
    vendor: str = Field(pattern=r"^0x[0-9a-f]{4}$")
    device: str = Field(pattern=r"^0x[0-9a-f]{4}$")


class CpuSpec(_Sourced):
    vendor_id: str
    model_name: str = ""
    family: int = 0
    model: int = 0
    stepping: int = 0
    sockets: int = Field(gt=0)
    cores_per_socket: int = Field(gt=0)
    threads_per_core: int = Field(default=1, gt=0)
    mhz: float = Field(gt=0)
    # A hypervisor that gives every vCPU its own physical id (sockets = vCPUs).
    one_socket_per_vcpu: bool = False
    hypervisor: bool = False
    # arm64 /proc/cpuinfo has no "model name"; it names the core by implementer and part.
    arm_implementer: str = ""
    arm_part: str = ""

    @property
    def logical_cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core


class Constraint(_Strict):
    name: Literal["long_term", "short_term", "peak_power"]
    power_limit_uw: int = Field(ge=0)
    max_power_uw: int = Field(ge=0)
    time_window_us: int = Field(ge=0)
    # How the kernel refuses a write to this limit: enodata (the zone's limit is not supported, as
    # a captured DRAM zone answers), eacces (locked by the BIOS; intel_rapl_common returns -EACCES).
    reject_writes: Literal["", "enodata", "eacces"] = ""


class ZoneSpec(_Strict):
    enabled: bool = True
    energy_unit_nj: int = Field(gt=0)
    constraints: list[Constraint] = Field(default_factory=list)


class PowercapSpec(_Sourced):
    control_type: Literal["intel-rapl"] = "intel-rapl"
    power_unit_uw: int = Field(default=125000, gt=0)
    package: ZoneSpec
    # A per-socket DRAM sub-zone (intel-rapl:N:0) when present.
    dram: ZoneSpec | None = None


class CpufreqSpec(_Sourced):
    driver: str
    governor: str
    available_governors: list[str]
    min_khz: int = Field(gt=0)
    max_khz: int = Field(gt=0)
    # Table drivers (acpi-cpufreq) list their P-states; setpolicy drivers have none.
    available_khz: list[int] = Field(default_factory=list)
    boost: bool | None = None
    grouping: Literal["per-cpu", "per-core"] = "per-cpu"

    @model_validator(mode="after")
    def _range(self) -> CpufreqSpec:
        if self.min_khz > self.max_khz:
            raise ValueError(f"min_khz {self.min_khz} is above max_khz {self.max_khz}")
        if self.governor not in self.available_governors:
            raise ValueError(f"governor {self.governor!r} is not one of available_governors {self.available_governors}")
        return self

    @property
    def setpolicy(self) -> bool:
        """intel_pstate and amd-pstate-epp pick frequencies themselves (no P-state table)."""
        return self.driver in ("intel_pstate", "amd-pstate-epp")


class HsmpSpec(_Sourced):
    cap_max_uw: int = Field(gt=0)
    cap_default_uw: int = Field(gt=0)


class AmdEnergySpec(_Sourced):
    """The amd_energy hwmon driver: per-socket energy counters (energyN_input, µJ), no limits."""

    enabled: bool = True


class GpuTool(_Strict):
    name: Literal["nvidia-smi", "rocm-smi", "amd-smi", "dcgmi"]
    variant: str
    # Files the real tool needs to run (ELF loader, C libraries, NVML, a script's interpreter).
    requires: list[str] = Field(default_factory=list)


class GpuSpec(_Sourced):
    vendor: Literal["nvidia", "amd"]
    count: int = Field(gt=0)
    product: str
    pci: PciDevice
    min_w: float = Field(ge=0)
    max_w: float = Field(gt=0)
    default_w: float = Field(gt=0)
    # The supported SM (graphics) clock range: a clock lock (nvidia-smi -lgc, NVML locked clocks,
    # the AMD sclk range) must lie within it; the physics takes a lock as a share of the maximum.
    sm_clock_max_mhz: float = Field(alias="smClockMaxMhz", gt=0)
    sm_clock_min_mhz: float = Field(alias="smClockMinMhz", gt=0)
    persistence_mode: bool = True
    vbios_version: str = ""
    gfx_version: str = ""
    architecture: str = ""
    compute_capability: str = ""
    memory_mib: int = 0
    tools: list[GpuTool] = Field(default_factory=list)
    # Labels of the vendor's labeller (NVIDIA GFD is generated; AMD's are listed in node.labels).
    labeller: Literal["gfd", "listed"] = "gfd"
    field_tokens: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _limits(self) -> GpuSpec:
        if not self.min_w <= self.default_w <= self.max_w:
            raise ValueError(f"limits must satisfy min_w <= default_w <= max_w, got {self.min_w}, {self.default_w}, {self.max_w}")
        if self.sm_clock_min_mhz > self.sm_clock_max_mhz:
            raise ValueError(f"smClockMinMhz {self.sm_clock_min_mhz} is above smClockMaxMhz {self.sm_clock_max_mhz}")
        return self


class CpuPhysics(_Sourced):
    """Package power versus busy cores and clock (formulas: joulie_simulator/physics/cpu.py)."""

    idle_pkg_w: float = Field(ge=0, description="package power with every core idle, W")
    max_pkg_w: float = Field(ge=0, description="package power with every core busy at the all-core turbo clock, W")
    freq_power_exponent: float = Field(gt=0, description="k in per-core power ~ clock**k over the DVFS range (f * V(f)**2)")
    allcore_turbo_khz: int = Field(default=0, ge=0, description="all-core turbo clock; 0: the cpufreq maximum (no turbo curve)")
    freq_ramp_s: float = Field(default=0.5, ge=0)


class GpuPhysics(_Sourced):
    """Board power versus clock, and the clock a power limit leaves (formulas: joulie_simulator/physics/gpu.py)."""

    idle_w: float = Field(ge=0)
    natural_max_w: float = Field(gt=0)
    util_gamma: float = Field(default=1.02, gt=0)
    cap_settle_tau_s: float = Field(default=0.15, ge=0)
    clock_power_exponent: float = Field(gt=0, description="k in clock-following power ~ (clock / max clock)**k (f * V(f)**2)")
    fixed_dynamic_frac: float = Field(ge=0, lt=1, description="share of the work's dynamic power that does not follow the SM clock (HBM, I/O)")
    min_clock_ratio: float = Field(gt=0, le=1, description="lowest sustained SM clock over the maximum boost clock")
    vmin_clock_ratio: float = Field(gt=0, le=1, description="SM clock (over the maximum) below which the voltage stays at its floor")


class PowerStatesPhysics(_Sourced):
    """What a node draws switched off, and how long it takes to come back or go down.

    Switched off (ACPI S5, soft-off) a server on AC power keeps its BMC, the PSUs' standby rail and
    a NIC for wake-up alive: that is ``standby_w``. Powering on runs the firmware (POST, memory
    training, option ROMs), then the OS, kubelet and the agent: ``boot_s``. A graceful shutdown stops
    the workloads and the OS: ``shutdown_s``. The defaults are for a generic two-socket server."""

    source: str = "assumed:schema default for a two-socket server (a profile without physics.power_states)"
    standby_w: float = Field(default=8.0, ge=0, description="power drawn while off (BMC, PSU standby rail, wake-up NIC), W")
    boot_s: float = Field(default=180.0, ge=0, description="power-on to node ready (firmware POST and OS boot), s")
    shutdown_s: float = Field(default=20.0, ge=0, description="graceful shutdown to off, s")


class PhysicsSpec(_Sourced):
    cpu: CpuPhysics
    dram_w_per_socket: float = Field(default=0, ge=0)
    platform_other_w: float = Field(default=0, ge=0)
    # RAPL limits settle toward a new value with the constraint's time window as time constant.
    hsmp_settle_tau_s: float = Field(default=1.0, ge=0)
    gpu: GpuPhysics | None = None
    power_states: PowerStatesPhysics = Field(default_factory=PowerStatesPhysics)

    # The power-state constants are one sourced sub-section in the YAML; code reads them here.
    @property
    def standby_w(self) -> float:
        return self.power_states.standby_w

    @property
    def boot_s(self) -> float:
        return self.power_states.boot_s

    @property
    def shutdown_s(self) -> float:
        return self.power_states.shutdown_s

    @model_validator(mode="after")
    def _power(self) -> PhysicsSpec:
        if self.cpu.idle_pkg_w > self.cpu.max_pkg_w:
            raise ValueError(f"cpu.idle_pkg_w {self.cpu.idle_pkg_w} is above cpu.max_pkg_w {self.cpu.max_pkg_w}")
        return self


class Profile(_Strict):
    schema_version: Literal[1] = Field(alias="schemaVersion")
    name: str
    description: str
    sources: dict[str, str]
    node: NodeSpec
    pci: list[PciDevice] = Field(default_factory=list)
    cpu: CpuSpec
    powercap: PowercapSpec | None = None
    cpufreq: CpufreqSpec | None = None
    hsmp: HsmpSpec | None = None
    amd_energy: AmdEnergySpec | None = None
    gpus: GpuSpec | None = None
    physics: PhysicsSpec

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"{v!r} must be lower-case words joined by '-'")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        for where, sect in self._sourced():
            m = _SOURCE.match(sect.source)
            assert m is not None
            kind, ref = m.groups()
            if kind in ("published", "corpus"):
                ident = ref.split("#", 1)[0]
                if ident not in self.sources:
                    raise ValueError(f"{where}.source: {kind}:{ident} cites no entry of sources ({sorted(self.sources)})")
        if self.node.cpu != self.cpu.logical_cpus:
            raise ValueError(
                f"node.cpu {self.node.cpu} differs from cpu sockets x cores_per_socket x threads_per_core = {self.cpu.logical_cpus}"
            )
        if self.gpus is not None and self.physics.gpu is None:
            raise ValueError("physics.gpu is required when gpus is set")
        return self

    def _sourced(self) -> list[tuple[str, _Sourced]]:
        out: list[tuple[str, _Sourced]] = []
        for name in ("node", "cpu", "powercap", "cpufreq", "hsmp", "amd_energy", "gpus", "physics"):
            v = getattr(self, name)
            if isinstance(v, _Sourced):
                out.append((name, v))
        out.append(("physics.cpu", self.physics.cpu))
        if self.physics.gpu is not None:
            out.append(("physics.gpu", self.physics.gpu))
        out.append(("physics.power_states", self.physics.power_states))
        return out


def _read_raw(path: Path) -> dict[str, Any]:
    try:
        raw: dict[str, Any] = load_yaml(path, mapping=True)
    except YamlError as e:
        raise ProfileError(str(e)) from e
    return raw


_PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def load_profile(path: Path, search: Path | None = None) -> Profile:
    """Load and validate one profile file; ``extends`` names a file in ``search`` (default: its folder)."""
    raw = _read_raw(path)
    expected = path.stem
    if raw.get("name") != expected:
        raise ProfileError(f"{path}: name: {raw.get('name')!r} must equal the file name {expected!r}")
    chain = [raw]
    seen = {expected}
    while "extends" in chain[-1]:
        parent = chain[-1]["extends"]
        if not isinstance(parent, str) or not _PROFILE_NAME.fullmatch(parent) or parent in seen:
            raise ProfileError(f"{path}: extends: {parent!r} is not a profile name or extends itself")
        seen.add(parent)
        try:
            chain.append(_read_raw((search or path.parent) / f"{parent}.yaml"))
        except ProfileError as e:
            # The user edited this file, so the message names it first and the parent after.
            raise ProfileError(f"{path}: extends: {parent!r}: {e}") from e
    merged: dict[str, Any] = {}
    for layer in reversed(chain):
        merged = deep_merge(merged, {k: v for k, v in layer.items() if k not in ("extends", "name", "description")})
    merged.update(name=raw["name"], description=raw.get("description", ""))
    try:
        return Profile.model_validate(merged)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ProfileError(f"{path}: {loc}: {first['msg']}") from e


BUILTIN_DIR = Path(__file__).parent / "data"


def builtin_profile_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))


def builtin_profile(name: str) -> Profile:
    path = BUILTIN_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ProfileError(f"{path}: name: no builtin profile {name!r}; known: {', '.join(builtin_profile_names())}")
    return load_profile(path)
