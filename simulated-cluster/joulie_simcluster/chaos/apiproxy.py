"""The chaos run's injecting proxy: a TLS reverse proxy on 127.0.0.1 between the components and
kube-apiserver. It passes every request through (watches stream) until the control file holds a
fault (``apifaults.py``), then answers 409 or 429 itself for the fault's hold period.

``deploy`` starts it only with ``SIMCLUSTER_API_PROXY=1`` (the supervisor restarts it like any
component) and gives the controller manager, the agents, the extender and the workload runner a
kubeconfig naming it (``kubeconfig.proxied``); ``simcluster`` itself keeps talking to the API server
directly, so what the chaos run observes is not throttled by its own fault.

It serves the API server's own certificate (its SANs name 127.0.0.1) and calls upstream with the
admin client certificate: every component of the process runtime is that admin already, so no
identity changes. Standard library only: one thread per client connection, one upstream
connection per client connection.

Run: ``python -m joulie_simcluster.chaos.apiproxy --listen 127.0.0.1:PORT --upstream https://127.0.0.1:N
--pki DIR --control FILE``.
"""

from __future__ import annotations

import argparse
import http.client
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from joulie_simcluster.chaos.apifaults import ApiFault, answer

# Headers of one hop (RFC 9110 7.6.1); the proxy sets its own framing.
_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
                  "trailer", "transfer-encoding", "upgrade", "host", "content-length"})
UPSTREAM_TIMEOUT_S = 330.0
"""Longer than any watch the components open (the python client's default 5-minute timeoutSeconds)."""


class Control:
    """The fault file, re-read when its mtime changes; counts what was injected, logging one line
    when a fault starts answering and one when it is over (not a line per request)."""

    def __init__(self, path: Path, log: Callable[[str], None], clock: Callable[[], float] = time.time) -> None:
        self.path, self.log, self.clock = path, log, clock
        self._lock = threading.Lock()
        self._mtime: float | None = None
        self._fault: ApiFault | None = None
        self.injected = 0
        self._active = False

    def _current(self) -> ApiFault | None:
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            self._mtime, self._fault = None, None
            return None
        if mtime != self._mtime:
            self._mtime = mtime
            try:
                self._fault = ApiFault.from_json(self.path.read_text())
            except (ValueError, OSError) as e:
                self.log(f"{self.path}: {e}; passing everything through")
                self._fault = None
        return self._fault

    def decide(self, method: str, path: str) -> Any:
        with self._lock:
            fault, now = self._current(), self.clock()
            live = fault is not None and now < fault.until_s
            if live and not self._active:
                assert fault is not None
                self.log(f"fault {fault.kind} on for {fault.until_s - now:.1f}s")
                self.injected = 0
            elif not live and self._active:
                self.log(f"fault over: {self.injected} answers injected")
            self._active = live
            out = answer(fault, method, path, now)
            if out is not None:
                self.injected += 1
            return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer
    _up: http.client.HTTPSConnection | None = None

    def log_message(self, format: str, *args: Any) -> None:  # - one line per request would flood the log
        pass

    def _upstream(self) -> http.client.HTTPSConnection:
        if self._up is None:
            u = self.server.upstream
            self._up = http.client.HTTPSConnection(u.hostname or "127.0.0.1", u.port, context=self.server.client_tls,
                                                   timeout=UPSTREAM_TIMEOUT_S)
        return self._up

    def _reply(self, status: int, headers: tuple[tuple[str, str], ...], body: bytes) -> None:
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        injected = self.server.control.decide(self.command, self.path)
        if injected is not None:
            self._reply(injected.status, injected.headers, injected.body)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        try:
            up = self._upstream()
            up.request(self.command, self.path, body=body, headers=headers)
            resp = up.getresponse()
        except (OSError, http.client.HTTPException) as e:
            # The API server down: a load balancer's answer, which clients treat as an outage (5xx).
            if self._up is not None:
                self._up.close()
                self._up = None
            self._reply(502, (("Content-Type", "text/plain"),), f"api proxy: upstream {e}".encode())
            return
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP:
                self.send_header(k, v)
        size = resp.getheader("Content-Length")
        if size is not None and not resp.chunked:
            self.send_header("Content-Length", size)
            self.end_headers()
            self.wfile.write(resp.read())
            return
        # Chunked upstream (a watch, a large list): re-chunk as it arrives, so watch events stream.
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while piece := resp.read1(65536):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (OSError, http.client.HTTPException):
            self.close_connection = True
            up.close()
            self._up = None

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

    def finish(self) -> None:
        if self._up is not None:
            self._up.close()
        super().finish()


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, listen: tuple[str, int], upstream: str, pki: Path, control: Control) -> None:
        super().__init__(listen, _Handler)
        self.upstream = urllib.parse.urlsplit(upstream)
        self.control = control
        server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_tls.load_cert_chain(str(pki / "apiserver.crt"), str(pki / "apiserver.key"))
        # The handshake in the connection's thread, not in accept(): one slow client must not stall the rest.
        self.socket = server_tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)
        self.client_tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.client_tls.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

    def handle_error(self, request: Any, client_address: Any) -> None:  # - a client gone mid-request is normal
        if not isinstance(sys.exc_info()[1], (OSError, ssl.SSLError)):
            super().handle_error(request, client_address)


def serve(listen: tuple[str, int], upstream: str, pki: Path, control: Path,
          log: Callable[[str], None]) -> _ProxyServer:
    """A started proxy (its thread serves until ``shutdown()``); for tests and :func:`main`."""
    server = _ProxyServer(listen, upstream, pki, Control(control, log))
    threading.Thread(target=server.serve_forever, name="api-proxy", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="apiproxy", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--listen", required=True, help="HOST:PORT")
    p.add_argument("--upstream", required=True, help="the API server's URL")
    p.add_argument("--pki", type=Path, required=True, help="the control plane's pki dir")
    p.add_argument("--control", type=Path, required=True, help="the fault file (apifaults.ApiFault JSON)")
    a = p.parse_args(argv)
    host, _, port = a.listen.rpartition(":")

    def log(line: str) -> None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} api-proxy: {line}", flush=True)

    server = serve((host, int(port)), a.upstream, a.pki, a.control, log)
    log(f"listening on https://{a.listen}, upstream {a.upstream}, faults from {a.control}")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    socket.setdefaulttimeout(None)
    sys.exit(main())
