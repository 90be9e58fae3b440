"""Service versions: each service ships its own VERSION file inside its package."""

from __future__ import annotations

import re
from importlib import resources

_SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")


def service_version(package: str) -> str:
    """The version in `<package>/VERSION`, checked to be semantic-versioning shaped."""
    try:
        text = resources.files(package).joinpath("VERSION").read_text().strip()
    except FileNotFoundError:
        raise RuntimeError(f"{package}/VERSION is missing from the build (a resources target must include it)") from None
    if not _SEMVER.match(text):
        raise RuntimeError(f"{package}/VERSION holds {text!r}, expected MAJOR.MINOR.PATCH")
    return text
