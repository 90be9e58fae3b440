"""What every runtime is to the commands above it: one :class:`Runtime` protocol (bring the cluster
up, report its status, take it down, release it after a run) and what it supports, so that ``up``,
``down``, ``status``, ``deploy`` and the smoke ask the runtime instead of comparing its name.

The runtimes themselves (:mod:`~joulie_simcluster.runtimes.process`,
:mod:`~joulie_simcluster.runtimes.k3s`, :mod:`~joulie_simcluster.runtimes.kubelet`) implement it;
:mod:`~joulie_simcluster.runtimes.registry` picks one, once, by its name. A runtime records its name
in cluster.env (``SIMCLUSTER_RUNTIME=<name>``, :data:`RECORD_KEY`): ``down``, ``status`` and
``deploy`` follow the record, not the settings, since the cluster may have come up under others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.progress import Progress
from joulie_simcluster.settings import RuntimeName
from joulie_simcluster.state import StateDir

PROCESS: RuntimeName = "process"
K3S: RuntimeName = "k3s"
KUBELET: RuntimeName = "kubelet"

RECORD_KEY = "SIMCLUSTER_RUNTIME"
"""cluster.env's key naming the runtime that brought the recorded cluster up."""

DEFAULT_CRD_DIR = Path("charts/joulie/crds")

StopDeployed = Callable[[StateDir, Callable[[str], None]], int]
"""Stops what ``deploy`` started as processes (``deploy.processes.stop_deployed``, a layer above the
runtimes): a runtime whose teardown includes the deploy's processes is handed it."""


@dataclass(frozen=True)
class UpRequest:
    """What ``up`` (or a run's up) asks of a runtime beyond the settings."""

    crd_dir: Path
    telemetry_mode: str
    eligible_agents: Callable[[], int]
    """How many Nodes get an agent (the chart's DaemonSet decides, a layer above): asked only by a
    runtime that sizes itself by it."""


class Runtime(Protocol):
    """One way to run the simulated cluster."""

    @property
    def name(self) -> RuntimeName:
        """Its SIMCLUSTER_RUNTIME value, recorded in cluster.env."""
        ...

    @property
    def components_as_pods(self) -> bool:
        """True: ``deploy`` installs the chart's controller manager, extender and agents as Pods on a
        real node (``deploy.onkubelet``, which also refuses the FUSE view); False: every component a
        process on this host."""
        ...

    @property
    def runs_smoke(self) -> bool:
        """True: ``smoke`` brings this runtime up; False (``up`` only): the smoke runs on the process runtime."""
        ...

    def up(self, ctx: Context, rendered: RenderedSpec, request: UpRequest) -> str:
        """Brings the cluster up (or reuses it) with the spec's Nodes; returns the summary line."""
        ...

    def status(self, state: StateDir) -> int:
        """Prints the recorded cluster's state; 0 if all is up, 1 if not."""
        ...

    def down(self, ctx: Context, stop_deployed: StopDeployed) -> None:
        """``simcluster down``: stops everything; the state dir goes too (but runs/) unless SIMCLUSTER_KEEP."""
        ...

    def release(self, state: StateDir, progress: Progress, stop_deployed: StopDeployed) -> None:
        """After a run: stops what it deployed and the cluster, keeping the state dir."""
        ...


def recorded_name(env: Mapping[str, str] | None) -> str:
    """The runtime cluster.env records ("" when none is recorded)."""
    return (env or {}).get(RECORD_KEY, "")
