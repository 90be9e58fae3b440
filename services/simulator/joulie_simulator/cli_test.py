
import pytest

from joulie_simulator.cli import main
from joulie_testinfra.versioncheck import assert_version_output


def test_version_prints_service_name_and_its_version_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert_version_output(main, "joulie-simulator", "services/simulator/joulie_simulator/VERSION", capsys)
