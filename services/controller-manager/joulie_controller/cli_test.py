import re
from pathlib import Path

import pytest

from joulie_controller.cli import NAME, main


def test_version_prints_service_name_and_its_version_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out.strip()
    expected = Path("services/controller-manager/joulie_controller/VERSION").read_text().strip()
    assert out == f"{NAME} {expected}"
    assert re.fullmatch(r"joulie-controller-manager \d+\.\d+\.\d+", out)


def test_run_refuses_bad_settings_naming_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STATIC_HP_FRAC", "half")
    assert main(["run", "--once"]) == 2
    assert "STATIC_HP_FRAC='half': expected a number" in capsys.readouterr().err
