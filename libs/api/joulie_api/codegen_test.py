"""The generated CRD types must match the CRDs: editing a CRD without regenerating fails here."""

import shutil
from pathlib import Path

import pytest

from joulie_api.codegen import CRD_DIR, GENERATED_DIR, CodegenError, render_all, stale_files

ROOT = Path.cwd()


def test_generated_types_are_up_to_date() -> None:
    stale = stale_files(ROOT)
    assert not stale, f"generated types are stale: {stale}; run ./pants run libs/api:gen-types"


def _copy_repo_subset(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / CRD_DIR, tmp_path / CRD_DIR)
    shutil.copytree(ROOT / GENERATED_DIR, tmp_path / GENERATED_DIR)
    return tmp_path


def test_editing_a_crd_field_makes_the_types_stale(tmp_path: Path) -> None:
    root = _copy_repo_subset(tmp_path)
    crd = root / CRD_DIR / "joulie.io_nodetwins.yaml"
    text = crd.read_text()
    assert "powerTrendWPerMin:" in text
    crd.write_text(text.replace("powerTrendWPerMin:", "powerTrendWattsPerMin:"))
    assert stale_files(root) == [GENERATED_DIR / "nodetwin.py"]


def test_regenerated_model_carries_the_edited_field(tmp_path: Path) -> None:
    root = _copy_repo_subset(tmp_path)
    crd = root / CRD_DIR / "joulie.io_nodehardwares.yaml"
    crd.write_text(crd.read_text().replace("linkClass:", "linkSpeedClass:"))
    out = render_all(root)[GENERATED_DIR / "nodehardware.py"]
    assert "alias='linkSpeedClass'" in out
    assert "alias='linkClass'" not in out


def test_a_crd_without_a_schema_title_is_refused_by_name(tmp_path: Path) -> None:
    root = _copy_repo_subset(tmp_path)
    crd = root / CRD_DIR / "joulie.io_nodetwins.yaml"
    crd.write_text(crd.read_text().replace("          title: NodeTwin\n", "", 1))
    with pytest.raises(CodegenError, match=r"joulie.io_nodetwins.yaml: openAPIV3Schema.title"):
        render_all(root)


def test_board_indices_are_plain_ints_in_the_types_and_bounded_in_the_crd() -> None:
    from joulie_api.generated.nodetwin import GPUBoardClockLock

    entry = GPUBoardClockLock.model_validate({"gpus": [0, 3], "pctOfMax": 60})
    assert entry.gpus == [0, 3] and all(isinstance(g, int) for g in entry.gpus)
    text = (ROOT / CRD_DIR / "joulie.io_nodetwins.yaml").read_text()
    # The API server keeps refusing an index out of range: the CRD keeps the bounds the types drop.
    assert text.count("items:\n                              type: integer\n                              minimum: 0\n") == 2
