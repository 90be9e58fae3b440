from pathlib import Path

import pytest
import yaml

from joulie_api.kubeconfig import ConfigException, api_client


def kubeconfig(path: Path, server: str, context: str = "main") -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}},
                     {"name": "other", "context": {"cluster": "c", "user": "u", "namespace": "x"}}],
    }))
    return path


@pytest.fixture(autouse=True)
def no_service_account(monkeypatch: pytest.MonkeyPatch) -> None:
    # Outside a Pod: the in-cluster loader finds no KUBERNETES_SERVICE_HOST.
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)


def test_an_explicit_file_wins_over_kubeconfig_env(tmp_path: Path) -> None:
    explicit = kubeconfig(tmp_path / "a", "https://127.0.0.1:1111")
    env_file = kubeconfig(tmp_path / "b", "https://127.0.0.1:2222")
    api = api_client(explicit, environ={"KUBECONFIG": str(env_file)})
    assert api.configuration.host == "https://127.0.0.1:1111"


def test_outside_a_pod_kubeconfig_env_is_read_at_call_time(tmp_path: Path) -> None:
    env_file = kubeconfig(tmp_path / "b", "https://127.0.0.1:2222")
    assert api_client(environ={"KUBECONFIG": str(env_file)}).configuration.host == "https://127.0.0.1:2222"


def test_in_cluster_only_refuses_to_fall_back(tmp_path: Path) -> None:
    env_file = kubeconfig(tmp_path / "b", "https://127.0.0.1:2222")
    with pytest.raises(ConfigException):
        api_client(in_cluster_only=True, environ={"KUBECONFIG": str(env_file)})


def test_a_missing_file_is_an_error_not_a_default(tmp_path: Path) -> None:
    with pytest.raises((ConfigException, OSError)):
        api_client(tmp_path / "missing")


def test_two_clients_do_not_share_a_configuration(tmp_path: Path) -> None:
    a = api_client(kubeconfig(tmp_path / "a", "https://127.0.0.1:1111"))
    b = api_client(kubeconfig(tmp_path / "b", "https://127.0.0.1:2222"))
    assert (a.configuration.host, b.configuration.host) == ("https://127.0.0.1:1111", "https://127.0.0.1:2222")
