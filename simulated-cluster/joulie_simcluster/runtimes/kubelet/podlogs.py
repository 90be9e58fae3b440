"""The Pods' logs kept at ``down`` (issue 40): the kubelet keeps a container's log under the node's
directory, which ``down`` removes with the node, so ``simcluster logs agent --node N`` found nothing
afterwards. Before the kubelet stops, each Pod deploy.env records has its log read through the API
server (what ``kubectl logs`` reads) into ``<state>/logs/<name>.log``, the name ``simcluster logs``
reads, and into the run whose deploy.env this is (``runs/<run>/logs/``), which ``down`` keeps.

:func:`pod_logs` is pure (which Pods, which file names); :func:`save_pod_logs` is the shell.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from joulie_simcluster.runtimes import kube
from joulie_simcluster.runtimes.kubelet.chart import POD_PREFIX
from joulie_simcluster.state import StateDir

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
"""A DNS label or subdomain: a component name that is safe as a file name, a namespace or Pod name
safe in an API path."""
LOG_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class PodLog:
    namespace: str
    pod: str
    file: str
    """The log's file name under logs/ (``<component>.log``, as the process runtime names its logs)."""

    @property
    def api_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods/{self.pod}/log"


def pod_logs(deploy_env: Mapping[str, str]) -> list[PodLog]:
    """The Pods deploy.env records (``POD_<name>=<namespace>/<pod>``), in its order; any entry that is
    not of that shape, or whose names are no DNS names, is none."""
    out: list[PodLog] = []
    for key, value in deploy_env.items():
        if not key.startswith(POD_PREFIX):
            continue
        name = key.removeprefix(POD_PREFIX)
        namespace, _, pod = value.partition("/")
        if all(_NAME.match(part) for part in (name, namespace, pod)):
            out.append(PodLog(namespace, pod, f"{name}.log"))
    return out


def _run_of(state: StateDir, deploy_env_text: str) -> Path | None:
    """The latest run that recorded this very deploy (its copy of deploy.env is the same), if any."""
    with contextlib.suppress(OSError):
        for run in sorted((p for p in state.runs.iterdir() if p.is_dir() and not p.is_symlink()), reverse=True):
            recorded = run / "deploy.env"
            if recorded.is_file() and recorded.read_text() == deploy_env_text:
                return run
    return None


def save_pod_logs(state: StateDir, progress: Callable[[str], None]) -> int:
    """Each recorded Pod's log into logs/ and into its run's logs/; returns how many were saved. A Pod
    whose log cannot be read is named in `progress` and skipped: ``down`` goes on."""
    if not state.deploy_env.is_file():
        return 0
    text = state.deploy_env.read_text()
    logs = pod_logs(state.read_deploy_env() or {})
    run = _run_of(state, text) if logs else None
    saved = 0
    for log in logs:
        try:
            code, body = kube.api_get(state.kubeconfig, log.api_path, timeout_s=LOG_TIMEOUT_S)
        except Exception as e:  # the API server already gone (or hung): no other log comes either
            progress(f"Pod logs not kept ({log.namespace}/{log.pod}: {e})")
            break
        if code != 200:
            progress(f"log of Pod {log.namespace}/{log.pod} not kept: HTTP {code}")
            continue
        state.logs.mkdir(parents=True, exist_ok=True)
        state.log(log.file.removesuffix(".log")).write_text(body)
        if run is not None:
            (run / "logs").mkdir(exist_ok=True)
            shutil.copy2(state.log(log.file.removesuffix(".log")), run / "logs" / log.file)
        saved += 1
    if saved:
        progress(f"kept {saved} Pod logs in {state.logs}" + (f" and {run / 'logs'}" if run else ""))
    return saved
