"""Run the app on loopback in a background thread (tests) and stop it by request."""

from __future__ import annotations

import threading
import time
from typing import Final

import uvicorn
from fastapi import FastAPI

UVICORN_HTTP: Final = "httptools"
"""uvicorn's HTTP/1.1 implementation for every server of the extender. A 1000-Node request is ~1.2 MB:
h11 parses and copies it in Python, httptools in C (about a tenth less extender CPU per
scheduling cycle with full Nodes, services/extender/README.md "Benchmark")."""


class ServerThread:
    """uvicorn serving `app` on 127.0.0.1:`port` in a daemon thread."""

    def __init__(self, app: FastAPI, port: int, host: str = "127.0.0.1") -> None:
        self.url = f"http://{host}:{port}"
        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, http=UVICORN_HTTP, log_level="warning",
                                                   access_log=False))
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
