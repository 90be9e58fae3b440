"""What each NVIDIA board is doing, as a real node reports it, and which Pod holds it. Pure.

Two sources, each what production exporters use:

- nvidia-smi (or NVML, ``host.nvml``): each board's UUID, utilisation (``utilization.gpu``, the share
  of time a kernel ran) and its current and highest SM clock (``clocks.sm``, ``clocks.max.sm``).
- DCGM's profiling fields through ``dcgmi dmon -e 1002,1004,1005 -c 1``: SM active, tensor pipe active
  and DRAM active (``DCGM_FI_PROF_SM_ACTIVE``, ``..._PIPE_TENSOR_ACTIVE``, ``..._DRAM_ACTIVE``), the
  fields dcgm-exporter publishes. DCGM rather than NVML GPM: GPM exists on Hopper and later only, and
  NVML's Python bindings take a sample pair per metric; DCGM serves the same counters from Volta on and
  is what a GPU node already runs (nv-hostengine, dcgm-exporter). A node without DCGM (dcgmi absent,
  or a field it answers ``N/A``) has no activity ratios: nothing is exported for them, never a zero.

The board -> Pod map comes from the kubelet's pod-resources API (``host.podresources``): each
container's devices of resource ``nvidia.com/gpu``, whose device IDs the NVIDIA device plugin sets to
the GPU UUIDs; :func:`boards_held` matches them with the UUIDs the GPU tool reports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

NVIDIA_ACTIVITY_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,uuid,utilization.gpu,clocks.sm,clocks.max.sm",
    "--format=csv,noheader,nounits",
]
DCGM_FIELDS = {"1002": "sm", "1004": "tensor", "1005": "dram"}
DCGMI_DMON = ["dcgmi", "dmon", "-e", ",".join(DCGM_FIELDS), "-c", "1"]
# dcgmi dmon's column headers for those fields (its short tags).
_DCGMI_TAGS = {"SMACT": "sm", "TENSO": "tensor", "DRAMA": "dram"}
GPU_RESOURCES = ("nvidia.com/gpu",)
"""Extended resources whose device IDs name whole boards by UUID (the NVIDIA device plugin's)."""


@dataclass(frozen=True)
class BoardActivity:
    """One board's signals; None where its tool did not say (N/A, or no DCGM on the node)."""

    index: int
    uuid: str = ""
    utilization: float | None = None
    """0..1"""
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    sm_active: float | None = None
    tensor_active: float | None = None
    dram_active: float | None = None


@dataclass(frozen=True)
class DeviceHolder:
    """One container's devices of one resource, as the pod-resources API lists them."""

    namespace: str
    pod: str
    container: str
    resource: str
    device_ids: tuple[str, ...]


@dataclass(frozen=True)
class BoardHolder:
    """A board and the Pod (container) that holds it."""

    index: int
    namespace: str
    pod: str
    container: str


@dataclass
class ActivityReport:
    boards: list[BoardActivity] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _number(text: str) -> float | None:
    try:
        v = float(text.strip().strip('"'))
    except ValueError:
        return None  # [N/A], Not Supported, [Unknown Error]
    return v if v == v and abs(v) != float("inf") else None


def parse_nvidia_activity(text: str) -> ActivityReport:
    """Rows of NVIDIA_ACTIVITY_QUERY output; a field the board answers with a token stays unknown."""
    out = ActivityReport()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 5:
            out.warnings.append(
                f"nvidia-smi activity: line {lineno}: expected 5 fields, got {len(fields)}: " f"{line[:80]!r}"
            )
            continue
        if not (fields[0].isascii() and fields[0].isdigit()):
            out.warnings.append(f"nvidia-smi activity: line {lineno}: index {fields[0][:20]!r} is not an integer")
            continue
        out.boards.append(activity_of(int(fields[0]), *fields[1:5]))
    return out


def activity_of(index: int, uuid: str, utilization_pct: str, sm_mhz: str, sm_max_mhz: str) -> BoardActivity:
    """One board's signals from its nvidia-smi fields (``uuid``, ``utilization.gpu``, ``clocks.sm``,
    ``clocks.max.sm``, nounits); a token (``[N/A]``) or a value out of range is unknown."""
    util = _number(utilization_pct)
    return BoardActivity(
        index,
        uuid if uuid.upper().startswith("GPU-") else "",
        _ratio(util / 100) if util is not None else None,
        _positive(_number(sm_mhz)),
        _positive(_number(sm_max_mhz)),
    )


def _ratio(v: float | None) -> float | None:
    return None if v is None or not 0.0 <= v <= 1.0 else v


def _positive(v: float | None) -> float | None:
    return v if v is not None and v > 0 else None


def parse_dcgmi_dmon(text: str) -> tuple[dict[int, dict[str, float | None]], list[str]]:
    """``dcgmi dmon -e 1002,1004,1005 -c 1``: {gpu index: {"sm"|"tensor"|"dram": ratio or None}}, warnings.

    The columns are found by their header tags (``#Entity ... SMACT TENSO DRAMA``), so another field
    order still reads right; a value outside 0..1 or ``N/A`` is unknown."""
    columns: list[str | None] | None = None
    out: dict[int, dict[str, float | None]] = {}
    warnings: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            tags = s.lstrip("#").split()
            if tags and tags[0].lower() == "entity":
                columns = [_DCGMI_TAGS.get(t.upper()) for t in tags[1:]]
            continue
        m = re.match(r"^GPU\s+(\d{1,6})\s+(.*)$", s)
        if m is None:
            continue
        if columns is None:
            warnings.append("dcgmi dmon: a GPU row before the #Entity header; output not understood")
            return {}, warnings
        values = m.group(2).split()
        if len(values) != len(columns):
            warnings.append(f"dcgmi dmon: GPU {m.group(1)}: {len(values)} values for {len(columns)} columns")
            continue
        out[int(m.group(1))] = {c: _ratio(_number(v)) for c, v in zip(columns, values, strict=True) if c is not None}
    if columns is None and text.strip():
        warnings.append(f"dcgmi dmon: no #Entity header in {text.strip()[:80]!r}")
    return out, warnings


def with_dcgm(boards: Sequence[BoardActivity], dcgm: Mapping[int, Mapping[str, float | None]]) -> list[BoardActivity]:
    """The boards with DCGM's ratios where DCGM reported the board."""
    out = []
    for b in boards:
        d = dcgm.get(b.index, {})
        out.append(
            BoardActivity(
                b.index,
                b.uuid,
                b.utilization,
                b.sm_clock_mhz,
                b.sm_clock_max_mhz,
                d.get("sm"),
                d.get("tensor"),
                d.get("dram"),
            )
        )
    return out


def _board_uuid(device_id: str) -> str:
    """The GPU UUID of a device plugin's device ID: the plugin's time-slicing replicas are
    ``<uuid>::<n>``, one board shared by several Pods."""
    return device_id.split("::", 1)[0].strip().lower()


def boards_held(
    holders: Sequence[DeviceHolder], boards: Sequence[BoardActivity], resources: Sequence[str] = GPU_RESOURCES
) -> tuple[list[BoardHolder], list[str]]:
    """Which Pod holds which board: each listed device ID matched with a board's UUID.

    A device ID no board reports (a MIG instance, a board the tool did not list) is a warning naming
    the Pod and the ID, never a guessed board; devices of other resources are not GPUs and are skipped.
    A board shared by time-slicing is held by every Pod listing it."""
    by_uuid = {b.uuid.lower(): b.index for b in boards if b.uuid}
    out: set[BoardHolder] = set()
    warnings: list[str] = []
    for h in holders:
        if h.resource not in resources:
            continue
        for dev in h.device_ids:
            index = by_uuid.get(_board_uuid(dev))
            if index is None:
                warnings.append(
                    f"pod-resources: {h.namespace}/{h.pod} ({h.container}) holds {h.resource} "
                    f"{dev[:64]!r}, which matches no GPU UUID this node's tool reports"
                )
                continue
            out.add(BoardHolder(index, h.namespace, h.pod, h.container))
    return sorted(out, key=lambda b: (b.index, b.namespace, b.pod, b.container)), warnings
