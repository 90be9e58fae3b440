"""Finds the Go-built test tools through the manifest ci/tools/bootstrap-tools.sh writes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TOOL_KEYS = {
    "etcd": "ETCD",
    "kube-apiserver": "KUBE_APISERVER",
    "kube-controller-manager": "KUBE_CONTROLLER_MANAGER",
    "kube-scheduler": "KUBE_SCHEDULER",
    "kwok": "KWOK",
    "prometheus": "PROMETHEUS",
    "helm": "HELM",
    "otelcol": "OTELCOL",
}


class ToolMissingError(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("JOULIE_CACHE") or Path.home() / ".cache" / "joulie")


def manifest_path() -> Path:
    return cache_dir() / "bin" / "tools.env"


def parse_env_file(text: str, source: str = "tools.env") -> dict[str, str]:
    """KEY=value lines; comments and blank lines ignored; no shell expansion.

    Shared by every KEY=value file the tests and the harness read (tools.env, cluster.env);
    `source` names the file in errors.
    """
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{source} line {n}: expected KEY=value, got {raw!r}")
        out[key.strip()] = value.strip().strip('"').strip("'")
    return out


@dataclass(frozen=True)
class Tools:
    paths: dict[str, Path]

    def path(self, tool: str) -> Path:
        key = TOOL_KEYS[tool]
        p = self.paths.get(key)
        if p is None or not p.is_file():
            raise ToolMissingError(
                f"{tool} is not built ({key} missing from {manifest_path()}); run: ci/tools/bootstrap-tools.sh {tool}"
            )
        return p


    def kwok_stages(self) -> list[Path]:
        """KWOK's own stage definitions (a multi-document file or a folder of them) (node initialise and heartbeat, pod ready/complete/delete).

        bootstrap-tools.sh takes them from the pinned kwok module, so they match the binary.
        """
        d = self.paths.get("KWOK_STAGES")
        if d is not None and d.is_file():
            return [d]
        files = sorted(d.glob("*.yaml")) if d and d.is_dir() else []
        if not files:
            raise ToolMissingError(
                f"KWOK stage files missing (KWOK_STAGES in {manifest_path()}); run: ci/tools/bootstrap-tools.sh kwok"
            )
        return files


def load_tools() -> Tools:
    manifest = manifest_path()
    if not manifest.is_file():
        raise ToolMissingError(f"{manifest} not found; build the test tools first: ci/tools/bootstrap-tools.sh")
    env = parse_env_file(manifest.read_text())
    return Tools({k: Path(v) for k, v in env.items() if k in TOOL_KEYS.values() or k == "KWOK_STAGES"})
