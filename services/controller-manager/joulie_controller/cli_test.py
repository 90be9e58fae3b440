
import pytest

from joulie_controller.cli import main
from joulie_testinfra.versioncheck import assert_version_output


def test_version_prints_service_name_and_its_version_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert_version_output(main, "joulie-controller-manager", "services/controller-manager/joulie_controller/VERSION", capsys)


def test_run_refuses_bad_settings_naming_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STATIC_HP_FRAC", "half")
    assert main(["run", "--once"]) == 2
    assert "STATIC_HP_FRAC='half': expected a number" in capsys.readouterr().err
