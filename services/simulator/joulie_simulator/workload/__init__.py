"""Workload simulation: the pure job engine (``engine``: who runs where, how fast, when it is done)
and its Kubernetes shell (``kube.runner``); the subcommands are ``commands.workload``. The trace
format and generators live in ``libs/workload``."""
