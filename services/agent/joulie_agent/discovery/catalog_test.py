"""Catalog resolution: exact alias, proxy family, generic; a bad catalog names the field."""

from pathlib import Path

import pytest

from joulie_agent.discovery.catalog import CatalogError, load_catalog, parse_catalog


def test_raw_model_spellings_resolve_exactly() -> None:
    cat = load_catalog()
    assert cat.resolve_cpu("Intel(R) Xeon(R) Platinum 8260 CPU @ 2.40GHz").key == "INTEL_XEON_PLATINUM_8260"
    assert cat.resolve_cpu("AMD EPYC 9654 96-Core Processor").exactness == "exact"
    assert cat.resolve_gpu("NVIDIA-H100-80GB-HBM3").key == "NVIDIA_H100_SXM"
    assert cat.resolve_gpu("AMD_Instinct_MI300X").key == "AMD_INSTINCT_MI300X"


def test_unknown_model_of_a_known_family_is_a_proxy_and_nothing_is_generic() -> None:
    cat = load_catalog()
    r = cat.resolve_cpu("AMD EPYC 9754 128-Core Processor")
    assert (r.key, r.exactness) == ("AMD_EPYC_9654", "proxy")
    assert cat.resolve_cpu("AMD EPYC").exactness == "proxy" and cat.resolve_cpu("AMD EPYC").key == ""
    assert cat.resolve_cpu("").exactness == "generic"


@pytest.mark.parametrize(("text", "field"), [
    ("schemaVersion: 2", "schemaVersion"),
    ("schemaVersion: 1\ncpus: {X: {aliases: 3}}", "cpus.X.aliases"),
    ("schemaVersion: 1\ncpus: {X: {aliases: []}}\ncpuFamilies: [{pattern: '(', key: X}]", "cpuFamilies[0].pattern"),
    ("schemaVersion: 1\ncpus: {}\ncpuFamilies: [{pattern: 'a', key: NOPE}]", "cpuFamilies[0]"),
    (": : :", "not valid YAML"),
])
def test_malformed_catalog_errors_name_the_field(text: str, field: str) -> None:
    with pytest.raises(CatalogError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_catalog(text, "cat.yaml")


def test_shipped_entries_carry_sourced_power_facts() -> None:
    cat = load_catalog()
    epyc = cat.cpu_facts["AMD_EPYC_9654"]
    assert (epyc.tdp_w, epyc.cap_min_w, epyc.cap_max_w) == (360.0, 320.0, 400.0) and "AMD" in epyc.source
    assert cat.gpu_facts["AMD_INSTINCT_MI300X"].cap_max_w == 750.0
    assert all(f.source for f in [*cat.cpu_facts.values(), *cat.gpu_facts.values()])


@pytest.mark.parametrize(("entry", "field"), [
    ("{aliases: [], tdpW: 300}", "cpus.OPS_CPU.source"),
    ("{aliases: [], tdpW: -1, source: ds}", "cpus.OPS_CPU.tdpW"),
    ("{aliases: [], capRangeW: {min: 400, max: 300}, source: ds}", "cpus.OPS_CPU.capRangeW.min"),
    ("{aliases: [], capRangeW: {min: 10}, source: ds}", "cpus.OPS_CPU.capRangeW"),
    ("{aliases: [], capRangeW: {max: '300W'}, source: ds}", "cpus.OPS_CPU.capRangeW.max"),
    ("{aliases: [], tdpW: 100, idleW: 150, source: ds}", "cpus.OPS_CPU.idleW"),
    ("{aliases: [], tdpw: 100, source: ds}", "cpus.OPS_CPU.tdpw"),
])
def test_an_operators_entry_is_validated_naming_the_entry_and_field(entry: str, field: str) -> None:
    with pytest.raises(CatalogError, match=f"extra.yaml: {field.replace('.', '[.]')}"):
        load_catalog().merged(f"schemaVersion: 1\ncpus:\n  OPS_CPU: {entry}\n", "extra.yaml")


def test_an_operators_entries_are_added_and_replace_shipped_ones(tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text("schemaVersion: 1\n"
                     "cpus:\n  AMD_EPYC_9754: {vendor: AuthenticAMD, tdpW: 360, capRangeW: {min: 320, max: 400},\n"
                     "    source: 'AMD EPYC 9754 product page', aliases: ['AMD EPYC 9754 128-Core Processor']}\n"
                     "gpus:\n  NVIDIA_TESLA_T4: {tdpW: 70, capRangeW: {min: 60, max: 70}, source: 'site measurement',"
                     " aliases: ['Tesla T4']}\n")
    cat = load_catalog(extra=extra)
    r = cat.resolve_cpu("AMD EPYC 9754 128-Core Processor")
    assert (r.key, r.exactness) == ("AMD_EPYC_9754", "exact") and cat.cpu_facts["AMD_EPYC_9754"].cap_max_w == 400.0
    assert cat.gpu_facts["NVIDIA_TESLA_T4"].cap_min_w == 60.0
    assert cat.resolve_cpu("AMD EPYC 9654 96-Core Processor").key == "AMD_EPYC_9654"  # shipped entries stay
    with pytest.raises(CatalogError, match="missing.yaml: cannot read"):
        load_catalog(extra=tmp_path / "missing.yaml")
