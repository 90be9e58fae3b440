import pytest

from joulie_api.quantity import QuantityError, parse_quantity

GIB = 2**30


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", 0.5), ("2", 2.0), (2, 2.0), ("1.5", 1.5), ("1Gi", GIB), ("512Mi", 512 * 2**20), ("1k", 1000.0),
        ("1K", None), ("1e3", 1000.0), ("2E-3", 0.002), ("128974848", 128974848.0), ("100M", 1e8), ("1Ti", 2**40),
        ("250u", 250e-6), ("", None), ("abc", None), ("1.2.3", None), ("Gi", None), (True, None), ("nan", None),
    ],
)
def test_quantities_follow_the_kubernetes_grammar(text: object, expected: float | None) -> None:
    if expected is None:
        with pytest.raises(QuantityError):
            parse_quantity(text)
    else:
        assert parse_quantity(text) == pytest.approx(expected)
