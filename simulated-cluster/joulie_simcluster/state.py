"""The simcluster state directory and its ``cluster.env``.

``$SIMCLUSTER_DIR`` or ``~/.cache/joulie/simcluster/$SIMCLUSTER_NAME`` (name default ``joulie-sim``;
``Settings.dir`` in ``settings.py`` says which):

``kubeconfig``   admin kubeconfig of the API server on 127.0.0.1
``cluster.env``  KEY=value: how the running cluster was started (API URL, ports, PIDs, spec, time)
``spec.yaml``    a copy of the last spec ``up`` applied
``logs/``        one log per process (etcd, kube-apiserver, kube-scheduler, kwok, prometheus, and the deployed components)
``prometheus.yml``, ``tsdb/``  the Prometheus of the cluster (OTLP receiver on)
``otelcol.yaml``  the OpenTelemetry Collector's config (telemetry modes otel-collector, otel-bridge)
``deploy.env``   what ``deploy`` started (binaries, ports, PIDs); ``bin/`` the binaries it runs
``values/``      the effective install values; ``hwemu/`` the emulated trees and FUSE views
``agents/<node>/``  per agent: its GPU tool wrappers and tool-delivery stubs
``runs/``        smoke run results (``runs/latest`` the newest)
``pki/``, ``etcd-data/``  the control plane's certificates and data
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from joulie_localcluster.tools import parse_env_file

# The processes of the process runtime, in start order (``down`` stops them in reverse).
PROCESSES = ("etcd", "kube-apiserver", "kube-scheduler", "kwok", "prometheus")
# Started only by some telemetry modes (otel-collector, otel-bridge), after Prometheus.
OPTIONAL_PROCESSES = ("otelcol",)


def pid_key(process: str) -> str:
    """``kube-apiserver`` -> ``KUBE_APISERVER_PID``."""
    return process.upper().replace("-", "_") + "_PID"


@dataclass(frozen=True)
class StateDir:
    root: Path

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def cluster_env(self) -> Path:
        return self.root / "cluster.env"

    @property
    def spec(self) -> Path:
        return self.root / "spec.yaml"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, process: str) -> Path:
        return self.logs / f"{process}.log"

    @property
    def deploy_env(self) -> Path:
        return self.root / "deploy.env"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def values(self) -> Path:
        return self.root / "values"

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    def read_cluster_env(self) -> dict[str, str] | None:
        """The recorded cluster, or None when there is none."""
        return _read_env(self.cluster_env)

    def write_cluster_env(self, values: Mapping[str, str]) -> None:
        _write_env(self.cluster_env, values)

    def read_deploy_env(self) -> dict[str, str] | None:
        """What the last deploy started, or None when nothing is deployed."""
        return _read_env(self.deploy_env)

    def write_deploy_env(self, values: Mapping[str, str]) -> None:
        _write_env(self.deploy_env, values)


def _read_env(path: Path) -> dict[str, str] | None:
    try:
        return parse_env_file(path.read_text(), source=path.name)
    except FileNotFoundError:
        return None


def _write_env(path: Path, values: Mapping[str, str]) -> None:
    """Atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".env.tmp")
    tmp.write_text(format_env(values))
    tmp.replace(path)


def parse_env(text: str) -> dict[str, str]:
    """cluster.env as a dict (the tools manifest's KEY=value format)."""
    return parse_env_file(text, source="cluster.env")


def format_env(values: Mapping[str, str]) -> str:
    lines = []
    for key, value in values.items():
        if not key or "=" in key or "\n" in key or "\n" in value:
            raise ValueError(f"cluster.env: cannot write {key!r}={value!r}")
        lines.append(f"{key}={value}")
    return "".join(line + "\n" for line in lines)


def recorded_pids(env: Mapping[str, str]) -> list[tuple[str, int]]:
    """(process, pid) in start order, for the processes cluster.env records."""
    out = []
    for proc in PROCESSES + OPTIONAL_PROCESSES:
        raw = env.get(pid_key(proc), "")
        if raw.isdigit():
            out.append((proc, int(raw)))
    return out
