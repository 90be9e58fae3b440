"""The simulator's public surface, I/O part: the views agents read and the servers the emulator answers
through, for products that run an emulated node in process (the acceptance harness and tests).

- The views: :class:`FileTrees` (files mode) and :class:`FuseServer` (FUSE mode: pyfuse3, libfuse3).
- The emulated BMCs: :class:`BmcFleet` and :class:`BmcCredentials` (FastAPI, uvicorn).
- Telemetry: :class:`OtlpPusher` (the OpenTelemetry SDK).

The pure models are in ``api``."""

from __future__ import annotations

from joulie_simulator.bmc.serving.app import BmcCredentials
from joulie_simulator.bmc.serving.fleet import BmcFleet
from joulie_simulator.serving.otlp import OtlpPusher
from joulie_simulator.views.files.trees import FileTrees
from joulie_simulator.views.fuse import FuseServer

__all__ = ["BmcCredentials", "BmcFleet", "FileTrees", "FuseServer", "OtlpPusher"]
