"""Hardware catalog: raw model strings → catalog keys with exact / proxy / generic resolution,
and per model the vendor's published power facts (TDP, cap range, idle), each entry citing its source.

Discovery falls back to an entry's facts when the node does not state them (a cap range on an EPYC
with energy counters only, an MI300X behind a rocm-smi that reports no range), and NodeHardware says
which facts came from here (`inventoryResolution.catalogFacts`).

The catalog is a data file (`hardware-catalog.yaml` beside this module, or a path given by the
caller); operators add or override entries with a second file of the same schema (the chart's
`agent.hardwareCatalog` ConfigMap, HARDWARE_CATALOG_EXTRA). Every entry is validated on load and
an error names the file, the entry and the field. Reading files happens only in `load_catalog`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from joulie_common.yamlload import YamlError, parse_yaml

Exactness = Literal["exact", "proxy", "generic"]


class CatalogError(ValueError):
    """The catalog file is malformed; the message names the file and the field."""


def normalize_model(raw: str) -> str:
    s = raw.upper()
    s = re.sub(r"\((R|TM|C)\)", " ", s)
    s = re.sub(r"@\s*[0-9.]+\s*[GM]HZ", " ", s)
    s = re.sub(r"[-_,]", " ", s)
    s = re.sub(r"\b(CPU|PROCESSOR)\b", " ", s)
    return " ".join(s.split())


@dataclass(frozen=True)
class Resolution:
    key: str
    exactness: Exactness


@dataclass(frozen=True)
class Facts:
    """A model's published power facts, watts; per socket for CPUs, per GPU for GPUs. None: not published."""

    source: str
    tdp_w: float | None = None
    cap_min_w: float | None = None
    cap_max_w: float | None = None
    idle_w: float | None = None


@dataclass(frozen=True)
class Catalog:
    cpu_aliases: dict[str, str]
    gpu_aliases: dict[str, str]
    cpu_families: tuple[tuple[re.Pattern[str], str], ...]
    gpu_families: tuple[tuple[re.Pattern[str], str], ...]
    cpu_facts: dict[str, Facts] = field(default_factory=dict)
    gpu_facts: dict[str, Facts] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    """The parsed document, for merging an operator's entries (`merged`)."""

    def merged(self, extra_text: str, source: str) -> Catalog:
        """This catalog with the entries (and families) of another file added; same keys are replaced."""
        try:
            extra = parse_yaml(extra_text, source)
        except YamlError as err:
            raise CatalogError(str(err)) from None
        if not isinstance(extra, dict) or extra.get("schemaVersion") != 1:
            raise CatalogError(f"{source}: schemaVersion: expected 1")
        doc = {**self.raw}
        for name in ("cpu", "gpu"):
            section = extra.get(f"{name}s") or {}
            if not isinstance(section, dict):
                raise CatalogError(f"{source}: {name}s: expected a mapping of key -> entry")
            _check_entries(section, name, source)
            doc[f"{name}s"] = {**(doc.get(f"{name}s") or {}), **section}
            doc[f"{name}Families"] = [*(extra.get(f"{name}Families") or []), *(doc.get(f"{name}Families") or [])]
        return _build(doc, source)

    def resolve_cpu(self, raw: str) -> Resolution:
        return _resolve(raw, self.cpu_aliases, self.cpu_families)

    def resolve_gpu(self, raw: str) -> Resolution:
        return _resolve(raw, self.gpu_aliases, self.gpu_families)


def _resolve(raw: str, aliases: dict[str, str], families: tuple[tuple[re.Pattern[str], str], ...]) -> Resolution:
    norm = normalize_model(raw)
    if not norm:
        return Resolution("", "generic")
    if norm in aliases:
        return Resolution(aliases[norm], "exact")
    for pattern, key in families:
        if pattern.search(norm):
            return Resolution(key, "proxy")
    return Resolution("", "proxy")


def _number(value: Any, where: str, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or (positive and value == 0):
        raise CatalogError(f"{where}: expected a number {'> 0' if positive else '>= 0'} (watts), got {value!r}")
    return float(value)


FACT_FIELDS = {"vendor", "aliases", "tdpW", "capRangeW", "idleW", "source"}


def _facts(key: str, entry: dict[str, Any], where: str) -> Facts | None:
    """The entry's power facts, validated; None when it states none."""
    unknown = set(entry) - FACT_FIELDS
    if unknown:
        raise CatalogError(f"{where}.{sorted(unknown)[0]}: unknown field (known: {', '.join(sorted(FACT_FIELDS))})")
    if not any(k in entry for k in ("tdpW", "capRangeW", "idleW")):
        return None
    src = entry.get("source")
    if not isinstance(src, str) or not src.strip():
        raise CatalogError(f"{where}.source: required with tdpW/capRangeW/idleW: the datasheet the values come from")
    tdp = _number(entry["tdpW"], f"{where}.tdpW", positive=True) if "tdpW" in entry else None
    cap_min = cap_max = None
    if "capRangeW" in entry:
        rng = entry["capRangeW"]
        if not isinstance(rng, dict) or "max" not in rng or set(rng) - {"min", "max"}:
            raise CatalogError(f"{where}.capRangeW: expected {{min: W, max: W}} (min optional)")
        cap_max = _number(rng["max"], f"{where}.capRangeW.max", positive=True)
        if "min" in rng:
            cap_min = _number(rng["min"], f"{where}.capRangeW.min", positive=False)
            if cap_min > cap_max:
                raise CatalogError(f"{where}.capRangeW.min: {cap_min:g} W is above max {cap_max:g} W")
    idle = _number(entry["idleW"], f"{where}.idleW", positive=False) if "idleW" in entry else None
    if idle is not None and tdp is not None and idle >= tdp:
        raise CatalogError(f"{where}.idleW: {idle:g} W is not below tdpW {tdp:g} W")
    return Facts(src.strip(), tdp, cap_min, cap_max, idle)


def _check_entries(entries: dict[str, Any], name: str, source: str) -> dict[str, Facts]:
    facts: dict[str, Facts] = {}
    for key, entry in entries.items():
        where = f"{source}: {name}s.{key}"
        if not isinstance(entry, dict) or not isinstance(entry.get("aliases"), list):
            raise CatalogError(f"{where}.aliases: expected a list of strings")
        f = _facts(str(key), entry, where)
        if f is not None:
            facts[str(key)] = f
    return facts


def _section(doc: dict[str, Any], name: str, source: str) -> tuple[dict[str, str], tuple[tuple[re.Pattern[str], str], ...]]:
    entries = doc.get(f"{name}s") or {}
    if not isinstance(entries, dict):
        raise CatalogError(f"{source}: {name}s: expected a mapping of key -> entry")
    aliases: dict[str, str] = {}
    for key, entry in entries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("aliases"), list):
            raise CatalogError(f"{source}: {name}s.{key}.aliases: expected a list of strings")
        aliases[normalize_model(str(key))] = str(key)
        for alias in entry["aliases"]:
            aliases[normalize_model(str(alias))] = str(key)
    fams: list[tuple[re.Pattern[str], str]] = []
    for i, fam in enumerate(doc.get(f"{name}Families") or []):
        if not isinstance(fam, dict) or "pattern" not in fam or fam.get("key") not in entries:
            raise CatalogError(f"{source}: {name}Families[{i}]: needs pattern and a key listed under {name}s")
        try:
            fams.append((re.compile(str(fam["pattern"])), str(fam["key"])))
        except re.error as err:
            raise CatalogError(f"{source}: {name}Families[{i}].pattern: {err}") from None
    return aliases, tuple(fams)


def parse_catalog(text: str, source: str = "hardware catalog") -> Catalog:
    try:
        doc = parse_yaml(text, source)
    except YamlError as err:
        raise CatalogError(str(err)) from None
    if not isinstance(doc, dict) or doc.get("schemaVersion") != 1:
        raise CatalogError(f"{source}: schemaVersion: expected 1")
    return _build(doc, source)


def _build(doc: dict[str, Any], source: str) -> Catalog:
    cpu_aliases, cpu_fams = _section(doc, "cpu", source)
    gpu_aliases, gpu_fams = _section(doc, "gpu", source)
    cpu_facts = _check_entries(doc.get("cpus") or {}, "cpu", source)
    gpu_facts = _check_entries(doc.get("gpus") or {}, "gpu", source)
    return Catalog(cpu_aliases, gpu_aliases, cpu_fams, gpu_fams, cpu_facts, gpu_facts, doc)


def load_catalog(path: Path | None = None, extra: Path | None = None) -> Catalog:
    """The catalog at `path`, or the one shipped with the agent, with an operator's `extra` file merged."""
    if path is not None:
        cat = parse_catalog(path.read_text(), str(path))
    else:
        text = resources.files("joulie_agent").joinpath("hardware-catalog.yaml").read_text()
        cat = parse_catalog(text, "joulie_agent/hardware-catalog.yaml")
    if extra is not None:
        try:
            extra_text = extra.read_text()
        except OSError as err:
            raise CatalogError(f"{extra}: cannot read: {err.strerror}") from None
        cat = cat.merged(extra_text, str(extra))
    return cat
