
import os
import subprocess
import sys

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
