"""SIMCLUSTER_SIM_EXTRA_VALUES: extra simulator values merged in order, only what the process
runtime honours, and their extraArgs at the end of the simulator's command line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from joulie_simcluster.deploy import components as comp
from joulie_simcluster.deploy import simvalues
from joulie_simcluster.deploy.components_test import plan
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.settings import Settings


def test_the_setting_names_files_in_order_and_defaults_to_none() -> None:
    assert Settings.from_env({"HOME": "/h"}).sim_extra_values == ()
    s = Settings.from_env({"HOME": "/h", "SIMCLUSTER_SIM_EXTRA_VALUES": "a.yaml,b.yaml"})
    assert s.sim_extra_values == (Path("a.yaml"), Path("b.yaml"))


def test_later_files_win_and_their_extra_args_reach_the_simulator_command(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("extraArgs: [--cooling-model, chiller]\n")
    b.write_text("extraArgs: [--ambient, '30,0,86400,0', --facility-other-w, 500]\n")
    values = simvalues.load_extra([a, b])
    assert values == {"extraArgs": ["--ambient", "30,0,86400,0", "--facility-other-w", "500"]}
    p = dataclasses.replace(plan(tmp_path), simulator_extra_args=simvalues.extra_args(values))
    sim = comp.commands(p)[0].argv
    assert sim[-4:] == ["--ambient", "30,0,86400,0", "--facility-other-w", "500"]
    assert sim[sim.index("--power-time-scale") + 1] == "0.05"  # the harness's own arguments stay
    assert simvalues.load_extra([]) == {} and comp.commands(plan(tmp_path))[0].argv[-1] == "0.05"


@pytest.mark.parametrize(("text", "message"), [
    ("tick: 5\n", "x.yaml: tick: set by the harness from SIMCLUSTER_TIMING"),
    ("mode: files\n", "x.yaml: mode: set by the harness from SIMCLUSTER_HWEMU"),
    ("resources: {limits: {memory: 2Gi}}\n", "x.yaml: resources: not honoured by the process runtime's simulator"),
    ("extraArgs: --ambient\n", "x.yaml: extraArgs: expected a list of strings, got '--ambient'"),
    ("extraArgs: []\nextraArgs: [--x]\n", "duplicate key 'extraArgs'"),
])
def test_a_key_the_process_runtime_cannot_honour_is_refused_naming_file_and_key(tmp_path: Path, text: str,
                                                                                 message: str) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(text)
    with pytest.raises(RuntimeFailure) as err:
        simvalues.load_extra([f])
    assert message in str(err.value)
