"""Issue 23: hardware profile files fuzzed (hypothesis). A broken profile is refused with a
ProfileError naming the file and the field; never a crash, never an interpreter hint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from joulie_hwprofiles.schema import BUILTIN_DIR, ProfileError, load_profile
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

NAMES = ("intel-xeon-2s-rapl", "nvidia-h100-sxm-8gpu", "amd-instinct-mi300x-8gpu")
DOCS = {n: yaml.safe_load((BUILTIN_DIR / f"{n}.yaml").read_text()) for n in NAMES}
TALLY = FuzzTally("profile")
FUZZ = fuzz_settings(300)

report = fuzz_report(TALLY.summary)


def _check(tmp: Path, name: str, text: str | bytes) -> None:
    TALLY.tried["profile"] += 1
    path = tmp / f"{name}.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    try:
        load_profile(path, search=BUILTIN_DIR)
    except ProfileError as err:
        TALLY.refused["profile"] += 1
        msg = str(err)
        assert str(path) in msg, msg
        assert not clean(msg), msg


@FUZZ
@given(st.sampled_from(NAMES).flatmap(lambda n: st.tuples(st.just(n), st.sampled_from(paths(DOCS[n])))),
       st.one_of(ODD_VALUES, st.just(DELETE)))
def test_a_profile_with_one_field_broken(tmp_path_factory: pytest.TempPathFactory, where: tuple[str, tuple[Any, ...]],
                                         value: Any) -> None:
    name, path = where
    text = with_huge(yaml.safe_dump(set_path(DOCS[name], path, value)))
    _check(tmp_path_factory.mktemp("p"), name, text)


@FUZZ
@given(st.one_of(st.binary(max_size=300), st.text(max_size=200)))
def test_arbitrary_bytes_as_a_profile(tmp_path_factory: pytest.TempPathFactory, data: str | bytes) -> None:
    _check(tmp_path_factory.mktemp("p"), "intel-xeon-2s-rapl", data)
