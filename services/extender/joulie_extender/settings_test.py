import pytest

from joulie_common.settingsgrammar import parse_duration
from joulie_extender.cli import main
from joulie_extender.settings import Settings, SettingsError


@pytest.mark.parametrize(("text", "seconds"), [("300", 300.0), ("300s", 300.0), ("5m", 300.0), ("1.5h", 5400.0),
                                                ("250ms", 0.25), ("1h30m", 5400.0), ("2m30s", 150.0)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration("X", text) == seconds


def test_defaults() -> None:
    s = Settings.from_env({})
    assert (s.addr, s.staleness_s, s.max_body_bytes) == ("127.0.0.1:9876", 300.0, 16 * 2**20)
    assert s.coefficients.cpu_util_coeff == 0.7 and s.host_port == ("127.0.0.1", 9876)


def test_environment_overrides() -> None:
    s = Settings.from_env({"EXTENDER_ADDR": ":9999", "METRICS_ADDR": "127.0.0.1:9877", "TWIN_STALENESS_THRESHOLD": "2m", "EXTENDER_MAX_BODY_BYTES": "2048",
                           "MARGINAL_CPU_UTIL_COEFF": "0.5", "MARGINAL_GPU_UTIL_COEFF_PERFORMANCE": "0.9"})
    assert s.host_port == ("0.0.0.0", 9999) and s.staleness_s == 120.0 and s.max_body_bytes == 2048
    assert s.metrics_host_port == ("127.0.0.1", 9877) and Settings.from_env({}).metrics_host_port is None
    assert (s.coefficients.cpu_util_coeff, s.coefficients.gpu_util_coeff_performance) == (0.5, 0.9)


@pytest.mark.parametrize(
    ("env", "named"),
    [({"TWIN_STALENESS_THRESHOLD": "soon"}, "TWIN_STALENESS_THRESHOLD"),
     ({"MARGINAL_CPU_UTIL_COEFF": "1.5"}, "MARGINAL_CPU_UTIL_COEFF"),
     ({"EXTENDER_MAX_BODY_BYTES": "lots"}, "EXTENDER_MAX_BODY_BYTES")],
)
def test_bad_settings_name_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        Settings.from_env(env)


def test_cli_refuses_a_bad_address_before_starting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--addr", "nowhere", "--no-kube"]) == 2
    assert "EXTENDER_ADDR='nowhere'" in capsys.readouterr().err


def test_limits_debug_and_tls_settings() -> None:
    d = Settings.from_env({})
    assert (d.max_concurrent, d.max_per_client, d.body_timeout_s, d.debug_endpoints) == (8, 4, 5.0, False)
    assert d.tls_cert_file == "" and d.tls_client_ca_file == ""
    s = Settings.from_env({"EXTENDER_MAX_CONCURRENT": "2", "EXTENDER_MAX_CONCURRENT_PER_CLIENT": "9",
                           "EXTENDER_BODY_TIMEOUT": "500ms", "EXTENDER_DEBUG_ENDPOINTS": "true",
                           "EXTENDER_TLS_CERT_FILE": "/tls/tls.crt", "EXTENDER_TLS_KEY_FILE": "/tls/tls.key",
                           "EXTENDER_TLS_CLIENT_CA_FILE": "/tls/ca.crt"})
    assert (s.max_concurrent, s.max_per_client, s.body_timeout_s, s.debug_endpoints) == (2, 2, 0.5, True)
    assert (s.tls_cert_file, s.tls_key_file, s.tls_client_ca_file) == ("/tls/tls.crt", "/tls/tls.key", "/tls/ca.crt")


@pytest.mark.parametrize(
    ("env", "message"),
    [({"EXTENDER_MAX_CONCURRENT": "0"}, "EXTENDER_MAX_CONCURRENT='0': expected an integer in [1, 1024]"),
     ({"EXTENDER_BODY_TIMEOUT": "0"}, "EXTENDER_BODY_TIMEOUT='0': expected a positive duration"),
     ({"EXTENDER_TLS_CERT_FILE": "/tls/tls.crt"},
      "EXTENDER_TLS_CERT_FILE='/tls/tls.crt': expected EXTENDER_TLS_CERT_FILE and EXTENDER_TLS_KEY_FILE both set"),
     ({"EXTENDER_TLS_CLIENT_CA_FILE": "/tls/ca.crt"}, "EXTENDER_TLS_CLIENT_CA_FILE='/tls/ca.crt': expected")],
)
def test_bad_limits_and_tls_settings_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as err:
        Settings.from_env(env)
    assert message in str(err.value)
