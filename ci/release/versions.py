"""Per-service versions and changelogs.

    ./pants run ci/release:release -- list                              # every service, its version and image
    ./pants run ci/release:release -- bump agent minor -m "Pool mode shards by node name hash"
    ./pants run ci/release:release -- check                             # each CHANGELOG's top entry == VERSION

A releasable unit is a directory ``services/<name>`` or ``tools/<name>`` holding
``joulie_*/VERSION`` (one ``MAJOR.MINOR.PATCH`` line) and ``CHANGELOG.md``. ``bump`` rewrites the
VERSION and puts a new entry (``## <version> — <date>`` and one bullet per ``-m``) above the
previous ones; nothing else is touched. Run from the repository root (``--repo`` otherwise).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PARTS = ("major", "minor", "patch")
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
ENTRY = re.compile(r"^## (\S+)", re.MULTILINE)
# Services that ship as an image; their image is joulie-<name> (fakesmi rides in the simulator's).
IMAGES = {"agent": "joulie-agent", "controller-manager": "joulie-controller-manager", "extender": "joulie-extender",
          "simulator": "joulie-simulator", "fakesmi": "joulie-simulator"}


class ReleaseError(RuntimeError):
    pass


@dataclass(frozen=True)
class Unit:
    name: str
    root: Path  # services/<name> or tools/<name>
    version_file: Path

    @property
    def changelog(self) -> Path:
        return self.root / "CHANGELOG.md"

    def version(self) -> str:
        text = self.version_file.read_text().strip()
        if not SEMVER.fullmatch(text):
            raise ReleaseError(f"{self.version_file}: {text!r} is not MAJOR.MINOR.PATCH")
        return text


def units(repo: Path) -> dict[str, Unit]:
    found: dict[str, Unit] = {}
    for kind in ("services", "tools"):
        for vf in sorted(repo.glob(f"{kind}/*/joulie_*/VERSION")):
            root = vf.parent.parent
            if root.name in found:
                raise ReleaseError(f"two releasable units named {root.name!r}: {found[root.name].root} and {root}")
            found[root.name] = Unit(root.name, root, vf)
    if not found:
        raise ReleaseError(f"no services/*/joulie_*/VERSION under {repo}: is it the repository root?")
    return found


def bumped(version: str, part: str) -> str:
    m = SEMVER.fullmatch(version)
    if not m:
        raise ReleaseError(f"{version!r} is not MAJOR.MINOR.PATCH")
    major, minor, patch = (int(g) for g in m.groups())
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    if part == "patch":
        return f"{major}.{minor}.{patch + 1}"
    raise ReleaseError(f"part {part!r}: must be one of {', '.join(PARTS)}")


def entry(version: str, date: dt.date, notes: Sequence[str]) -> str:
    lines = [f"## {version} — {date.isoformat()}", ""]
    lines += [f"- {n.strip()}" for n in notes]
    return "\n".join(lines) + "\n"


def with_entry(changelog: str, new_entry: str, unit: str) -> str:
    """The changelog with ``new_entry`` above the newest entry (below the title and its text)."""
    m = ENTRY.search(changelog)
    if m is None:
        head = changelog.rstrip("\n") or f"# Changelog: {unit}"
        return f"{head}\n\n{new_entry}"
    return changelog[: m.start()] + new_entry + "\n" + changelog[m.start():]


def top_version(changelog: str) -> str | None:
    m = ENTRY.search(changelog)
    return m.group(1) if m else None


def bump(repo: Path, name: str, part: str, notes: Sequence[str], date: dt.date | None = None) -> tuple[str, str]:
    """Bump one unit; returns (old, new). Notes are required: an entry says what changed."""
    all_units = units(repo)
    if name not in all_units:
        raise ReleaseError(f"unknown service {name!r}; known: {', '.join(sorted(all_units))}")
    if not [n for n in notes if n.strip()]:
        raise ReleaseError("a bump needs at least one -m NOTE for the changelog")
    unit = all_units[name]
    old = unit.version()
    new = bumped(old, part)
    text = unit.changelog.read_text() if unit.changelog.is_file() else ""
    if top_version(text) not in (None, old):
        raise ReleaseError(f"{unit.changelog}: newest entry is {top_version(text)}, VERSION is {old}: fix that first")
    new_text = with_entry(text, entry(new, date or dt.date.today(), [n for n in notes if n.strip()]), name)
    unit.changelog.write_text(new_text)
    unit.version_file.write_text(new + "\n")
    return old, new


def check(repo: Path) -> list[str]:
    problems = []
    for u in units(repo).values():
        try:
            v = u.version()
        except ReleaseError as e:
            problems.append(str(e))
            continue
        if not u.changelog.is_file():
            problems.append(f"{u.name}: {u.changelog} is missing")
        elif (top := top_version(u.changelog.read_text())) != v:
            problems.append(f"{u.name}: newest {u.changelog.name} entry is {top}, VERSION is {v}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="release", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, default=Path("."), help="repository root (default: the current directory)")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="every releasable service, its version and its image")
    b = sub.add_parser("bump", help="bump one service's VERSION and prepend a CHANGELOG entry")
    b.add_argument("service")
    b.add_argument("part", choices=PARTS)
    b.add_argument("-m", "--message", action="append", default=[], required=True, help="changelog bullet (repeatable)")
    sub.add_parser("check", help="every CHANGELOG's newest entry matches its VERSION")
    args = p.parse_args(argv)
    try:
        if args.cmd == "list":
            for u in units(args.repo).values():
                print(f"{u.name}\t{u.version()}\t{IMAGES.get(u.name, '-')}\t{u.version_file}")
        elif args.cmd == "bump":
            old, new = bump(args.repo, args.service, args.part, args.message)
            print(f"{args.service}: {old} -> {new} (VERSION and CHANGELOG.md updated)")
        else:
            problems = check(args.repo)
            for line in problems:
                print(line, file=sys.stderr)
            if problems:
                return 1
            print("every CHANGELOG.md matches its VERSION")
    except ReleaseError as e:
        print(f"release: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
