"""The deployed processes by PID, as ``deploy.env`` records them: which still run (same PID, same
start time), stopping them (agents first, the simulator last), strays a crashed deploy left, the
FUSE view a killed simulator left, and the environment and interpreter every process gets."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes.pids import pid_alive, start_ticks, stop_pid, stop_pids
from joulie_simcluster.runtimes.supervision.lock import changing
from joulie_simcluster.state import StateDir


def python_env() -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
           "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8"}
    for key in ("PEX_ROOT", "JOULIE_CACHE", "SSL_CERT_FILE"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def interpreter() -> str:
    """The real python3.11 behind any shim (the PEXes' shebang names python3.11)."""
    try:
        out = subprocess.run(["python3.11", "-c", "import sys; print(sys.executable)"], capture_output=True,
                             text=True, timeout=60, check=True)
        return out.stdout.strip() or "python3.11"
    except (OSError, subprocess.SubprocessError):
        return "python3.11"


def pex_venv_entry(python: str, pex: Path, env: Mapping[str, str]) -> str | None:
    """The entry script of the venv a venv-mode PEX installs itself into (its first run installs it),
    or None when that cannot be learnt. Starting that script skips the PEX's bootstrap, which reads
    the zip and re-executes the interpreter: ~0.3 s of CPU per start, and the agents start fakesmi
    for every GPU tool call (0.39 s a call through the PEX, 0.08-0.10 s through its venv)."""
    try:
        out = subprocess.run([python, str(pex), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                             timeout=120, check=True, env={**env, "PEX_INTERPRETER": "1"})
    except (OSError, subprocess.SubprocessError):
        return None
    entry = Path(out.stdout.strip() or "/nonexistent") / "pex"
    return str(entry) if entry.is_file() and os.access(entry, os.X_OK) else None


def pex_venv_site(python: str, pex: Path, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(interpreter, site-packages) of the venv a venv-mode PEX installs itself into, or None when
    that cannot be learnt. A GPU tool wrapper starts that interpreter isolated and without ``site``
    (``python -I -S``) with the site-packages first on ``sys.path``: the venv's entry script and the
    ``site`` module were a third of what a fakesmi start cost once its own imports were cut (26 of 43
    M instructions a ``dcgmi`` start, measured with callgrind). The PEX's venv holds every module
    flat in its site-packages, no ``.pth`` file needed."""
    try:
        out = subprocess.run(
            [python, str(pex), "-c", "import sys, sysconfig; print(sys.executable); print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, timeout=120, check=True, env={**env, "PEX_INTERPRETER": "1"})
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split("\n")
    if len(lines) < 2:
        return None
    exe, site = lines[0].strip(), lines[1].strip()
    if not (exe and os.access(exe, os.X_OK) and os.path.isdir(os.path.join(site, "joulie_fakesmi"))):
        return None
    return exe, site


def pid_key(name: str) -> str:
    return f"PID_{name}"


def recorded_deploy_pids(env: Mapping[str, str]) -> list[tuple[str, int]]:
    """(process name, pid) in start order."""
    return [(k.removeprefix("PID_"), int(v)) for k, v in env.items() if k.startswith("PID_") and v.isdigit()]


def deployed_alive(name: str, pid: int, env: Mapping[str, str]) -> bool:
    """Whether the process deploy.env records as `name` still runs: same PID, same start time."""
    return pid_alive(pid) and start_ticks(pid) == env.get(f"START_{name}")


def stop_deployed(state: StateDir, progress: Callable[[str], None]) -> int:
    stopped = 0
    with changing(state.root):  # the supervisor must not restart what is stopped on purpose
        env = state.read_deploy_env() or {}
        # Everything else at once, the simulator last: an agent never sees its views vanish under it
        # at teardown.
        alive = [(name, pid) for name, pid in recorded_deploy_pids(env) if deployed_alive(name, pid, env)]
        stopped += stop_pids([pid for name, pid in alive if name != "simulator"], grace_s=8)
        stopped += stop_pids([pid for name, pid in alive if name == "simulator"], grace_s=8)
        stopped += stop_strays(state)
        unmount_views(state)
        state.deploy_env.unlink(missing_ok=True)
    if stopped:
        progress(f"stopped {stopped} deployed processes")
    return stopped


def stop_strays(state: StateDir) -> int:
    """Processes working on this state dir that neither deploy.env nor cluster.env records (a deploy
    that crashed before recording them): a second simulator on the same trees would corrupt them."""
    marker = str(state.root).encode() + b"/"
    root = str(state.root / "hwemu").encode()
    cluster = {int(v) for k, v in (state.read_cluster_env() or {}).items() if k.endswith("_PID") and v.isdigit()}
    cluster.add(_supervisor_pid(state))  # it names the state dir too, and must outlive a deploy
    stopped = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in cluster or int(proc.name) in (os.getpid(), os.getppid()):
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        args = cmdline.split(b"\0")
        # A PEX re-executes from its unzipped copy: the state dir shows in its arguments or environment.
        if any(a.startswith(marker) or a == root for a in args) or (b"ROOT=" + root) in environ:
            with contextlib.suppress(RuntimeFailure):
                if stop_pid(int(proc.name), None, grace_s=5):
                    stopped += 1
    return stopped


def _supervisor_pid(state: StateDir) -> int:
    try:
        return int(json.loads((state.root / "supervisor.json").read_text()).get("pid") or 0)
    except (OSError, ValueError):
        return 0


def unmount_views(state: StateDir) -> None:
    """A simulator killed without its shutdown leaves the FUSE mount behind: detach it."""
    mountpoint = state.root / "hwemu" / "fuse"
    # A simulator restart mounts over the dead view: one lazy unmount per layer.
    for _ in range(10):
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return
        if f" {mountpoint} " not in mounts:
            return
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], check=False, capture_output=True)
