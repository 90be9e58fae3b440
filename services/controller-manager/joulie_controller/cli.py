"""Command line of joulie-controller-manager.

`run` starts the controller (settings from the environment, see the README); `--version` prints
the version.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING

from joulie_api.version import service_version

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

NAME = "joulie-controller-manager"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=NAME, description=__doc__)
    parser.add_argument(
        "--version", action="version", version=f"{NAME} {service_version(__package__ or 'joulie_controller')}"
    )
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run the controller manager (settings from environment variables)")
    run.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, else ~/.kube/config)")
    run.add_argument("--once", action="store_true", help="run one reconcile tick and exit")
    return parser


def _run(args: argparse.Namespace) -> int:
    """``run``: the settings, the controller on its cluster, then one tick (``--once``) or the loop
    with /metrics until SIGTERM."""
    # Imported here so `--version` and `--help` work without a cluster client.
    from joulie_api.kubeconfig import api_client
    from joulie_controller.controller import compose
    from joulie_controller.settings import Settings, SettingsError
    from joulie_controller.suspendsettings import cautions

    try:
        _configure_logging(os.environ.get("LOG_LEVEL", "info"))
        settings = Settings.from_env(os.environ)
    except SettingsError as err:
        print(f"{NAME}: {err}", file=sys.stderr)
        return 2
    # One line per start, whatever the settings: a restart under POWER_POLICY=none used to log nothing.
    logging.getLogger(NAME).info(
        "%s %s starting: policy=%s power_policy=%s leader_elect=%s reconcile_interval=%gs",
        NAME, service_version(__package__ or "joulie_controller"), settings.policy.type,
        settings.suspend.power_policy, settings.leader.elect, settings.reconcile.interval_s)
    for caution in cautions(settings.suspend):
        logging.getLogger(NAME).warning("%s", caution)
    controller = compose(settings, api_client(args.kubeconfig, timeout_s=settings.api_timeout_s), _identity())
    if args.once:
        return 0 if controller.tick().failures == 0 else 1
    _serve_metrics(settings.metrics_addr, controller.metrics.registry)
    controller.run(_stop_on_signals())
    return 0


QUIET_LOGGERS = ("httpx", "httpcore", "urllib3", "kubernetes", "requests", "sushy")
"""Client libraries that log every request at INFO (httpx: one line per Prometheus query, 80 % of the
controller's log in issue 36); WARNING and above only, unless LOG_LEVEL=debug."""
LOG_LEVELS = ("debug", "info", "warning", "error")


def _configure_logging(level: str) -> None:
    """The root level from LOG_LEVEL (debug, info, warning, error); the client libraries quiet below debug."""
    from joulie_controller.settings import SettingsError

    name = level.strip().lower()
    if name not in LOG_LEVELS:
        raise SettingsError("LOG_LEVEL", level, f"one of {', '.join(LOG_LEVELS)}")
    logging.basicConfig(level=name.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for lib in QUIET_LOGGERS:
        logging.getLogger(lib).setLevel(logging.NOTSET if name == "debug" else logging.WARNING)


def _identity() -> str:
    """This replica's name in the Lease: POD_NAME, else host-pid."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"


def _serve_metrics(addr: str, registry: CollectorRegistry) -> None:
    from prometheus_client import start_http_server

    host, _, port = addr.rpartition(":")
    start_http_server(int(port), addr=host or "127.0.0.1", registry=registry)


def _stop_on_signals() -> threading.Event:
    """An event SIGTERM and SIGINT set: the loop stops after the current tick."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logging.getLogger(NAME).info("signal %d: stopping after the current tick", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
