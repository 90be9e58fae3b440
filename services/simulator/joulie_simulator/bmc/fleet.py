"""Every emulated node's BMC, each on a port of its own on loopback, and where they are published.

One uvicorn server per node (a BMC has its own address, as on real hardware), all served by one
event loop in one daemon thread so that a thousand nodes cost one thread, not a thousand. Ports are
picked free by the kernel (sockets bound to port 0 before the servers start). With a certificate
and key the BMCs speak HTTPS, as real ones do (self-signed by default, hence the CA bundle option
of the client).

Published as JSON (``bmcs_document``; the simulator writes it to ``<root>/bmcs.json`` and serves
it at ``GET /debug/bmcs``): ``{"schemaVersion": 1, "bmcs": [{"node", "address", "system"}]}``.
Credentials are not in it: the harness chose them (``--bmc-credentials``) and builds the Secret.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from joulie_simulator.bmc import resources as rf
from joulie_simulator.bmc.app import BmcCredentials, create_app
from joulie_simulator.emulator import Emulator

BMCS_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class BmcTls:
    certfile: Path
    keyfile: Path


def bmcs_document(addresses: dict[str, str]) -> dict[str, Any]:
    return {
        "schemaVersion": BMCS_SCHEMA_VERSION,
        "bmcs": [{"node": n, "address": addresses[n], "system": rf.SYSTEM} for n in sorted(addresses)],
    }


class BmcFleet:
    """The BMCs of ``nodes`` (default: every emulated node) on ``host``."""

    def __init__(
        self,
        emu: Emulator,
        credentials: BmcCredentials,
        nodes: Iterable[str] | None = None,
        host: str = "127.0.0.1",
        tls: BmcTls | None = None,
        ports: Mapping[str, int] | None = None,
    ) -> None:
        """``ports``: a node's BMC on a given port (a BMC brought back where it was); others get a free one."""
        self.emu = emu
        self.host = host
        self.scheme = "https" if tls else "http"
        self._servers: dict[str, tuple[uvicorn.Server, socket.socket]] = {}
        for node in sorted(nodes if nodes is not None else emu.nodes):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, (ports or {}).get(node, 0)))
            config = uvicorn.Config(
                create_app(emu, node, credentials),
                log_level="warning",
                access_log=False,
                lifespan="off",
                ssl_certfile=str(tls.certfile) if tls else None,
                ssl_keyfile=str(tls.keyfile) if tls else None,
            )
            self._servers[node] = (uvicorn.Server(config), sock)
        self._thread = threading.Thread(target=self._run, name="bmc-fleet", daemon=True)

    @property
    def addresses(self) -> dict[str, str]:
        """Node -> the BMC's base URL (``http(s)://127.0.0.1:<port>``)."""
        return {n: f"{self.scheme}://{self.host}:{s.getsockname()[1]}" for n, (_, s) in self._servers.items()}

    def document(self) -> dict[str, Any]:
        return bmcs_document(self.addresses)

    def write(self, path: Path) -> None:
        """Publish the addresses (written whole: a reader never sees half a file)."""
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.document(), indent=2, sort_keys=True) + "\n")
        tmp.replace(path)

    def _run(self) -> None:
        async def serve_all() -> None:
            await asyncio.gather(*(srv.serve(sockets=[sock]) for srv, sock in self._servers.values()))

        asyncio.run(serve_all())

    def start(self, timeout_s: float = 20.0) -> BmcFleet:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not all(srv.started for srv, _ in self._servers.values()):
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.stop()
                raise RuntimeError(f"emulated BMCs did not start on {self.host} within {timeout_s:g} s")
            time.sleep(0.02)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        for srv, _ in self._servers.values():
            srv.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        for _, sock in self._servers.values():
            sock.close()
