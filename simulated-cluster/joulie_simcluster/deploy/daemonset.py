"""The agent DaemonSet an install would create, which decides the Nodes that get an agent: rendered by
helm from the chart when both are here, else the chart's defaults with the values' nodeSelector and
tolerations; or a rendered manifest the user gives (``agents --daemonset``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from joulie_common.yamlload import YamlError, load_yaml_all
from joulie_localcluster.tools import ToolMissingError
from joulie_simcluster.agents import agent_daemonset
from joulie_simcluster.deploy.values import load_values
from joulie_simcluster.spec import SpecError

CHART_DIR = Path("charts/joulie")


def load_daemonset(path: Path) -> dict[str, Any]:
    """The one DaemonSet of a rendered manifest (YAML), checked to have a pod template."""
    try:
        docs = load_yaml_all(path)
    except YamlError as e:
        raise SpecError(str(e)) from e
    found = [d for d in docs if isinstance(d, dict) and d.get("kind") == "DaemonSet"]
    if len(found) != 1:
        raise SpecError(f"{path}: (top level): expected exactly one DaemonSet, found {len(found)}")
    ds = found[0]
    if not isinstance(((ds.get("spec") or {}).get("template") or {}).get("spec"), dict):
        raise SpecError(f"{path}: spec.template.spec: required")
    return ds


def daemonset_for(values_files: list[Path]) -> dict[str, Any]:
    """The agent DaemonSet the install would create: rendered by helm from the chart when both are
    here, else the chart's defaults with the values' nodeSelector and tolerations applied."""
    from joulie_simcluster import chart

    if (CHART_DIR / "Chart.yaml").is_file():
        try:
            return chart.agent_daemonset_from_chart(values_files)
        except (chart.ChartError, ToolMissingError) as e:
            raise SpecError(f"rendering the agent DaemonSet from {CHART_DIR}: {e}") from e
    values = load_values(values_files)
    agent = values.get("agent") or {}
    selector = (agent.get("daemonset") or {}).get("nodeSelector")
    return agent_daemonset(node_selector=selector, tolerations=agent.get("tolerations") or [],
                           host_network=agent.get("hostNetwork", True))
