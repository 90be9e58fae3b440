"""The hardware fixture corpus (`services/agent/testdata/hardware/<machine>/`, reference §2.1).

Layout per machine: machine.yaml, cpuinfo, node-labels.json, expected.json, and optionally
powercap/<zone>/<file>, cpufreq-driver, nvidia-smi.txt, rocm-smi.txt. Two additions of ours:
`cpufreq/policy<N>/<file>` (frequency landmarks and DVFS range) and `amd-smi.txt` (the output of
`amd-smi static --limit --json`). `materialize` turns a machine into a node root plus a directory
of stand-in tools that answer exactly the agent's queries, so discovery runs unchanged on it.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joulie_agent import gputools, powercap
from joulie_agent.catalog import Catalog
from joulie_agent.discovery import build_status, status_json
from joulie_agent.hostread import HostPaths, read_facts
from joulie_agent.toolrun import make_runner
from joulie_common.yamlload import YamlError, load_yaml

MACHINE_FILES = {"machine.yaml", "cpuinfo", "node-labels.json", "expected.json", "cpufreq-driver",
                 "nvidia-smi.txt", "rocm-smi.txt", "amd-smi.txt", "README.md"}
MACHINE_DIRS = {"powercap", "cpufreq"}
MACHINE_KEYS = {"description", "source", "capturedAt", "allocatable", "writeRejectingZones", "notes"}
CPUFREQ_FILES = {"scaling_driver", "cpuinfo_min_freq", "cpuinfo_max_freq", "base_frequency", "scaling_max_freq",
                 "scaling_min_freq", "scaling_cur_freq", "scaling_governor"}
ZONE_FILE_RE = re.compile(
    r"^(name|enabled|energy_uj|max_energy_range_uj|constraint_[0-9]+_(name|power_limit_uw|max_power_uw|"
    r"min_power_uw|time_window_us))$")


class CorpusError(ValueError):
    pass


@dataclass(frozen=True)
class Machine:
    name: str
    path: Path
    meta: dict[str, Any]

    @property
    def allocatable(self) -> dict[str, str]:
        a = self.meta.get("allocatable") or {}
        out = {k: str(v) for k, v in a.items() if k != "gpu"}
        out.update({k: str(v) for k, v in (a.get("gpu") or {}).items()})
        return out

    @property
    def labels(self) -> dict[str, str]:
        import json

        doc = json.loads((self.path / "node-labels.json").read_text())
        return {str(k): str(v) for k, v in doc.items()}

    @property
    def write_rejecting_zones(self) -> list[str]:
        return [str(z) for z in self.meta.get("writeRejectingZones") or []]


def machines(corpus: Path) -> list[Machine]:
    out = []
    for d in sorted(corpus.iterdir()):
        if d.is_dir() and not d.name.startswith("_"):
            out.append(load_machine(d))
    return out


def load_machine(d: Path) -> Machine:
    """Validate a machine directory's layout and metadata; CorpusError names the file."""
    for entry in d.iterdir():
        if entry.is_dir() and entry.name not in MACHINE_DIRS or entry.is_file() and entry.name not in MACHINE_FILES:
            raise CorpusError(f"{entry}: not part of the corpus layout")
    for req in ("machine.yaml", "cpuinfo", "node-labels.json"):
        if not (d / req).is_file():
            raise CorpusError(f"{d / req}: required file missing")
    try:
        meta = load_yaml(d / "machine.yaml", mapping=True)
    except YamlError as err:
        raise CorpusError(str(err)) from None
    if extra := set(meta) - MACHINE_KEYS:
        raise CorpusError(f"{d / 'machine.yaml'}: unknown keys {sorted(extra)}")
    for key in ("description", "source"):
        if not str(meta.get(key) or "").strip() or "TODO" in str(meta.get(key)):
            raise CorpusError(f"{d / 'machine.yaml'}: {key}: required, without TODO")
    pc = d / "powercap"
    if pc.is_dir():
        for zone in pc.iterdir():
            if not powercap.ZONE_DIR_RE.match(zone.name):
                raise CorpusError(f"{zone}: not a zone directory name")
            for f in zone.iterdir():
                if not ZONE_FILE_RE.match(f.name):
                    raise CorpusError(f"{f}: not a powercap zone file")
    for z in meta.get("writeRejectingZones") or []:
        if not (pc / str(z) / "constraint_0_power_limit_uw").is_file():
            raise CorpusError(f"{d / 'machine.yaml'}: writeRejectingZones: {z} has no constraint_0_power_limit_uw")
    return Machine(d.name, d, meta)


def _tool_script(answers: dict[str, Path]) -> str:
    lines = ["#!/bin/sh", "# Answers exactly the agent's queries from captured output; anything else fails.",
             'case "$*" in']
    for args, out in answers.items():
        lines.append(f"  {shlex.quote(args)}) cat {shlex.quote(str(out))}; exit 0 ;;")
    lines += ['  *) echo "stand-in: \'$*\' was not captured" >&2; exit 2 ;;', "esac", ""]
    return "\n".join(lines)


def write_tool(bin_dir: Path, tool: str, answers: dict[str, Path]) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    p = bin_dir / tool
    p.write_text(_tool_script(answers))
    p.chmod(0o755)


def materialize(m: Machine, root: Path, reject_writes: bool = False) -> Path:
    """Lay the machine out as a node root under `root`; returns the stand-in tools' bin dir.

    With reject_writes, each writeRejectingZones limit file becomes a directory (EISDIR on write),
    as the emulator renders a limit the kernel refuses.
    """
    (root / "proc").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(m.path / "cpuinfo", root / "proc" / "cpuinfo")
    sysfs = root / "sys"
    if (m.path / "powercap").is_dir():
        shutil.copytree(m.path / "powercap", sysfs / "class" / "powercap")
        if reject_writes:
            for z in m.write_rejecting_zones:
                f = sysfs / "class" / "powercap" / z / "constraint_0_power_limit_uw"
                f.unlink()
                f.mkdir()
    cf = sysfs / "devices" / "system" / "cpu" / "cpufreq"
    if (m.path / "cpufreq").is_dir():
        shutil.copytree(m.path / "cpufreq", cf)
    elif (m.path / "cpufreq-driver").is_file():
        (cf / "policy0").mkdir(parents=True)
        shutil.copyfile(m.path / "cpufreq-driver", cf / "policy0" / "scaling_driver")
    bin_dir = root / "_bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    if (m.path / "nvidia-smi.txt").is_file():
        (root / "dev").mkdir(exist_ok=True)
        (root / "dev" / "nvidiactl").write_text("")
        answers = {" ".join(gputools.NVIDIA_QUERY[1:]): m.path / "nvidia-smi.txt", "-L": root / "_bin" / "empty"}
        if (m.path / "nvidia-smi-default.txt").is_file():  # captures from before the default-limit query lack it
            answers[" ".join(gputools.NVIDIA_DEFAULT_QUERY[1:])] = m.path / "nvidia-smi-default.txt"
        write_tool(bin_dir, "nvidia-smi", answers)
        (bin_dir / "empty").write_text("")
    amd: dict[str, dict[str, Path]] = {}
    if (m.path / "rocm-smi.txt").is_file():
        amd["rocm-smi"] = {" ".join(gputools.ROCMSMI_LEGACY_QUERY[1:]): m.path / "rocm-smi.txt",
                           " ".join(gputools.ROCMSMI_PRODUCT_QUERY[1:]): m.path / "rocm-smi.txt"}
    if (m.path / "amd-smi.txt").is_file():
        amd["amd-smi"] = {" ".join(gputools.AMDSMI_LIMITS[1:]): m.path / "amd-smi.txt"}
    for tool, answers in amd.items():
        write_tool(bin_dir, tool, answers)
    return bin_dir


def discover_machine(m: Machine, work: Path, catalog: Catalog) -> str:
    """The golden text for a machine: discovery on its materialized root with stand-in tools only."""
    root = work / m.name
    bin_dir = materialize(m, root)
    run = make_runner(str(bin_dir))
    facts = read_facts(HostPaths.under(root), m.labels, m.allocatable, run, nvml=None)
    return status_json(build_status(facts, catalog))


def check_goldens(corpus: Path, work: Path, catalog: Catalog, update: bool) -> list[str]:
    """Machines whose expected.json differs from discovery (rewritten when update is set)."""
    drift = []
    for m in machines(corpus):
        got = discover_machine(m, work, catalog)
        golden = m.path / "expected.json"
        if not golden.is_file() or golden.read_text() != got:
            drift.append(m.name)
            if update:
                golden.write_text(got)
    return drift
