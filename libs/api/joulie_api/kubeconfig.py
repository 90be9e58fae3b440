"""How every Joulie process finds its Kubernetes API server: one rule, one place.

1. an explicit kubeconfig file (a ``--kubeconfig`` flag) when given;
2. otherwise the in-cluster service account (the normal case for a Pod);
3. otherwise ``$KUBECONFIG``, read at call time (the client library reads it once, at import),
   then ``~/.kube/config`` — unless the caller only ever runs in a Pod (``in_cluster_only``).

The configuration is loaded into a fresh client, never into the library's process-wide default,
so two clients in one process (tests, the simulated cluster) cannot overwrite each other. Every
request has a deadline (``DEFAULT_TIMEOUT_S`` unless the service sets one).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config

ConfigException = k8s_config.ConfigException
_config: Any = k8s_config  # the loaders are untyped

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0
"""How long one API request may wait for the server by default (connect, and each read). Longer
than any healthy answer (a list of thousands of Nodes takes well under a second); short enough
that a frozen API server costs a controller tick seconds, not minutes (issue 36)."""

"""What the client library takes as ``_request_timeout``: a total, or (connect, read)."""


def request_deadline(method: str, url: str, timeout_s: float) -> float | tuple[float, float | None]:
    """The deadline of one request. A watch is answered slowly by design (events as they come,
    until its ``timeoutSeconds``): it gets ``timeout_s`` to connect and its own server-side timeout
    plus ``timeout_s`` to read; a watch without one only the connect deadline."""
    query = parse_qs(urlsplit(url).query)
    if method.upper() == "GET" and query.get("watch", [""])[0].lower() in ("true", "1"):
        server_side = query.get("timeoutSeconds", [""])[0]
        return (timeout_s, float(server_side) + timeout_s if server_side.isdigit() else None)
    return timeout_s


class TimedApiClient(k8s.ApiClient):
    """An ApiClient whose every request has a deadline (the library's default is none: a request
    to a frozen server waits forever). A call that names its own ``_request_timeout`` keeps it. A
    timeout is logged naming the call and raised as the built-in TimeoutError, which callers
    already treat as temporary (``joulie_api.kube.is_temporary``)."""

    def __init__(self, configuration: k8s.Configuration, timeout_s: float) -> None:
        # No retry of a read that timed out: urllib3 retries a timed-out GET three times by
        # default, which would turn a 10 s deadline into 40 s (the callers own that retry policy,
        # ``Backoff``). Everything else as the library's default (three in all): a 429 or 503 with
        # Retry-After, which kube-apiserver sends under load or while starting, is still waited out.
        configuration.retries = urllib3.Retry(total=3, read=0)
        super().__init__(configuration=configuration)
        self.timeout_s = timeout_s

    def call_api(self, *args: Any, **kwargs: Any) -> Any:
        # Both client generations call this with ``_request_timeout`` as a keyword; the positional
        # arguments differ (``method_and_url``), so they pass through untouched.
        method, url = method_and_url(args, kwargs)
        deadline = kwargs.get("_request_timeout") or request_deadline(method, url, self.timeout_s)
        kwargs["_request_timeout"] = deadline
        try:
            return super().call_api(*args, **kwargs)
        except (urllib3.exceptions.TimeoutError, urllib3.exceptions.MaxRetryError) as exc:
            if isinstance(exc, urllib3.exceptions.MaxRetryError) and not isinstance(
                    exc.reason, urllib3.exceptions.TimeoutError):
                raise
            call = f"{method.upper()} {urlsplit(url).path}"
            log.warning("Kubernetes API server did not answer %s within %ss", call, _seconds(deadline))
            raise TimeoutError(f"Kubernetes API {call}: no answer within {_seconds(deadline)}s") from exc


_HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_and_url(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    """The HTTP method and the URL (path and query) of a ``call_api`` call, in either generation of
    the client: ``call_api(method, url, ...)`` (kubernetes >= 36) or ``call_api(resource_path, method,
    path_params, query_params, ...)`` (35 and older, which the kubectl plugin's wheel still allows)."""
    first = args[0] if args else kwargs.get("method", kwargs.get("resource_path", ""))
    if isinstance(first, str) and first.upper() in _HTTP_METHODS:
        url = args[1] if len(args) > 1 else kwargs.get("url", "")
        return first, str(url)
    path = str(args[0] if args else kwargs.get("resource_path", ""))
    method = str(args[1] if len(args) > 1 else kwargs.get("method", "GET"))
    query = args[3] if len(args) > 3 else kwargs.get("query_params")
    return method, path + ("?" + urlencode(list(query)) if query else "")


def _seconds(deadline: Any) -> str:
    return "/".join(f"{d:g}" for d in deadline if d is not None) if isinstance(deadline, tuple) else f"{deadline:g}"


def api_client(kubeconfig: str | Path | None = None, *, context: str | None = None, in_cluster: bool = True,
               in_cluster_only: bool = False, environ: dict[str, str] | None = None,
               timeout_s: float | None = None) -> k8s.ApiClient:
    """A client for the first configuration found in the order above. ``in_cluster=False`` skips
    the service account (a kubectl plugin runs on a workstation). Every request it makes waits at
    most ``timeout_s`` (default ``DEFAULT_TIMEOUT_S``) for the server. Raises ConfigException (or
    OSError for an unreadable file) when none is found."""
    deadline = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    if kubeconfig:
        return _from_file(str(kubeconfig), context, deadline)
    if in_cluster:
        cfg = k8s.Configuration()
        try:
            _config.load_incluster_config(client_configuration=cfg)
            return TimedApiClient(cfg, deadline)
        except ConfigException:
            if in_cluster_only:
                raise
    env = os.environ if environ is None else environ
    return _from_file(env.get("KUBECONFIG") or None, context, deadline)


def _from_file(path: str | None, context: str | None, timeout_s: float) -> k8s.ApiClient:
    cfg: k8s.Configuration = type.__call__(k8s.Configuration)  # as new_client_from_config: no default's copy
    _config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
    return TimedApiClient(cfg, timeout_s)
