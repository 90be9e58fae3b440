"""Each builtin profile renders the tree its golden listing records."""

from pathlib import Path

import pytest

from joulie_hwprofiles.schema import builtin_profile_names
from joulie_simulator.emulation.golden import listing

HERE = Path(__file__).parent / "testdata" / "render"
REGENERATE = "./pants run services/simulator:render-goldens"


@pytest.mark.parametrize("name", builtin_profile_names())
def test_the_rendered_tree_matches_its_golden(name: str) -> None:
    golden = HERE / f"{name}.txt"
    assert golden.is_file(), f"no golden for {name}; create it with: {REGENERATE}"
    got = listing(name)
    if got != golden.read_text():
        want = golden.read_text().splitlines()
        diff = [f"- {w}\n+ {g}" for w, g in zip(want, got.splitlines(), strict=False) if w != g][:5]
        pytest.fail(f"the {name} tree drifted from {golden.name}; if intended, regenerate with: {REGENERATE}\n" + "\n".join(diff))
