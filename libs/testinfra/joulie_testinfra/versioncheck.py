"""The one check of a binary's ``--version`` every service and tool shares: the name and the VERSION
file as a user sees them in the checkout, so a release bump that forgets the file fails."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest


def assert_version_output(main: Callable[[list[str]], object], name: str, version_file: str,
                          capsys: pytest.CaptureFixture[str]) -> None:
    """``main(["--version"])`` exits 0 and prints ``<name> <the VERSION file>``, a semantic version."""
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out.strip()
    expected = Path(version_file).read_text().strip()
    assert out == f"{name} {expected}"
    assert re.fullmatch(rf"{re.escape(name)} \d+\.\d+\.\d+", out)
