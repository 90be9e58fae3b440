"""Where fakesmi finds the emulated node: its state root, sys root and host root.

Environment: ``HWEMU_STATE_ROOT`` (default ``/emu/state``), ``HWEMU_SYS_ROOT`` (default
``/host-sys``), ``HWEMU_HOST_ROOT`` (default ``/``; where a tool's requirements, its ELF loader,
C libraries, NVML or interpreter, are looked for). The GPU state format is
``joulie_simhw.gpustate``, shared with the simulator.
"""

from __future__ import annotations

import os

from joulie_simhw.gpustate import (
    FAULTS_FILE,
    GPU_STATE_FILE,
    TOOLS_FILE,
    GpuState,
    StateFormatError,
    ToolsManifest,
    format_locked_clocks,
    nvml_limit_file,
    nvml_locked_clocks_file,
    parse_locked_clocks,
    read_faults,
)

# Paths are strings joined with os.path: pathlib cost each fakesmi start 17 M instructions, half the
# interpreter's own start (it imports urllib.parse, ipaddress, fnmatch), and an agent starts fakesmi
# for every GPU tool call.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class NodeView:
    """One emulated node's roots (``os.PathLike`` or ``str``, kept as ``str``)."""

    __slots__ = ("host_root", "state_root", "sys_root")

    def __init__(self, state_root: str | os.PathLike[str], sys_root: str | os.PathLike[str],
                 host_root: str | os.PathLike[str]) -> None:
        self.state_root = os.fspath(state_root)
        self.sys_root = os.fspath(sys_root)
        self.host_root = os.fspath(host_root)

    def __repr__(self) -> str:
        return f"NodeView({self.state_root!r}, {self.sys_root!r}, {self.host_root!r})"

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> NodeView:
        e = os.environ if env is None else env
        return NodeView(
            e.get("HWEMU_STATE_ROOT", "/emu/state"),
            e.get("HWEMU_SYS_ROOT", "/host-sys"),
            e.get("HWEMU_HOST_ROOT", "/"),
        )

    def state(self, rel: str) -> str:
        """The path of ``rel`` under the state root."""
        return os.path.join(self.state_root, rel)

    def tools(self) -> ToolsManifest | None:
        path = self.state(TOOLS_FILE)
        try:
            return ToolsManifest.from_json(_read(path), path)
        except (OSError, StateFormatError):
            return None

    def gpus(self) -> GpuState | None:
        """The GPU state, or None when the node has no driver state at all."""
        path = self.state(GPU_STATE_FILE)
        try:
            text = _read(path)
        except FileNotFoundError:
            return None
        return GpuState.from_json(text, path)

    def faults(self) -> tuple[str, ...]:
        path = self.state(FAULTS_FILE)
        try:
            return read_faults(_read(path), path)
        except (OSError, StateFormatError):
            return ()

    def missing_requirement(self, requires: tuple[str, ...]) -> str | None:
        for req in requires:
            if not os.path.exists(os.path.join(self.host_root, req.lstrip("/"))):
                return req
        return None

    def nvidia_limit_mw(self, index: int) -> int | None:
        try:
            return int(_read(self.state(nvml_limit_file(index))).strip())
        except (OSError, ValueError):
            return None

    def set_nvidia_limit_mw(self, index: int, mw: int) -> None:
        _write(self.state(nvml_limit_file(index)), f"{mw}\n")

    def nvidia_lock(self, index: int, fallback: int | None) -> int | None:
        """The board's locked SM clock ceiling as the lock file says (written by -lgc/-rgc, read back
        by the simulator at its next tick), else ``fallback`` (gpus.json's)."""
        try:
            lock = parse_locked_clocks(_read(self.state(nvml_locked_clocks_file(index))))
        except (OSError, ValueError):
            return fallback
        return lock[1] if lock is not None else None

    def set_nvidia_lock(self, index: int, lock: tuple[int, int] | None) -> None:
        _write(self.state(nvml_locked_clocks_file(index)), format_locked_clocks(lock))

    def read_sys(self, rel: str) -> str:
        return _read(os.path.join(self.sys_root, rel)).strip()

    def write_sys(self, rel: str, text: str) -> None:
        _write(os.path.join(self.sys_root, rel), text)
