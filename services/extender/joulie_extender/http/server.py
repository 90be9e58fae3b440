"""Run the app on loopback in a background thread (tests) and stop it by request."""

from __future__ import annotations

import ssl
import threading
import time
from typing import Any, Final

import uvicorn
from fastapi import FastAPI

from joulie_extender.settings import Settings

UVICORN_HTTP: Final = "httptools"
"""uvicorn's HTTP/1.1 implementation for every server of the extender. A 1000-Node request is ~1.2 MB:
h11 parses and copies it in Python, httptools in C (about a tenth less extender CPU per
scheduling cycle with full Nodes, services/extender/README.md "Benchmark")."""


def tls_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's TLS arguments: none for plain HTTP; with a client CA, a client certificate is required."""
    if not settings.tls_cert_file:
        return {}
    out: dict[str, Any] = {"ssl_certfile": settings.tls_cert_file, "ssl_keyfile": settings.tls_key_file}
    if settings.tls_client_ca_file:
        out |= {"ssl_ca_certs": settings.tls_client_ca_file, "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return out


class ServerThread:
    """uvicorn serving `app` on 127.0.0.1:`port` in a daemon thread."""

    def __init__(self, app: FastAPI, port: int, host: str = "127.0.0.1", **tls: Any) -> None:
        """`tls`: uvicorn's ssl_* arguments (cli.tls_options); the URL is then https."""
        self.url = f"{'https' if tls else 'http'}://{host}:{port}"
        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, http=UVICORN_HTTP, log_level="warning",
                                                   access_log=False, **tls))
        self._thread = threading.Thread(target=self._server.run, name=f"extender-{port}", daemon=True)

    def start(self, timeout_s: float = 10.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"extender did not start on {self.url} within {timeout_s:.0f} s")
            time.sleep(0.02)
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout_s)
