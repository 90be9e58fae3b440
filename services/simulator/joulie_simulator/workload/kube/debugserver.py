"""Shell: the workload runner's HTTP address: ``/metrics`` (its job counters, for Prometheus) and
``/debug/pod-truth`` (``workload.podtruth``: each Pod's true energy, JSON). The truth is for the checks and
the benchmark only: it is not a metric, so Prometheus (which the controller reads) never holds it, and no
Joulie component is given this address."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

TRUTH_PATH = "/debug/pod-truth"


def serve(
    host: str, port: int, registry: CollectorRegistry, truth: Callable[[float | None], dict[str, Any]]
) -> ThreadingHTTPServer:
    """Serve both paths from a daemon thread; returns the server (``shutdown`` stops it). ``truth(at)``: the
    truth now (None) or at an instant, Unix seconds (``?at=``); a ValueError answers 400 with its message."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # - the stdlib's name
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry))
            elif path == TRUTH_PATH:
                self._truth(self.path.partition("?")[2])
            else:
                body = json.dumps({"error": f"no route {path}; try /metrics or {TRUTH_PATH}"}).encode()
                self._send(404, "application/json", body)

        def _truth(self, query: str) -> None:
            raw = parse_qs(query).get("at", [""])[0]
            try:
                doc = truth(float(raw) if raw else None)
            except ValueError as err:  # an unreadable ?at=, or an instant the truth cannot answer for
                self._send(400, "application/json", json.dumps({"error": str(err)}).encode())
                return
            self._send(200, "application/json", json.dumps(doc).encode())

        def _send(self, code: int, kind: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # - the stdlib's name
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="workload-http", daemon=True).start()
    return server
