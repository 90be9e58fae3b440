"""The bench: one emulated node in files mode, the real agent loop over it, fakesmi as its GPU tools.

- The emulator renders the node's tree under ``<tmp>/trees/<node>`` (files mode; or serves it at
  ``<tmp>/fuse/<node>`` with ``fuse=True``, for refusals at write time) and is stepped only by
  :meth:`Bench.advance` (a frozen clock shared with the agent: no wall-clock sleeps anywhere).
- The agent is ``joulie_agent.api.Agent`` in ``emulated`` mode (``ROOT=<trees>/{node}``), so it
  runs discovery, the CPU and GPU reconcile and the status write exactly as in a pod; only the
  Kubernetes shell is replaced by :class:`FakeKube` (Node object from the simulator's
  ``node_object``, the NodeTwin spec the test sets, the controlStatus it records).
- GPU tools: the tree's ``bin/<tool>`` links point at ``/emu/lib/fakesmi`` (the pod's mount), which
  does not exist here; the agent puts ``<ROOT>/bin`` first on its tool PATH and then ``GPU_TOOL_PATH``,
  where this bench installs one executable per tool that runs ``joulie_fakesmi.api.main`` with the
  node's ``HWEMU_*`` roots (and logs its argv, so a test can see which commands ran).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from joulie_agent.api import CPUOutcome, DvfsConfig, GPUOutcome, load_catalog
from joulie_agent.shell_api import Agent, AgentKube, AgentMetrics, NodeSeen, Settings, node_seen
from joulie_api.generated.nodehardware import NodeHardwareStatus
from joulie_api.generated.nodetwin import CPUCapSpec, GPUCapSpec, GPUPowerCap, NodeTwinSpec
from joulie_common.clock import FakeClock
from joulie_hwprofiles.nodeobject import node_object
from joulie_hwprofiles.schema import Profile
from joulie_simhw.gpustate import GPU_STATE_FILE, GpuState
from joulie_simulator.api import Emulator, Load, initial_state
from joulie_simulator.shell_api import FileTrees, FuseServer

TOOLS = ("nvidia-smi", "rocm-smi", "amd-smi")
POWERCAP = "sys/class/powercap"
CPUFREQ = "sys/devices/system/cpu/cpufreq"


@dataclass
class FakeKube:
    """The agent's Kubernetes shell for one node: Node from the emulator, NodeTwin from the test."""

    node: dict[str, Any]
    spec: NodeTwinSpec | None = None
    published: list[NodeHardwareStatus] = field(default_factory=list)
    statuses: list[tuple[CPUOutcome, GPUOutcome]] = field(default_factory=list)

    def read_node(self, name: str) -> NodeSeen | None:
        return node_seen(self.node)

    def publish_hardware(self, node: str, status: NodeHardwareStatus) -> bool:
        self.published.append(status)
        return True

    def read_spec(self, node: str) -> tuple[bool, NodeTwinSpec | None]:
        return True, self.spec

    def write_control_status(self, node: str, cpu: CPUOutcome, gpu: GPUOutcome) -> bool:
        self.statuses.append((cpu, gpu))
        return True

    def renew_lease(self, node: str) -> bool:
        return False  # no heartbeat Leases here: the status heartbeat, as an agent without a namespace

    def forget_lease(self, node: str) -> None:
        pass


def install_fakesmi(bin_dir: Path, node_dir: Path, host_root: Path, log: Path) -> None:
    """One executable per tool name running fakesmi in this interpreter, for the node at ``node_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    pythonpath = os.pathsep.join(os.path.abspath(p) for p in sys.path if p)
    env = {
        "HWEMU_STATE_ROOT": str(node_dir / "state"),
        "HWEMU_SYS_ROOT": str(node_dir / "sys"),
        "HWEMU_HOST_ROOT": str(host_root),
        "PYTHONPATH": pythonpath,
    }
    for tool in TOOLS:
        code = (
            "import json, sys\n"
            f"with open({str(log)!r}, 'a') as f:\n"
            f"    f.write(json.dumps([{tool!r}, *sys.argv[1:]]) + '\\n')\n"
            "from joulie_fakesmi.api import main\n"
            f"sys.exit(main(sys.argv[1:], prog={tool!r}))\n"
        )
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        script = bin_dir / tool
        script.write_text(f"#!/bin/sh\n{exports}exec {shlex.quote(sys.executable)} -c {shlex.quote(code)} \"$@\"\n")
        script.chmod(0o755)


def host_root_for(profile: Profile, root: Path) -> Path:
    """A host root holding every file the profile's real tools need (what tool delivery mounts)."""
    for tool in profile.gpus.tools if profile.gpus else []:
        for req in tool.requires:
            p = root / req.lstrip("/")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.touch()
    return root


class Bench:
    def __init__(self, tmp: Path, profile: Profile, node: str = "node-0", tick_s: float = 0.1,
                 dvfs: DvfsConfig | None = None, energy_start_uj: dict[str, int] | None = None,
                 fuse: bool = False) -> None:
        self.name = node
        self.profile = profile
        self.tick_s = tick_s
        self.clock = FakeClock()
        states = {node: initial_state(profile, node, energy_start_uj)} if energy_start_uj else None
        self.emu = Emulator([(node, profile)], tick_s=tick_s, clock=self.clock.monotonic, states=states)
        self.emu.frozen = True
        self.trees: FileTrees | None = None
        self.server: FuseServer | None = None
        if fuse:
            # The FUSE view: a refused write fails at once with the kernel's errno (needs root, /dev/fuse).
            self.root = tmp / "fuse"
            self.server = FuseServer(self.emu, self.root)
            self.server.start()
        else:
            self.root = tmp / "trees"
            self.trees = FileTrees(self.root, self.emu)
            self.trees.ensure()
        self.dir = self.root / node
        self.tool_log = tmp / "tool-calls.jsonl"
        tool_dir = tmp / "tool-path"
        install_fakesmi(tool_dir, self.dir, host_root_for(profile, tmp / "host"), self.tool_log)
        self.kube = FakeKube(node_object(profile, node))
        settings = Settings(mode="emulated", node_name=node, root=str(self.root / "{node}"), tool_path=str(tool_dir),
                            tool_timeout_s=60.0, metrics_addr="",
                            # The emulator updates energy counters once a tick (tick_s here, not 1 s):
                            # an estimate over two ticks spans two updates, as the agent's 5 s default
                            # does for the 1 s tick of a simulated cluster.
                            dvfs=dataclasses.replace(dvfs or DvfsConfig(), energy_window_s=2 * tick_s))
        self.metrics = AgentMetrics()
        self.agent = Agent(settings, cast(AgentKube, cast(Any, self.kube)), load_catalog(), self.clock, self.metrics)

    def close(self) -> None:
        """Unmount the FUSE view, if any (files mode has nothing running)."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> Bench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the world ----------------------------------------------------------------------------

    def load(self, cpu: float = 0.0, gpu: float = 0.0) -> None:
        count = self.profile.gpus.count if self.profile.gpus else 0
        self.emu.set_load(self.name, Load(cpu_util=cpu, gpu_util=(gpu,) * count))

    def advance(self, seconds: float, reconcile_every_s: float | None = None) -> None:
        """Move the shared clock tick by tick; each tick the emulator applies the writes made since
        the last one, steps its physics and publishes. With ``reconcile_every_s`` the agent loop runs
        that often (its RECONCILE_INTERVAL), after the tick."""
        every = max(1, round(reconcile_every_s / self.tick_s)) if reconcile_every_s else 0
        for i in range(round(seconds / self.tick_s)):
            self.clock.advance(self.tick_s)
            if self.trees is not None:
                self.trees.tick()
            else:
                self.emu.tick()
            if every and (i + 1) % every == 0:
                self.reconcile()

    def cap(self, cpu_w: float | None = None, cpu_pct: float | None = None, gpu_w: float | None = None,
            gpu_pct: float | None = None) -> None:
        cpu = CPUCapSpec(package_power_cap_watts=cpu_w, package_power_cap_pct_of_max=cpu_pct) \
            if cpu_w is not None or cpu_pct is not None else None
        gpu = GPUCapSpec(power_cap=GPUPowerCap(cap_watts_per_gpu=gpu_w, cap_pct_of_max=gpu_pct)) \
            if gpu_w is not None or gpu_pct is not None else None
        self.kube.spec = NodeTwinSpec(node_name=self.name, profile="eco", cpu=cpu, gpu=gpu)

    def reconcile(self) -> tuple[CPUOutcome, GPUOutcome]:
        """One agent loop tick (discovery on the first); returns the controlStatus it wrote."""
        assert self.agent.tick() == 0, "the agent's reconcile of the node failed"
        return self.kube.statuses[-1]

    # -- what a user reads --------------------------------------------------------------------

    @property
    def hardware(self) -> NodeHardwareStatus:
        return self.kube.published[-1]

    def read(self, rel: str) -> str:
        return (self.dir / rel).read_text().strip()

    def truth(self) -> dict[str, Any]:
        return self.emu.truth(self.name)

    def gpu_state(self) -> GpuState:
        """``state/gpus.json`` as fakesmi reads it (draw, limit, enforced limit per board)."""
        state = GpuState.from_json(self.read(f"state/{GPU_STATE_FILE}"))
        assert state is not None
        return state

    def tool_calls(self) -> list[list[str]]:
        if not self.tool_log.exists():
            return []
        return [cast(list[str], json.loads(line)) for line in self.tool_log.read_text().splitlines()]

    def metric(self, name: str, **labels: str) -> float | None:
        value = self.metrics.registry.get_sample_value(name, {"node": self.name, **labels})
        return None if value is None else float(value)
