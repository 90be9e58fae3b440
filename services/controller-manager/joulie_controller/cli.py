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

from joulie_api.version import service_version

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
    # Imported here so `--version` and `--help` work without a cluster client.
    from prometheus_client import start_http_server

    from joulie_api.kube import JoulieClient
    from joulie_api.kubeconfig import api_client
    from joulie_api.names import FIELD_MANAGER_LIVENESS
    from joulie_controller.controller import Controller
    from joulie_controller.kube import ControllerKube
    from joulie_controller.leader import LeaderElector
    from joulie_controller.liveness import Liveness
    from joulie_controller.metrics import Metrics
    from joulie_controller.prometheus import FacilityReader, PowerReader
    from joulie_controller.settings import Settings, SettingsError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings.from_env(os.environ)
    except SettingsError as err:
        print(f"{NAME}: {err}", file=sys.stderr)
        return 2
    api = api_client(args.kubeconfig)
    metrics = Metrics()
    elector = None
    if settings.leader_elect:
        identity = os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
        elector = LeaderElector(api, settings.pod_namespace, settings.lease_name, identity, settings.lease_duration_s)
    facility = FacilityReader(settings) if settings.enable_facility_metrics else None
    liveness = Liveness(JoulieClient(api, FIELD_MANAGER_LIVENESS), settings.agent_lost_after_s, metrics.registry)
    # The BMC driver (PowerDriver, powerdriver.py) for POWER_POLICY=idle_suspend_v1: Redfish
    # (joulie_redfish), BMC addresses and credentials from the Secrets labelled
    # joulie.io/bmc-credentials=true in the controller's namespace (POD_NAMESPACE), read every 30 s.
    power_driver = None
    if settings.power_policy != "none":
        from kubernetes import client as k8s

        from joulie_controller.redfishdriver import from_kube

        power_driver = from_kube(k8s.CoreV1Api(api), settings.pod_namespace)
        logging.getLogger(NAME).info("POWER_POLICY=%s: BMCs from the Secrets labelled joulie.io/bmc-credentials=true "
                                     "in namespace %s", settings.power_policy, settings.pod_namespace)
    controller = Controller(settings, ControllerKube(api, write_concurrency=settings.write_concurrency), PowerReader(settings), metrics, elector, facility=facility,
                            liveness=liveness, power_driver=power_driver)
    if args.once:
        summary = controller.tick()
        return 0 if summary.failures == 0 else 1
    host, _, port = settings.metrics_addr.rpartition(":")
    start_http_server(int(port), addr=host or "127.0.0.1", registry=metrics.registry)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logging.getLogger(NAME).info("signal %d: stopping after the current tick", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    controller.run(stop)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
