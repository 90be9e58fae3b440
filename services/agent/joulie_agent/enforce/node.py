"""One node's control loop: discovery, then CPU and GPU cap enforcement, each in its own shell.

A thin composition: ``host.hostread`` + the pure ``discovery.status`` find the hardware, ``cpuenforce``
(RAPL, DVFS fallback) and ``gpuenforce`` (NVML, vendor tools) enforce the caps and report
``outcomes``, ``nodemetrics`` records what they saw. Kubernetes is not here; ``loop.agent`` moves the
results.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from joulie_agent.control import cpucontrol
from joulie_agent.control.outcomes import CPUOutcome, GPUOutcome
from joulie_agent.discovery.catalog import Catalog
from joulie_agent.discovery.status import HostFacts, build_status, lost_facts
from joulie_agent.enforce.cpuenforce import CPUEnforcer, Writer
from joulie_agent.enforce.gpuenforce import GPUEnforcer
from joulie_agent.host import hostread
from joulie_agent.host.gpureadings import DCGM_EVERY, GpuReadings
from joulie_agent.host.nvml import NVML
from joulie_agent.host.sysfswrite import write_attr
from joulie_agent.host.toolrun import Runner
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_agent.telemetry.nodemetrics import NodeMetrics
from joulie_api.generated.nodehardware import NodeHardwareStatus
from joulie_api.generated.nodetwin import NodeTwinSpec
from joulie_common.clock import Clock

log = logging.getLogger(__name__)

# The agent loop imports the outcomes from here (one import for everything about a node's control).
__all__ = ["CPUOutcome", "GPUOutcome", "NodeController", "NodeOptions"]


@dataclass
class NodeOptions:
    simulate_only: bool = False
    dvfs: cpucontrol.DvfsConfig = field(default_factory=cpucontrol.DvfsConfig)
    # DCGM_EVERY (Settings.dcgm_every): DCGM's ratios are read at every Nth board activity read.
    dcgm_every: int = DCGM_EVERY
    # GPU limits are read by the verification itself at most this often when the intent is unchanged;
    # the power export's readings in between are checked too (drift shows within ~30 s with the export on).
    gpu_verify_interval_s: float = 60.0


class NodeController:
    def __init__(self, node: str, paths: hostread.HostPaths, catalog: Catalog, run: Runner, nvml: NVML | None,
                 clock: Clock, metrics: AgentMetrics | None = None, options: NodeOptions | None = None,
                 writer: Writer = write_attr):
        self.node = node
        self.paths = paths
        self.catalog = catalog
        self.run = run
        self.nvml = nvml
        self.clock = clock
        opts = options or NodeOptions()
        self.facts = HostFacts()
        # The node's GPU readings, one tool call shared by the power export and the cap verification;
        # its lock keeps the node's GPU tool calls one at a time: the power export's reads never run
        # beside a cap write and its read-back (a stand-in tool, or a driver, may not expect both at once).
        self.gpu_readings = GpuReadings(run, nvml, clock.monotonic, opts.dcgm_every)
        self.gpu_tools = self.gpu_readings.lock
        self.hardware: NodeHardwareStatus | None = None
        # The status of the last discovery that read the node, and why the latest one did not ("").
        self.good_hardware: NodeHardwareStatus | None = None
        self.rediscovery_failed = ""
        # Why the GPUs the node should have did not answer the last discovery ("" when they did, or
        # when it has none): its NodeHardware then holds datasheet ranges and no GPU control, so
        # discovery is tried again soon, not at the next REDISCOVER_S.
        self.gpu_discovery_failed = ""
        self.cpu = CPUEnforcer(paths, clock, NodeMetrics(node, metrics), writer, opts.dvfs, opts.simulate_only)
        self.gpu = GPUEnforcer(run, nvml, clock, opts.gpu_verify_interval_s, opts.simulate_only, paths.sys_root,
                               self.gpu_readings)

    def discover(self, labels: dict[str, str], allocatable: dict[str, str],
                 capacity: dict[str, str] | None = None) -> NodeHardwareStatus:
        """Read the node's hardware. A rediscovery that lost what the last good one read keeps the
        last good facts and says so (a log line on the change, a NodeHardware quality warning)."""
        facts = hostread.read_facts(self.paths, labels, allocatable, self.run, self.nvml, capacity=capacity,
                                    known=self.facts if self.good_hardware is not None else None)
        lost = lost_facts(self.facts, facts) if self.good_hardware is not None else ""
        if lost and self.good_hardware is not None:
            if not self.rediscovery_failed:
                log.warning("node %s: rediscovery failed (%s); keeping the facts of the last good discovery",
                            self.node, lost)
            self.rediscovery_failed = lost
            self.hardware = self.good_hardware.model_copy(deep=True)
            if self.hardware.quality is not None:
                self.hardware.quality.warnings = [
                    *(self.hardware.quality.warnings or []),
                    f"rediscovery failed ({lost}); the facts of the last good discovery are kept"]
            return self.hardware
        if self.rediscovery_failed:
            log.warning("node %s: rediscovery works again", self.node)
            self.rediscovery_failed = ""
        self.facts = facts
        self.hardware = self.good_hardware = build_status(self.facts, self.catalog)
        self._note_gpu_discovery(facts)
        self.gpu.checked_s = self.clock.monotonic()
        return self.hardware

    def _note_gpu_discovery(self, facts: HostFacts) -> None:
        gpu = facts.gpu
        failed = "; ".join(gpu.warnings)[:300] if gpu is not None and not gpu.devices and gpu.warnings else ""
        if failed and not self.gpu_discovery_failed:
            log.warning("node %s: GPU inventory failed at discovery (%s); NodeHardware has no GPU control "
                        "until a rediscovery reads it", self.node, failed)
        elif not failed and self.gpu_discovery_failed:
            log.warning("node %s: GPU inventory answers again; NodeHardware rediscovered with %d GPUs",
                        self.node, len(gpu.devices) if gpu else 0)
        self.gpu_discovery_failed = failed

    def reconcile_cpu(self, spec: NodeTwinSpec | None) -> CPUOutcome:
        return self.cpu.reconcile(spec, self.facts, self.hardware)

    def reconcile_gpu(self, spec: NodeTwinSpec | None) -> GPUOutcome:
        with self.gpu_tools:
            return self.gpu.reconcile(spec, self.facts)

    def reconcile(self, spec: NodeTwinSpec | None) -> tuple[CPUOutcome, GPUOutcome]:
        return self.reconcile_cpu(spec), self.reconcile_gpu(spec)
