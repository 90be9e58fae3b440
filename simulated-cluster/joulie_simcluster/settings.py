"""Every ``SIMCLUSTER_*`` environment variable, read once: :meth:`Settings.from_env` is the only place
in the harness that looks at them (the ``./simcluster`` launcher reads ``SIMCLUSTER_NO_BUILD``
before this process starts). The CLI builds one :class:`Settings` and passes it down.

A variable this module does not know, or a value it cannot use, is refused with the variable, the
value and what was expected: a typo (``SIMCLUSTER_TELEMTRY``) would otherwise run the default
silently. An unset or empty variable means the default. ``simulated-cluster/README.md`` ("Settings")
lists the same variables; a test keeps the two equal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from joulie_simcluster import telemetry
from joulie_simcluster.timing import PRESETS, Timing

DEFAULT_NAME = "joulie-sim"
PREFIX = "SIMCLUSTER_"

HwemuMode = Literal["fuse", "files"]
PowerScope = Literal["auto", "host"]
RuntimeName = Literal["process", "k3s", "kubelet"]


class SettingsError(ValueError):
    """A ``SIMCLUSTER_*`` variable that is unknown or has a value that cannot be used."""


def _env(name: str) -> dict[str, Any]:
    return {"env": PREFIX + name}


@dataclass(frozen=True)
class Settings:
    name: str = field(default=DEFAULT_NAME, metadata=_env("NAME"))
    """SIMCLUSTER_NAME: the cluster's name (state dir, k3s container). Default ``joulie-sim``."""
    dir: Path = field(default_factory=lambda: _default_dir(Path.home(), DEFAULT_NAME), metadata=_env("DIR"))
    """SIMCLUSTER_DIR: the state directory (``joulie_simcluster.state``). Default
    ``~/.cache/joulie/simcluster/$SIMCLUSTER_NAME``."""
    spec: Path | None = field(default=None, metadata=_env("SPEC"))
    """SIMCLUSTER_SPEC: the cluster spec for ``--spec`` when it is not given. No default (``smoke``:
    ``simulated-cluster/specs/smoke.yaml``)."""
    values: tuple[Path, ...] | None = field(default=None, metadata=_env("VALUES"))
    """SIMCLUSTER_VALUES: comma-separated values files for ``--values`` when it is not given. Default
    none (``smoke``: ``simulated-cluster/values/smoke-values.yaml``); the chart's values.yaml always first."""
    hwemu: HwemuMode = field(default="fuse", metadata=_env("HWEMU"))
    """SIMCLUSTER_HWEMU: how agents see the emulated hardware, ``fuse`` (needs /dev/fuse) or ``files``.
    Default ``fuse``."""
    timing: Timing = field(default=PRESETS["ci"], metadata=_env("TIMING"))
    """SIMCLUSTER_TIMING: the timing preset, ``ci`` or ``production`` (``joulie_simcluster.timing``).
    Default ``ci``."""
    telemetry: str = field(default="otlp", metadata=_env("TELEMETRY"))
    """SIMCLUSTER_TELEMETRY: how node power reaches Prometheus, one of ``telemetry.MODES``, picked at
    ``up``. Default ``otlp``."""
    telemetry_tls: bool = field(default=True, metadata=_env("TELEMETRY_TLS"))
    """SIMCLUSTER_TELEMETRY_TLS: 1 runs the authenticated telemetry path (docs/security.md): ``up`` makes a
    throwaway CA and certificates under ``<state>/telemetry-tls`` and starts Prometheus requiring a client
    certificate of that CA on every endpoint; every pusher and reader gets its own. 0: plain HTTP, no
    certificate. Process runtime only (the kubelet runtime's Pods keep plain HTTP). Default 1."""
    power_scope: PowerScope = field(default="auto", metadata=_env("POWER_SCOPE"))
    """SIMCLUSTER_POWER_SCOPE: ``host`` makes the controller manager read whole-host power only
    (NODE_POWER_SCOPE=host) where the telemetry mode carries it; ``auto`` leaves the mode's choice.
    Default ``auto``."""
    runtime: RuntimeName = field(default="process", metadata=_env("RUNTIME"))
    """SIMCLUSTER_RUNTIME: ``process`` (every component a local process), ``k3s`` (``up`` only: the
    seed's k3s container, simulated-cluster/K3S.md) or ``kubelet`` (``up`` only: the process runtime's
    control plane plus one real kubelet node on containerd, simulated-cluster/KUBELET.md). Default
    ``process``."""
    keep: bool = field(default=False, metadata=_env("KEEP"))
    """SIMCLUSTER_KEEP: 1 keeps the cluster after ``smoke`` and ``bench-live``, and the state dir (but
    runs/, always kept) at ``down``. Default 0."""
    keep_failed: bool = field(default=False, metadata=_env("KEEP_FAILED"))
    """SIMCLUSTER_KEEP_FAILED: 1 leaves the processes of a failed ``deploy`` running, to look at them.
    Default 0 (a failed deploy stops what it started)."""
    force_reload: bool = field(default=False, metadata=_env("FORCE_RELOAD"))
    """SIMCLUSTER_FORCE_RELOAD: 1 is ``reload --force``: restart even when the binary is unchanged.
    Default 0."""
    no_build: bool = field(default=False, metadata=_env("NO_BUILD"))
    """SIMCLUSTER_NO_BUILD: 1 makes the ``./simcluster`` launcher skip ``./pants package``. Read by the
    launcher (bash); here only checked. Default 0."""
    dist: Path = field(default=Path("dist"), metadata=_env("DIST"))
    """SIMCLUSTER_DIST: where ``./pants package`` put the PEXes that ``deploy`` installs. Default ``dist``."""
    test_timeout_s: float | None = field(default=None, metadata=_env("TEST_TIMEOUT"))
    """SIMCLUSTER_TEST_TIMEOUT: seconds a ``smoke`` run may take in all. Default ten rate windows of the
    timing, at least 1200 (:attr:`smoke_timeout_s`)."""
    deploy_timeout_s: float | None = field(default=None, metadata=_env("DEPLOY_TIMEOUT"))
    """SIMCLUSTER_DEPLOY_TIMEOUT: seconds ``deploy`` waits for the simulator to serve and for every
    component to report. Default sized from the cluster (:meth:`deploy_wait_s`)."""
    agent_shards: int | None = field(default=None, metadata=_env("AGENT_SHARDS"))
    """SIMCLUSTER_AGENT_SHARDS: 0 runs one agent per Node; N runs N pool-mode agents that share the
    Nodes (scale runs, where one process per Node costs ~90 MB each); ``auto`` (None) sizes them
    from the spec at ``deploy`` (``deploy/components.auto_agent_shards``). Default auto."""
    sim_extra_values: tuple[Path, ...] = field(default=(), metadata=_env("SIM_EXTRA_VALUES"))
    """SIMCLUSTER_SIM_EXTRA_VALUES: comma-separated values files of the joulie-simulator chart merged, in
    order, over the simulator's values at ``deploy`` (``deploy/simvalues.py``; a scenario's
    ``simulator.set`` comes last). Default none."""

    api_proxy: bool = field(default=False, metadata=_env("API_PROXY"))
    """SIMCLUSTER_API_PROXY: 1 makes ``deploy`` put the chaos run's injecting proxy between the components
    and kube-apiserver (``chaos/apiproxy.py``; faults ``api-conflict-storm``, ``api-throttle``). Default 0."""
    kubelet_nodes: int = field(default=1, metadata=_env("KUBELET_NODES"))
    """SIMCLUSTER_KUBELET_NODES: how many real kubelet nodes the kubelet runtime's ``up`` starts, 1 to 3.
    The first runs the controller manager and the extender; each further one takes over a CPU-capping
    spec Node and runs the chart's agent DaemonSet (simulated-cluster/KUBELET.md "The agent DaemonSet").
    Default 1."""

    @property
    def smoke_timeout_s(self) -> float:
        """How long a smoke run may take: SIMCLUSTER_TEST_TIMEOUT, else ten rate windows, at least 20 minutes."""
        return self.test_timeout_s or max(1200.0, 10 * self.timing.rate_window_s)

    def deploy_wait_s(self, nodes: int) -> float:
        """How long ``deploy`` waits: SIMCLUSTER_DEPLOY_TIMEOUT, else 240 s up to 25 Nodes and, per
        further Node, 2 s in FUSE mode or 3 s in files mode (which first renders ~3000 files a Node).
        At 1000 Nodes (issue 39) FUSE mode had every component reporting after 784 s on a quiet
        2-core machine and files mode's simulator alone took 770 s to serve on a shared one; the
        240 s default stopped both. This leaves 2190 s and 3165 s there."""
        if self.deploy_timeout_s is not None:
            return self.deploy_timeout_s
        return 240.0 + (3.0 if self.hwemu == "files" else 2.0) * max(0, nodes - 25)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Reads every SIMCLUSTER_* variable of `environ` (HOME for the default state dir). Raises
        SettingsError naming each unknown variable and each value it cannot use."""
        problems: list[str] = []
        known = env_names()
        for key in sorted(environ):
            if key.startswith(PREFIX) and key not in known:
                problems.append(f"{key}={environ[key]!r}: unknown variable; expected one of {', '.join(known)}")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            key = f.metadata["env"]
            raw = environ.get(key, "")
            if raw == "":
                continue
            try:
                values[f.name] = _PARSERS[f.name](raw)
            except ValueError as e:
                problems.append(f"{key}={raw!r}: expected {e}")
        if problems:
            raise SettingsError("; ".join(problems))
        if "dir" not in values:
            values["dir"] = _default_dir(Path(environ.get("HOME") or Path.home()), values.get("name", DEFAULT_NAME))
        return cls(**values)


def _default_dir(home: Path, name: str) -> Path:
    return home / ".cache" / "joulie" / "simcluster" / name


def env_names() -> list[str]:
    """The variables Settings reads, in declaration order."""
    return [f.metadata["env"] for f in dataclasses.fields(Settings)]


T = TypeVar("T", bound=str)


def _one_of(*choices: T) -> Callable[[str], T]:
    def parse(raw: str) -> T:
        for c in choices:
            if raw == c:
                return c
        raise ValueError(f"one of {', '.join(choices)}")
    return parse


def _flag(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise ValueError("1 or 0 (or unset)")
    return raw == "1"


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError("a number of seconds > 0")
    return value


def _shards(raw: str) -> int | None:
    if raw == "auto":
        return None
    if not raw.isdigit():
        raise ValueError("auto or a whole number >= 0")
    return int(raw)


def _timing(raw: str) -> Timing:
    if raw not in PRESETS:
        raise ValueError(f"one of {', '.join(PRESETS)}")
    return PRESETS[raw]


def _telemetry(raw: str) -> str:
    if raw not in telemetry.MODES:
        raise ValueError(f"one of {', '.join(telemetry.MODES)}")
    return raw


def _kubelet_nodes(raw: str) -> int:
    if raw not in ("1", "2", "3"):
        raise ValueError("1, 2 or 3")
    return int(raw)


def _paths(raw: str) -> tuple[Path, ...]:
    return tuple(Path(p) for p in raw.split(",") if p)


_PARSERS: dict[str, Callable[[str], Any]] = {
    "name": str,
    "dir": Path,
    "spec": Path,
    "values": _paths,
    "hwemu": _one_of("fuse", "files"),
    "timing": _timing,
    "telemetry": _telemetry,
    "telemetry_tls": _flag,
    "power_scope": _one_of("auto", "host"),
    "runtime": _one_of(*get_args(RuntimeName)),  # the runtimes the registry holds (a test keeps them equal)
    "keep": _flag,
    "keep_failed": _flag,
    "force_reload": _flag,
    "no_build": _flag,
    "dist": Path,
    "test_timeout_s": _seconds,
    "deploy_timeout_s": _seconds,
    "agent_shards": _shards,
    "sim_extra_values": _paths,
    "api_proxy": _flag,
    "kubelet_nodes": _kubelet_nodes,
}
