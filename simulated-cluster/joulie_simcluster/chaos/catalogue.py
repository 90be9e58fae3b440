"""Pure: the faults ``simcluster chaos`` knows, what each does, and the seeded plan of a run.

Each fault names what it hits (``target``: a process of the state dir, or a Node's emulated
hardware) and how long it holds (``hold_s``; 0: a one-off, such as a SIGKILL). The plan is a list
of (fault, repetition, delay before it), drawn from one seeded generator, so a run is repeatable.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    name: str
    what: str
    hold_s: float = 0.0
    """How long the fault lasts before it is cleared (0: a one-off)."""


FAULTS: dict[str, Fault] = {f.name: f for f in (
    Fault("agent-kill", "SIGKILL one agent (a random Node's)"),
    Fault("controller-kill", "SIGKILL the controller manager at a random moment of its reconcile loop"),
    Fault("leader-failover", "SIGKILL the controller-manager replica holding the Lease (needs replicas: 2)"),
    Fault("simulator-kill", "SIGKILL the simulator: the emulated files or FUSE views vanish, limits come back at "
          "their defaults"),
    Fault("apiserver-kill", "SIGKILL kube-apiserver (restarted on the same etcd data)"),
    Fault("etcd-kill", "SIGKILL etcd (restarted on its data)"),
    Fault("prometheus-kill", "SIGKILL Prometheus (restarted on its TSDB)"),
    Fault("prometheus-freeze", "SIGSTOP Prometheus for 10 s, then SIGCONT", hold_s=10.0),
    Fault("extender-kill", "SIGKILL the scheduler extender"),
    Fault("limit-reset", "a random Node's device resets its limits to the defaults (as after a reboot)"),
    Fault("write-refused", "a random Node refuses cap writes (EACCES) for 10 s while its limits reset",
          hold_s=10.0),
    Fault("api-conflict-storm", "every write through the API proxy answered 409 Conflict for 15 s "
          "(needs SIMCLUSTER_API_PROXY=1 at deploy)", hold_s=15.0),
    Fault("api-throttle", "every call through the API proxy answered 429 with Retry-After: 1 for 15 s "
          "(needs SIMCLUSTER_API_PROXY=1 at deploy)", hold_s=15.0),
    Fault("extender-slow", "SIGSTOP the scheduler extender for 12 s (beyond kube-scheduler's 5 s httpTimeout), "
          "a probe Pod created meanwhile; then SIGCONT", hold_s=12.0),
    Fault("prometheus-empty", "Prometheus on a fresh TSDB: frozen, its data dir moved aside, SIGKILL "
          "(the supervisor restarts it on an empty one)"),
    # 75 s: beyond the agent's GPU_TOOL_TIMEOUT (15 s here) and its 60 s GPU re-check, so the
    # re-read of the limits falls inside the hang (a 40 s hang could pass between two re-checks).
    Fault("tool-timeout", "a random GPU Node's tools (nvidia-smi, rocm-smi, amd-smi) hang for 75 s, "
          "beyond the agent's GPU_TOOL_TIMEOUT and its 60 s GPU re-check (emulator gpu_tool_hang)", hold_s=75.0),
    Fault("clock-skew", "one agent (of a Node without GPUs) restarted with its wall clock 180 s behind "
          "(libfaketime) for 60 s, then on the true clock; libfaketime 0.9.10 breaks Python's timed waits "
          "(inject.py), so what it shows is not a pure skew", hold_s=60.0),
    Fault("bmc-refuse", "every emulated BMC refuses power-ons (HTTP 500) for 60 s, then accepts them again "
          "(POST /debug/bmc/faults); under a power policy a resume in the window is retried after "
          "RESUME_RETRY_BACKOFF, then failed past RESUME_RETRIES; with a node off, a probe Pod that fits only the "
          "off nodes asks for a resume in the window", hold_s=60.0),
    Fault("bmc-hang", "every emulated BMC accepts power-ons but the node never boots (a firmware hang) for 60 s; "
          "with a node off, a probe Pod that fits only the off nodes asks for a resume in the window: the hung node "
          "fails at RESUME_TIMEOUT and the Pod goes to the next one", hold_s=60.0),
    # 30 s: three times the clients' 10 s request deadline (joulie_api.kubeconfig DEFAULT_TIMEOUT_S), so
    # a tick that waited without one would hang through it (issue 36: 61 s, nothing logged).
    Fault("apiserver-freeze", "SIGSTOP kube-apiserver for 30 s (beyond the clients' 10 s request deadline), "
          "then SIGCONT: the controller's tick gives up and logs, and resumes after", hold_s=30.0),
    # 150 s: beyond AGENT_LOST_AFTER (2 m) plus a reconcile, so the node must show agent-lost meanwhile.
    Fault("agent-freeze", "SIGSTOP one agent for 150 s (beyond AGENT_LOST_AFTER, 2 m), then SIGCONT: its node "
          "goes agent-lost within the stated time and the budget stops shedding on it", hold_s=150.0),
    Fault("sysfs-garbage", "a random capped CPU Node's RAPL energy and limit files hold garbage bytes and are "
          "immutable (chattr +i) for 20 s (files mode)", hold_s=20.0),
)}

DEFAULT_FAULTS = ("agent-kill", "controller-kill", "simulator-kill", "apiserver-kill", "etcd-kill",
                  "prometheus-freeze", "extender-kill", "limit-reset", "write-refused", "extender-slow",
                  "prometheus-empty", "tool-timeout", "apiserver-freeze", "agent-freeze")
"""The default run: what works on any deployed cluster (leader-failover needs two replicas, the
api-* faults the API proxy, clock-skew libfaketime, sysfs-garbage files mode; bmc-refuse and bmc-hang show
only under a power policy, which the default deploy does not run)."""


@dataclass(frozen=True)
class Step:
    fault: Fault
    repetition: int
    delay_s: float
    """Seconds to wait, once the cluster is healthy, before injecting: the random moment."""
    pick: float
    """A number in [0, 1) choosing the target among candidates (which agent, which Node)."""


def parse_faults(text: str) -> list[Fault]:
    """``a,b,c`` -> the faults, each known; a ValueError naming the unknown one otherwise."""
    out = []
    for name in (n.strip() for n in text.split(",")):
        if not name:
            continue
        if name not in FAULTS:
            raise ValueError(f"--faults: unknown fault {name!r}; known: {', '.join(FAULTS)}")
        out.append(FAULTS[name])
    if not out:
        raise ValueError("--faults: none given")
    return out


def plan(faults: list[Fault], repeats: int, seed: int, max_delay_s: float) -> list[Step]:
    """Each fault `repeats` times, in a shuffled order, each after a random delay in [1, max_delay_s]."""
    rng = random.Random(seed)
    steps = [(f, r) for f in faults for r in range(1, repeats + 1)]
    rng.shuffle(steps)
    return [Step(f, r, round(rng.uniform(1.0, max(1.0, max_delay_s)), 2), rng.random()) for f, r in steps]


def choose(candidates: list[str], pick: float) -> str:
    """The candidate `pick` (in [0, 1)) falls on."""
    if not candidates:
        raise ValueError("no candidate to inject the fault into")
    return sorted(candidates)[min(len(candidates) - 1, int(pick * len(candidates)))]
