"""Supervision of the process runtime: what a kubelet does for a crashed container, here for every
process of a simcluster (control plane, telemetry, deployed components), by a small daemon per
cluster (``daemon.py``) whose state lives in the state directory (``supervisor.json``)."""
