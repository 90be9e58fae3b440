"""Run the app on loopback in a background thread (tests) and stop it by request."""

from __future__ import annotations

import threading
import time

import uvicorn
from fastapi import FastAPI


class ServerThread:
    """uvicorn serving `app` on 127.0.0.1:`port` in a daemon thread."""

    def __init__(self, app: FastAPI, port: int, host: str = "127.0.0.1") -> None:
        self.url = f"http://{host}:{port}"
        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
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
