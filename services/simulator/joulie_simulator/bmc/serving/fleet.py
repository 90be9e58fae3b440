"""Every emulated node's BMC, each on a port of its own on loopback, and where they are published.

A listening socket per node (a BMC has its own address, as on real hardware), all served by one
uvicorn server in one daemon thread, which hands each request to its node's app by the port it
arrived on. One server, not one per node: each uvicorn server wakes ten times a second to look
after itself, and a thousand of them kept ~10 000 wake-ups a second of the simulator's Python
busy, the process that also ticks and serves FUSE. Ports are picked free by the kernel (sockets
bound to port 0 before the server starts), or, with ``port_base``, the first free ones from there
upward: below the kernel's ephemeral range, a harness that picks its components' ports free
(bind to 0, close, hand over) can never be handed one a BMC holds. With a certificate
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
from joulie_simulator.bmc.serving.app import BmcCredentials, create_app
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.emulation.powerfaults import PowerOnFaults

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
        port_base: int = 0,
        faults: PowerOnFaults | None = None,
    ) -> None:
        """``ports``: a node's BMC on a given port (a BMC brought back where it was); others get a free
        one: the kernel's pick (``port_base`` 0) or the first free one from ``port_base`` upward."""
        self.emu = emu
        self.host = host
        self.scheme = "https" if tls else "http"
        self._sockets: dict[str, socket.socket] = {}
        apps: dict[int, Any] = {}
        next_port = port_base
        for node in sorted(nodes if nodes is not None else emu.nodes):
            want = (ports or {}).get(node, 0)
            if want or not port_base:
                sock = _bound(host, want)
            else:
                sock, next_port = _first_free(host, next_port)
            self._sockets[node] = sock
            apps[sock.getsockname()[1]] = create_app(emu, node, credentials, faults)

        async def by_port(scope: Any, receive: Any, send: Any) -> None:
            await apps[scope["server"][1]](scope, receive, send)

        config = uvicorn.Config(
            by_port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ssl_certfile=str(tls.certfile) if tls else None,
            ssl_keyfile=str(tls.keyfile) if tls else None,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="bmc-fleet", daemon=True)

    @property
    def addresses(self) -> dict[str, str]:
        """Node -> the BMC's base URL (``http(s)://127.0.0.1:<port>``)."""
        return {n: f"{self.scheme}://{self.host}:{s.getsockname()[1]}" for n, s in self._sockets.items()}

    def document(self) -> dict[str, Any]:
        return bmcs_document(self.addresses)

    def write(self, path: Path) -> None:
        """Publish the addresses (written whole: a reader never sees half a file)."""
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.document(), indent=2, sort_keys=True) + "\n")
        tmp.replace(path)

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=list(self._sockets.values())))

    def start(self, timeout_s: float = 20.0) -> BmcFleet:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.stop()
                raise RuntimeError(f"emulated BMCs did not start on {self.host} within {timeout_s:g} s")
            time.sleep(0.02)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        for sock in self._sockets.values():
            sock.close()


def _bound(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _first_free(host: str, port: int) -> tuple[socket.socket, int]:
    """A socket bound to the first port from ``port`` that is free, and the port after it."""
    while port < 65536:
        try:
            return _bound(host, port), port + 1
        except OSError:
            port += 1
    raise OSError(f"no free port from {port} upward on {host} for an emulated BMC")
