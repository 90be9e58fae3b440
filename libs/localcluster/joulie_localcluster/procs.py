"""Processes the tests start: on loopback, logged to a file, stopped by PID."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


class ProcessFailedError(RuntimeError):
    pass


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ephemeral_range(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> tuple[int, int]:
    """The kernel's range of local ports for outgoing connections (Linux's default where unreadable)."""
    try:
        lo, hi = (int(x) for x in Path(path).read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return lo, hi


def ports_below_ephemeral(count: int, block: int = 4096, start: int | None = None) -> list[int]:
    """``count`` TCP ports free on 127.0.0.1 now, from the ``block`` ports just below the kernel's
    ephemeral range, beginning at a random place in it (``start`` for tests) and wrapping around.

    For ports named long before their process binds them: at 1000 Nodes the pool agents' metrics
    ports wait minutes for the simulator, and a port ``free_port`` drew from the ephemeral range was
    taken meanwhile as the local port of one of the thousands of outgoing connections (an agent died
    on EADDRINUSE and the run aborted). Below that range no outgoing connection takes one."""
    lo, _ = ephemeral_range()
    first = max(1024, lo - block)
    size = lo - first
    offset = (random.randrange(size) if start is None else start - first) % size
    out: list[int] = []
    for i in range(size):
        if len(out) == count:
            break
        port = first + (offset + i) % size
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        out.append(port)
    if len(out) < count:
        raise RuntimeError(f"only {len(out)} of {count} ports free in {first}-{lo - 1} (below the ephemeral range)")
    return out


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


@dataclass
class ManagedProcess:
    """One child process with its log. `stop()` sends SIGTERM, then SIGKILL after `grace_s`."""

    name: str
    argv: Sequence[str]
    log_path: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        try:
            self.proc = subprocess.Popen(
                list(self.argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # its own process group, so stop() reaches its children too
            )
        finally:
            log.close()
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None, f"{self.name} was not started"
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        return tail(self.log_path, lines)

    def wait_until(self, ready: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Polls `ready` until true; fails early with the log if the process exits."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                rc = self.proc.returncode if self.proc else None
                raise ProcessFailedError(
                    f"{self.name} exited with code {rc} before {what}; last log lines of {self.log_path}:\n"
                    f"{self.log_tail()}"
                )
            with contextlib.suppress(Exception):
                if ready():
                    return
            time.sleep(0.2)
        raise ProcessFailedError(
            f"{self.name} not {what} after {timeout_s:.0f} s; last log lines of {self.log_path}:\n{self.log_tail()}"
        )

    def stop(self, grace_s: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


@dataclass
class ProcessGroup:
    """Processes started for one test session, stopped in reverse order."""

    procs: list[ManagedProcess] = field(default_factory=list)

    def add(self, proc: ManagedProcess) -> ManagedProcess:
        self.procs.append(proc)
        return proc

    def describe(self) -> list[str]:
        return [f"{p.name} pid={p.proc.pid if p.proc else '-'} log={p.log_path}" for p in self.procs]

    def stop_all(self) -> None:
        for p in reversed(self.procs):
            p.stop()
