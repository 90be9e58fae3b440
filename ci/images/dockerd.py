"""A private Docker engine for the image build: its own socket, data root and exec root.

No bridge, no iptables: nothing here needs a network (images build from a local base and run
with ``--network none``). The daemon lives under ``$JOULIE_CACHE/docker`` (default
``~/.cache/joulie/docker``) so images, the base included, survive between runs. One build at a
time holds ``lock``; a daemon this process started is stopped by its PID when the build ends,
a daemon an interrupted build left running (same pidfile and data root) is stopped first.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

Log = Callable[[str], None]


class EngineError(RuntimeError):
    """The Docker engine cannot be installed, started or reached; the message says what is missing."""


def cache_dir() -> Path:
    return Path(os.environ.get("JOULIE_CACHE") or Path.home() / ".cache" / "joulie")


@dataclass(frozen=True)
class DockerdPaths:
    root: Path

    @property
    def socket(self) -> Path:
        return self.root / "docker.sock"

    @property
    def data_root(self) -> Path:
        return self.root / "data"

    @property
    def exec_root(self) -> Path:
        return self.root / "exec"

    @property
    def pidfile(self) -> Path:
        return self.root / "dockerd.pid"

    @property
    def log(self) -> Path:
        return self.root / "dockerd.log"

    @property
    def lock(self) -> Path:
        return self.root / "lock"

    @property
    def host(self) -> str:
        return f"unix://{self.socket}"


def dockerd_argv(dockerd: str, paths: DockerdPaths) -> list[str]:
    return [
        dockerd,
        f"--host={paths.host}",
        f"--data-root={paths.data_root}",
        f"--exec-root={paths.exec_root}",
        f"--pidfile={paths.pidfile}",
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
    ]


def apt_install(package: str, binary: str, log: Log, error: type[Exception]) -> str:
    """The path of `binary`; installs Debian's `package` first (as root) when it is missing.
    Failures raise `error` naming the package, the apt command and its stderr."""
    path = shutil.which(binary)
    if path:
        return path
    if os.geteuid() != 0:
        raise error(f"{binary} is not installed and this is not root: apt-get install {package}")
    log(f"[images] {binary} missing: apt-get install {package}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]):
        r = subprocess.run(argv, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise error(f"could not install {package} ({' '.join(argv)} exit {r.returncode}): {r.stderr.strip()[-400:]}")
    path = shutil.which(binary)
    if path is None:
        raise error(f"{package} installed but {binary} is not on PATH")
    return path


def ensure_engine_installed(log: Log) -> tuple[str, str]:
    """Paths of dockerd and the docker CLI; installs Debian's docker.io when dockerd is missing."""
    dockerd = apt_install("docker.io", "dockerd", log, EngineError)
    # Debian's CLI matches Debian's daemon; any other docker CLI on PATH is a fallback.
    cli = "/usr/bin/docker" if Path("/usr/bin/docker").is_file() else shutil.which("docker")
    if cli is None:
        raise EngineError("the docker CLI is missing (Debian package docker.io)")
    return dockerd, cli


def _pid_alive(pid: int) -> bool:
    """Running (a zombie, exited but not yet reaped by its parent, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _read_pid(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None


def _answers(cli: str, paths: DockerdPaths) -> bool:
    r = subprocess.run([cli, "-H", paths.host, "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True)
    return r.returncode == 0


@dataclass
class Engine:
    cli: str
    paths: DockerdPaths
    pid: int

    def docker(self, *args: str, check: bool = True, capture: bool = True, input_bytes: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        r = subprocess.run([self.cli, "-H", self.paths.host, *args], capture_output=capture, input=input_bytes)
        if check and r.returncode != 0:
            err = (r.stderr or b"").decode(errors="replace").strip()
            raise EngineError(f"docker {' '.join(args[:3])} failed (exit {r.returncode}): {err[-800:]}")
        return r


def _unmount_netns(paths: DockerdPaths) -> None:
    netns = paths.exec_root / "netns"
    if not netns.is_dir():
        return
    for entry in netns.iterdir():
        subprocess.run(["umount", str(entry)], capture_output=True)


def _is_ours(pid: int, paths: DockerdPaths) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"--data-root={paths.data_root}".encode() in cmdline


def stop(pid: int, paths: DockerdPaths, log: Log, proc: subprocess.Popen[bytes] | None = None, timeout_s: float = 30.0) -> None:
    """SIGTERM the daemon by its PID, wait, SIGKILL if it hangs; then unmount its netns files."""

    def gone() -> bool:
        return proc.poll() is not None if proc is not None else not _pid_alive(pid)

    t0 = time.monotonic()
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):
        if gone():
            break
        if sig == signal.SIGKILL:
            log(f"[images] dockerd {pid} ignored SIGTERM for {timeout_s:.0f}s: SIGKILL")
        os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while not gone() and time.monotonic() < deadline:
            time.sleep(0.1)
    _unmount_netns(paths)
    log(f"[images] dockerd {pid} stopped in {time.monotonic() - t0:.1f}s")


@contextlib.contextmanager
def private_engine(log: Log, root: Path | None = None, start_timeout_s: float = 60.0) -> Iterator[Engine]:
    """Start the private dockerd for the duration of the block; stop it (by PID) on exit."""
    dockerd, cli = ensure_engine_installed(log)
    paths = DockerdPaths(root or cache_dir() / "docker")
    for d in (paths.root, paths.data_root, paths.exec_root):
        d.mkdir(parents=True, exist_ok=True)
    if len(str(paths.socket)) > 100:
        raise EngineError(f"socket path too long for a unix socket ({len(str(paths.socket))} > 100): {paths.socket}")
    with open(paths.lock, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # With the lock held no other build uses this daemon: a live one is what an interrupted
        # build left behind (a killed test, say). Stop it; a stale pidfile would stop dockerd.
        pid = _read_pid(paths.pidfile)
        if pid is not None and _pid_alive(pid) and _is_ours(pid, paths):
            log(f"[images] stopping dockerd {pid}, left running by an interrupted build")
            stop(pid, paths, log)
        if paths.socket.exists():
            paths.socket.unlink()
        _unmount_netns(paths)
        with open(paths.log, "ab") as out:
            # Same process group as the build: killing the build's group takes the daemon along.
            proc = subprocess.Popen(dockerd_argv(dockerd, paths), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        engine = Engine(cli, paths, proc.pid)
        try:
            t0 = time.monotonic()
            while not _answers(cli, paths):
                if proc.poll() is not None:
                    tail = paths.log.read_text(errors="replace")[-1500:]
                    raise EngineError(f"dockerd exited with {proc.returncode} at start; its log ({paths.log}) ends:\n{tail}")
                if time.monotonic() - t0 > start_timeout_s:
                    raise EngineError(f"dockerd did not answer on {paths.socket} within {start_timeout_s:.0f}s; see {paths.log}")
                time.sleep(0.3)
            log(f"[images] dockerd {proc.pid} up on {paths.socket} in {time.monotonic() - t0:.1f}s")
            yield engine
        finally:
            stop(proc.pid, paths, log, proc=proc)
