"""Hardware catalog: raw model strings → catalog keys with exact / proxy / generic resolution.

The catalog is a data file (`hardware-catalog.yaml` beside this module, or a path given by
the caller). Parsing the file is the only I/O here and happens in `load_catalog`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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
class Catalog:
    cpu_aliases: dict[str, str]
    gpu_aliases: dict[str, str]
    cpu_families: tuple[tuple[re.Pattern[str], str], ...]
    gpu_families: tuple[tuple[re.Pattern[str], str], ...]

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
    cpu_aliases, cpu_fams = _section(doc, "cpu", source)
    gpu_aliases, gpu_fams = _section(doc, "gpu", source)
    return Catalog(cpu_aliases, gpu_aliases, cpu_fams, gpu_fams)


def load_catalog(path: Path | None = None) -> Catalog:
    """The catalog at `path`, or the one shipped with the agent."""
    if path is not None:
        return parse_catalog(path.read_text(), str(path))
    text = resources.files("joulie_agent").joinpath("hardware-catalog.yaml").read_text()
    return parse_catalog(text, "joulie_agent/hardware-catalog.yaml")
