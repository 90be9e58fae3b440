"""The controller manager's public surface, I/O part: the controller and the shells it is built from,
for products that run it in process (the chart's RBAC test, the acceptance tests).

``Controller`` (the manager, wired by ``controller.compose``), ``ControllerKube`` and ``pod_info``
(its Kubernetes reads and writes), ``watch_cluster`` (the watch-fed caches its tick reads), ``LeaderElector``, ``PowerReader`` (measured power from
Prometheus) and ``RedfishPowerDriver`` (node power through each BMC). The pure model, policies and
settings are in ``api``."""

from __future__ import annotations

from joulie_controller.bmc.redfishdriver import RedfishPowerDriver
from joulie_controller.controller import Controller
from joulie_controller.kube.kube import ControllerKube, pod_info, watch_cluster
from joulie_controller.kube.leader import LeaderElector
from joulie_controller.telemetry.prometheus import PowerReader

__all__ = ["Controller", "ControllerKube", "LeaderElector", "PowerReader", "RedfishPowerDriver", "pod_info", "watch_cluster"]
