"""The kubelet runtime as a :class:`~joulie_simcluster.runtimes.runtime.Runtime`."""

from __future__ import annotations

import sys

from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.progress import Progress
from joulie_simcluster.runtimes import process
from joulie_simcluster.runtimes.kubelet.chart import print_pods
from joulie_simcluster.runtimes.kubelet.down import down_kubelet
from joulie_simcluster.runtimes.kubelet.node import check_mode
from joulie_simcluster.runtimes.kubelet.up import up_kubelet
from joulie_simcluster.runtimes.runtime import KUBELET, StopDeployed, UpRequest
from joulie_simcluster.state import StateDir


class KubeletRuntime:
    """The process runtime's control plane plus one real kubelet node on containerd; ``deploy``
    installs the chart's components as Pods on it (simulated-cluster/KUBELET.md)."""

    name = KUBELET
    components_as_pods = True
    runs_smoke = True

    def up(self, ctx: Context, rendered: RenderedSpec, request: UpRequest) -> str:
        check_mode(ctx.settings.hwemu)  # at once: nothing is built for a mode deploy would refuse
        return up_kubelet(ctx, rendered, crd_dir=request.crd_dir, telemetry_mode=request.telemetry_mode)

    def status(self, state: StateDir) -> int:
        """The process runtime's status (control plane, node processes, Nodes), then the release's
        Pods with their phase and restarts; 1 when a Pod is not Running and ready."""
        rc = process.status(state)
        return rc if print_pods(state, sys.stdout) else 1

    def down(self, ctx: Context, stop_deployed: StopDeployed) -> None:
        # Not stop_deployed: its stray search would take containerd's shims (they name the state dir);
        # down_kubelet removes the Pods with the node and stops the deploy's host processes itself.
        down_kubelet(ctx.state, keep=ctx.settings.keep, progress=ctx.progress)

    def release(self, state: StateDir, progress: Progress, stop_deployed: StopDeployed) -> None:
        down_kubelet(state, keep=True, progress=progress)  # its Pods, node and host processes
