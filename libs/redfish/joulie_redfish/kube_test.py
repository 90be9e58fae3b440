"""The Secret reader asks for the labelled Secrets of one namespace and merges them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from joulie_redfish.kube import read_directory


class FakeCoreV1:
    def __init__(self, secrets: list[dict[str, Any]]) -> None:
        self.secrets = secrets
        self.asked: list[tuple[str, str]] = []
        self.api_client = SimpleNamespace(sanitize_for_serialization=lambda obj: obj)

    def list_namespaced_secret(self, namespace: str, label_selector: str) -> Any:
        self.asked.append((namespace, label_selector))
        return SimpleNamespace(items=self.secrets)


def test_the_labelled_secrets_of_the_namespace_make_the_directory() -> None:
    api = FakeCoreV1([
        {"metadata": {"namespace": "joulie-system", "name": "pool-a"}, "stringData": {"username": "u", "password": "p", "a-0.address": "h0"}},
        {"metadata": {"namespace": "joulie-system", "name": "node-b"}, "stringData": {"b-0.address": "h1", "b-0.username": "v", "b-0.password": "q"}},
    ])
    d = read_directory(api, "joulie-system")
    assert api.asked == [("joulie-system", "joulie.io/bmc-credentials=true")]
    assert {n: (e.address, e.credentials.username) for n, e in d.items()} == {"a-0": ("https://h0", "u"), "b-0": ("https://h1", "v")}
