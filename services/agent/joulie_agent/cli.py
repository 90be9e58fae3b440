"""Command line of joulie-agent: discover, run, capture."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from joulie_api.version import service_version

NAME = "joulie-agent"


class InputError(ValueError):
    """A CLI input file is unusable; the message names the file and what was expected."""


def load_string_map(path: Path, section: str) -> dict[str, str]:
    """A flat JSON object of strings, or a Node object (its metadata.labels / status.<section>)."""
    try:
        doc: Any = json.loads(path.read_text())
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    except ValueError as err:
        raise InputError(f"{path}: not JSON: {err}") from None
    if isinstance(doc, dict) and doc.get("kind") == "Node":
        doc = (doc.get("metadata") or {}).get("labels") if section == "labels" else \
            (doc.get("status") or {}).get(section)
        doc = doc or {}
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a JSON object of string values")
    out: dict[str, str] = {}
    for k, v in doc.items():
        if isinstance(v, (dict, list)) or v is None:
            raise InputError(f"{path}: {k}: expected a string value, got {type(v).__name__}")
        out[str(k)] = str(v)
    return out


def _is_node(path: Path) -> bool:
    try:
        doc: Any = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("kind") == "Node"


def cmd_discover(args: argparse.Namespace) -> int:
    from joulie_agent.discovery.catalog import CatalogError, load_catalog
    from joulie_agent.discovery.status import build_status, status_json
    from joulie_agent.host.hostread import HostPaths, read_facts
    from joulie_agent.host.nvml import open_nvml
    from joulie_agent.host.toolrun import make_runner

    try:
        labels = load_string_map(args.node_labels, "labels") if args.node_labels else {}
        allocatable = load_string_map(args.allocatable, "allocatable") if args.allocatable else {}
        # A Node object also gives its capacity (the host's CPU count before reservations).
        capacity = load_string_map(args.allocatable, "capacity") if args.allocatable and _is_node(args.allocatable) else {}
        catalog = load_catalog(args.catalog)
    except (InputError, CatalogError) as err:
        print(f"{NAME}: {err}", file=sys.stderr)
        return 2
    root = Path(args.root)
    run = make_runner(timeout_s=args.tool_timeout)
    if (root / "machine.yaml").is_file():
        # A corpus machine directory: lay it out as a node root with its captured tool answers.
        import tempfile

        from joulie_agent.fixtures.corpus import CorpusError, load_machine, materialize

        try:
            machine = load_machine(root)
        except CorpusError as err:
            print(f"{NAME}: {err}", file=sys.stderr)
            return 2
        labels = labels or machine.labels
        allocatable = allocatable or machine.allocatable
        work = tempfile.TemporaryDirectory(prefix="joulie-discover-")
        root = Path(work.name) / machine.name
        run = make_runner(str(materialize(machine, root)), args.tool_timeout)
    # NVML describes the machine the agent runs on, so it is only asked about the real root.
    nvml = open_nvml() if root.resolve() == Path("/") and not args.no_nvml else None
    facts = read_facts(HostPaths.under(root), labels, allocatable, run, nvml, capacity=capacity)
    sys.stdout.write(status_json(build_status(facts, catalog)))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from joulie_agent.runner import main_loop
    from joulie_agent.settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as err:
        print(f"{NAME}: {err}", file=sys.stderr)
        return 2
    return main_loop(settings, once=args.once)


def cmd_capture(args: argparse.Namespace) -> int:
    from joulie_agent.fixtures.capture import capture_machine

    try:
        out = capture_machine(Path(args.root), Path(args.out), args.name)
    except ValueError as err:
        print(f"{NAME}: {err}", file=sys.stderr)
        return 2
    print(f"captured {out}; review it, fill machine.yaml, then run the corpus golden update")
    return 0


def cmd_golden(args: argparse.Namespace) -> int:
    import tempfile

    from joulie_agent.discovery.catalog import load_catalog
    from joulie_agent.fixtures.corpus import CorpusError, check_goldens

    try:
        with tempfile.TemporaryDirectory(prefix="joulie-corpus-") as work:
            drift = check_goldens(Path(args.corpus), Path(work), load_catalog(), update=args.update)
    except CorpusError as err:
        print(f"{NAME}: {err}", file=sys.stderr)
        return 2
    for name in drift:
        print(f"{'updated' if args.update else 'drift'}: {name}/expected.json")
    return 0 if args.update or not drift else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=NAME, description=__doc__)
    parser.add_argument(
        "--version", action="version", version=f"{NAME} {service_version(__package__ or 'joulie_agent')}"
    )
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("discover", help="print the NodeHardware.status this node would publish (JSON)")
    d.add_argument("--root", default="/", help="filesystem root holding sys/, proc/cpuinfo, dev/ (default /), "
                   "or a corpus machine directory")
    d.add_argument("--node-labels", type=Path, help="JSON object of node labels, or a Node object")
    d.add_argument("--allocatable", type=Path, help="JSON object of allocatable resources, or a Node object")
    d.add_argument("--catalog", type=Path, help="hardware catalog YAML (default: the built-in one)")
    d.add_argument("--tool-timeout", type=float, default=3.0, help="seconds per GPU tool command (default 3)")
    d.add_argument("--no-nvml", action="store_true", help="do not load NVML even on the real root")
    d.set_defaults(fn=cmd_discover)
    r = sub.add_parser("run", help="run the agent (settings from the environment, see README)")
    r.add_argument("--once", action="store_true", help="one reconcile of every owned node, then exit")
    r.set_defaults(fn=cmd_run)
    c = sub.add_parser("capture", help="capture this machine's hardware files as a corpus fixture")
    c.add_argument("--root", default="/", help="filesystem root to capture from (default /)")
    c.add_argument("--out", default="joulie-fixtures", help="output directory (default ./joulie-fixtures)")
    c.add_argument("--name", required=True, help="machine directory name, [a-z0-9-]+")
    c.set_defaults(fn=cmd_capture)
    g = sub.add_parser("golden", help="check (or --update) the corpus goldens expected.json")
    g.add_argument("corpus", nargs="?", default="services/agent/testdata/hardware", help="corpus directory")
    g.add_argument("--update", action="store_true", help="rewrite expected.json files that drifted")
    g.set_defaults(fn=cmd_golden)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "fn", None):
        parser.print_help()
        return 0
    rc: int = args.fn(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
