"""Catalog resolution: exact alias, proxy family, generic; a bad catalog names the field."""

import pytest

from joulie_agent.catalog import CatalogError, load_catalog, parse_catalog


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
