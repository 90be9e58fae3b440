from __future__ import annotations

import re
from pathlib import Path

import pytest

from joulie_simcluster.settings import Settings, SettingsError, env_names
from joulie_simcluster.timing import PRESETS

README = Path("simulated-cluster/README.md")


def test_state_dir_from_the_environment() -> None:
    assert Settings.from_env({"SIMCLUSTER_DIR": "/x/y", "HOME": "/h"}).dir == Path("/x/y")
    assert Settings.from_env({"HOME": "/h"}).dir == Path("/h/.cache/joulie/simcluster/joulie-sim")
    assert Settings.from_env({"HOME": "/h", "SIMCLUSTER_NAME": "joulie-sim-smoke"}).dir == Path(
        "/h/.cache/joulie/simcluster/joulie-sim-smoke"
    )


def test_defaults_when_nothing_is_set_or_a_variable_is_empty() -> None:
    s = Settings.from_env({"HOME": "/h", "SIMCLUSTER_TIMING": "", "SIMCLUSTER_KEEP": ""})
    assert (s.name, s.hwemu, s.timing.name, s.telemetry, s.power_scope, s.runtime) == (
        "joulie-sim", "fuse", "ci", "otlp", "auto", "process")
    assert (s.keep, s.keep_failed, s.force_reload, s.no_build) == (False, False, False, False)
    assert (s.spec, s.values, s.dist, s.deploy_timeout_s, s.agent_shards) == (None, None, Path("dist"), None, None)
    assert s.deploy_wait_s(9) == 240.0  # the smoke's wait as before
    assert Settings.from_env({"SIMCLUSTER_AGENT_SHARDS": "auto"}).agent_shards is None
    assert Settings.from_env({"SIMCLUSTER_AGENT_SHARDS": "0"}).agent_shards == 0
    assert s.smoke_timeout_s == 1200.0


def test_values_are_parsed_with_their_units() -> None:
    s = Settings.from_env({
        "HOME": "/h", "SIMCLUSTER_VALUES": "a.yaml,,b.yaml", "SIMCLUSTER_TIMING": "production",
        "SIMCLUSTER_TELEMETRY": "otel-bridge", "SIMCLUSTER_KEEP": "1", "SIMCLUSTER_KEEP_FAILED": "0",
        "SIMCLUSTER_TEST_TIMEOUT": "90.5", "SIMCLUSTER_DEPLOY_TIMEOUT": "600", "SIMCLUSTER_AGENT_SHARDS": "4",
        "SIMCLUSTER_HWEMU": "files", "SIMCLUSTER_RUNTIME": "k3s", "SIMCLUSTER_POWER_SCOPE": "host",
    })
    assert s.values == (Path("a.yaml"), Path("b.yaml"))
    assert s.timing is PRESETS["production"] and s.telemetry == "otel-bridge" and s.hwemu == "files"
    assert s.keep and not s.keep_failed and s.runtime == "k3s" and s.power_scope == "host"
    assert (s.test_timeout_s, s.smoke_timeout_s, s.deploy_timeout_s, s.agent_shards) == (90.5, 90.5, 600.0, 4)
    # Without SIMCLUSTER_TEST_TIMEOUT: ten rate windows, at least 20 minutes.
    assert Settings.from_env({"SIMCLUSTER_TIMING": "production"}).smoke_timeout_s == max(1200.0, 10 * 120)


@pytest.mark.parametrize(("env", "message"), [
    ({"SIMCLUSTER_HWEMU": "fusee"}, "SIMCLUSTER_HWEMU='fusee': expected one of fuse, files"),
    ({"SIMCLUSTER_TIMING": "fast"}, "SIMCLUSTER_TIMING='fast': expected one of ci, production"),
    ({"SIMCLUSTER_TELEMETRY": "otel"}, "SIMCLUSTER_TELEMETRY='otel': expected one of otlp, otel-unpromoted"),
    ({"SIMCLUSTER_KEEP": "yes"}, "SIMCLUSTER_KEEP='yes': expected 1 or 0 (or unset)"),
    ({"SIMCLUSTER_DEPLOY_TIMEOUT": "4m"}, "SIMCLUSTER_DEPLOY_TIMEOUT='4m': expected a number of seconds > 0"),
    ({"SIMCLUSTER_TEST_TIMEOUT": "-1"}, "SIMCLUSTER_TEST_TIMEOUT='-1': expected a number of seconds > 0"),
    ({"SIMCLUSTER_AGENT_SHARDS": "two"}, "SIMCLUSTER_AGENT_SHARDS='two': expected auto or a whole number >= 0"),
    ({"SIMCLUSTER_TELEMTRY": "scrape"}, "SIMCLUSTER_TELEMTRY='scrape': unknown variable; expected one of SIMCLUSTER_NAME,"),
])
def test_an_unknown_variable_or_a_malformed_value_is_refused_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as err:
        Settings.from_env(env)
    assert message in str(err.value)


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(SettingsError) as err:
        Settings.from_env({"SIMCLUSTER_HWEMU": "x", "SIMCLUSTER_KEEP": "2", "OTHER": "ignored"})
    assert "SIMCLUSTER_HWEMU='x'" in str(err.value) and "SIMCLUSTER_KEEP='2'" in str(err.value)


def test_the_readme_settings_table_lists_exactly_the_settings() -> None:
    text = README.read_text()
    section = text.split("## Settings", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(SIMCLUSTER_[A-Z_]+)` \|", section, re.M)
    assert rows == env_names()



def test_a_large_cluster_sizes_its_own_deploy_wait_and_the_variable_still_wins() -> None:
    # Issue 39: at 1000 Nodes FUSE mode had every component reporting after 784 s on a quiet
    # machine and files mode's simulator alone took 770 s to serve; the 240 s default stopped both
    # unless SIMCLUSTER_DEPLOY_TIMEOUT was set by hand.
    fuse, files = Settings.from_env({}), Settings.from_env({"SIMCLUSTER_HWEMU": "files"})
    assert fuse.deploy_wait_s(1000) >= 2 * 784
    assert files.deploy_wait_s(1000) >= 2 * 770 and files.deploy_wait_s(1000) > fuse.deploy_wait_s(1000)
    assert 240.0 < fuse.deploy_wait_s(200) < fuse.deploy_wait_s(1000)
    assert Settings.from_env({"SIMCLUSTER_DEPLOY_TIMEOUT": "90"}).deploy_wait_s(1000) == 90.0
