"""The write layer's pure parts; the real API server round trip lives in the infra tests."""

import json
import logging

import pytest
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


class _RefusingServer:
    """A loopback HTTP server answering ``status`` (with a metav1.Status body and Retry-After) to
    the first ``refusals`` requests, then 200 with a NodeTwin: the API server under an injected
    429 or 409 storm, reached through the real kubernetes client."""

    def __init__(self, status: int, refusals: int):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.calls = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_PATCH(self) -> None:  # (http.server's name)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.calls += 1
                if server.calls <= refusals:
                    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status,
                                       "message": "injected"}).encode()
                    self.send_response(status)
                    self.send_header("Retry-After", "1")
                else:
                    body = json.dumps({"apiVersion": "joulie.io/v1alpha1", "kind": "NodeTwin",
                                       "metadata": {"name": "n1"}, "spec": {"nodeName": "n1", "profile": "eco"}}).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize(("status", "reason"), [(429, "Too Many Requests"), (409, "Conflict")])
def test_a_storm_of_refusals_logs_one_line_when_it_starts_and_one_when_it_ends(
    status: int, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 23, api-throttle: a warning per retry attempt; one line per state change is the goal.
    from kubernetes import client as k8s

    from joulie_api.backoff import Backoff
    from joulie_api.kube import JoulieClient

    server = _RefusingServer(status, refusals=6)
    try:
        api = k8s.ApiClient(k8s.Configuration(host=server.url))
        client = JoulieClient(api, "joulie-test", Backoff(sleep=lambda _s: None))
        with caplog.at_level(logging.INFO, logger="joulie_api"):
            twin = client.apply_status(NODE_TWIN, "n1", {"controlStatus": {}})
            client.apply_status(NODE_TWIN, "n1", {"controlStatus": {}})  # answered at once: nothing to say
    finally:
        server.close()
    assert twin.spec.node_name == "n1" and server.calls == 8
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len(lines) == 2, lines
    assert lines[0].startswith("API server (writes as joulie-test) failing (")
    assert f"HTTP {status} {reason}: injected); retrying quietly" in lines[0]
    assert lines[1].startswith("API server (writes as joulie-test) works again after ")
    assert "(6 failed tries" in lines[1] and all("\n" not in line for line in lines)
