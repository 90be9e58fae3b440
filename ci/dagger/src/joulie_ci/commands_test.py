"""The Dagger module without an engine: its command lines against the real CLIs, its manifest,
and that the module file only wires commands.py into containers."""

from __future__ import annotations

import ast
import json
import subprocess
from dataclasses import asdict
from pathlib import Path

import pytest

from images import build
from joulie_ci import commands
from joulie_simcluster import cli as simcluster_cli
from release import versions

MODULE = Path("ci/dagger")
FUNCTIONS = {"build_images", "simcluster_up", "simcluster_smoke", "release"}


def test_build_images_runs_the_image_build_script_with_its_real_flags() -> None:
    argv = commands.build_images()
    assert argv[:4] == ["./pants", "run", "ci/images:build", "--"]
    args = build.parse_args(argv[4:])
    assert args.verify and args.package
    assert args.save == Path("/out/images") and args.json == Path("/out/images/images.json")
    assert args.components == [c.name for c in build.COMPONENTS]


def test_simcluster_commands_parse_with_the_real_cli() -> None:
    parser = simcluster_cli._parser()
    smoke = commands.simcluster_smoke("simulated-cluster/specs/smoke.yaml")
    assert smoke[0] == "./simcluster"
    ns = parser.parse_args(smoke[1:])
    assert ns.command == "smoke" and ns.spec == Path("simulated-cluster/specs/smoke.yaml")
    up = commands.simcluster_up("my spec.yaml")
    assert up[:2] == ["bash", "-c"]
    assert up[2] == "set -euo pipefail; ./simcluster up --spec 'my spec.yaml'; ./simcluster status"
    assert parser.parse_args(["up", "--spec", "my spec.yaml"]).command == "up"
    assert parser.parse_args(["status"]).command == "status"
    assert subprocess.run(["bash", "-n", "-c", up[2]]).returncode == 0


def test_simcluster_env_puts_the_summary_where_the_module_reads_it() -> None:
    env = commands.simcluster_env("s.yaml", timing="production", runtime="k3s")
    assert env == {"SIMCLUSTER_DIR": "/state", "SIMCLUSTER_SPEC": "s.yaml", "SIMCLUSTER_TIMING": "production", "SIMCLUSTER_RUNTIME": "k3s"}
    assert "SIMCLUSTER_RUNTIME" not in commands.simcluster_env("s.yaml")
    # simcluster smoke writes <state>/runs/latest/summary.json (simulated-cluster/joulie_simcluster/state.py).
    assert env["SIMCLUSTER_DIR"] + "/runs/latest/summary.json" == commands.SUMMARY


def test_release_list_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for svc, pkg, v in (("agent", "joulie_agent", "0.3.1"), ("simulator", "joulie_simulator", "1.0.0"), ("fakesmi", "joulie_fakesmi", "0.2.0")):
        (tmp_path / "services" / svc / pkg).mkdir(parents=True)
        (tmp_path / "services" / svc / pkg / "VERSION").write_text(v + "\n")
    assert commands.release_list() == ["./pants", "run", "ci/release:release", "--", "list"]
    assert versions.main(["--repo", str(tmp_path), *commands.release_list()[4:]]) == 0
    assert commands.parse_release_list(capsys.readouterr().out) == {"agent": "0.3.1", "simulator": "1.0.0", "fakesmi": "0.2.0"}


def test_publish_plan_pushes_version_and_dev_tags() -> None:
    built = [
        build.Built("agent", "joulie.local/joulie-agent:dev-aaaaaaaaaaaa", "joulie.local/joulie-agent", "dev-aaaaaaaaaaaa", 1, ["agent"], 1.0),
        build.Built("simulator", "joulie.local/joulie-simulator:dev-bbbbbbbbbbbb", "joulie.local/joulie-simulator",
                    "dev-bbbbbbbbbbbb", 1, ["simulator", "fakesmi"], 1.0),
    ]
    plan = commands.publish_plan("registry.example.com:5000/joulie", json.dumps([asdict(b) for b in built]),
                                 {"agent": "0.3.1", "simulator": "1.0.0", "fakesmi": "0.2.0"})
    assert plan == [
        commands.Publish("/out/images/joulie-agent.tar", ("registry.example.com:5000/joulie/joulie-agent:0.3.1",
                                                          "registry.example.com:5000/joulie/joulie-agent:dev-aaaaaaaaaaaa")),
        commands.Publish("/out/images/joulie-simulator.tar", ("registry.example.com:5000/joulie/joulie-simulator:1.0.0",
                                                              "registry.example.com:5000/joulie/joulie-simulator:dev-bbbbbbbbbbbb")),
    ]
    # The tarball names are the ones the build script's --save writes.
    assert all(p.tarball.startswith(commands.IMAGES_OUT + "/joulie-") for p in plan)
    with pytest.raises(ValueError, match="no version for 'agent'"):
        commands.publish_plan("localhost:5000", json.dumps([asdict(built[0])]), {})


@pytest.mark.parametrize("good", ["registry.example.com/joulie", "localhost:5000/joulie", "10.0.0.5:5000", "ghcr.io/org/proj"])
def test_registry_accepted(good: str) -> None:
    assert commands.validate_registry(good) == good


@pytest.mark.parametrize("bad", ["https://registry.example.com", "registry.example.com/joulie/", "Registry.io/x",
                                 "registry.example.com/joulie:1.0", "joulie", ""])
def test_registry_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="expected host"):
        commands.validate_registry(bad)


def test_chart_scripts_are_valid_bash_and_name_the_oci_target() -> None:
    pkg = commands.package_charts()[2]
    assert "ci/tools/bootstrap-tools.sh helm;" in pkg
    assert "for c in charts/joulie charts/joulie-simulator; do" in pkg
    push = commands.push_charts("registry.example.com/joulie")[2]
    assert "push \"$t\" oci://registry.example.com/joulie/charts;" in push
    assert "registry login registry.example.com --username" in push and "--password-stdin" in push
    for script in (pkg, push):
        assert subprocess.run(["bash", "-n", "-c", script]).returncode == 0


def test_manifest_names_the_module_and_its_entrypoint() -> None:
    manifest = json.loads((MODULE / "dagger.json").read_text())
    assert manifest["name"] == "joulie-ci"
    assert manifest["sdk"] == {"source": "python"}
    assert manifest["engineVersion"].startswith("v0.")
    pyproject = (MODULE / "pyproject.toml").read_text()
    assert 'main_object = "joulie_ci.main:JoulieCi"' in pyproject  # joulie-ci → JoulieCi, as Dagger names it


def _module_tree() -> ast.Module:
    return ast.parse((MODULE / "src/joulie_ci/main.py").read_text())


def test_module_exposes_the_four_functions() -> None:
    cls = next(n for n in _module_tree().body if isinstance(n, ast.ClassDef) and n.name == "JoulieCi")
    assert [d.id for d in cls.decorator_list if isinstance(d, ast.Name)] == ["object_type"]
    fns = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    exposed = {name for name, fn in fns.items() if any(isinstance(d, ast.Name) and d.id == "function" for d in fn.decorator_list)}
    assert exposed == FUNCTIONS
    release = fns["release"]
    assert [a.arg for a in release.args.args][:3] == ["self", "source", "registry"]
    assert ast.unparse(fns["simcluster_smoke"].returns) == "str"  # type: ignore[arg-type]


def test_module_runs_nothing_but_commands_py() -> None:
    """Every with_exec argument is a call into commands.py: no command line is built in the module."""
    execs = [n for n in ast.walk(_module_tree()) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "with_exec"]
    assert len(execs) == 8
    for call in execs:
        arg = call.args[0]
        assert isinstance(arg, ast.Call) and ast.unparse(arg.func).startswith("commands."), ast.unparse(call)
        assert hasattr(commands, ast.unparse(arg.func).split(".", 1)[1])
