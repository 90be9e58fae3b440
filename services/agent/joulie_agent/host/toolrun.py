"""Running GPU tools: argv from PATH, combined output, a hard timeout, never a hang. Shell."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 3.0
MAX_OUTPUT_BYTES = 1 << 20


@dataclass(frozen=True)
class ToolResult:
    argv: tuple[str, ...]
    returncode: int  # 127: not found, 124: timed out
    output: str  # stdout and stderr together, as the tools interleave them

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe(self) -> str:
        what = " ".join(self.argv)
        if self.returncode == 127 and not self.output:
            return f"{what}: not found on PATH"
        if self.returncode == 124:
            return f"{what}: timed out"
        tail = " ".join(self.output.strip().splitlines()[-2:])[:200]
        return f"{what}: exit {self.returncode}{': ' + tail if tail else ''}"


Runner = Callable[[list[str]], ToolResult]


def make_runner(path: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                env: Mapping[str, str] | None = None) -> Runner:
    """A runner resolving tools on `path` (default: $PATH) with a timeout per command."""
    search = path if path is not None else os.environ.get("PATH", "")
    child_env = dict(env if env is not None else os.environ)
    # Tools (and stand-in scripts) may call coreutils, so the system directories stay reachable.
    child_env["PATH"] = os.pathsep.join(p for p in (search, "/usr/bin", "/bin") if p)

    def run(argv: list[str]) -> ToolResult:
        exe = shutil.which(argv[0], path=search)
        if exe is None:
            return ToolResult(tuple(argv), 127, "")
        try:
            proc = subprocess.Popen(
                [exe, *argv[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env=child_env, start_new_session=True,
            )
        except OSError as err:
            return ToolResult(tuple(argv), 126, f"{argv[0]}: {err.strerror}")
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            # A hung tool (driver stuck) must not hang the agent: kill its whole process group.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return ToolResult(tuple(argv), 124, "")
        return ToolResult(tuple(argv), proc.returncode, out[:MAX_OUTPUT_BYTES].decode("utf-8", "replace"))

    return run
