"""Every API request has a deadline: a frozen API server (it accepts connections, answers nothing)
must cost a caller a bounded, logged wait, never a hung controller tick (issue 36: SIGSTOP on the
API server blocked the controller's tick for 61 s with nothing logged)."""

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from joulie_api import kubeconfig as kubeconfig_module
from joulie_api.kube import NODE_TWIN, JoulieClient
from joulie_api.kubeconfig import api_client


@pytest.fixture
def frozen_server() -> Iterator[str]:
    """A loopback server that accepts every connection and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    listener.close()


@pytest.fixture(autouse=True)
def no_service_account(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)


def _kubeconfig(path: Path, server: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "main",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}],
    }))
    return path


def _outcome(call: Callable[[], Any], limit_s: float) -> tuple[BaseException | None, float]:
    """What `call` raised and how long it took; the test thread never waits past `limit_s` (a
    call without a deadline would hang the test run, not just fail it)."""
    result: list[BaseException | None] = []
    start = time.monotonic()

    def run() -> None:
        try:
            call()
            result.append(None)
        except BaseException as exc:  # the outcome is what the test inspects
            result.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(limit_s)
    assert result, f"the request was still waiting on a silent API server after {limit_s:.0f}s"
    return result[0], time.monotonic() - start


def test_a_request_to_a_silent_server_times_out_and_says_which_call(
    tmp_path: Path, frozen_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    api = api_client(_kubeconfig(tmp_path / "kc", frozen_server), timeout_s=0.5)
    with caplog.at_level(logging.WARNING):
        err, took = _outcome(lambda: k8s.CoreV1Api(api).list_node(), limit_s=10)
    assert isinstance(err, TimeoutError)  # the built-in: callers retry it as temporary
    assert took < 3, f"one timed-out GET took {took:.1f}s (retried inside urllib3?)"
    assert "GET /api/v1/nodes" in caplog.text and "0.5" in caplog.text


def test_the_default_client_has_a_deadline_too(
    tmp_path: Path, frozen_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kubeconfig_module, "DEFAULT_TIMEOUT_S", 0.5)
    api = api_client(_kubeconfig(tmp_path / "kc", frozen_server))
    client = JoulieClient(api, "test")
    err, _ = _outcome(lambda: client.get(NODE_TWIN, "n1"), limit_s=10)
    assert isinstance(err, TimeoutError)


def test_a_write_to_a_silent_server_is_bounded(tmp_path: Path, frozen_server: str) -> None:
    api = api_client(_kubeconfig(tmp_path / "kc", frozen_server), timeout_s=0.3)
    err, took = _outcome(lambda: k8s.CoreV1Api(api).patch_node("n1", {"metadata": {}}), limit_s=10)
    assert isinstance(err, TimeoutError)
    assert took < 3


def test_a_watch_may_wait_for_its_own_server_side_timeout_plus_the_deadline(tmp_path: Path) -> None:
    from joulie_api.kubeconfig import request_deadline

    assert request_deadline("GET", "https://h/api/v1/nodes?watch=true&timeoutSeconds=300", 10) == (10, 310)
    assert request_deadline("GET", "https://h/api/v1/nodes", 10) == 10
    assert request_deadline("GET", "https://h/api/v1/nodes?watch=1", 10) == (10, None)


def test_a_busy_server_answering_429_with_retry_after_is_waited_out_not_failed(tmp_path: Path) -> None:
    """kube-apiserver answers 429 with Retry-After under load or while it starts (priority and
    fairness): the deadline must not turn that into an error (it did once: 'too many 429 error
    responses' from the chart's RBAC test)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answers: list[int] = []

    class Busy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status = 429 if not answers else 200
            answers.append(status)
            body = b'{"kind": "NodeList", "apiVersion": "v1", "items": []}' if status == 200 else b"{}"
            self.send_response(status)
            if status == 429:
                self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = api_client(_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{server.server_address[1]}"), timeout_s=2)
        nodes = k8s.CoreV1Api(client).list_node()
    finally:
        server.shutdown()
    assert answers == [429, 200] and nodes.items == []


def test_the_deadline_reads_a_call_of_either_client_generation() -> None:
    """kubernetes >= 36 calls ``call_api(method, url, ...)``; 35 and older (which the kubectl plugin's
    wheel still allows on Python 3.9) ``call_api(resource_path, method, path_params, query_params, ...)``."""
    from joulie_api.kubeconfig import method_and_url, request_deadline

    new = method_and_url(("GET", "https://h/api/v1/nodes?watch=true&timeoutSeconds=300", {}, None, None), {})
    old = method_and_url(("/api/v1/nodes", "GET", {}, [("watch", True), ("timeoutSeconds", 300)], {}),
                         {"body": None})
    assert new == ("GET", "https://h/api/v1/nodes?watch=true&timeoutSeconds=300")
    assert old == ("GET", "/api/v1/nodes?watch=True&timeoutSeconds=300")
    assert request_deadline(*new, 10) == request_deadline(*old, 10) == (10, 310.0)
    assert method_and_url(("/api/v1/nodes", "PATCH", {}, []), {}) == ("PATCH", "/api/v1/nodes")
