"""Test helpers for the installable plugin: where the built wheel is, which older Pythons exist,
and a fresh virtual environment with the wheel installed. Not shipped (BUILD: test-utils)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# What pip prints when the package index cannot be reached (then the install test skips).
UNREACHABLE = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution",
               "Network is unreachable", "ProxyError", "Failed to establish a new connection", "ConnectTimeoutError")


def find_wheel(root: Path) -> Path:
    """The kubectl-joulie wheel: at the sandbox root under `./pants test` (runtime_package_dependencies),
    in dist/ after `./pants package tools/kubectl-joulie:wheel`."""
    found = sorted(root.glob("kubectl_joulie-*.whl")) or sorted((root / "dist").glob("kubectl_joulie-*.whl"))
    if not found:
        raise FileNotFoundError(f"no kubectl_joulie-*.whl in {root} or {root / 'dist'}; run ./pants package tools/kubectl-joulie:wheel")
    return found[-1]


def _version(py: Path) -> tuple[int, int] | None:
    try:
        out = subprocess.run([str(py), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


def oldest_python() -> Path | None:
    """A Python 3.9 (else 3.10) interpreter: on PATH or under ~/.pyenv/versions (the test env has HOME, not PATH)."""
    for minor in ("3.9", "3.10"):
        candidates = [Path(p) for p in (shutil.which(f"python{minor}"),) if p]
        candidates += sorted(Path(os.environ.get("HOME", "/root"), ".pyenv", "versions").glob(f"{minor}.*/bin/python{minor}"))
        for py in candidates:
            if _version(py) == tuple(int(x) for x in minor.split(".")):
                return py
    return None


def current_python() -> Path:
    return Path(sys.executable)


def pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PEX", "PYTHON"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def install(py: Path, venv: Path, wheel: Path) -> subprocess.CompletedProcess[str]:
    """`python -m venv VENV && VENV/bin/pip install WHEEL`, as the README says; dependencies from the index."""
    subprocess.run([str(py), "-m", "venv", str(venv)], check=True, capture_output=True, text=True, timeout=120, env=pip_env())
    return subprocess.run([str(venv / "bin" / "pip"), "install", str(wheel)], capture_output=True, text=True, timeout=600, env=pip_env())


def index_unreachable(pip_output: str) -> bool:
    return any(marker in pip_output for marker in UNREACHABLE)
