"""S14's step: the GPU SM clock lock on a deployed cluster. It sets ``spec.gpu.clockLock`` on one
NVIDIA Node's NodeTwin (as a field manager of its own, beside the controller manager's), waits for
the agent to report it applied and the emulator to hold it, resets the Node's devices through the
simulator (gRPC ``RestartNodeView``, what chaos ``limit-reset`` does: limits and locks back at their
defaults), waits for the agent's next GPU verify (60 s) to report the lost lock as drift and apply
it again, then drops it from the spec and waits for the release. The evaluations are the pure
``clocklock``; this module reads and writes the cluster.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kubernetes import client as k8s

from joulie_api import names
from joulie_hwprofiles.schema import Profile
from joulie_simcluster.deploy.processes import interpreter, python_env
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes import kube
from joulie_simcluster.smoke import checks, clocklock
from joulie_simcluster.smoke.checks import Assertion
from joulie_simcluster.state import StateDir
from joulie_simcluster.timing import Timing


class Cluster(Protocol):
    """What the step reads of the smoke run (``smoke.run.Smoke``)."""

    state: StateDir
    timing: Timing
    progress: Callable[[str], None]

    def twins(self) -> dict[str, dict[str, Any]]: ...

    def truth(self) -> dict[str, dict[str, Any]]: ...


Evaluate = Callable[[str, Mapping[str, Any], Mapping[str, Any]], list[str]]

# Run inside the simulator's PEX (PEX_INTERPRETER=1): argv = address, node.
_RESTART_VIEW = """
import sys, grpc
from joulie.sim.v1 import emulator_pb2 as pb, emulator_pb2_grpc as pbg
addr, node = sys.argv[1:3]
pbg.EmulatorServiceStub(grpc.insecure_channel(addr)).RestartNodeView(pb.RestartNodeViewRequest(node=node), timeout=20)
"""


def lock_node(profiles: Mapping[str, Profile]) -> str:
    """The agent Node to lock: an NVIDIA one whose boards keep their state without a client
    (persistence mode on) where there is one, so only the check's reset clears the lock."""
    nvidia = [n for n, p in sorted(profiles.items()) if p.gpus is not None and p.gpus.vendor == "nvidia"]
    if not nvidia:
        raise RuntimeFailure("S14: no NVIDIA GPU Node with an agent to lock")
    persistent = [n for n in nvidia if (g := profiles[n].gpus) is not None and g.persistence_mode]
    return (persistent or nvidia)[0]


def restart_view(state: StateDir, node: str) -> None:
    env = state.read_deploy_env() or {}
    r = subprocess.run(
        [interpreter(), env.get("BINARY_simulator", ""), "-c", _RESTART_VIEW, env.get("SIMULATOR_GRPC", ""), node],
        env={**python_env(), "PEX_INTERPRETER": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if r.returncode != 0:
        raise RuntimeFailure(f"RestartNodeView of {node} failed: {r.stderr.strip()[-400:]}")


def _phase(c: Cluster, node: str, what: str, evaluate: Evaluate, timeout_s: float) -> list[str]:
    """Re-evaluates one phase until nothing is wrong or ``timeout_s`` passes; what is wrong, prefixed."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            bad = evaluate(node, c.twins()[node], c.truth()[node])
        except (OSError, KeyError, TypeError, ValueError, RuntimeFailure) as e:
            bad = [f"reading the cluster failed: {type(e).__name__}: {e}"]
        if not bad or time.monotonic() > deadline:
            return [f"{what}: {b}" for b in bad]
        time.sleep(1.0)


def clock_lock(c: Cluster, node: str) -> Assertion:
    objects = k8s.CustomObjectsApi(kube.core_api(c.state.kubeconfig).api_client)

    def lock(body: dict[str, Any] | None) -> None:
        objects.patch_cluster_custom_object(
            names.GROUP,
            names.VERSION,
            "nodetwins",
            names.object_name_for_node(node),
            {"spec": {"gpu": {"clockLock": body}}},
            field_manager="simcluster-smoke",
        )

    settle = 30 + 3 * c.timing.agent_interval_s
    c.progress(f"locking the SM clocks of {node}'s GPUs at {clocklock.LOCK_PCT:g} % of max (spec.gpu.clockLock)")
    lock({"pctOfMax": clocklock.LOCK_PCT})
    failures = _phase(c, node, "set", clocklock.lock_held, settle)
    held = None if failures else clocklock.reported_mhz(c.twins()[node])
    if not failures:
        c.progress(f"resetting {node}'s devices (RestartNodeView); the agent's next GPU verify finds the lock lost")
        restart_view(c.state, node)
        failures += _phase(c, node, "after a device reset", clocklock.lock_reapplied, 60 + settle)
    lock(None)
    failures += _phase(c, node, "released", clocklock.lock_released, settle)
    ok = f"{node}: applied and held at {held} MHz, lost by a device reset, reported as drift and re-applied; released"
    return Assertion(
        "S14",
        "fail" if failures else "pass",
        "; ".join(failures[:6]) if failures else ok,
        checks.CHECKS["S14"][1],
        held,
    )
