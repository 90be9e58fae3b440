"""Command line of joulie-extender: serve /filter, /prioritize, /healthz, /metrics, /debug/scoring."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys

from joulie_api.version import service_version
from joulie_common.settingsgrammar import parse_duration
from joulie_extender.settings import Settings, SettingsError

NAME = "joulie-extender"
log = logging.getLogger(NAME)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=NAME, description=__doc__)
    parser.add_argument(
        "--version", action="version", version=f"{NAME} {service_version(__package__ or 'joulie_extender')}"
    )
    parser.add_argument("--addr", help="host:port to listen on (EXTENDER_ADDR; default 127.0.0.1:9876)")
    parser.add_argument(
        "--staleness", help="twin staleness threshold, e.g. 300s or 5m (TWIN_STALENESS_THRESHOLD; default 5m)"
    )
    parser.add_argument("--metrics-addr", help="extra host:port serving only /metrics, like the original's :9877 "
                        "(METRICS_ADDR; default: none, /metrics is on --addr)")
    parser.add_argument("--max-body-bytes", type=int, help="request body limit (EXTENDER_MAX_BODY_BYTES; 16 MiB)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster config, else KUBECONFIG/~/.kube/config)")
    parser.add_argument(
        "--no-kube", action="store_true", help="serve without an API server: every node is neutral (for benchmarks)"
    )
    parser.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "info"))
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env()
    changes: dict[str, object] = {}
    if args.addr:
        changes["addr"] = args.addr
    if args.staleness:
        changes["staleness_s"] = parse_duration("--staleness", args.staleness)
    if args.max_body_bytes:
        changes["max_body_bytes"] = args.max_body_bytes
    if args.metrics_addr:
        changes["metrics_addr"] = args.metrics_addr
    settings = dataclasses.replace(settings, **changes)  # type: ignore[arg-type]
    settings.host_port  # noqa: B018 - validates the addresses before anything starts
    settings.metrics_host_port  # noqa: B018
    return settings


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = settings_from(args)
    except SettingsError as err:
        print(f"{NAME}: {err}", file=sys.stderr)
        return 2

    # Imported here so --version and --help stay fast.
    import uvicorn

    from joulie_api.kubeconfig import api_client
    from joulie_extender.cache.store import StateCache
    from joulie_extender.cache.watch import CacheEvents, WatchCache
    from joulie_extender.http.app import create_app
    from joulie_extender.http.metrics import Metrics
    from joulie_extender.http.server import UVICORN_HTTP, tls_options

    metrics = Metrics()
    cache: StateCache
    watch: WatchCache | None = None
    if args.no_kube:
        cache = StateCache()
    else:
        try:
            api = api_client(args.kubeconfig)
        except Exception as err:  # any config problem ends start-up with its message
            print(f"{NAME}: cannot load a Kubernetes configuration: {err}", file=sys.stderr)
            return 2
        watch = WatchCache(
            api,
            CacheEvents(
                on_decode_error=lambda kind: metrics.cache_decode_errors.labels(kind).inc(),
                on_restart=lambda kind: metrics.cache_watch_restarts.labels(kind).inc(),
            ),
        )
        watch.start()
        cache = watch
    metrics_at = settings.metrics_host_port
    if metrics_at is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_at[1], addr=metrics_at[0], registry=metrics.registry)
        log.info("metrics also on %s:%d/metrics", *metrics_at)
    host, port = settings.host_port
    log.info("listening on %s://%s:%d%s, staleness %.0f s, body limit %d bytes, %d requests in flight (%d per client), "
             "debug endpoints %s", "https" if settings.tls_cert_file else "http", host, port,
             ", client certificates required" if settings.tls_client_ca_file else "", settings.staleness_s,
             settings.max_body_bytes, settings.max_concurrent, settings.max_per_client,
             "on" if settings.debug_endpoints else "off")
    try:
        uvicorn.run(create_app(cache, settings, metrics=metrics), host=host, port=port, http=UVICORN_HTTP,
                    log_level=args.log_level.lower(), access_log=False, **tls_options(settings))
    finally:
        if watch is not None:
            watch.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
