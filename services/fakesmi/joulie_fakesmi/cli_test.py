
import os
import subprocess
import sys
from pathlib import Path

import pytest

from joulie_fakesmi.cli import main
from joulie_testinfra.versioncheck import assert_version_output


def test_version_prints_service_name_and_its_version_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert_version_output(main, "joulie-fakesmi", "services/fakesmi/joulie_fakesmi/VERSION", capsys)


def test_a_tool_call_does_not_load_the_api_types() -> None:
    """The agents start fakesmi for every GPU tool call (8 boards: 8+ starts per cap change); the
    pydantic API types once made each start cost ~0.3 s of CPU, the emulation's bottleneck at 200
    Nodes. Loading the tool must stay free of them."""
    code = "import sys, joulie_fakesmi.cli; print(sorted(m for m in ('pydantic', 'joulie_api') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


# What the agents' steady state runs (services/agent README, "GPU tool starts per NVIDIA node").
STEADY_QUERIES = [
    ("nvidia", ["nvidia-smi", "--query-gpu=index,power.min_limit,power.max_limit,power.limit,power.draw,"
                "enforced.power.limit,uuid,utilization.gpu,clocks.sm,clocks.max.sm,name", "--format=csv,noheader,nounits"]),
    ("nvidia", ["dcgmi", "dmon", "-e", "1002,1004,1005", "-c", "1"]),
    ("amd", ["amd-smi", "static", "--limit", "--json"]),
]
# Together they cost a start three times what the interpreter's own start does: an nvidia-smi reading
# of an 8-board H100 took 177 M instructions with them, 44 M without (valgrind --tool=callgrind,
# 2026-12-07; the interpreter alone 36 M). json (and re) are left to amd-smi and rocm-smi, which print JSON.
SLOW_IMPORTS = ("dataclasses", "inspect", "typing", "pathlib", "json", "re")


@pytest.mark.parametrize(("vendor", "argv"), STEADY_QUERIES, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_steady_state_tool_call_imports_neither_dataclasses_nor_typing_nor_pathlib_nor_json(
        vendor: str, argv: list[str], tmp_path: Path) -> None:
    from joulie_fakesmi.dcgmi_test import _node, h100
    from joulie_fakesmi.fakesmi_test import _amd

    node = _node(tmp_path, [h100(0), h100(1)]) if vendor == "nvidia" else _amd(tmp_path, "current")
    slow = SLOW_IMPORTS if vendor == "nvidia" else tuple(m for m in SLOW_IMPORTS if m not in ("json", "re"))
    code = ("import sys\nfrom joulie_fakesmi.cli import main\ncode = main(sys.argv[2:], prog=sys.argv[1])\n"
            f"print('\\n' + repr(sorted(m for m in {slow!r} if m in sys.modules)))\nsys.exit(code)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "HWEMU_STATE_ROOT": node.state_root,
           "HWEMU_SYS_ROOT": node.sys_root, "HWEMU_HOST_ROOT": node.host_root}
    out = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "[]", out.stdout
