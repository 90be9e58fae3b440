from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from joulie_hwprofiles.schema import builtin_profile_names
from joulie_simcluster.spec import ClusterSpec, SpecError, load_spec, parse_spec

SMOKE = Path("simulated-cluster/specs/smoke.yaml")


def test_the_smoke_spec_has_the_seeds_nine_nodes_one_per_profile_kind() -> None:
    spec = load_spec(SMOKE)
    assert spec.name == "smoke"
    assert [p.count for p in spec.pools] == [1] * 9
    # The seed's nine kinds, one each (issue 22 added four more builtin profiles the smoke does not run).
    assert len({p.profile for p in spec.pools}) == 9 and {p.profile for p in spec.pools} <= set(builtin_profile_names())
    assert all(p.labels["joulie.io/managed"] == "true" for p in spec.pools)
    # Every Node in a rack and a cooling zone (the facility model's racks, docs/facility-model.md).
    assert all(set(p.labels) == {"joulie.io/managed", "joulie.io/rack", "joulie.io/cooling-zone"} for p in spec.pools)


def test_the_smoke_spec_sets_tool_delivery_on_every_gpu_pool() -> None:
    spec = load_spec(SMOKE)
    gpu_pools = {"h100-nvl", "h100-sxm", "mi300x"}
    assert set(spec.harness.pools) == gpu_pools
    assert {spec.tool_delivery(p) for p in gpu_pools} == {"mounted"}


def test_an_unset_tool_delivery_follows_the_install() -> None:
    spec = parse_spec({"name": "c", "pools": [{"name": "g", "profile": "nvidia-h100-nvl-8gpu", "count": 1}]}, "x.yaml")
    assert spec.tool_delivery("g") == "none"
    assert spec.tool_delivery("g", {"agent": {"runtimeClassName": "nvidia"}}) == "mounted"
    assert spec.tool_delivery("g", {"agent": {"extraVolumes": [{"name": "drv"}]}}) == "mounted"


def _pool(**over: object) -> dict[str, object]:
    return {"name": "p", "profile": "intel-xeon-2s-rapl", "count": 1, **over}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"name": "smoke", "pools": [_pool(name="a"), _pool(name="b"), _pool(name="c", count=-1)]},
            "smoke.yaml: pools[2].count: must be ≥ 0, got -1",
        ),
        ({"name": "smoke", "pools": [_pool(color="red")]}, "smoke.yaml: pools[0].color: unknown key"),
        ({"name": "smoke", "extra": 1}, "smoke.yaml: extra: unknown key"),
        ({"pools": []}, "smoke.yaml: name: required"),
        ({"name": "Smoke"}, "smoke.yaml: name: must be a DNS label (lower-case letters, digits and '-'), got 'Smoke'"),
        (
            {"name": "smoke", "pools": [_pool(profile="cray-1")]},
            "smoke.yaml: pools[0].profile: no builtin profile 'cray-1'; known: amd-epyc-2s-energy-only,",
        ),
        (
            {"name": "smoke", "pools": [_pool(taints=[{"key": "k", "effect": "NoWay"}])]},
            "smoke.yaml: pools[0].taints[0].effect: must be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute', got 'NoWay'",
        ),
        (
            {"name": "smoke", "pools": [_pool(architecture="riscv64")]},
            "smoke.yaml: pools[0].architecture: must be 'amd64' or 'arm64', got 'riscv64'",
        ),
        (
            {"name": "smoke", "pools": [_pool(labels={"sim.joulie.io/pool": "x"})]},
            "smoke.yaml: pools[0].labels: sim.joulie.io/pool is set by the harness, not the spec",
        ),
        (
            {"name": "smoke", "pools": [_pool(count="many")]},
            "smoke.yaml: pools[0].count: input should be a valid integer, got 'many'",
        ),
        ({"name": "smoke", "pools": [_pool(count=True)]}, "smoke.yaml: pools[0].count: input should be a valid integer, got True"),
        (
            {"name": "smoke", "pools": [_pool(count=100001)]},
            "smoke.yaml: pools[0].count: input should be less than or equal to 100000, got 100001",
        ),
        (
            {"name": "smoke", "pools": [_pool()], "harness": {"pools": {"p": {"toolDelivery": "ftp"}}}},
            "smoke.yaml: harness.pools.p.toolDelivery: must be 'mounted' or 'none', got 'ftp'",
        ),
        (
            {"name": "smoke", "pools": [_pool()], "harness": {"pools": {"q": {"toolDelivery": "none"}}}},
            "smoke.yaml: harness.pools: names no pool of the spec: q",
        ),
        ({"name": "smoke", "pools": [_pool(), _pool()]}, "smoke.yaml: pools: pool 'p' is named twice"),
        (["not", "a", "map"], "smoke.yaml: (top level): expected a mapping, got list"),
    ],
)
def test_spec_errors_name_the_file_the_field_path_and_why(raw: object, message: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(raw, "smoke.yaml")
    assert str(e.value).startswith(message)


def test_every_problem_is_reported_one_per_line() -> None:
    with pytest.raises(SpecError) as e:
        parse_spec({"name": "smoke", "pools": [_pool(count=-1), _pool(name="q", profile="nope")]}, "smoke.yaml")
    lines = str(e.value).splitlines()
    assert lines[0] == "smoke.yaml: pools[0].count: must be ≥ 0, got -1"
    assert lines[1].startswith("smoke.yaml: pools[1].profile: no builtin profile 'nope'")


def test_load_spec_names_the_file_for_unreadable_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"missing\.yaml: cannot read"):
        load_spec(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match=r"bad\.yaml: not valid YAML"):
        load_spec(bad)


def test_a_zero_count_pool_and_an_architecture_override_are_valid(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"name": "s", "pools": [_pool(count=0, architecture="arm64")]}))
    spec = load_spec(f)
    assert isinstance(spec, ClusterSpec)
    assert spec.pools[0].count == 0
    assert spec.pools[0].architecture == "arm64"
