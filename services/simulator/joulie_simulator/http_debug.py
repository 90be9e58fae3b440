"""``/debug/emulate``: the emulator's truth as JSON over HTTP (loopback by default).

``GET /debug/emulate`` -> ``{"clock": {...}, "nodes": [{name, profile, host: {powerW, energyJ},
zones, gpus, caps, ...}], "events": [...]}``; ``?node=<name>`` narrows to one node (404 names it).
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from joulie_simulator.emulator import Emulator, NotEmulated


def emulate_document(emu: Emulator, node: str | None = None) -> dict[str, Any]:
    names = [node] if node else sorted(emu.nodes)
    return {
        "clock": {"tick": emu.tick_count, "tickSeconds": emu.tick_s, "frozen": emu.frozen},
        "nodes": [emu.truth(n) for n in names],
        "events": [asdict(e) for e in emu.events[-200:] if node is None or e.node == node],
    }


class DebugServer:
    def __init__(self, emu: Emulator, host: str = "127.0.0.1", port: int = 0) -> None:
        self.emu = emu
        emulator = emu

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # - the stdlib's name
                url = urlparse(self.path)
                if url.path == "/healthz":
                    self._send(200, {"status": "ok"})
                    return
                if url.path != "/debug/emulate":
                    self._send(404, {"error": f"no route {url.path}; try /debug/emulate"})
                    return
                node = parse_qs(url.query).get("node", [None])[0]
                try:
                    self._send(200, emulate_document(emulator, node))
                except NotEmulated as e:
                    self._send(404, {"error": str(e)})

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # - the stdlib's name
                pass

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="debug-http", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
