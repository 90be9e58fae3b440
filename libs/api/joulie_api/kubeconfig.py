"""How every Joulie process finds its Kubernetes API server: one rule, one place.

1. an explicit kubeconfig file (a ``--kubeconfig`` flag) when given;
2. otherwise the in-cluster service account (the normal case for a Pod);
3. otherwise ``$KUBECONFIG``, read at call time (the client library reads it once, at import),
   then ``~/.kube/config`` — unless the caller only ever runs in a Pod (``in_cluster_only``).

The configuration is loaded into a fresh client, never into the library's process-wide default,
so two clients in one process (tests, the simulated cluster) cannot overwrite each other.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

ConfigException = k8s_config.ConfigException
_config: Any = k8s_config  # the loaders are untyped


def api_client(kubeconfig: str | Path | None = None, *, context: str | None = None, in_cluster: bool = True,
               in_cluster_only: bool = False, environ: dict[str, str] | None = None) -> k8s.ApiClient:
    """A client for the first configuration found in the order above. ``in_cluster=False`` skips
    the service account (a kubectl plugin runs on a workstation). Raises ConfigException (or
    OSError for an unreadable file) when none is found."""
    if kubeconfig:
        return _from_file(str(kubeconfig), context)
    if in_cluster:
        cfg = k8s.Configuration()
        try:
            _config.load_incluster_config(client_configuration=cfg)
            return k8s.ApiClient(configuration=cfg)
        except ConfigException:
            if in_cluster_only:
                raise
    env = os.environ if environ is None else environ
    return _from_file(env.get("KUBECONFIG") or None, context)


def _from_file(path: str | None, context: str | None) -> k8s.ApiClient:
    client: k8s.ApiClient = _config.new_client_from_config(config_file=path, context=context)
    return client
