"""The runtimes by name, chosen once: SIMCLUSTER_RUNTIME picks the runtime ``up`` and the smoke bring
up (:func:`runtime_for`, :func:`smoke_runtime`); cluster.env's record picks the one ``down``,
``status``, ``deploy`` and a run's release work with (:func:`recorded_runtime`).

A new runtime goes in a module (or a sub-package, as ``kubelet``) of its own under ``runtimes/``,
implementing :class:`~joulie_simcluster.runtimes.runtime.Runtime`, and is listed here; its name joins
``settings.RuntimeName``.
"""

from __future__ import annotations

from collections.abc import Mapping

from joulie_simcluster.runtimes.k3s import K3sRuntime
from joulie_simcluster.runtimes.kubelet.runtime import KubeletRuntime
from joulie_simcluster.runtimes.process import ProcessRuntime
from joulie_simcluster.runtimes.runtime import PROCESS, Runtime, recorded_name

RUNTIMES: Mapping[str, Runtime] = {r.name: r for r in (ProcessRuntime(), K3sRuntime(), KubeletRuntime())}


def runtime_for(name: str) -> Runtime:
    """The runtime named `name` (SIMCLUSTER_RUNTIME; the settings refuse any other name)."""
    try:
        return RUNTIMES[name]
    except KeyError:
        raise ValueError(f"no runtime {name!r}; one of {', '.join(RUNTIMES)}") from None


def smoke_runtime(name: str) -> Runtime:
    """The runtime a smoke run brings up for SIMCLUSTER_RUNTIME `name`: that one where it runs the
    smoke, else (``up`` only) the process runtime."""
    runtime = runtime_for(name)
    return runtime if runtime.runs_smoke else RUNTIMES[PROCESS]


def recorded_runtime(env: Mapping[str, str] | None) -> Runtime:
    """The runtime cluster.env (`env`) records; the process runtime when it records none (or one this
    simcluster does not know)."""
    return RUNTIMES.get(recorded_name(env), RUNTIMES[PROCESS])
