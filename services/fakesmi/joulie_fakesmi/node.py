"""Where fakesmi finds the emulated node: its state root, sys root and host root.

Environment: ``HWEMU_STATE_ROOT`` (default ``/emu/state``), ``HWEMU_SYS_ROOT`` (default
``/host-sys``), ``HWEMU_HOST_ROOT`` (default ``/``; where a tool's requirements, its ELF loader,
C libraries, NVML or interpreter, are looked for). The GPU state format is
``joulie_simhw.gpustate``, shared with the simulator.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class NodeView:
    state_root: Path
    sys_root: Path
    host_root: Path

    @staticmethod
    def from_env(env: dict[str, str] | None = None) -> NodeView:
        e = os.environ if env is None else env
        return NodeView(
            Path(e.get("HWEMU_STATE_ROOT", "/emu/state")),
            Path(e.get("HWEMU_SYS_ROOT", "/host-sys")),
            Path(e.get("HWEMU_HOST_ROOT", "/")),
        )

    def tools(self) -> ToolsManifest | None:
        try:
            return ToolsManifest.from_json((self.state_root / TOOLS_FILE).read_text(), str(self.state_root / TOOLS_FILE))
        except (OSError, StateFormatError):
            return None

    def gpus(self) -> GpuState | None:
        """The GPU state, or None when the node has no driver state at all."""
        path = self.state_root / GPU_STATE_FILE
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        return GpuState.from_json(text, str(path))

    def faults(self) -> tuple[str, ...]:
        try:
            return read_faults((self.state_root / FAULTS_FILE).read_text(), str(self.state_root / FAULTS_FILE))
        except (OSError, StateFormatError):
            return ()

    def missing_requirement(self, requires: tuple[str, ...]) -> str | None:
        for req in requires:
            if not (self.host_root / req.lstrip("/")).exists():
                return req
        return None

    def nvidia_limit_mw(self, index: int) -> int | None:
        try:
            return int((self.state_root / nvml_limit_file(index)).read_text().strip())
        except (OSError, ValueError):
            return None

    def set_nvidia_limit_mw(self, index: int, mw: int) -> None:
        with open(self.state_root / nvml_limit_file(index), "w") as f:
            f.write(f"{mw}\n")

    def nvidia_lock(self, index: int, fallback: int | None) -> int | None:
        """The board's locked SM clock ceiling as the lock file says (written by -lgc/-rgc, read back
        by the simulator at its next tick), else ``fallback`` (gpus.json's)."""
        try:
            lock = parse_locked_clocks((self.state_root / nvml_locked_clocks_file(index)).read_text())
        except (OSError, ValueError):
            return fallback
        return lock[1] if lock is not None else None

    def set_nvidia_lock(self, index: int, lock: tuple[int, int] | None) -> None:
        with open(self.state_root / nvml_locked_clocks_file(index), "w") as f:
            f.write(format_locked_clocks(lock))

    def read_sys(self, rel: str) -> str:
        return (self.sys_root / rel).read_text().strip()

    def write_sys(self, rel: str, text: str) -> None:
        with open(self.sys_root / rel, "w") as f:
            f.write(text)
