"""The kernels' pieces judged against the per-node rules they equal."""

from joulie_extender.bulk.kernels import eco_label_mask
from joulie_extender.rules.filtering import is_eco_label


def test_eco_label_mask_judges_each_value_as_is_eco_label() -> None:
    labels: list[str | None] = ["eco", None, " ECO ", "performance", "", "eco", "Eco\t"]
    assert eco_label_mask(labels).tolist() == [is_eco_label(v) for v in labels]
    assert eco_label_mask([]).tolist() == []
