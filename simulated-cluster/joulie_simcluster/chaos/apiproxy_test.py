"""The injecting API proxy, for real on loopback: TLS on both sides with a throwaway PKI, an upstream
that stands in for kube-apiserver (it requires the admin client certificate), a chunked stream passed
through as it arrives, and the control file turning 409 and 429 answers on and off."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from joulie_localcluster.certs import make_pki
from joulie_localcluster.controlplane import write_kubeconfig
from joulie_localcluster.procs import free_port
from joulie_simcluster.chaos.apifaults import ApiFault, answer
from joulie_simcluster.chaos.apiproxy import serve
from joulie_simcluster.chaos.catalogue import FAULTS, Step
from joulie_simcluster.chaos.inject import inject
from joulie_simcluster.deploy.proxied import proxied_kubeconfig
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.state import StateDir


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, format: str, *args: object) -> None:
        pass

    def _any(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if "watch=true" in self.path:
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                event = json.dumps({"type": "ADDED", "object": {"n": i}}).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
            return
        out = json.dumps({"method": self.command, "path": self.path, "body": body.decode()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_PATCH = do_POST = do_PUT = _any


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[int, Path, Path]]:
    pki = make_pki(tmp_path / "pki")
    up = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(str(pki.server_crt), str(pki.server_key))
    tls.load_verify_locations(str(pki.ca_crt))
    tls.verify_mode = ssl.CERT_REQUIRED  # as kube-apiserver's --client-ca-file: the proxy must present admin
    up.socket = tls.wrap_socket(up.socket, server_side=True)
    threading.Thread(target=up.serve_forever, daemon=True).start()
    port, control = free_port(), tmp_path / "fault.json"
    lines: list[str] = []
    server = serve(("127.0.0.1", port), f"https://127.0.0.1:{up.server_address[1]}", tmp_path / "pki", control, lines.append)
    try:
        yield port, control, tmp_path / "pki"
    finally:
        server.shutdown()
        up.shutdown()


def _call(port: int, pki: Path, method: str, path: str, body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))  # the components' kubeconfig CA verifies the proxy
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_everything_passes_through_while_no_fault_holds(proxy: tuple[int, Path, Path]) -> None:
    port, _, pki = proxy
    status, _, body = _call(port, pki, "PATCH", "/apis/joulie.io/v1alpha1/nodetwins/a", b'{"spec":{}}')
    assert status == 200 and json.loads(body) == {"method": "PATCH", "path": "/apis/joulie.io/v1alpha1/nodetwins/a",
                                                  "body": '{"spec":{}}'}
    status, headers, body = _call(port, pki, "GET", "/api/v1/nodes?watch=true")
    assert status == 200 and headers.get("transfer-encoding") == "chunked"
    assert [json.loads(line)["object"]["n"] for line in body.splitlines()] == [0, 1, 2]


def test_a_conflict_storm_refuses_writes_only_and_ends_on_time(proxy: tuple[int, Path, Path]) -> None:
    port, control, pki = proxy
    control.write_text(ApiFault("conflict", time.time() + 1.0).to_json())
    status, _, body = _call(port, pki, "PATCH", "/apis/joulie.io/v1alpha1/nodetwins/a?fieldManager=x", b"{}")
    assert status == 409 and json.loads(body)["reason"] == "Conflict" and "nodetwins/a:" in json.loads(body)["message"]
    assert _call(port, pki, "GET", "/api/v1/nodes")[0] == 200
    time.sleep(1.1)
    assert _call(port, pki, "PATCH", "/apis/joulie.io/v1alpha1/nodetwins/a", b"{}")[0] == 200


def test_throttling_answers_429_with_retry_after_on_every_call(proxy: tuple[int, Path, Path]) -> None:
    port, control, pki = proxy
    control.write_text(ApiFault("throttle", time.time() + 30, retry_after_s=2).to_json())
    for method in ("GET", "PATCH"):
        status, headers, body = _call(port, pki, method, "/api/v1/nodes", b"{}" if method == "PATCH" else None)
        assert status == 429 and headers["retry-after"] == "2"
        assert json.loads(body)["details"] == {"retryAfterSeconds": 2}
    control.unlink()
    assert _call(port, pki, "GET", "/api/v1/nodes")[0] == 200


def test_a_bad_control_file_passes_everything_through(proxy: tuple[int, Path, Path]) -> None:
    port, control, pki = proxy
    control.write_text('{"kind": "teapot", "untilS": 1e12}')
    assert _call(port, pki, "PATCH", "/api/v1/nodes/a", b"{}")[0] == 200


def test_the_fault_file_is_checked_field_by_field() -> None:
    with pytest.raises(ValueError, match="kind 'teapot', expected one of conflict, throttle"):
        ApiFault.from_json('{"kind": "teapot", "untilS": 1}')
    with pytest.raises(ValueError, match="untilS 'soon'"):
        ApiFault.from_json('{"kind": "conflict", "untilS": "soon"}')
    f = ApiFault("throttle", 100.0, 3)
    assert ApiFault.from_json(f.to_json()) == f
    assert answer(f, "GET", "/x", 100.0) is None, "over at until_s"


def test_the_proxied_kubeconfig_names_the_proxy_and_keeps_ca_and_user(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:6443", pki)
    out = yaml.safe_load(proxied_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:7000",
                                            tmp_path / "kubeconfig.proxied").read_text())
    orig = yaml.safe_load((tmp_path / "kubeconfig").read_text())
    assert out["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:7000"
    assert out["clusters"][0]["cluster"]["certificate-authority"] == str(pki.ca_crt) and out["users"] == orig["users"]


def test_the_chaos_faults_turn_the_proxy_on_and_their_clear_turns_it_off(proxy: tuple[int, Path, Path],
                                                                          tmp_path: Path) -> None:
    port, control, pki = proxy
    sd = StateDir(tmp_path / "state")
    sd.write_deploy_env({"API_PROXY_CONTROL": str(control)})
    hit = inject(sd, Step(FAULTS["api-throttle"], 1, 0.0, 0.0), [], [])
    assert hit.target == "api-proxy" and _call(port, pki, "GET", "/api/v1/nodes")[0] == 429
    assert hit.clear is not None
    hit.clear()
    assert _call(port, pki, "GET", "/api/v1/nodes")[0] == 200
    hit = inject(sd, Step(FAULTS["api-conflict-storm"], 1, 0.0, 0.0), [], [])
    assert _call(port, pki, "PUT", "/api/v1/nodes/a", b"{}")[0] == 409 and _call(port, pki, "GET", "/api/v1/nodes")[0] == 200
    assert hit.clear is not None
    hit.clear()
    assert _call(port, pki, "PUT", "/api/v1/nodes/a", b"{}")[0] == 200


def test_the_api_faults_need_a_deploy_with_the_proxy(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    sd.write_deploy_env({"HWEMU_MODE": "files"})
    with pytest.raises(RuntimeFailure, match="SIMCLUSTER_API_PROXY=1"):
        inject(sd, Step(FAULTS["api-conflict-storm"], 1, 0.0, 0.0), [], [])
