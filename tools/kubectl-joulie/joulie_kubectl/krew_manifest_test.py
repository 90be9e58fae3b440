"""The krew manifest (tools/kubectl-joulie/krew/joulie.yaml) against krew's rules for a Plugin and
against the archive the build makes: what krew would copy and run is really in it."""

from __future__ import annotations

import fnmatch
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

MANIFEST = Path("tools/kubectl-joulie/krew/joulie.yaml")
ARCHIVE = Path("kubectl-joulie-krew.tar.gz")
VERSION = (Path(__file__).parent / "VERSION").read_text().strip()
# krew: plugin names are lowercase letters, digits and dashes; versions are "v" + semantic version.
NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
SEMVER = re.compile(r"^v\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")
KREW_OS = {"linux", "darwin", "windows"}


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    doc = yaml.safe_load(MANIFEST.read_text())
    assert isinstance(doc, dict)
    return doc


def test_manifest_is_a_krew_plugin_named_for_its_file(manifest: dict[str, Any]) -> None:
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin"
    name = manifest["metadata"]["name"]
    assert NAME.match(name) and MANIFEST.stem == name  # krew-index requires <name>.yaml
    spec = manifest["spec"]
    assert spec["shortDescription"].strip() and len(spec["shortDescription"]) <= 50
    assert spec["description"].strip()


def test_manifest_version_is_the_plugins(manifest: dict[str, Any]) -> None:
    version = manifest["spec"]["version"]
    assert SEMVER.match(version) and version == f"v{VERSION}"


def test_every_platform_is_complete(manifest: dict[str, Any]) -> None:
    platforms = manifest["spec"]["platforms"]
    assert platforms
    for p in platforms:
        assert p["uri"].startswith("https://") and p["uri"].endswith(".tar.gz")
        assert re.fullmatch(r"[0-9a-f]{64}", p["sha256"])
        assert p["bin"] == f"kubectl-{manifest['metadata']['name']}"
        for expr in p["selector"]["matchExpressions"]:
            assert expr["key"] == "os" and expr["operator"] == "In" and set(expr["values"]) <= KREW_OS
            # the launcher is a POSIX sh script
            assert "windows" not in expr["values"]
        for f in p["files"]:
            assert f["from"] and f["to"]


def test_archive_holds_what_the_manifest_copies_and_runs(manifest: dict[str, Any]) -> None:
    with tarfile.open(ARCHIVE) as tf:
        members = {m.name.removeprefix("./"): m for m in tf.getmembers() if m.isfile()}
    for p in manifest["spec"]["platforms"]:
        copied = set()
        for f in p["files"]:
            hits = fnmatch.filter(members, f["from"])
            assert hits, (f["from"], sorted(members))
            copied |= set(hits) if f["to"] == "." else set()
        assert p["bin"] in copied
        assert members[p["bin"]].mode & 0o111, "the launcher must be executable"
        assert any(fnmatch.fnmatch(m, f"kubectl_joulie-{VERSION}-py3-none-any.whl") for m in copied), sorted(copied)
