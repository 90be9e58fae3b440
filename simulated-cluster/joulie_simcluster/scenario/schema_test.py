"""The scenario schema: every shipped scenario parses (its spec too), and a bad file is refused with
the file, the step (index and name), the field and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from joulie_bench.arms import ARMS
from joulie_simcluster.scenario.schema import Range, ScenarioError, load_scenario, resolve
from joulie_simcluster.spec import load_spec

SCENARIOS = sorted(Path("simulated-cluster/scenarios").glob("*.yaml"))


def test_the_shipped_scenarios_are_found() -> None:
    names = {p.name for p in SCENARIOS}
    assert {"policy-switch.yaml", "ambient-fault.yaml", "scale-200-production.yaml"} <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_shipped_scenario_parses_with_its_spec_values_and_traces(path: Path) -> None:
    s = load_scenario(path, ARMS)
    assert s.name == path.stem
    spec = load_spec(resolve(path, s.spec))
    assert s.asserts, "a scenario without an assert step proves nothing"
    for v in s.values:
        assert resolve(path, v).is_file(), v
    traces = [st.load.trace for st in s.steps if st.load is not None and st.load.trace] + (
        [s.workload.trace] if s.workload.trace else [])
    for t in traces:
        assert resolve(path, t).is_file(), t
    nodes = {f"{p.name}-{i}" for p in spec.pools for i in range(p.count)}
    for st in s.steps:  # a Node a step names is one of the spec's
        named = [st.fault.node] if st.fault is not None and st.fault.node else []
        for cond in (st.assert_, st.wait.until if st.wait is not None else None):
            if cond is not None and cond.twin is not None and isinstance(cond.twin.nodes, list):
                named += cond.twin.nodes
        assert set(named) <= nodes, set(named) - nodes


def _write(tmp: Path, text: str) -> Path:
    f = tmp / "s.yaml"
    f.write_text("name: s\nspec: ../specs/smoke.yaml\n" + text)
    return f


@pytest.mark.parametrize(("steps", "message"), [
    ("steps:\n  - name: go\n    policy: {benchmark: Z}\n",
     's.yaml: steps[0] "go": policy.benchmark: must be one of A, B, C, D, E'),
    ("steps:\n  - name: a\n    wait: {seconds: 1}\n  - name: look\n    assert: {twin: {field: status.x, min: 1, colour: red}}\n",
     's.yaml: steps[1] "look": assert.twin.colour: unknown key (line 7)'),
    ("steps:\n  - wait: {seconds: 3, until: {healthy: true}}\n",
     "s.yaml: steps[0]: wait: expected exactly one of seconds, until (line 4)"),
    ("steps:\n  - name: boom\n    fault: {kind: meteor}\n", 's.yaml: steps[0] "boom": fault.kind: must be one of agent-kill'),
    ("steps:\n  - name: both\n    load: {smoke: true}\n    ambient: {clear: true}\n",
     'steps[0] "both": step: expected exactly one of load, policy, ambient, fault, wait, assert, got load, ambient'),
    ("steps:\n  - name: p\n    assert: {clusterPower: {source: truth}}\n",
     's.yaml: steps[0] "p": assert.clusterPower: expected minW, maxW or both'),
    ("steps:\n  - name: p\n    assert: {twin: {field: status.x, min: 3, max: 1}}\n", 'steps[0] "p": assert.twin: min 3 > max 1'),
    ("steps:\n  - name: hot\n    ambient: {offsetC: 99}\n", 's.yaml: steps[0] "hot": ambient.offsetC: input should be less than or equal to 50'),
    ("steps:\n  - name: x\n    wait: {seconds: 1}\n  - name: x\n    wait: {seconds: 2}\n", "steps[1]: name 'x' is used twice"),
    ("steps: []\n", "s.yaml: steps: list should have at least 1 item"),
    ("steps:\n  - name: e\n    policy: {env: {policy_type: x}}\n", 'steps[0] "e": policy.env: \'policy_type\' is not an environment variable'),
    ("stepz: []\n", "s.yaml: stepz: unknown key"),
])
def test_a_bad_scenario_is_refused_naming_file_step_and_field(tmp_path: Path, steps: str, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(_write(tmp_path, steps), ARMS)
    assert message in str(err.value)


def test_a_duplicate_key_and_bad_yaml_name_the_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"s\.yaml: steps\.0: duplicate key 'wait' \(line 5\)"):
        load_scenario(_write(tmp_path, "steps:\n  - wait: {seconds: 1}\n    wait: {seconds: 2}\n"), ARMS)
    with pytest.raises(ScenarioError, match=r"s\.yaml: not valid YAML"):
        load_scenario(_write(tmp_path, "steps: [\n"), ARMS)


def test_unnamed_steps_get_their_action_and_index_and_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    s = load_scenario(_write(tmp_path, "steps:\n  - wait: {seconds: 1}\n  - assert: {healthy: true}\n"), ARMS)
    assert [s.step_name(i) for i in range(2)] == ["wait-0", "assert-1"] and s.asserts == [1]
    assert resolve(tmp_path / "s.yaml", "../specs/smoke.yaml") == tmp_path / "../specs/smoke.yaml"
    assert resolve(tmp_path / "s.yaml", "/abs.yaml") == Path("/abs.yaml")


@pytest.mark.parametrize(("r", "value", "holds"), [
    (Range(min=1, max=2), 1.5, True), (Range(min=1, max=2), 2.5, False), (Range(min=1), None, False),
    (Range(equals="eco"), "eco", True), (Range(equals="eco"), "performance", False), (Range(equals=80), 80.0, True),
    (Range(max=5), "text", False),
])
def test_a_range_holds_within_its_bounds_and_never_on_a_missing_value(r: Range, value: float | str | None,
                                                                       holds: bool) -> None:
    assert r.holds(value) is holds
