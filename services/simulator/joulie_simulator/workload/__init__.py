"""Workload simulation: trace format (``trace``), synthetic traces (``gen``), external traces
(``extract``), the pure job engine (``engine``) and the Kubernetes shell (``shell``)."""
