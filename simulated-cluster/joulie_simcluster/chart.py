"""The Joulie charts as the real helm renders them (``helm template``), parsed into manifests.

The helm binary is the one ``ci/tools/bootstrap-tools.sh`` builds (pinned in ``versions.env``),
found through ``joulie_localcluster.tools``. A render that fails raises :class:`ChartError` naming the
chart, the values files and helm's own message.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from joulie_localcluster.tools import ToolMissingError, load_tools

CHART_DIR = Path("charts/joulie")
SIMULATOR_CHART_DIR = Path("charts/joulie-simulator")
RELEASE = "joulie"
NAMESPACE = "joulie-system"
HELM_TIMEOUT_S = 60.0


class ChartError(RuntimeError):
    """helm could not render (or lint) a chart; the message says which values and why."""


def helm_path() -> Path:
    try:
        return load_tools().path("helm")
    except ToolMissingError as err:
        raise ChartError(f"cannot render the charts: {err}") from err


def _describe(chart_dir: Path, values_files: Sequence[Path], set_values: Mapping[str, str] | None) -> str:
    what = f"chart {chart_dir}"
    if values_files:
        what += " with values " + ", ".join(str(p) for p in values_files)
    if set_values:
        what += " and --set " + ",".join(f"{k}={v}" for k, v in set_values.items())
    return what


def _run_helm(args: list[str], what: str) -> str:
    try:
        proc = subprocess.run([str(helm_path()), *args], capture_output=True, text=True, timeout=HELM_TIMEOUT_S)
    except subprocess.TimeoutExpired as err:
        raise ChartError(f"helm {args[0]} of {what}: no answer within {HELM_TIMEOUT_S:.0f} s") from err
    if proc.returncode != 0:
        message = (proc.stderr.strip() or proc.stdout.strip() or "(no output)")
        raise ChartError(f"helm {args[0]} of {what} failed (exit {proc.returncode}): {message}")
    return proc.stdout


def _value_args(values_files: Sequence[Path], set_values: Mapping[str, str] | None) -> list[str]:
    args: list[str] = []
    for path in values_files:
        if not Path(path).is_file():
            raise ChartError(f"values file {path}: not found")
        args += ["--values", str(path)]
    for key, value in (set_values or {}).items():
        args += ["--set", f"{key}={value}"]
    return args


def render_chart(
    chart_dir: Path,
    values_files: Sequence[Path] = (),
    set_values: Mapping[str, str] | None = None,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
) -> list[dict[str, Any]]:
    """``helm template`` of the chart (CRDs included, in helm's install order), one dict per manifest."""
    what = _describe(chart_dir, values_files, set_values)
    if not (Path(chart_dir) / "Chart.yaml").is_file():
        raise ChartError(f"{what}: no Chart.yaml in {chart_dir}")
    out = _run_helm(["template", release, str(chart_dir), "--namespace", namespace, "--include-crds",
                     *_value_args(values_files, set_values)], what)
    try:
        docs = [d for d in yaml.safe_load_all(out) if d]
    except yaml.YAMLError as err:
        raise ChartError(f"helm template of {what} printed invalid YAML: {err}") from err
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict) or "kind" not in doc:
            raise ChartError(f"helm template of {what}: manifest {i} is not a Kubernetes object: {doc!r:.200}")
    return docs


def lint_chart(chart_dir: Path, values_files: Sequence[Path] = (), set_values: Mapping[str, str] | None = None) -> str:
    """``helm lint --strict``; helm's report (raises :class:`ChartError` when it finds errors)."""
    return _run_helm(["lint", "--strict", str(chart_dir), *_value_args(values_files, set_values)],
                     _describe(chart_dir, values_files, set_values))


def find(docs: Sequence[Mapping[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    """The manifests of ``kind`` (and ``name``)."""
    return [dict(d) for d in docs
            if d.get("kind") == kind and (name is None or (d.get("metadata") or {}).get("name") == name)]


def agent_daemonset_from_chart(
    values_files: Sequence[Path], chart_dir: Path = CHART_DIR, set_values: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The agent DaemonSet ``joulie-agent`` the chart renders with these values (daemonset mode)."""
    docs = render_chart(chart_dir, values_files, set_values)
    found = find(docs, "DaemonSet", "joulie-agent")
    if len(found) != 1:
        what = _describe(chart_dir, values_files, set_values)
        mode = "; ".join(f"{d['kind']}/{(d.get('metadata') or {}).get('name')}" for d in docs
                         if d.get("kind") in ("DaemonSet", "StatefulSet", "Deployment"))
        raise ChartError(f"{what}: expected one DaemonSet joulie-agent (agent.mode=daemonset), "
                         f"found {len(found)}; workloads rendered: {mode or 'none'}")
    return found[0]
