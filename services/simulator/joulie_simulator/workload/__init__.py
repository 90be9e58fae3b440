"""Workload simulation: the pure job engine (``engine``), the runner's commands (``commands``) and
its Kubernetes shell (``shell``). The trace format and generators live in ``libs/workload``."""
