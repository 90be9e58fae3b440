"""The write layer's pure parts; the real API server round trip lives in the infra tests."""

import json

from kubernetes.client.exceptions import ApiException

from joulie_api.generated.nodetwin import CPUCapSpec, NodeTwin, NodeTwinSpec
from joulie_api.kube import NODE_TWIN, KubeWriteError, is_temporary, server_message, to_body


def test_apply_body_names_the_object_and_leaves_unset_fields_out() -> None:
    twin = NodeTwin(spec=NodeTwinSpec(node_name="Node_A/1", profile="eco", cpu=CPUCapSpec(package_power_cap_pct_of_max=60)))
    body = to_body(NODE_TWIN, twin, "node-a-1")
    assert body == {
        "apiVersion": "joulie.io/v1alpha1",
        "kind": "NodeTwin",
        "metadata": {"name": "node-a-1"},
        "spec": {"nodeName": "Node_A/1", "profile": "eco", "cpu": {"packagePowerCapPctOfMax": 60.0}},
    }


def _api_error(status: int, message: str) -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.body = json.dumps({"kind": "Status", "message": message})
    return exc


def test_conflicts_and_server_errors_are_temporary_validation_errors_are_not() -> None:
    assert is_temporary(_api_error(409, "conflict"))
    assert is_temporary(_api_error(503, "etcd unavailable"))
    assert not is_temporary(_api_error(422, "invalid"))
    assert not is_temporary(_api_error(404, "not found"))
    assert not is_temporary(ValueError("bug"))


def test_write_error_names_object_manager_status_and_server_message() -> None:
    exc = _api_error(422, 'NodeTwin.joulie.io "n1" is invalid: spec.profile: Unsupported value: "turbo"')
    err = KubeWriteError("apply", "NodeTwin", "n1", "joulie-controller-manager", 422, server_message(exc))
    text = str(err)
    assert "apply NodeTwin/n1" in text
    assert "'joulie-controller-manager'" in text
    assert "HTTP 422" in text
    assert 'spec.profile: Unsupported value: "turbo"' in text
