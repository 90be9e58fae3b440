"""Issue 23: cluster spec files fuzzed (hypothesis). A broken spec is refused with a SpecError
naming the file and the field; never a crash, never an interpreter hint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from joulie_simcluster.spec import SpecError, load_spec
from joulie_testinfra.fuzzing import (
    DELETE,
    ODD_VALUES,
    FuzzTally,
    clean,
    fuzz_report,
    fuzz_settings,
    paths,
    set_path,
    with_huge,
)

SMOKE = yaml.safe_load(Path("simulated-cluster/specs/smoke.yaml").read_text())
TALLY = FuzzTally("cluster spec")
FUZZ = fuzz_settings(300)

report = fuzz_report(TALLY.summary)


def _check(tmp: Path, text: str | bytes) -> None:
    TALLY.tried["spec"] += 1
    path = tmp / "spec.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    try:
        load_spec(path)
    except SpecError as err:
        TALLY.refused["spec"] += 1
        msg = str(err)
        assert str(path) in msg, msg
        assert not clean(msg), msg


@FUZZ
@given(st.sampled_from(paths(SMOKE)), st.one_of(ODD_VALUES, st.just(DELETE)))
def test_a_spec_with_one_field_broken(tmp_path_factory: pytest.TempPathFactory, path: tuple[Any, ...], value: Any) -> None:
    _check(tmp_path_factory.mktemp("s"), with_huge(yaml.safe_dump(set_path(SMOKE, path, value))))


@FUZZ
@given(st.one_of(st.binary(max_size=300), st.text(max_size=200)))
def test_arbitrary_bytes_as_a_spec(tmp_path_factory: pytest.TempPathFactory, data: str | bytes) -> None:
    _check(tmp_path_factory.mktemp("s"), data)
