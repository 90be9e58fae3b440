"""The kubeconfig of the components when the chaos API proxy (``chaos/apiproxy.py``) stands between
them and kube-apiserver: the same CA and admin user, the proxy's URL as the server."""

from __future__ import annotations

from pathlib import Path

import yaml


def proxied_kubeconfig(kubeconfig: Path, proxy_url: str, out: Path) -> Path:
    """`kubeconfig` with every cluster's server replaced by `proxy_url` (same CA, same user)."""
    data = yaml.safe_load(kubeconfig.read_text())
    for cluster in data.get("clusters") or []:
        cluster["cluster"]["server"] = proxy_url
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out
