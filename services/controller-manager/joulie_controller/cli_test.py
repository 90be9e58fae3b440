
import logging
from collections.abc import Iterator

import pytest

from joulie_api.version import service_version
from joulie_controller.cli import main
from joulie_testinfra.versioncheck import assert_version_output


def test_version_prints_service_name_and_its_version_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert_version_output(main, "joulie-controller-manager", "services/controller-manager/joulie_controller/VERSION", capsys)


def test_run_refuses_bad_settings_naming_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STATIC_HP_FRAC", "half")
    assert main(["run", "--once"]) == 2
    assert "STATIC_HP_FRAC='half': expected a number" in capsys.readouterr().err


# A restarted controller says what it runs, whatever the settings (issue 36: with POWER_POLICY=none
# it logged nothing at start-up), and client libraries' per-request INFO lines (80 % of the log) are
# quiet unless LOG_LEVEL=debug asks for them.

_QUIETED = ("httpx", "httpcore", "urllib3", "kubernetes", "requests", "sushy")


class _FakeController:
    def tick(self) -> object:
        return type("Summary", (), {"failures": 0})()


@pytest.fixture
def run_once_offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``run --once`` with no cluster: the client and the composed controller are stand-ins."""
    import joulie_api.kubeconfig
    import joulie_controller.controller

    monkeypatch.setattr(joulie_api.kubeconfig, "api_client", lambda *_a, **_k: object())
    monkeypatch.setattr(joulie_controller.controller, "compose", lambda *_a, **_k: _FakeController())
    levels = {name: logging.getLogger(name).level for name in _QUIETED}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.parametrize("power_policy", ["none", "idle_suspend_v1"])
def test_run_logs_one_start_up_line_naming_version_policy_and_power_policy(
        run_once_offline: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        power_policy: str) -> None:
    monkeypatch.setenv("POLICY_TYPE", "queue_aware_v1")
    monkeypatch.setenv("POWER_POLICY", power_policy)
    caplog.set_level(logging.INFO)
    assert main(["run", "--once"]) == 0
    version = service_version("joulie_controller")
    starts = [r.getMessage() for r in caplog.records if "starting" in r.getMessage()]
    assert len(starts) == 1, caplog.text
    assert f"joulie-controller-manager {version}" in starts[0]
    assert "policy=queue_aware_v1" in starts[0] and f"power_policy={power_policy}" in starts[0]


def test_client_library_request_lines_are_quiet_by_default(
        run_once_offline: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("LOG_LEVEL", raising=False)
    caplog.set_level(logging.INFO)
    assert main(["run", "--once"]) == 0
    caplog.clear()
    for name in _QUIETED:
        logging.getLogger(name).info("HTTP Request: GET http://prometheus/api/v1/query \"HTTP/1.1 200 OK\"")
    logging.getLogger("httpx").warning("connection refused")
    logging.getLogger("joulie_controller.controller").info("assigned profiles")
    assert [r.name for r in caplog.records] == ["httpx", "joulie_controller.controller"]


def test_log_level_debug_keeps_client_library_request_lines(
        run_once_offline: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("LOG_LEVEL", "debug")
    caplog.set_level(logging.DEBUG)
    assert main(["run", "--once"]) == 0
    caplog.clear()
    logging.getLogger("httpx").info("HTTP Request: GET http://prometheus/api/v1/query \"HTTP/1.1 200 OK\"")
    assert [r.name for r in caplog.records] == ["httpx"]


def test_run_refuses_an_unknown_log_level(run_once_offline: None, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LOG_LEVEL", "chatty")
    assert main(["run", "--once"]) == 2
    assert "LOG_LEVEL='chatty'" in capsys.readouterr().err
