"""The agent's public surface, I/O part: the agent loop and the shells it is built from, for products
that run an agent in process (the acceptance harness, the chart's RBAC test).

``Agent`` (the loop), ``AgentKube`` (its Kubernetes calls), ``Settings`` (from the environment),
``AgentMetrics``, ``NodeSeen``/``node_seen`` (a Node as the agent reads it), and the power export's
``PowerExporter`` and ``BmcPowerReader``. The pure planners are in ``api``."""

from __future__ import annotations

from joulie_agent.kube.agentkube import AgentKube, NodeSeen, node_seen
from joulie_agent.loop.agent import Agent
from joulie_agent.settings import Settings
from joulie_agent.telemetry.bmcpower import BmcPowerReader
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_agent.telemetry.otlpexport import PowerExporter

__all__ = ["Agent", "AgentKube", "AgentMetrics", "BmcPowerReader", "NodeSeen", "PowerExporter", "Settings", "node_seen"]
